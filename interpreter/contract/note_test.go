package contract

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A loop whose worker died loses an attempt of each running element: its
// note names the elements' indexes once per attempt and error type, not
// one line per element (#38: the same line 43 times).
func TestLoopNoteNamesLostElementsByIndex(t *testing.T) {
	st := &StepState{Status: StatusCompleted}
	for i := range 43 {
		if i == 42 {
			continue
		}
		st.AttemptErrors = append(st.AttemptErrors, AttemptRecord{Attempt: 1, Lost: true,
			Error: StepError{Type: ErrHeartbeatTimeout, Message: fmt.Sprintf("element %d of 44 (index %d): activity Heartbeat timeout", i+1, i)}})
	}
	st.AttemptErrors = append(st.AttemptErrors,
		AttemptRecord{Attempt: 1, Lost: true, Error: StepError{Type: ErrHeartbeatTimeout, Message: "element 44 of 44 (index 43): activity Heartbeat timeout"}},
		AttemptRecord{Attempt: 2, Lost: true, Error: StepError{Type: ErrHeartbeatTimeout, Message: "element 3 of 44 (index 2): activity Heartbeat timeout"}})
	require.Equal(t, "attempt 1 lost (heartbeat_timeout) at indexes 0-41, 43, attempt 2 lost (heartbeat_timeout) at index 2", st.Note())

	plain := &StepState{Status: StatusCompleted, AttemptErrors: []AttemptRecord{{Attempt: 1, Lost: true, Error: StepError{Type: ErrHeartbeatTimeout, Message: "activity Heartbeat timeout"}}}}
	require.Equal(t, "attempt 1 lost (heartbeat_timeout)", plain.Note(), "a step that is no loop")
}
