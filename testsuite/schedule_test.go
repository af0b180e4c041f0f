package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"playbook/cmd/playbook/commands"
	"playbook/runs"
)

// writePlaybook writes a playbook into dir and returns its path.
func writePlaybook(t *testing.T, dir, name, src string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// scheduleCLI runs `playbook schedule ...` on the shared server.
// Its flags go before the arguments (either order works).
func scheduleCLI(t *testing.T, sub string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cli(t, append([]string{"schedule", sub, "--address", server.Address}, args...)...)
}

func describeSchedule(t *testing.T, id string) commands.ScheduleView {
	t.Helper()
	code, out, errOut := scheduleCLI(t, "describe", "--json", id)
	require.Equal(t, 0, code, errOut)
	var v commands.ScheduleView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	return v
}

// scheduledRuns lists, with `playbook list --schedule`, the runs a schedule started.
func scheduledRuns(t *testing.T, id string) []runs.Run {
	t.Helper()
	code, out, errOut := cli(t, "list", "--address", server.Address, "--schedule", id, "--json")
	require.Equal(t, 0, code, errOut)
	var runs []runs.Run
	require.NoError(t, json.Unmarshal([]byte(out), &runs))
	return runs
}

func completedRuns(t *testing.T, id string) int {
	n := 0
	for _, r := range scheduledRuns(t, id) {
		if r.Status == "completed" {
			n++
		}
	}
	return n
}

func requireNoSchedule(t *testing.T, id string) {
	t.Helper()
	_, err := tc.ScheduleClient().GetHandle(context.Background(), id).Describe(context.Background())
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "schedule %s does not exist", id)
}

const quickPlaybook = `metadata: {name: tick, description: A quick scheduled run}
schedule: {every: 1h}
workflow:
  - step: say
    tool: { kind: shell, command: 'echo "{\"n\": $N}"', env: { N: "{{ workload.n }}" } }
workload:
  n: 1
`

// Acceptance 1: every 2s starts runs that complete, with readable IDs,
// listed by schedule; pause stops new runs; trigger starts one at once;
// delete removes the schedule.
func TestScheduleEveryPauseTriggerDelete(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "tick.yaml", quickPlaybook)
	code, out, errOut := scheduleCLI(t, "create", "--id", "sched-every", "--every", "2s", "--set", "n=7", file)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Created schedule sched-every: playbook tick, every 2s, overlap skip.\n", out)

	waitFor(t, "two scheduled runs to complete", func() bool { return completedRuns(t, "sched-every") >= 2 })
	for _, r := range scheduledRuns(t, "sched-every") {
		require.Regexp(t, `^sched-every-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, r.WorkflowID)
		require.Equal(t, "sched-every", r.Schedule)
		require.Equal(t, "tick", r.Playbook)
	}
	first := scheduledRuns(t, "sched-every")[0]
	replay(t, "", first.WorkflowID, first.RunID) // its frozen text has a schedule: key, which the run ignores
	require.Contains(t, readLog(t, first.WorkflowID, "say", "attempt-1.stdout"), `{"n": 7}`, "the run has the schedule's workload")

	code, out, _ = cli(t, "list", "--address", server.Address, "--schedule", "sched-every")
	require.Equal(t, 0, code)
	require.Contains(t, out, "SCHEDULE")
	require.Contains(t, out, "  sched-every\n", "the table shows the schedule's ID")

	v := describeSchedule(t, "sched-every")
	require.Equal(t, "tick", v.Playbook)
	require.Equal(t, []string{"every 2s"}, v.When)
	require.Equal(t, "skip", v.Overlap)
	require.Equal(t, "1h0m0s", v.CatchupWindow)
	require.False(t, v.Paused)
	require.NotEmpty(t, v.NextRuns)
	require.NotEmpty(t, v.RecentRuns)
	require.Equal(t, "completed", v.RecentRuns[0].Status)

	code, out, errOut = scheduleCLI(t, "pause", "--note", "maintenance", "sched-every")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Paused schedule sched-every.\n", out)
	pausedAt := time.Now()
	var due []time.Time // the times it listed that fall after the pause
	for _, at := range v.NextRuns {
		if at.After(pausedAt) {
			due = append(due, at)
		}
	}
	require.GreaterOrEqual(t, len(due), 2, "%v", v.NextRuns)
	v = describeSchedule(t, "sched-every")
	require.True(t, v.Paused)
	require.Equal(t, "maintenance", v.Note)
	require.Empty(t, v.NextRuns, "none runs while it is paused")
	// The list is the server's visibility of schedules, which catches up
	// with a pause a moment later (describe reads the schedule itself).
	require.Eventually(t, func() bool {
		code, out, _ = scheduleCLI(t, "list", "--json")
		return code == 0 && regexp.MustCompile(`"id": "sched-every",[^}]*"paused": true,[^}]*"next_runs": \[\]`).MatchString(out)
	}, 30*time.Second, 200*time.Millisecond, "the list shows the pause: %s", out)
	_, text, _ := scheduleCLI(t, "describe", "sched-every")
	require.Contains(t, text, "paused: maintenance")
	// Two of its times pass while it is paused (a second more for the
	// scheduler to have acted on the second).
	waitFor(t, "two of its times to pass", func() bool { return time.Now().After(due[1].Add(time.Second)) })
	require.Equal(t, v.Actions, describeSchedule(t, "sched-every").Actions, "no run started while paused")

	code, out, errOut = scheduleCLI(t, "trigger", "sched-every")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^Triggered schedule sched-every: started run sched-every-\S+\.\n$`, out)
	waitFor(t, "the triggered run", func() bool { return describeSchedule(t, "sched-every").Actions == v.Actions+1 })

	code, out, errOut = scheduleCLI(t, "delete", "sched-every")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Deleted schedule sched-every.\n", out)
	requireNoSchedule(t, "sched-every")
	code, _, errOut = scheduleCLI(t, "describe", "sched-every")
	require.Equal(t, 1, code)
	require.Equal(t, "schedule describe: no schedule \"sched-every\"\n", errOut)
}

