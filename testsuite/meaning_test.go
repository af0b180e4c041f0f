package testsuite

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// The retry_when a user writes first, `status_code >= 500 and status_code
// < 600`, validates (with a warning line on stderr: a request that got no
// answer is not retried) and retries a 503 until the service answers.
func TestNaturalRetryWhenRetriesServerErrors(t *testing.T) {
	parallel(t)
	src, err := os.ReadFile(filepath.Join("..", "playbooks", "http.yaml"))
	require.NoError(t, err)
	guarded := `retry_when: "status_code == nil or status_code >= 500"`
	require.Contains(t, string(src), guarded)
	file := writePlaybook(t, t.TempDir(), "http.yaml", strings.Replace(string(src), guarded, `retry_when: "status_code >= 500 and status_code < 600"`, 1))

	code, out, errOut := cli(t, "validate", file)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, file+": ok (http-call, 2 steps)\n", out)
	require.Equal(t, file+`:19: step "post": warning: retry.retry_when: "status_code >= 500 and status_code < 600": status_code is null when the request got no answer (connection refused, a timeout), so such an attempt is not retried; write "status_code == nil or status_code >= 500 and status_code < 600" to include it`+"\n", errOut)

	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id": 7}`))
	}))
	defer srv.Close()
	code, out, errOut = cli(t, "run", "--address", server.Address, "--json", "--set", "url="+srv.URL, file)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), errOut)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 3, agg.Steps["post"].Attempts, "503, 503, then 201")
	require.Equal(t, "order 7 accepted", agg.Steps["confirm"].Result)
	require.Contains(t, errOut, `warning: retry.retry_when`)
	replay(t, "", agg.WorkflowID, agg.RunID)
}

// One validate tells every mistake of a file: an unknown tool key and, in
// the same step, a next naming no step; a string ordered against a number;
// a loop over a number. Four lines, exit 2.
func TestValidateTellsFourMistakesInOnePass(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "four.yaml", `metadata: {name: four}
workload: {count: 3, name: x}
workflow:
  - step: fetch
    tool: {kind: shell, command: "echo hi", timeout_s: 5}
    next: trasnform
  - step: compare
    tool: {kind: noop, result: 1}
    next:
      - when: "workload.name > 2"
        then: [each]
  - step: each
    loop: {in: "workload.count"}
    tool: {kind: noop, result: "{{ item }}"}
`)
	code, out, errOut := cli(t, "validate", file)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, file+`:5: step "fetch": unknown key "timeout_s" in shell tool (known: command, env, kind, workdir)
`+file+`:6: step "fetch": next names unknown step "trasnform"
`+file+`:10: step "compare": when: "workload.name > 2": invalid operation: > (mismatched types string and int) (1:15)
`+file+`:13: step "each": loop.in: "workload.count": gives a number (int), not a list: a loop runs over a list (a YAML list, an expression giving one, or a range such as 1..10)
`, errOut)
}

// A zone an expression names comes from playbook's own tz database; the
// worker's own zone, "Local" given as an input, is refused when the
// expression is evaluated: the step fails and says why.
func TestTimeZonesAreNeverTheWorkers(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "zones.yaml", `metadata: {name: zones-local}
workload: {tz: Europe/Paris}
workflow:
  - step: noon
    tool: {kind: noop, result: "{{ date('2026-07-01 12:00', '2006-01-02 15:04', workload.tz).UTC().Format('15:04') }}"}
`)
	for _, tc := range []struct{ tz, status, result, err string }{
		{"Europe/Paris", "completed", "10:00", ""},
		{"Local", "failed", "", `time zone "Local" is the zone of whichever worker evaluates it: name one, such as "UTC" or "Europe/Paris"`},
	} {
		code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--set", "tz="+tc.tz, file)
		var agg contract.Aggregate
		require.NoError(t, json.Unmarshal([]byte(out), &agg), errOut)
		require.Equal(t, exitCodeFor(tc.status), code, errOut)
		require.Equal(t, tc.status, agg.Status, tc.tz)
		noon := agg.Steps["noon"]
		if tc.err == "" {
			require.Equal(t, tc.result, noon.Result)
		} else {
			require.Contains(t, noon.Error.Message, tc.err)
		}
		replay(t, "", agg.WorkflowID, agg.RunID)
	}
}

