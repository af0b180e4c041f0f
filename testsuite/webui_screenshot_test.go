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

// Acceptance (#28): the first view of a failed run in the Web UI names
// its cause. A headless Chromium opens the run's page on `playbook dev`'s
// Web UI as a person would; the page, once its scripts have run, holds the
// first failed step and its error (the failure's message), and a
// screenshot of it is kept beside the test's files. `make test` installs
// Chromium where it is missing.
func TestWebUIFirstViewNamesTheCause(t *testing.T) {
	parallel(t, alone("browser"))
	browser, address, uiPort := devWithBrowser(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "ui_fail.yaml", `metadata: {name: ui-fail}
workflow:
  - step: extract
    tool: {kind: shell, command: "echo rows"}
    next: [{step: transform}]
  - step: transform
    tool: {kind: shell, command: 'echo "disk full" >&2; exit 3'}
`)
	code, _, errOut := cli(t, "run", "--address", address, "--id", "ui-fail-1", file)
	require.Equal(t, 1, code, errOut)

	page := fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows/ui-fail-1", uiPort)
	open := func(args ...string) []byte {
		cmd := exec.Command(browser, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
			"--virtual-time-budget=15000", "--window-size=1400,1000"}, append(args, page)...)...)
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.Output(); close(done) }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatal("chromium did not finish within 90s")
		}
		require.NoError(t, err)
		return out
	}
	dom := string(open("--dump-dom"))
	require.Contains(t, dom, ">Failed<", "the status badge")
	require.Contains(t, dom, "transform: exit_code: exited with code 3: disk full", "the first view names the failed step and why")

	shot := filepath.Join(dir, "ui-fail-1.png")
	open("--screenshot=" + shot)
	info, err := os.Stat(shot)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(10_000), "a screenshot of the page")
	t.Logf("screenshot: %s", shot)
}