// Acceptance 2: under the default overlap policy (skip), a run slower than
// the interval is never doubled: no two runs overlap.
func TestScheduleOverlapSkip(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "slow.yaml", `metadata: {name: slow}
workflow:
  - step: nap
    tool: { kind: shell, command: "sleep 2.5" }
`)
	code, _, errOut := scheduleCLI(t, "create", "--id", "sched-overlap", "--every", "1s", file)
	require.Equal(t, 0, code, errOut)
	waitFor(t, "two slow runs to complete", func() bool { return completedRuns(t, "sched-overlap") >= 2 })
	code, _, errOut = scheduleCLI(t, "delete", "sched-overlap")
	require.Equal(t, 0, code, errOut)

	type span struct{ start, end time.Time }
	var spans []span
	waitFor(t, "every run of the schedule to close", func() bool {
		spans = nil
		for _, r := range scheduledRuns(t, "sched-overlap") {
			d, err := tc.DescribeWorkflowExecution(context.Background(), r.WorkflowID, r.RunID)
			require.NoError(t, err)
			info := d.GetWorkflowExecutionInfo()
			if info.GetCloseTime() == nil {
				return false
			}
			spans = append(spans, span{info.GetStartTime().AsTime(), info.GetCloseTime().AsTime()})
		}
		return true
	})
	require.GreaterOrEqual(t, len(spans), 2)
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	for i := 1; i < len(spans); i++ {
		require.False(t, spans[i].start.Before(spans[i-1].end), "run %d started at %s, before run %d closed at %s", i, spans[i].start, i-1, spans[i-1].end)
	}
}

