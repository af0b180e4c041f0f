package testsuite

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/worker"
)

// The log retention sweep never removes the logs of a running attempt,
// however long it has been silent: a step quiet for longer than a short
// retention still has its stdout as its result.
func TestRetentionKeepsARunningAttemptsLogs(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("retention-%d", time.Now().UnixNano())
	dir := t.TempDir()
	w := worker.New(tc, worker.Options{TaskQueue: queue, LogDir: dir})
	require.NoError(t, w.Start())
	defer w.Stop()
	stop := worker.KeepLogs(dir, 300*time.Millisecond)
	defer stop()

	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: quiet}
workflow:
  - step: quiet
    tool: {kind: shell, command: "sleep 2; echo still here"}
`)
	agg := finish(t, start(t, file, queue, nil))
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, "still here\n", agg.Steps["quiet"].Result.(map[string]any)["stdout"])
}
