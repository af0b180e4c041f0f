package testsuite

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// The acceptance of issue 30: fix and resume, and every run's logical time.

// etl is a small pipeline whose steps note in DIR/marks each time they run:
// extract, then transform and report side by side, then load.
const etl = `metadata: {name: etl}
workload:
  dir: /tmp
  rate: 0
  fail: "yes"
workflow:
  - step: extract
    tool: { kind: shell, command: 'echo extract >> "$D/marks"; echo 10', env: { D: "{{ workload.dir }}" } }
    next: [transform, report]
  - step: transform
    tool: { kind: shell, command: 'echo transform >> "$D/marks"; [ "$F" = no ] && [ "$R" != 0 ] || { echo "KeyError: USD" >&2; exit 1; }', env: { D: "{{ workload.dir }}", F: "{{ workload.fail }}", R: "{{ workload.rate }}" } }
    next: load
  - step: report
    tool: { kind: shell, command: 'echo report >> "$D/marks"', env: { D: "{{ workload.dir }}", R: "{{ workload.rate }}" } }
  - step: load
    tool: { kind: shell, command: 'echo load >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
`

// marks reads which steps ran, in the order they noted it, sorted.
func marks(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "marks"))
	require.NoError(t, err)
	out := strings.Fields(string(b))
	sort.Strings(out)
	return out
}

// retryJSON runs `playbook retry --json` on the shared server and reads
// the aggregate; stderr has the decision lines.
func retryJSON(t *testing.T, args ...string) (int, *contract.Aggregate, string) {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"retry", "--address", server.Address, "--json"}, args...)...)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), "stdout is the aggregate; stderr:\n%s", errOut)
	return code, &agg, errOut
}

func runPlaybookFile(t *testing.T, file string, args ...string) *contract.Aggregate {
	t.Helper()
	code, out, errOut := cli(t, append(append([]string{"run", "--address", server.Address, "--json"}, args...), file)...)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), "stderr:\n%s", errOut)
	require.Equal(t, exitCodeFor(agg.Status), code, errOut)
	return &agg
}

// (1) A run that failed is retried with the fixed file: it completes, and
// the step upstream of the fix ran once in all.
func TestRetryWithFixedFile(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "etl.yaml", etl)
	first := runPlaybookFile(t, file, "--set", "dir="+dir, "--set", "rate=2")
	require.Equal(t, "failed", first.Status)
	require.Equal(t, []string{"transform"}, first.FailedSteps)

	// The fix: transform no longer fails; the file is reformatted too
	// (extract's keys in another order), which changes nothing.
	fixed := strings.Replace(etl, `F: "{{ workload.fail }}"`, `F: "no"`, 1)
	fixed = strings.Replace(fixed, "  - step: extract\n    tool: { kind: shell, command: 'echo extract >> \"$D/marks\"; echo 10', env: { D: \"{{ workload.dir }}\" } }\n    next: [transform, report]",
		"  - next: [transform, report]\n    step: extract\n    tool:\n      env: { D: '{{ workload.dir }}' }\n      command: 'echo extract >> \"$D/marks\"; echo 10'\n      kind: shell", 1)
	require.NotEqual(t, etl, fixed)
	writePlaybook(t, dir, "etl.yaml", fixed)

	code, agg, errOut := retryJSON(t, "--file", file, "--reason", "KeyError fixed", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  extract    reused\n  transform  runs: tool.env.F changed\n  report     reused\n  load       runs: upstream transform runs again\n  end        runs: the end step always runs\n")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, contract.StatusReused, agg.Steps["extract"].Status)
	require.Equal(t, contract.StatusReused, agg.Steps["report"].Status)
	require.Equal(t, []string{"extract", "load", "report", "transform", "transform"}, marks(t, dir), "extract and report ran once in all")
	require.Equal(t, &contract.Origin{RetryOf: first.WorkflowID, By: osUser(), Reason: "KeyError fixed", File: file, FileChanged: true}, agg.Origin)
	replay(t, "retry_with_fixed_file.yaml", agg.WorkflowID, agg.RunID)

	code, out, errOut := cli(t, "status", "--address", server.Address, agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Started as a retry of "+first.WorkflowID+" with a changed playbook by "+osUser()+": KeyError fixed\n")
}

// (2) --set changes a value only the failed step and report read: they
// and what is downstream run; the rest is reused.
func TestRetrySetRerunsOnlyTheReaders(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "etl.yaml", strings.Replace(etl, `F: "{{ workload.fail }}"`, `F: "no"`, 1))
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, []string{"transform"}, first.FailedSteps, "rate 0 fails transform")

	code, agg, errOut := retryJSON(t, "--set", "rate=2", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  extract    reused\n  transform  runs: failed before\n  report     runs: workload.rate changed (read by tool.env.R)\n  load       runs: upstream transform runs again\n")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, []string{"extract", "load", "report", "report", "transform", "transform"}, marks(t, dir))
	require.Equal(t, map[string]any{"rate": float64(2)}, agg.Origin.Overrides)
	replay(t, "retry_set.yaml", agg.WorkflowID, agg.RunID)
}

