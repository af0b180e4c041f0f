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

func TestNoteNamesLostAttempts(t *testing.T) {
	lost := AttemptRecord{Attempt: 1, Lost: true, Error: StepError{Type: "heartbeat_timeout", Message: "attempt 1 was lost: its worker stopped heartbeating"}}
	st := &StepState{Status: StatusCompleted, AttemptErrors: []AttemptRecord{lost}}
	require.Equal(t, "attempt 1 lost (heartbeat_timeout)", st.Note())

	own := AttemptRecord{Attempt: 2, Error: StepError{Type: "exit_code", Message: "exited with code 1"}}
	st = &StepState{Status: StatusFailed, Error: &own.Error, AttemptErrors: []AttemptRecord{lost, own}}
	require.Equal(t, "exit_code: exited with code 1; attempt 1 lost (heartbeat_timeout)", st.Note())

	final := StepError{Type: "heartbeat_timeout", Message: lost.Error.Message + " (a lost attempt fails this step: lost_attempts is 0 or on_lost is fail)"}
	st = &StepState{Status: StatusFailed, Error: &final, AttemptErrors: []AttemptRecord{lost}}
	require.Equal(t, "heartbeat_timeout: "+final.Message, st.Note(), "the loss that failed the step is named once")
}