// trigger says what its trigger did: a run started, or none, under the
// schedule's overlap policy skip while one is still going.
func TestScheduleTriggerSaysWhetherARunStarted(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "slow.yaml", `metadata: {name: slow-trigger}
workflow:
  - step: nap
    tool: { kind: shell, command: "sleep 30" }
`)
	code, _, errOut := scheduleCLI(t, "create", "--id", "sched-trigger", "--every", "1h", "--paused", file)
	require.Equal(t, 0, code, errOut)
	defer func() {
		_, _, _ = scheduleCLI(t, "delete", "sched-trigger")
		for _, r := range scheduledRuns(t, "sched-trigger") {
			_ = tc.TerminateWorkflow(context.Background(), r.WorkflowID, r.RunID, "test over")
		}
	}()
	code, out, errOut := scheduleCLI(t, "trigger", "sched-trigger")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^Triggered schedule sched-trigger: started run sched-trigger-\S+\.\n$`, out)
	code, out, errOut = scheduleCLI(t, "trigger", "sched-trigger")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Triggered schedule sched-trigger: no run started: a run of the schedule is still going, and its overlap policy skips one then (--overlap allow-all starts one anyway).\n", out)
}

// Acceptance 3: a backfill over a past window of three intervals starts
// three runs, one after another (buffer-all), even on a paused schedule.
func TestScheduleBackfill(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "tick.yaml", quickPlaybook)
	code, _, errOut := scheduleCLI(t, "create", "--id", "sched-backfill", "--every", "1h", "--paused", file)
	require.Equal(t, 0, code, errOut)
	defer scheduleCLI(t, "delete", "sched-backfill")

	// Half past an hour, so that exactly three whole hours fall in the window.
	from := time.Now().UTC().Truncate(time.Hour).Add(-4*time.Hour + 30*time.Minute)
	to := from.Add(3 * time.Hour)
	code, out, errOut := scheduleCLI(t, "backfill", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "sched-backfill")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, fmt.Sprintf("Backfilling schedule sched-backfill: 3 runs, for its times from %s to %s (overlap buffer-all).\n",
		from.Add(30*time.Minute).Format(time.RFC3339), to.Add(-30*time.Minute).Format(time.RFC3339)), out, "how many runs, over which range (#38)")

	waitFor(t, "three backfilled runs to complete", func() bool { return completedRuns(t, "sched-backfill") >= 3 })
	var ids []string
	for _, r := range scheduledRuns(t, "sched-backfill") {
		ids = append(ids, r.WorkflowID)
	}
	sort.Strings(ids)
	var want []string
	for h := 1; h <= 3; h++ {
		want = append(want, "sched-backfill-"+from.Add(time.Duration(h)*time.Hour-30*time.Minute).Format(time.RFC3339))
	}
	require.Equal(t, want, ids)

	code, out, errOut = scheduleCLI(t, "backfill", "--from", from.Format(time.RFC3339), "--to", from.Add(20*time.Minute).Format(time.RFC3339), "sched-backfill")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, fmt.Sprintf("No time of schedule sched-backfill falls from %s to %s: nothing to backfill.\n", from.Format(time.RFC3339), from.Add(20*time.Minute).Format(time.RFC3339)), out)

	code, _, errOut = scheduleCLI(t, "backfill", "--from", to.Format(time.RFC3339), "--to", from.Format(time.RFC3339), "sched-backfill")
	require.Equal(t, 2, code)
	require.Equal(t, "schedule backfill: --from must be before --to\n", errOut)
}

// Acceptance 4: apply is idempotent; an edited cron updates the schedule;
// --prune deletes the schedules whose files are gone.
func TestScheduleApply(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	a := writePlaybook(t, dir, "a.yaml", `metadata: {name: apply-a}
schedule: {cron: "0 2 * * *", timezone: Europe/Berlin}
workflow:
  - step: x
`)
	b := writePlaybook(t, dir, "b.yaml", `metadata: {name: apply-b}
schedule: {id: apply-b-hourly, every: 1h, overlap: buffer-one}
workflow:
  - step: x
