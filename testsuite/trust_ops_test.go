package testsuite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/cmd/playbook/commands"
	"playbook/interpreter/contract"
)

// A run's deadline reaches a step that has run a while within about a
// second (#38: an 8 s deadline cancelled its step 7.3 s late, at the step's
// next heartbeat, which came more and more rarely up to every 10 s): the
// history shows the step cancelled within 2 s of the cancel request.
func TestDeadlineReachesARunningStepWithinASecond(t *testing.T) {
	file := writePlaybook(t, t.TempDir(), "ops38late.yaml", `metadata:
  name: ops38late
timeout: 8s
workflow:
  - step: work
    tool: { kind: shell, command: 'sleep 60 # playbook-ops38late' }
`)
	code, _, errOut := cli(t, "run", "--address", server.Address, "--id", "ops38-late-1", file)
	require.Equal(t, 1, code, errOut)
	run := tc.GetWorkflow(context.Background(), "ops38-late-1", "")
	h := history(t, run.GetID(), run.GetRunID())
	var requested, cancelled time.Time
	for _, e := range h.Events {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
			requested = e.GetEventTime().AsTime()
		case enums.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			cancelled = e.GetEventTime().AsTime()
		}
	}
	require.False(t, requested.IsZero() || cancelled.IsZero(), "the step was cancelled")
	late := cancelled.Sub(requested)
	t.Logf("the deadline reached the running step %s after it was requested", late)
	require.Less(t, late, 2*time.Second, "the cancel reached the step within about a second")
	require.Equal(t, contract.RunFailed, finish(t, run).Status)
}

// BenchmarkHeartbeat measures what one heartbeat of a running step costs:
// the time of the call, and the CPU this process (the embedded server, its
// SQLite store in memory, the worker and the client) spends on it. Run it
// with: go test -run '^$' -bench Heartbeat -benchtime 2000x ./testsuite/
func BenchmarkHeartbeat(b *testing.B) {
	ctx := context.Background()
	id := fmt.Sprintf("ops38-beat-%d", time.Now().UnixNano())
	file := filepath.Join(b.TempDir(), "ops38beat.yaml")
	require.NoError(b, os.WriteFile(file, []byte(`metadata:
  name: ops38beat
workflow:
  - step: work
    tool: { kind: shell, command: 'sleep 300 # playbook-ops38beat' }
`), 0o644))
	go commands.Main(ctx, []string{"playbook", "run", "--address", server.Address, "--id", id, file}, io.Discard, io.Discard)
	details := contract.AttemptLog{}
	require.Eventually(b, func() bool {
		return tc.RecordActivityHeartbeatByID(ctx, "default", id, "", "work", details) == nil
	}, 30*time.Second, 100*time.Millisecond)
	defer func() { _ = tc.CancelWorkflow(ctx, id, "") }()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for range b.N {
		require.NoError(b, tc.RecordActivityHeartbeatByID(ctx, "default", id, "", "work", details))
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(syscall.TimevalToNsec(after.Utime)+syscall.TimevalToNsec(after.Stime)-
		syscall.TimevalToNsec(before.Utime)-syscall.TimevalToNsec(before.Stime)) / time.Duration(b.N)
	b.ReportMetric(float64(cpu.Microseconds()), "cpu-µs/op")
}