// (3) Editing a completed step's command reruns it and its downstream,
// without --from; (4) --from on a completed run reruns from there.
func TestRetryEditedCommandAndFrom(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	src := strings.Replace(etl, `F: "{{ workload.fail }}"`, `F: "no"`, 1)
	file := writePlaybook(t, dir, "etl.yaml", src)
	first := runPlaybookFile(t, file, "--set", "dir="+dir, "--set", "rate=1")
	require.Equal(t, "completed", first.Status)

	writePlaybook(t, dir, "etl.yaml", strings.Replace(src, `echo report >> "$D/marks"`, `echo report >> "$D/marks"; echo v2`, 1))
	code, agg, errOut := retryJSON(t, "--file", file, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  extract    reused\n  transform  reused\n  report     runs: tool.command changed\n  load       reused\n")
	require.Equal(t, "v2\n", agg.Steps["report"].Result.(map[string]any)["stdout"])

	code, agg, errOut = retryJSON(t, "--from", "transform", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  extract    reused\n  transform  runs: --from\n  report     reused\n  load       runs: upstream transform runs again\n")
	require.Equal(t, "transform", agg.Origin.From)
	require.Equal(t, []string{"extract", "load", "load", "report", "report", "transform", "transform"}, marks(t, dir))
}

// (5) --dry-run prints the decisions and starts nothing.
func TestRetryDryRun(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "etl.yaml", etl)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	code, out, errOut := cli(t, "retry", "--address", server.Address, "--dry-run", "--id", "etl-dry-run", "--set", "fail=no", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Retrying "+first.WorkflowID+" would reuse 2 steps and run the rest (dry run: nothing started):\n"+
		"  extract    reused\n  transform  runs: failed before\n  report     reused\n  load       runs: upstream transform runs again\n  end        runs: the end step always runs\n", out)
	_, err := tc.DescribeWorkflowExecution(context.Background(), "etl-dry-run", "")
	require.Error(t, err, "nothing started")
	require.Equal(t, []string{"extract", "report", "transform"}, marks(t, dir))
}

// A reused step upstream of an on_failure: run step that ran is warned of:
// the cleanup may have undone what it left.
func TestRetryWarnsOfACleanupThatRan(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "clean.yaml", `metadata: {name: clean}
workflow:
  - step: fetch
    tool: { kind: noop, result: fetched }
    next: work
  - step: work
    tool: { kind: shell, command: 'exit 1' }
    next: cleanup
  - step: cleanup
    on_failure: run
    tool: { kind: noop, result: cleaned }
`)
	first := runPlaybookFile(t, file)
	require.Equal(t, "failed", first.Status)
	code, _, errOut := cli(t, "retry", "--address", server.Address, "--dry-run", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "warning: cleanup (on_failure: run) ran in the earlier run after fetch, which this run reuses: what fetch left may have been cleaned up\n", errOut)
}

