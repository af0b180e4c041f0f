package spec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseFailureHandling(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`
metadata: {name: x}
use_pending_failed: true
pending_timeout: 1h
notify:
  on_failure: { webhook: "http://127.0.0.1:9000/hook" }
failure_handlers:
  - name: flaky_io
    rules:
      - exit_codes: [10, 11]
        max_retries: 2
        recovery_script: ./remount.sh
      - match_all_exit_codes: true
workflow:
  - step: a
    tool: {kind: python, code: "def main(**args): return 1", args: {n: 1}}
    failure_handler: flaky_io
`))
	require.NoError(t, err)
	require.True(t, pb.UsePendingFailed)
	require.Equal(t, time.Hour, pb.PendingTimeout)
	require.Equal(t, Notify{OnFailure: "http://127.0.0.1:9000/hook"}, pb.Notify)
	h := pb.Step("a").FailureHandler
	require.Equal(t, "flaky_io", h.Name)
	require.Equal(t, []ExitCodeRule{
		{ExitCodes: []int{10, 11}, MaxRetries: 2, RecoveryScript: "./remount.sh", RecoveryScriptLine: 12},
		{MatchAll: true, MaxRetries: DefaultMaxRetries},
	}, h.Rules)
}
