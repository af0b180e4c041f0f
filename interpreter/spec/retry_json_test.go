package spec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A retry block whose expression does not compile where it is received
// still decodes; evaluating the expression is the error, so the attempt
// fails as the step's expression_error rather than failing to decode.
func TestRetryDecodesAnExpressionThatDoesNotCompile(t *testing.T) {
	var r Retry
	require.NoError(t, json.Unmarshal([]byte(`{"max_attempts":3,"retry_when":"result.nosuchfunc(1) ==","stop_when":"attempt > 2"}`), &r))
	require.Equal(t, 3, r.MaxAttempts)
	_, err := r.RetryWhen.EvalBool(map[string]any{})
	require.ErrorContains(t, err, "does not compile on this worker")
	stop, err := r.StopWhen.EvalBool(map[string]any{"attempt": 3})
	require.NoError(t, err)
	require.True(t, stop)
}