`)
	writePlaybook(t, dir, "sub.yaml", "metadata: {name: no-schedule}\nworkflow:\n  - step: x\n")
	defer scheduleCLI(t, "delete", "apply-a")
	defer scheduleCLI(t, "delete", "apply-b-hourly")

	code, out, errOut := scheduleCLI(t, "apply", "--prune", dir)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, a+": schedule apply-a created (cron 0 2 * * * (Europe/Berlin))\n"+
		b+": schedule apply-b-hourly created (every 1h0m0s)\n", out)
	v := describeSchedule(t, "apply-a")
	require.Equal(t, []string{"cron 0 2 * * * (Europe/Berlin)"}, v.When)
	require.Equal(t, a, v.AppliedFrom)
	require.Equal(t, "buffer-one", describeSchedule(t, "apply-b-hourly").Overlap)

	updatedAt := func(id string) time.Time {
		d, err := tc.ScheduleClient().GetHandle(context.Background(), id).Describe(context.Background())
		require.NoError(t, err)
		return d.Info.LastUpdateAt
	}
	before := updatedAt("apply-a")
	code, out, errOut = scheduleCLI(t, "apply", a, b)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, a+": schedule apply-a unchanged\n"+b+": schedule apply-b-hourly unchanged\n", out)
	require.Equal(t, before, updatedAt("apply-a"), "the second apply changed nothing")

	writePlaybook(t, dir, "a.yaml", `metadata: {name: apply-a}
schedule: {cron: "30 3 * * *", timezone: Europe/Berlin}
workflow:
  - step: x
