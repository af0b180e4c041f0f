package testsuite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A step's process holds only descriptors 0, 1 and 2: a pipe the worker
// inherited open at descriptor 251 (from a shell, a service manager) does
// not reach it (#39).
func TestStepsInheritNoDescriptors(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	queue := fmt.Sprintf("fds-%d", time.Now().UnixNano())
	cmd := exec.Command(playbookBinary(t), "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", dir)
	cmd.Env = append(os.Environ(), "TEMPORAL_CONFIG_FILE="+filepath.Join(dir, "none.toml"))
	cmd.ExtraFiles = make([]*os.File, 251-3+1)
	cmd.ExtraFiles[251-3] = w
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	file := writePlaybook(t, dir, "fds.yaml", `metadata: {name: fds}
workflow:
  - step: look
    tool:
      kind: shell
      command: 'cd /proc/self/fd && echo *'
`)
	agg := finish(t, start(t, file, queue, nil))
	require.Equal(t, "completed", agg.Status, stderr.String())
	require.Equal(t, "0 1 2 3\n", agg.Steps["look"].Result.(map[string]any)["stdout"], "the standard streams, and 3, the directory the shell lists")
}
