package testsuite

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Web UI's list of runs tells a waiting run and a run with warnings
// apart without opening either, and a long loop's driver child does not
// clutter it (#38), once the list is set up as docs/OPERATIONS.md says:
// the PlaybookStatus and FailedSteps columns (Configure Columns, kept by
// the browser; set here as a person's click would keep them) and the
// Parent view (`ParentWorkflowId` is null). FailedSteps names a step
// allowed to fail as `NAME (warning)`. A headless Chromium takes a
// screenshot of the list.
func TestWebUIListTellsWaitingAndWarningsApart(t *testing.T) {
	parallel(t, alone("browser"))
	browser, address, uiPort := devWithBrowser(t)
	dir := t.TempDir()
	wait := writePlaybook(t, dir, "ui_gate.yaml", `metadata: {name: ui-gate}
workflow:
  - step: sign_off
    tool: {kind: approval, message: "Ship it?"}
`)
	loop := writePlaybook(t, dir, "ui_loop.yaml", `metadata: {name: ui-loop}
workflow:
  - step: each
    loop: { in: "0..500", mode: parallel, max_in_flight: 100 }
    tool: { kind: shell, command: "true" }
`)
	for _, r := range [][]string{{"--id", "ui-list-wait", wait}, {"--id", "ui-list-warn", "../playbooks/warnings.yaml"}, {"--id", "ui-list-loop", loop}} {
		code, _, errOut := cli(t, append([]string{"run", "--address", address, "--detach"}, r...)...)
		require.Equal(t, 0, code, errOut)
	}
	waitFor(t, "the runs to be listed as they stand", func() bool {
		_, out, _ := cli(t, "list", "--address", address)
		return strings.Contains(out, "ui-list-wait  ui-gate") && strings.Contains(out, " waiting ") &&
			strings.Contains(out, "completed_with_warnings") && strings.Count(out, " completed ") >= 1
	})

	query := url.QueryEscape("`ParentWorkflowId` is null")
	page := openBrowserPage(t, browser, fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows?query=%s", uiPort, query))
	page.waitForText(60*time.Second, "ui-list-wait")
	columns := `[{"label":"Status"},{"label":"Workflow ID"},{"label":"Type"},{"label":"PlaybookStatus"},{"label":"FailedSteps"},{"label":"Start"},{"label":"End"}]`
	// The reload may leave before its own answer does: "navigated" is its success.
	msg := page.try(page.session, "Runtime.evaluate", map[string]any{"expression": fmt.Sprintf(
		`localStorage.setItem("namespace-workflow-table-columns", JSON.stringify({"default": %s})); location.reload(); true`, columns)}, nil)
	require.True(t, msg == "" || strings.Contains(msg, "navigated"), "setting the columns: %s", msg)
	text := page.waitForText(60*time.Second, "PlaybookStatus", "waiting", "completed_with_warnings", "enrich (warning)", "ui-list-loop")
	shot := filepath.Join(dir, "ui-list.png")
	page.screenshot(shot)
	info, err := os.Stat(shot)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(10_000), "a screenshot of the list")
	t.Logf("screenshot: %s", shot)
	require.NotContains(t, text, "ui-list-loop.each.loop", "the loop's driver is not listed")
}
