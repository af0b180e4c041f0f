package testsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// playbookBinary builds the real binary once, for tests that need a process
// of their own (a server to stop and restart, a fresh environment).
func playbookBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(buildBinary)
	require.NoError(t, buildErr)
	return binary
}

// cliEnv runs the playbook CLI as a process of its own, its environment
// this process's with env added (later entries win): the CLI as cli runs
// it, for a parallel test that sets a variable the CLI reads (t.Setenv
// would set it for every test).
func cliEnv(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(playbookBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// buildBinary builds the binary playbookBinary gives. TestMain starts it
// while the server starts when the whole suite runs.
func buildBinary() {
	dir, err := os.MkdirTemp("", "playbook-bin")
	if err != nil {
		buildErr = err
		return
	}
	binary = filepath.Join(dir, "playbook")
	out, err := exec.Command("go", "build", "-o", binary, "playbook/cmd/playbook").CombinedOutput()
	if err != nil {
		buildErr = fmt.Errorf("go build: %v\n%s", err, out)
	}
}

// With no server configured and none on 127.0.0.1:7233, `run` brings up an
// embedded one for the run, says so in one line, and completes.
func TestRunWithoutServerEmbedsOne(t *testing.T) {
	parallel(t, alone("127.0.0.1:7233"))
	if listening("127.0.0.1:7233") {
		t.Skip("a Temporal server listens on 127.0.0.1:7233; run would use it")
	}
	cmd := exec.Command(playbookBinary(t), "run", "../playbooks/hello.yaml")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "TEMPORAL_CONFIG_FILE="+filepath.Join(t.TempDir(), "none.toml"), "PLAYBOOK_LOG_DIR="+t.TempDir())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	require.Regexp(t, `^No Temporal server configured: started an embedded in-memory one on 127\.0\.0\.1:\d+ for this run\.\n$`, stderr.String())
	require.Contains(t, stdout.String(), "greet          completed")
	require.Contains(t, stdout.String(), "completed: 0 of 3 steps failed.")
}

// `playbook dev` serves gRPC and the Web UI; a run submitted to it appears
// in the UI's HTTP API, and is still listed after a restart on the same db.
func TestDevServerKeepsRunsAcrossRestart(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	db := filepath.Join(t.TempDir(), "dev.db")
	port, uiPort := devPorts(t)
	stop := startDev(t, bin, db, &port, &uiPort)
	address := fmt.Sprintf("127.0.0.1:%d", port)
	code, _, errOut := cli(t, "run", "--address", address, "--id", "dev-persist-1", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, uiWorkflowIDs(t, uiPort), "dev-persist-1")
	stop()

	stop = startDev(t, bin, db, &port, &uiPort)
	defer stop()
	require.Contains(t, uiWorkflowIDs(t, uiPort), "dev-persist-1", "the run survived the restart")
}

func startDev(t *testing.T, bin, db string, port, uiPort *int) (stop func()) {
	t.Helper()
	cmd := launchDev(t, bin, db, port, uiPort)
	return func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "dev exits cleanly on SIGINT")
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("playbook dev did not stop within 30s of SIGINT")
		}
	}
}

// launchDev starts `playbook dev` and returns once its worker is up.
func launchDev(t *testing.T, bin, db string, port, uiPort *int) *exec.Cmd {
	t.Helper()
	cmd, _ := launchDevWith(t, bin, db, port, uiPort, nil)
	return cmd
}

// devPorts are two loopback ports free when asked, for `playbook dev`'s
// server and Web UI.
func devPorts(t *testing.T) (port, uiPort int) { return freePort(t), freePort(t) }

// launchDevWith starts `playbook dev` with more flags and environment, and
// returns once its worker is up, with what it printed until then. A port
// found free when the test chose it may be taken by the time dev binds
// it (tests run side by side): dev then says it is in use, and is started
// again, up to three times in all, on two new ports written to port and
// uiPort. Read them after this returns.
func launchDevWith(t *testing.T, bin, db string, port, uiPort *int, env []string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	for try := 1; ; try++ {
		cmd, banner, inUse := tryDev(t, bin, db, *port, *uiPort, env, extra...)
		if cmd != nil {
			return cmd, banner
		}
		if !inUse || try == 3 {
			t.Fatalf("playbook dev did not start: %s", banner)
		}
		t.Logf("playbook dev on ports %d and %d: a port was in use: trying two others", *port, *uiPort)
		*port, *uiPort = devPorts(t)
	}
}

// tryDev starts `playbook dev` once. It returns the running process and
// its banner, or nil, what it printed, and whether it ended on a port in use.
func tryDev(t *testing.T, bin, db string, port, uiPort int, env []string, extra ...string) (*exec.Cmd, string, bool) {
	t.Helper()
	args := append([]string{"dev", "--db", db, "--port", fmt.Sprint(port), "--ui-port", fmt.Sprint(uiPort)}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "PLAYBOOK_LOG_DIR="+t.TempDir()), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var errOut strings.Builder // read only once the process has ended
	cmd.Stderr = io.MultiWriter(os.Stderr, &errOut)
	require.NoError(t, cmd.Start())
	ready := make(chan string, 1)
	go func() {
		var seen strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Worker on task queue") {
				ready <- seen.String()
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- ""
	}()
	select {
	case banner := <-ready:
		if banner == "" {
			_ = cmd.Wait()
			return nil, errOut.String(), strings.Contains(errOut.String(), "in use")
		}
		require.Contains(t, banner, fmt.Sprintf("Temporal gRPC on 127.0.0.1:%d", port))
		require.Contains(t, banner, fmt.Sprintf("Web UI on http://127.0.0.1:%d", uiPort))
		return cmd, banner, false
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("playbook dev did not start within 60s")
	}
	return nil, "", false
}

// uiWorkflowIDs lists the workflow IDs the Web UI's HTTP API returns.
func uiWorkflowIDs(t *testing.T, uiPort int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d/api/v1/namespaces/default/workflows", uiPort), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var body struct {
		Executions []struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
		} `json:"executions"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	var ids []string
	for _, e := range body.Executions {
		ids = append(ids, e.Execution.WorkflowID)
	}
	return ids
}

// On the embedded server the lines `run` suggests for a step that waits
// for a person name that server's address: typed in another terminal,
// they reach the run.
func TestEmbeddedRunSuggestsItsAddress(t *testing.T) {
	parallel(t, alone("127.0.0.1:7233"))
	if listening("127.0.0.1:7233") {
		t.Skip("a Temporal server listens on 127.0.0.1:7233; run would use it")
	}
	file := filepath.Join(t.TempDir(), "gate.yaml")
	require.NoError(t, os.WriteFile(file, []byte("metadata: {name: gate}\nworkflow:\n  - step: gate\n    tool: {kind: approval, message: go, timeout: 2s, on_timeout: approve}\n"), 0o644))
	cmd := exec.Command(playbookBinary(t), "run", "--id", "embedded-gate", file)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "TEMPORAL_CONFIG_FILE="+filepath.Join(t.TempDir(), "none.toml"), "PLAYBOOK_LOG_DIR="+t.TempDir())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	address := regexp.MustCompile(`embedded in-memory one on (127\.0\.0\.1:\d+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, address, stderr.String())
	require.Contains(t, stdout.String(), "decide with `playbook approve embedded-gate gate --address "+address[1]+"`")
}
