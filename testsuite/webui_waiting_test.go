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

// Acceptance (#32): the Web UI's details of a run waiting for a person say
// which step waits, since when, and the exact commands that decide it. A
// headless Chromium opens the run's page on `playbook dev`'s Web UI, as
// TestWebUIFirstViewNamesTheCause does, and reads the page as rendered.
func TestWebUIWaitingRunShowsTheCommands(t *testing.T) {
	parallel(t, alone("browser"))
	browser, address, uiPort := devWithBrowser(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "ui_wait.yaml", `metadata: {name: ui-wait}
workflow:
  - step: sign_off
    tool: {kind: approval, message: "Ship it?", inputs: {ticket: ""}, approvers: [alice]}
`)
	code, _, errOut := cli(t, "run", "--address", address, "--detach", "--id", "ui-wait-1", file)
	require.Equal(t, 0, code, errOut)
	waitFor(t, "the run to wait", func() bool {
		_, out, _ := cli(t, "status", "--address", address, "ui-wait-1")
		return strings.Contains(out, "): waiting,")
	})

	page := openBrowserPage(t, browser, fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows/ui-wait-1", uiPort))
	// The workflow's current details are under its User Metadata tab.
	page.waitForText(60*time.Second, "User Metadata")
	page.click("User Metadata")
	page.waitForText(60*time.Second,
		"waiting for approval: step sign_off since ",
		"playbook approve ui-wait-1 sign_off --set ticket='' --by alice",
		"playbook reject ui-wait-1 sign_off --reason '...' --by alice")
	shot := filepath.Join(dir, "ui-wait-1.png")
	page.screenshot(shot)
	info, err := os.Stat(shot)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(10_000), "a screenshot of the page")
	t.Logf("screenshot: %s", shot)

	code, _, errOut = cli(t, "approve", "--address", address, "ui-wait-1", "sign_off", "--by", "alice", "--set", "ticket=UI-1")
	require.Equal(t, 0, code, errOut)
}

// devWithBrowser starts `playbook dev` (stopped when the test ends) and
// finds Chromium: its path, the server's address and the Web UI's port.
func devWithBrowser(t *testing.T) (browser, address string, uiPort int) {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "no chromium on PATH: `make test` installs it (apt-get install chromium)")
	bin := playbookBinary(t)
	port, uiPort := devPorts(t)
	t.Cleanup(startDev(t, bin, ":memory:", &port, &uiPort))
	return browser, fmt.Sprintf("127.0.0.1:%d", port), uiPort
}
