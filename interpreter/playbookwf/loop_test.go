package playbookwf

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter"
)

// A batch of a run from before the loop driver returns its outcomes
// within one payload: the largest results become stubs.
func TestBatchOutcomesFitOnePayload(t *testing.T) {
	big := strings.Repeat("x", 600<<10)
	outcomes := []interpreter.Outcome{{Result: "small"}, {Result: big}, {Result: big + "y"}, {Err: &interpreter.StepError{Type: "exit_code"}}}
	out := boundOutcomes(outcomes)
	require.Nil(t, interpreter.CheckPayload("", out))
	require.Equal(t, "small", out[0].Result)
	_, stub := interpreter.TruncatedSize(out[2].Result)
	require.True(t, stub, "the largest first")
	require.True(t, out[1].Result == big, "the second largest fits")

	few := []interpreter.Outcome{{Result: "a"}, {Result: "b"}}
	require.Equal(t, few, boundOutcomes(few))
}
