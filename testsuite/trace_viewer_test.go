package testsuite

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// The trace of a failing run in a real trace viewer, Jaeger, for
// OPERATIONS.md (#45): a worker exports the run over OTLP HTTP to a Jaeger
// the test starts; Jaeger's API then holds the run's whole trace, and its
// UI, opened in a headless Chromium, shows it; the screenshot is written to
// PLAYBOOK_TRACE_SCREENSHOT. Opt-in (`make trace-screenshot`): it runs when
// PLAYBOOK_JAEGER names a Jaeger all-in-one binary (v1) and
// PLAYBOOK_JAEGER_UI the Jaeger UI's built files, neither of which `make
// test` builds.
func TestTraceInAViewer(t *testing.T) {
	jaeger, ui, shot := os.Getenv("PLAYBOOK_JAEGER"), os.Getenv("PLAYBOOK_JAEGER_UI"), os.Getenv("PLAYBOOK_TRACE_SCREENSHOT")
	if jaeger == "" || ui == "" {
		t.Skip("PLAYBOOK_JAEGER and PLAYBOOK_JAEGER_UI name no Jaeger: see make trace-screenshot")
	}
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "no chromium on PATH")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "trace.png")
	}
	query, otlp := freePort(t), freePort(t)
	hostPort := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	cmd := exec.Command(jaeger, "--query.static-files="+ui, "--query.http-server.host-port="+hostPort(query),
		"--query.grpc-server.host-port="+hostPort(freePort(t)), "--admin.http.host-port="+hostPort(freePort(t)),
		"--collector.http-server.host-port="+hostPort(freePort(t)), "--collector.grpc-server.host-port="+hostPort(freePort(t)),
		"--collector.otlp.grpc.host-port="+hostPort(freePort(t)), "--collector.otlp.http.host-port="+hostPort(otlp))
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("jaeger:\n%s", stderr.String())
		}
	})
	queue := fmt.Sprintf("traced-viewer-%d", time.Now().UnixNano())
	tracedWorker(t, queue, "http://"+hostPort(otlp), "http/protobuf")
	file := writePlaybook(t, t.TempDir(), "nightly.yaml", `metadata: {name: nightly-report}
workflow:
  - step: extract
    tool: {kind: shell, command: 'echo rows'}
    next: transform
  - step: transform
    retry: {max_attempts: 3, initial_delay: 1s, jitter: false}
    tool: {kind: shell, command: 'echo "disk full" >&2; exit 3'}
    next: load
  - step: load
    tool: {kind: shell, command: 'echo loaded'}
  - step: end
    tool: {kind: shell, command: 'echo "report: {{ failed_steps }}"'}
`)
	run := startOn(t, tc, file, "", queue, nil)
	require.Equal(t, "failed", finish(t, run).Status)
	tid := contract.RunTrace(run.GetID(), run.GetRunID())

	// Jaeger's API has the whole trace: the run, its four steps (load
	// skipped has none) and their five attempts.
	var got struct {
		Data []struct {
			Spans []struct {
				OperationName string `json:"operationName"`
			} `json:"spans"`
		} `json:"data"`
	}
	waitFor(t, "Jaeger to hold the run's trace", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://%s/api/traces/%s", hostPort(query), tid))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		got.Data = nil
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&got) == nil && len(got.Data) == 1 && len(got.Data[0].Spans) == 1+3+5
	})
	var names []string
	for _, s := range got.Data[0].Spans {
		names = append(names, s.OperationName)
	}
	require.ElementsMatch(t, []string{"playbook nightly-report", "step extract", "step transform", "step end",
		"attempt 1 extract", "attempt 1 transform", "attempt 2 transform", "attempt 3 transform", "attempt 1 end"}, names)

	page := openBrowserPage(t, browser, fmt.Sprintf("http://%s/trace/%s?uiEmbed=v0", hostPort(query), tid))
	page.waitForText(60*time.Second, "nightly-report", "attempt 3 transform")
	time.Sleep(time.Second) // the bars' last layout
	page.screenshot(shot)
	info, err := os.Stat(shot)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(10_000), "a screenshot of the trace")
	t.Logf("screenshot: %s", shot)
}
