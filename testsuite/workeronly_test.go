package testsuite

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// serverPackages are the modules the worker-only build must not link.
var serverPackages = []string{"go.temporal.io/server", "github.com/temporalio/ui-server"}

// linked lists the packages of serverPackages a build of pkg links.
func linked(t *testing.T, pkg, tags string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-tags", tags, pkg).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var found []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, prefix := range serverPackages {
			if pkg == prefix || strings.HasPrefix(pkg, prefix+"/") {
				found = append(found, pkg)
			}
		}
	}
	return found
}

// The worker-only build (-tags noserver, the container image's) links
// neither the Temporal server nor the Web UI; the default build links both.
func TestWorkerOnlyBuildLinksNoServer(t *testing.T) {
	parallel(t)
	require.Empty(t, linked(t, "playbook/cmd/playbook", "noserver"))
	full := strings.Join(linked(t, "playbook/cmd/playbook", ""), " ")
	require.Contains(t, full, "go.temporal.io/server/temporal")
	require.Contains(t, full, "github.com/temporalio/ui-server/v2/server")
}

// The worker package links no server in any build: the embedded one is
// playbook/internal/devserver's, imported only by the commands that start it.
func TestWorkerLinksNoServer(t *testing.T) {
	parallel(t)
	require.Empty(t, linked(t, "playbook/worker", ""))
}

// A worker-only binary's `playbook worker` runs a playbook's steps (shell and
// python), on a task queue no other worker polls; its `dev` and a `run`
// with no server configured say the build has no server.
func TestWorkerOnlyBuildRunsSteps(t *testing.T) {
	parallel(t)
	bin := filepath.Join(t.TempDir(), "playbook-worker")
	// Stamped as `make release` stamps a release's binaries.
	stamp := "-X playbook/cmd/playbook/commands.Version=v0.0.0-test -X playbook/cmd/playbook/commands.Commit=0123abc"
	out, err := exec.Command("go", "build", "-tags", "noserver", "-ldflags", stamp, "-o", bin, "playbook/cmd/playbook").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `^playbook v0\.0\.0-test\ncommit 0123abc\nTemporal Go SDK v1\.`, string(out))

	dev := exec.Command(bin, "dev", "--port", "0")
	devOut, err := dev.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(devOut), "dev: this playbook build has no embedded Temporal server (built with -tags noserver)")

	if !listening("127.0.0.1:7233") {
		run := exec.Command(bin, "run", "../playbooks/hello.yaml")
		run.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "TEMPORAL_CONFIG_FILE="+filepath.Join(t.TempDir(), "none.toml"))
		runOut, err := run.CombinedOutput()
		require.Error(t, err)
		require.Contains(t, string(runOut), "run: no Temporal server configured, and this playbook build has no embedded Temporal server")
	}

	queue := "worker-only-" + strings.ReplaceAll(t.Name(), "/", "-")
	workerLogs := t.TempDir()
	w := exec.Command(bin, "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", workerLogs)
	w.Env = append(os.Environ(), "TEMPORAL_CONFIG_FILE="+filepath.Join(t.TempDir(), "none.toml"))
	var wErr strings.Builder
	w.Stderr = &wErr
	require.NoError(t, w.Start())
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = w.Process.Kill()
			<-done
		}
	})

	for _, name := range []string{"hello.yaml", "python.yaml"} {
		code, stdout, stderr := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--json", filepath.Join("..", "playbooks", name))
		var agg contract.Aggregate
		require.NoError(t, json.Unmarshal([]byte(stdout), &agg), "stderr:\n%s\nworker:\n%s", stderr, wErr.String())
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "completed", agg.Status)
		// The steps' logs are in the worker-only process's log directory:
		// it, and no other worker, ran them.
		entries, err := os.ReadDir(filepath.Join(workerLogs, agg.WorkflowID))
		require.NoError(t, err, "worker:\n%s", wErr.String())
		require.NotEmpty(t, entries)
	}
}