// (6) classify skip --result: the step completes by hand with that result,
// which the next step reads.
func TestClassifySkipWithResult(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "hand.yaml", `metadata: {name: hand}
use_pending_failed: true
workflow:
  - step: rate
    tool: { kind: shell, command: 'echo "rates service down" >&2; exit 3' }
    next: convert
  - step: convert
    tool: { kind: noop, result: "{{ steps.rate.result.json.usd * 2 }}" }
`)
	run := start(t, file, "playbook", nil)
	waitFor(t, "rate to be pending_failed", func() bool { return len(pendingSteps(t, run)) == 1 })
	code, _, errOut := cli(t, "classify", "--address", server.Address, "--result", "{oops", run.GetID(), "rate", "skip")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "not JSON")
	code, out, errOut := cli(t, "classify", "--address", server.Address, "--result", `{"json": {"usd": 21}}`, "--reason", "rate looked up by hand", run.GetID(), "rate", "skip")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "step rate classified skip: now completed\n", out)
	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["rate"].Status)
	require.Equal(t, "skip with a result by "+osUser()+": rate looked up by hand", agg.Steps["rate"].Classified)
	require.Equal(t, float64(42), agg.Steps["convert"].Result)
	replay(t, "classify_skip_result.yaml", run.GetID(), run.GetRunID())
}

// logicalPlaybook shows its logical time both ways: the expression and
// the step's environment.
const logicalPlaybook = `metadata: {name: logical}
schedule: {every: 1h}
workflow:
  - step: day
    tool: { kind: noop, result: "{{ date(run.logical_time).Add(duration('-24h')).Format('2006-01-02') }}" }
    next: env
  - step: env
    tool: { kind: shell, command: 'echo "$PLAYBOOK_LOGICAL_TIME"' }
`

