package activities

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/internal/proctest"
	"playbook/interpreter"
)

// fakeWorkerEnv makes this test binary a worker that runs one long step
// (TestStepProcessesDieWithTheirWorker starts it and kills it).
const fakeWorkerEnv = "PLAYBOOK_TEST_FAKE_WORKER"

func TestMain(m *testing.M) {
	if marker := os.Getenv(fakeWorkerEnv); marker != "" {
		a := &Activities{LogDir: os.TempDir()}
		in := interpreter.StepInput{WorkflowID: "orphan-test", Step: "s", Kind: "shell", Spec: map[string]any{
			// A child in the background and a grandchild: the whole group goes.
			"command": "sh -c \"sleep 60\" " + marker + " & sleep 60 # " + marker}}
		a.runTool(context.Background(), in, 1)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A worker killed by SIGKILL (no chance to clean up) takes its step's
// processes with it: their group's watcher sees the worker go.
func TestStepProcessesDieWithTheirWorker(t *testing.T) {
	marker := fmt.Sprintf("playbook-orphan-test-%d", time.Now().UnixNano())
	w := exec.Command(os.Args[0], "-test.run=^$")
	w.Env = append(os.Environ(), fakeWorkerEnv+"="+marker)
	require.NoError(t, w.Start())
	deadline := time.Now().Add(20 * time.Second)
	for len(proctest.Matching(marker)) == 0 {
		require.True(t, time.Now().Before(deadline), "the step did not start")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_ = w.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for len(proctest.Matching(marker)) > 0 {
		require.True(t, time.Now().Before(deadline), "step processes outlived their worker: %v", proctest.Matching(marker))
		time.Sleep(20 * time.Millisecond)
	}
}
