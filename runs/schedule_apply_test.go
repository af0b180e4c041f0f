package runs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func scheduled(name, schedule string) string {
	return "metadata: { name: " + name + " }\nschedule: " + schedule + "\nworkflow:\n  - step: a\n    tool: { kind: noop }\n"
}

// Applying a playbook's schedule: key creates the schedule, marked with
// its file; applying it again changes nothing; a changed file updates
// what changed (and the front end's check has its word first). Pruning
// the directory deletes the schedule whose file is gone and the one whose
// file no longer carries it, and leaves the applied one.
func TestScheduleApplyCreatesUpdatesAndPrunes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	nightly := write("nightly.yaml", scheduled("nightly", "{ every: 24h }"))
	hourly := write("hourly.yaml", scheduled("hourly", "{ every: 1h, overlap: buffer-one }"))
	f := &fakeClient{runs: map[string]*fakeRun{}}
	checked := []string{}
	check := func(_ context.Context, queue string) error { checked = append(checked, queue); return nil }

	wanted, err := LoadApplied([]string{nightly, hourly}, true, "q")
	require.NoError(t, err)
	for _, w := range wanted {
		outcome, err := ApplySchedule(ctx, f, "ns", w, check)
		require.NoError(t, err)
		require.Equal(t, "created (every "+w.Every.String()+")", outcome)
	}
	require.Equal(t, []string{"create nightly", "create hourly"}, f.schedules.done)
	require.Equal(t, []string{"q", "q"}, checked)
	abs, _ := filepath.Abs(nightly)
	require.Equal(t, map[string]any{MemoApplied: abs}, f.schedules.byID["nightly"].memo)
	list, err := ListSchedules(ctx, f)
	require.NoError(t, err)
	require.Equal(t, []ScheduleEntry{
		{ID: "hourly", When: []string{"every 1h0m0s"}, AppliedFrom: filepath.Join(filepath.Dir(abs), "hourly.yaml")},
		{ID: "nightly", When: []string{"every 24h0m0s"}, AppliedFrom: abs},
	}, list)

	w, err := ScheduleFromFile(nightly, "q")
	require.NoError(t, err)
	outcome, err := ApplySchedule(ctx, f, "ns", w, check)
	require.NoError(t, err)
	require.Equal(t, "unchanged", outcome)

	write("nightly.yaml", scheduled("nightly", "{ every: 12h, workload: { rows: 5 } }")+"workload: { rows: 1 }\n")
	w, err = ScheduleFromFile(nightly, "q")
	require.NoError(t, err)
	outcome, err = ApplySchedule(ctx, f, "ns", w, check)
	require.NoError(t, err)
	require.Equal(t, "updated (when, playbook, workload); it takes effect from the next run", outcome)
	d, err := f.ScheduleClient().GetHandle(ctx, "nightly").Describe(ctx)
	require.NoError(t, err)
	have, err := ScheduleFromDescription("nightly", d)
	require.NoError(t, err)
	require.Empty(t, w.Differences(have, false))
	require.Equal(t, "nightly", have.Playbook.Name, "the frozen playbook reads back")
	require.Equal(t, 12*time.Hour, have.Every)
	require.Equal(t, map[string]any{"rows": float64(5)}, have.Input.Workload)

	// hourly.yaml is gone; a third schedule's file no longer carries one.
	require.NoError(t, os.Remove(hourly))
	weekly := write("weekly.yaml", scheduled("weekly", "{ every: 168h }"))
	wanted, err = LoadApplied([]string{weekly}, true, "q")
	require.NoError(t, err)
	_, err = ApplySchedule(ctx, f, "ns", wanted[0], check)
	require.NoError(t, err)
	write("weekly.yaml", "metadata: { name: weekly }\nworkflow:\n  - step: a\n    tool: { kind: noop }\n")
	applied, err := LoadApplied([]string{nightly}, true, "q")
	require.NoError(t, err)
	pruned, err := PruneSchedules(ctx, f, dir, "q", applied)
	require.NoError(t, err)
	require.Equal(t, []Pruned{
		{ID: "hourly", What: "schedule hourly", File: filepath.Join(filepath.Dir(abs), "hourly.yaml"), Why: "gone"},
		{ID: "weekly", What: "schedule weekly", File: filepath.Join(filepath.Dir(abs), "weekly.yaml"), Why: "no longer carries it"},
	}, pruned)
	require.Equal(t, []string{"nightly"}, keys(f.schedules.byID))
}

// A file named to apply must carry a schedule, and two files may not
// claim one ID: every problem is said, and nothing is applied.
func TestScheduleApplyLoadsEveryFileFirst(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "none.yaml")
	require.NoError(t, os.WriteFile(none, []byte("metadata: { name: none }\nworkflow:\n  - step: a\n    tool: { kind: noop }\n"), 0o644))
	one := filepath.Join(dir, "one.yaml")
	two := filepath.Join(dir, "two.yaml")
	require.NoError(t, os.WriteFile(one, []byte(scheduled("one", "{ id: shared, every: 1h }")), 0o644))
	require.NoError(t, os.WriteFile(two, []byte(scheduled("two", "{ id: shared, every: 2h }")), 0o644))
	_, err := LoadApplied([]string{none, one, two}, true, "q")
	require.EqualError(t, err, none+": has neither a schedule: nor a triggers: key: nothing to apply\n"+two+": schedule shared is also "+one+"'s")
	wanted, err := LoadApplied([]string{none, one}, false, "q")
	require.NoError(t, err)
	require.Len(t, wanted, 1, "found under a directory, a file without a schedule is passed over")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