// (7) A backfill of three intervals gives three runs whose logical times
// are the three schedule times; a manual run with --logical-time shows it,
// and a retry keeps it.
func TestLogicalTime(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "logical.yaml", logicalPlaybook)
	code, _, errOut := scheduleCLI(t, "create", "--id", "sched-logical", "--every", "1h", "--paused", file)
	require.Equal(t, 0, code, errOut)
	defer scheduleCLI(t, "delete", "sched-logical")
	from := time.Now().UTC().Truncate(time.Hour).Add(-4*time.Hour + 30*time.Minute)
	code, _, errOut = scheduleCLI(t, "backfill", "--from", from.Format(time.RFC3339), "--to", from.Add(3*time.Hour).Format(time.RFC3339), "sched-logical")
	require.Equal(t, 0, code, errOut)
	waitFor(t, "three backfilled runs to complete", func() bool { return completedRuns(t, "sched-logical") >= 3 })
	var got, want []string
	for _, r := range scheduledRuns(t, "sched-logical") {
		agg := finish(t, tc.GetWorkflow(context.Background(), r.WorkflowID, ""))
		require.Equal(t, agg.LogicalTime+"\n", agg.Steps["env"].Result.(map[string]any)["stdout"], "PLAYBOOK_LOGICAL_TIME")
		got = append(got, agg.LogicalTime)
	}
	for h := 1; h <= 3; h++ {
		want = append(want, from.Add(time.Duration(h)*time.Hour-30*time.Minute).Format(time.RFC3339))
	}
	sort.Strings(got)
	require.Equal(t, want, got)

	manual := runPlaybookFile(t, file, "--logical-time", "2026-03-01T02:00:00+01:00")
	require.Equal(t, "2026-03-01T01:00:00Z", manual.LogicalTime)
	require.Equal(t, "2026-02-28", manual.Steps["day"].Result)
	require.Equal(t, "2026-03-01T01:00:00Z\n", manual.Steps["env"].Result.(map[string]any)["stdout"])
	code, out, errOut := cli(t, "status", "--address", server.Address, manual.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Logical time: 2026-03-01T01:00:00Z\n")
	replay(t, "logical_time.yaml", manual.WorkflowID, manual.RunID)

	code, retried, errOut := retryJSON(t, "--from", "day", manual.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "2026-03-01T01:00:00Z", retried.LogicalTime, "a retry keeps the logical time")
	require.Equal(t, "2026-03-01T01:00:00Z\n", retried.Steps["env"].Result.(map[string]any)["stdout"])

	code, retried, errOut = retryJSON(t, "--logical-time", "2026-04-01T00:00:00Z", manual.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  day  runs: run.logical_time changed (read by tool.result)\n")
	require.Equal(t, "2026-03-31", retried.Steps["day"].Result)
}

// (8) An expression cannot read the worker's time zone: .Local() is
// refused, and named zones and dates evaluate alike on workers in
// different zones (their histories replay here, in a third).
func TestExpressionsIgnoreTheWorkersZone(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	local := writePlaybook(t, dir, "local.yaml", `metadata: {name: local}
workflow:
  - step: hour
    tool: { kind: noop, result: "{{ date('2024-06-01T23:30:00Z').Local().Hour() }}" }
`)
	code, _, errOut := cli(t, "validate", local)
	require.Equal(t, 2, code)
	require.Equal(t, local+`:4: step "hour": tool: "date('2024-06-01T23:30:00Z').Local().Hour()": .Local() or the zone "Local" reads the time zone of the worker that evaluates it: use .UTC(), or .In(timezone("Europe/Paris")) for a named zone`+"\n", errOut)

	zoned := writePlaybook(t, dir, "zoned.yaml", `metadata: {name: zoned}
workflow:
  - step: times
    tool: { kind: noop, result: "{{ [date('2024-06-01 23:30:00').Hour(), date('2024-06-01T23:30:00Z').In(timezone('Asia/Tokyo')).Format('2006-01-02 15:04'), date('2024-06-01 23:30', '2006-01-02 15:04', 'America/New_York').UTC().Hour()] }}" }
`)
	var results []any
	for _, tz := range []string{"Pacific/Kiritimati", "America/Los_Angeles"} {
		queue := "zone-" + strings.ReplaceAll(tz, "/", "-")
		cmd := exec.Command(playbookBinary(t), "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "TZ="+tz)
		require.NoError(t, cmd.Start())
		agg := runPlaybookFile(t, zoned, "--task-queue", queue)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		require.Equal(t, "completed", agg.Status)
		results = append(results, agg.Steps["times"].Result)
		replay(t, "", agg.WorkflowID, agg.RunID)
	}
	require.Equal(t, []any{float64(23), "2024-06-02 08:30", float64(3)}, results[0])
	require.Equal(t, results[0], results[1])
}

// retry takes any ended run, a terminated one too: the steps stood as a
// worker replays them; those running when it was terminated run again.
func TestRetryOfATerminatedRun(t *testing.T) {
	parallel(t, carries("playbook-long-running"))
	code, _, errOut := cli(t, "run", "--address", server.Address, "--id", "resume-term-1", "--detach", "../playbooks/long_running.yaml")
	require.Equal(t, 0, code, errOut)
	waitFor(t, "left to start", func() bool {
		_, out, _ := cli(t, "status", "--address", server.Address, "resume-term-1")
		return strings.Contains(out, "left ") && strings.Contains(out, "running")
	})
	require.NoError(t, tc.TerminateWorkflow(context.Background(), "resume-term-1", "", "test"))
	code, out, errOut := cli(t, "retry", "--address", server.Address, "--dry-run", "--set", "seconds=0", "resume-term-1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "  start  reused\n  left   runs: running before\n  right  runs: running before\n  after  runs: upstream left runs again\n")
}