// A wait until a time no timer reaches is refused: written in the file at
// validation, built by a template when the step starts (it fails, and
// says why, instead of waiting a saturated 292 years).
func TestWaitUntilATimeNoTimerReaches(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	literal := writePlaybook(t, dir, "literal.yaml", `metadata: {name: wait-far}
workflow:
  - step: far
    tool: {kind: wait, until: "9999-12-31T23:59:59Z"}
`)
	code, _, errOut := cli(t, "validate", literal)
	require.Equal(t, 2, code)
	require.Equal(t, literal+`:4: step "far": wait tool: until "9999-12-31T23:59:59Z" is past the last time a timer can reach (2262-04-11T23:47:16Z)`+"\n", errOut)

	templated := writePlaybook(t, dir, "templated.yaml", `metadata: {name: wait-far}
workload: {until: "2026-01-01T00:00:00Z"}
workflow:
  - step: far
    tool: {kind: wait, until: "{{ workload.until }}"}
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--set", "until=9999-12-31T23:59:59Z", templated)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), errOut)
	require.Equal(t, 1, code, errOut)
	far := agg.Steps["far"]
	require.Equal(t, contract.StatusFailed, far.Status)
	require.Equal(t, "tool_error", far.Error.Type)
	require.Equal(t, `until "9999-12-31T23:59:59Z" is past the last time a timer can reach (2262-04-11T23:47:16Z)`, far.Error.Message)
	replay(t, "", agg.WorkflowID, agg.RunID)
}

// --logical-time takes a date as its midnight UTC; the zero time, which a
// flag not given holds, is refused rather than taken as "now"; anything
// else says what to give.
func TestLogicalTimeFlagSaysWhatItTakes(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "lt.yaml", `metadata: {name: logical}
workflow:
  - step: when
    tool: {kind: noop, result: "{{ run.logical_time }}"}
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--logical-time", "2026-03-01", file)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), errOut)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "2026-03-01T00:00:00Z", agg.Steps["when"].Result)

	for value, want := range map[string]string{
		"0001-01-01T00:00:00Z": `run: invalid argument "0001-01-01T00:00:00Z" for "--logical-time" flag: 0001-01-01T00:00:00Z is the zero time, which stands for no time given: give the time itself (see ` + "`playbook run --help`)\n",
		"yesterday":            `run: invalid argument "yesterday" for "--logical-time" flag: give RFC 3339, e.g. 2026-03-01T00:00:00Z, or a date, 2026-03-01 (midnight UTC) (see ` + "`playbook run --help`)\n",
	} {
		code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--logical-time", value, file)
		require.Equal(t, 2, code, value)
		require.Empty(t, out)
		require.Equal(t, want, errOut)
	}
}

// retry --file with a playbook of another metadata.name is refused, so a
// wrong file does not run as a retry of RUN; --other-name allows it. A
// --set value carrying a YAML tag is refused as it is in a file.
func TestRetryFileOfAnotherPlaybookAndTaggedSets(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	first := runPlaybookFile(t, writePlaybook(t, dir, "alpha.yaml", `metadata: {name: alpha}
workload: {extra: null}
workflow:
  - step: a
    tool: {kind: noop, result: 1}
`))
	other := writePlaybook(t, dir, "beta.yaml", `metadata: {name: beta}
workflow:
  - step: a
    tool: {kind: noop, result: 2}
`)
	code, out, errOut := cli(t, "retry", "--address", server.Address, "--json", "--file", other, first.WorkflowID)
	require.Equal(t, 2, code, out+errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, other+` is playbook "beta", and `+first.WorkflowID+` ran "alpha": a retry runs the same playbook, fixed; give --other-name to retry it with another one`)

	code, agg, errOut := retryJSON(t, "--file", other, "--other-name", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "beta", agg.Playbook)

	code, out, errOut = cli(t, "run", "--address", server.Address, "--json", "--set", "extra=!!binary aGk=", filepath.Join(dir, "alpha.yaml"))
	require.Equal(t, 2, code, out+errOut)
	require.Contains(t, errOut, `workload.extra: "!!binary aGk=": the YAML tag !!binary is not read by playbooks: write the value plainly`)
}
