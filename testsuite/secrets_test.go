package testsuite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Acceptance (#29): a step that greps every /proc/*/environ and cmdline it
// can read finds none of its worker's secrets, while the worker itself
// still reads its whole environment (a --step-env variable reaches the
// step).
func TestStepsCannotReadTheWorkersSecrets(t *testing.T) {
	secret := fmt.Sprintf("s3cr3t-%d", time.Now().UnixNano())
	dir := t.TempDir()
	// The step reads the secret to look for from a file, so that its own
	// command line does not hold it.
	pattern := filepath.Join(dir, "pattern")
	require.NoError(t, os.WriteFile(pattern, []byte(secret+"\n"), 0o600))
	queue := fmt.Sprintf("secrets-%d", time.Now().UnixNano())
	cmd := exec.Command(playbookBinary(t), "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", dir, "--step-env", "VISIBLE_TO_STEPS")
	cmd.Env = append(os.Environ(), "AWS_SECRET_ACCESS_KEY="+secret, "PLAYBOOK_LOGS_TOKEN="+secret, "VISIBLE_TO_STEPS=passed-on", "TEMPORAL_CONFIG_FILE="+filepath.Join(dir, "none.toml"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	file := writePlaybook(t, dir, "peek.yaml", `metadata: {name: peek}
workflow:
  - step: peek
    tool:
      kind: shell
      command: 'grep -l -a -F -f "`+pattern+`" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; echo "visible=$VISIBLE_TO_STEPS"'
`)
	run := start(t, file, queue, nil)
	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status, stderr.String())
	out := agg.Steps["peek"].Result.(map[string]any)["stdout"].(string)
	require.Equal(t, "visible=passed-on\n", out, "no process's environment or command line holds the secret, but the worker's own environment is whole")
}