`)
	code, out, errOut = scheduleCLI(t, "apply", a)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, a+": schedule apply-a updated (when, playbook); it takes effect from the next run\n", out)
	require.Equal(t, []string{"cron 30 3 * * * (Europe/Berlin)"}, describeSchedule(t, "apply-a").When)
	next := describeSchedule(t, "apply-a").NextRuns[0].In(mustLocation(t, "Europe/Berlin"))
	require.Equal(t, "03:30", next.Format("15:04"))

	pruneGone(t, dir, a, "apply-a", b, "apply-b-hourly")
	describeSchedule(t, "apply-a")
}

// pruneGone removes gone, the file schedule goneID was applied from, and
// checks that `apply --prune dir` deletes that schedule and leaves kept's,
// keptID, unchanged.
func pruneGone(t *testing.T, dir, kept, keptID, gone, goneID string) {
	t.Helper()
	require.NoError(t, os.Remove(gone))
	waitFor(t, "visibility to list "+goneID, func() bool {
		_, out, _ := scheduleCLI(t, "list")
		return strings.Contains(out, goneID)
	})
	code, out, errOut := scheduleCLI(t, "apply", "--prune", dir)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, kept+": schedule "+keptID+" unchanged\n"+gone+": gone; schedule "+goneID+" deleted\n", out)
	requireNoSchedule(t, goneID)
}

func mustLocation(t *testing.T, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// Acceptance 5: a malformed cron or an unknown time zone, in the playbook
// or in a flag, is one line and exit 2, and nothing is created.
func TestScheduleInvalidInputCreatesNothing(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	bad := writePlaybook(t, dir, "bad.yaml", "metadata: {name: bad-cron}\nschedule:\n  cron: \"0 2 * *\"\nworkflow:\n  - step: x\n")
	badTZ := writePlaybook(t, dir, "tz.yaml", "metadata: {name: bad-tz}\nschedule:\n  cron: \"@daily\"\n  timezone: Mars/Olympus\nworkflow:\n  - step: x\n")
	good := writePlaybook(t, dir, "good.yaml", "metadata: {name: good-one}\nschedule: {every: 1h}\nworkflow:\n  - step: x\n")

	code, out, errOut := scheduleCLI(t, "create", bad)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, bad+`:3: schedule.cron "0 2 * *": has 4 fields; write 5 (minute hour day-of-month month day-of-week), 6 (plus year) or 7 (second first)`+"\n", errOut)
	requireNoSchedule(t, "bad-cron")

	code, _, errOut = cli(t, "validate", badTZ)
	require.Equal(t, 2, code)
	require.Equal(t, badTZ+`:4: schedule.timezone: unknown time zone "Mars/Olympus" (write an IANA name such as Europe/Berlin)`+"\n", errOut)

	code, _, errOut = scheduleCLI(t, "apply", good, badTZ)
	require.Equal(t, 2, code)
	require.Equal(t, badTZ+`:4: schedule.timezone: unknown time zone "Mars/Olympus" (write an IANA name such as Europe/Berlin)`+"\n", errOut)
	requireNoSchedule(t, "good-one")
	requireNoSchedule(t, "bad-tz")

	code, _, errOut = scheduleCLI(t, "create", "--id", "flag-cron", "--cron", "0 25 * * *", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, `schedule create: --cron "0 25 * * *": hour "25": 25 is out of range 0-23`+"\n", errOut)
	code, _, errOut = scheduleCLI(t, "create", "--id", "flag-cron", "--cron", "@daily", "--timezone", "Mars/Olympus", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, `schedule create: --timezone: unknown time zone "Mars/Olympus" (write an IANA name such as Europe/Berlin)`+"\n", errOut)
	code, _, errOut = scheduleCLI(t, "create", "--id", "flag-cron", "--every", "1h", "--set", "whom=x", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, `schedule create: ../playbooks/hello.yaml: workload key "whom" is not declared (declared: who)`+"\n", errOut)
	badWorkload := writePlaybook(t, dir, "workload.yaml", "metadata: {name: bad-workload}\nschedule:\n  every: 1h\n  workload: {rowz: 5}\nworkload: {rows: 1}\nworkflow:\n  - step: x\n")
	code, _, errOut = scheduleCLI(t, "create", badWorkload)
	require.Equal(t, 2, code)
	require.Equal(t, badWorkload+`:4: schedule.workload key "rowz" is not declared (declared: rows)`+"\n", errOut)
	requireNoSchedule(t, "bad-workload")
	code, _, errOut = scheduleCLI(t, "create", "--id", "flag-cron", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, "schedule create: say when runs start: --cron EXPR or --every DURATION (or a schedule: key in the playbook)\n", errOut)
	requireNoSchedule(t, "flag-cron")
	// A schedule's ID begins its runs' IDs, which name log directories: it
	// follows the run ID rule (#29).
	code, _, errOut = scheduleCLI(t, "create", "--id", "../..", "--every", "1h", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, `schedule create: --id "../.." contains '/': it names a directory, so it cannot hold a path separator`+"\n", errOut)
	requireNoSchedule(t, "../..")
}

// The Web UI's Schedules page lists a playbook's schedule, through the UI
// server's HTTP API.
func TestScheduleOnWebUI(t *testing.T) {
	parallel(t)
	port := freePort(t)
	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host: "127.0.0.1", Port: port, TemporalGRPCAddress: server.Address, EnableUI: true, HideLogs: true, DisableNewsFetch: true,
	}))
	go func() { _ = ui.Start() }()
	defer ui.Stop()

	code, _, errOut := scheduleCLI(t, "create", "--id", "sched-ui", "--cron", "0 2 * * *", "--paused", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, errOut)
	defer scheduleCLI(t, "delete", "sched-ui")

	waitFor(t, "the UI to list the schedule", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/namespaces/default/schedules", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			Schedules []struct {
				ScheduleID string `json:"scheduleId"`
				Info       struct {
					WorkflowType struct {
						Name string `json:"name"`
					} `json:"workflowType"`
				} `json:"info"`
			} `json:"schedules"`
		}
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&body) != nil {
			return false
		}
		for _, s := range body.Schedules {
			if s.ScheduleID == "sched-ui" {
				require.Equal(t, "Playbook", s.Info.WorkflowType.Name)
				return true
			}
		}
		return false
	})

	code, out, errOut := scheduleCLI(t, "list", "--json")
	require.Equal(t, 0, code, errOut)
	var entries []commands.ScheduleEntry
	require.NoError(t, json.Unmarshal([]byte(out), &entries))
	var found bool
	for _, e := range entries {
		if e.ID == "sched-ui" {
			found = true
			require.Equal(t, "hello", e.Playbook)
			require.True(t, e.Paused)
			require.Equal(t, []string{"cron 0 2 * * *"}, e.When)
		}
	}
	require.True(t, found, "schedule list shows sched-ui: %s", out)
}

// update changes when a schedule runs and, with FILE, the playbook it
// runs, keeping what it is not told to change (here: paused).
func TestScheduleUpdate(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "tick.yaml", quickPlaybook)
	code, _, errOut := scheduleCLI(t, "create", "--id", "sched-update", "--cron", "0 2 * * *", "--paused", "--set", "n=3", file)
	require.Equal(t, 0, code, errOut)
	defer scheduleCLI(t, "delete", "sched-update")

	code, out, errOut := scheduleCLI(t, "update", "--every", "1h", "--overlap", "buffer-all", "sched-update", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Updated schedule sched-update: the change takes effect from the next run; runs already started keep the playbook they started with.\n", out)
	v := describeSchedule(t, "sched-update")
	require.Equal(t, []string{"every 1h0m0s"}, v.When)
	require.Equal(t, "buffer-all", v.Overlap)
	require.Equal(t, "hello", v.Playbook)
	require.Equal(t, map[string]any{"n": float64(3)}, v.Workload, "the workload overrides stay")
	require.True(t, v.Paused)

	code, _, errOut = scheduleCLI(t, "update", "--cron", "0 2 * *", "sched-update")
	require.Equal(t, 2, code)
	require.Equal(t, `schedule update: --cron "0 2 * *": has 4 fields; write 5 (minute hour day-of-month month day-of-week), 6 (plus year) or 7 (second first)`+"\n", errOut)
	require.Equal(t, []string{"every 1h0m0s"}, describeSchedule(t, "sched-update").When)

	// --set is checked against the playbook the schedule runs now; the
	// key it kept from the playbook before is left as it is.
	code, _, errOut = scheduleCLI(t, "update", "--set", "whom=x", "sched-update")
	require.Equal(t, 2, code)
	require.Equal(t, `schedule update: ../playbooks/hello.yaml: workload key "whom" is not declared (declared: who)`+"\n", errOut)
	code, _, errOut = scheduleCLI(t, "update", "--set", "who=x", "sched-update")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, map[string]any{"n": float64(3), "who": "x"}, describeSchedule(t, "sched-update").Workload)
}

// The Scheduling guide's block runs as printed (with --address added),
// from the repository's root.
func TestReadmeSchedulingBlock(t *testing.T) {
	// Serial: t.Chdir (the docs run as printed) (see parallel).
	readme, err := os.ReadFile("../docs/SCHEDULING.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "# Scheduling\n")
	require.True(t, ok)
	_, block, ok := strings.Cut(section, "```sh\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")
	t.Chdir("..")
	defer scheduleCLI(t, "delete", "nightly-etl")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	require.Len(t, lines, 12)
	for _, line := range lines {
		words := shellWords(t, line)
		require.Equal(t, "playbook", words[0], line)
		at := 2 // after `list`, or after `schedule VERB`
		if words[1] == "schedule" {
			at = 3
		}
		args := append(append(append([]string{}, words[1:at]...), "--address", server.Address), words[at:]...)
		code, out, errOut := cli(t, args...)
		require.Equal(t, 0, code, "%s\n%s%s", line, out, errOut)
		if words[2] == "backfill" {
			waitFor(t, "the backfilled runs", func() bool { return describeSchedule(t, "hello-every-minute").Actions >= 4 })
		}
	}
	requireNoSchedule(t, "hello-every-minute")
	require.Equal(t, []string{"cron 0 2 * * * (Europe/Berlin)"}, describeSchedule(t, "nightly-etl").When)
}

// apply never takes over a schedule that does not run a playbook.
func TestScheduleApplyLeavesOthersAlone(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	_, err := tc.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:     "not-a-playbook",
		Spec:   client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}}},
		Action: &client.ScheduleWorkflowAction{Workflow: "SomethingElse", TaskQueue: "elsewhere"},
		Paused: true,
	})
	require.NoError(t, err)
	defer scheduleCLI(t, "delete", "not-a-playbook")
	file := writePlaybook(t, t.TempDir(), "x.yaml", "metadata: {name: x}\nschedule: {id: not-a-playbook, every: 2h}\nworkflow:\n  - step: x\n")
	code, _, errOut := scheduleCLI(t, "apply", file)
	require.Equal(t, 1, code)
	require.Equal(t, "schedule apply: "+file+": schedule not-a-playbook exists and was not made by playbook (its action does not start a playbook run): left alone\n", errOut)
	d, err := tc.ScheduleClient().GetHandle(ctx, "not-a-playbook").Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, "SomethingElse", d.Schedule.Action.(*client.ScheduleWorkflowAction).Workflow)
}
