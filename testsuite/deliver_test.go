package testsuite

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
)

// An approve sent while the run's worker is down — killed, and started
// again a while later — waits for it and is applied, once (#39: it failed
// with a bare "context deadline exceeded" after the SDK's 10 s and was
// not applied).
func TestApproveAfterAWorkerRestart(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("deliver39-%d", time.Now().UnixNano())
	logs := t.TempDir()
	_, _, worker := startObservedWorker(t, queue, logs)
	file := writePlaybook(t, t.TempDir(), "gate.yaml", `metadata: {name: gate-restart}
workflow:
  - step: sign_off
    tool: {kind: approval, message: go}
`)
	id := fmt.Sprintf("gate-restart-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--detach", "--id", id, file)
	require.Equal(t, 0, code, errOut)
	waitFor(t, "sign_off to wait for approval", func() bool { return len(approvalsOf(t, id)) == 1 })

	require.NoError(t, worker.Process.Kill())
	_, _ = worker.Process.Wait()
	type answer struct {
		code     int
		out, err string
	}
	done := make(chan answer, 1)
	go func() {
		code, out, errOut := cli(t, "approve", "--address", server.Address, id, "sign_off", "--reason", "after the restart")
		done <- answer{code, out, errOut}
	}()
	select {
	case a := <-done:
		t.Fatalf("approve ended while no worker could answer: exit %d: %s%s", a.code, a.out, a.err)
	case <-time.After(15 * time.Second): // past the SDK's 10 s for one question
	}
	startObservedWorker(t, queue, logs)
	select {
	case a := <-done:
		require.Equal(t, 0, a.code, a.out+a.err)
	case <-time.After(2 * time.Minute):
		t.Fatal("approve did not end after the worker came back")
	}
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "after the restart", agg.Steps["sign_off"].Result.(map[string]any)["reason"])
	require.Equal(t, 1, countEvents(t, id, agg.RunID, enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED), "applied once")
}
