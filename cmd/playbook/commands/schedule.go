package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	// Time zones are checked where the playbook is submitted, whatever the
	// machine has installed.
	_ "time/tzdata"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"

	"playbook/internal/playtest"
	"playbook/runs"
)

// ScheduleEntry is one line of `schedule list`.
type ScheduleEntry = runs.ScheduleEntry

// defaultBackfill is backfill's overlap policy: every run it asks for starts.
const defaultBackfill = "buffer-all"

const scheduleDefaults = "Defaults, safe for batch work: --overlap skip (a run still going when the next is due\n" +
	"means the next is skipped, never doubled) and --catchup-window 1h (after an outage, only\n" +
	"runs at most an hour late still start)."

func (a *app) scheduleCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "schedule",
		Short: "run playbooks by themselves, on Temporal Schedules (create, list, describe, pause, unpause, trigger, backfill, update, delete, apply)",
		Long: "A schedule's runs start the playbook as frozen when the schedule was created or last updated,\n" +
			"on the playbook task queue; their workflow IDs are the schedule ID followed by the scheduled time,\n" +
			"and `playbook list --schedule ID` lists them. A worker must poll the task queue (`playbook dev`\n" +
			"runs one). " + scheduleDefaults,
	},
		a.scheduleCreateCommand(),
		a.scheduleListCommand(),
		a.scheduleTriggersCommand(),
		a.scheduleDescribeCommand(),
		a.schedulePauseCommand(true),
		a.schedulePauseCommand(false),
		a.scheduleTriggerCommand(),
		a.scheduleBackfillCommand(),
		a.scheduleUpdateCommand(),
		a.scheduleDeleteCommand(),
		a.scheduleApplyCommand(),
	)
}

func (a *app) scheduleCreateCommand() *cobra.Command {
	var (
		id, note string
		paused   bool
		flags    scheduleFlags
	)
	cmd := &cobra.Command{
		Use:   "create FILE",
		Short: "create a schedule that runs a playbook",
		Long: "Validates the playbook (exit 2 on a bad one, nothing created) and freezes it, sub-playbooks\n" +
			"included, as `run` does. Flags override the playbook's schedule: key, if it has one.\n" + scheduleDefaults,
		Args: exactArgs(1, "exactly one playbook file"),
		RunE: action(func(c *call) error {
			w, err := runs.ScheduleFromFile(c.args[0], a.conn.taskQueue)
			if err != nil {
				return invalidFile(err)
			}
			if id != "" {
				// Its runs' IDs are the schedule's and a time: they name log
				// directories, as a run's --id does.
				if err := checkRunID(id); err != nil {
					return invalid(err)
				}
				w.ID = id
			}
			if err := applyFlags(w, &flags); err != nil {
				return invalid(err)
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				if err := runs.CreateSchedule(c.ctx, conn.client, conn.namespace, w, runs.ScheduleCreate{Note: note, Paused: paused}, conn.checkCodec); err != nil {
					return fmt.Errorf("cannot create %s: %w", w.ID, err)
				}
				fmt.Fprintf(c.stdout, "Created schedule %s: playbook %s, %s, overlap %s.\n", w.ID, w.Playbook.Name, w.When(), w.Overlap)
				return nil
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&id, "id", "", "schedule `ID` (default: schedule.id, else the playbook's metadata.name)")
	fs.StringVar(&note, "note", "", "a note shown with the schedule (`TEXT`)")
	fs.BoolVar(&paused, "paused", false, "create it paused")
	flags.register(fs)
	return cmd
}

func (a *app) scheduleListCommand() *cobra.Command {
	var out printer
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the schedules that run playbooks",
		Args:  noArgs,
		RunE: a.connected(func(c *call, conn *connection) error {
			entries, err := runs.ListSchedules(c.ctx, conn.client)
			if err != nil {
				return err
			}
			return out.print(c.stdout, entries, func(w io.Writer) { printSchedules(w, entries) })
		}),
	}
	out.flag(cmd.Flags(), "print the schedules as JSON")
	return cmd
}

func (a *app) scheduleTriggersCommand() *cobra.Command {
	var out printer
	cmd := &cobra.Command{
		Use:   "triggers",
		Short: "list the triggers schedule apply registered: each one's playbook, what starts a run and its file",
		Args:  noArgs,
		RunE: a.connected(func(c *call, conn *connection) error {
			entries, err := runs.ListTriggers(c.ctx, conn.client, conn.namespace)
			if err != nil {
				return err
			}
			return out.print(c.stdout, entries, func(w io.Writer) {
				if len(entries) == 0 {
					fmt.Fprintln(w, "No trigger is registered (playbook schedule apply FILE registers a playbook's triggers:).")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TRIGGER\tPLAYBOOK\tSTARTS A RUN ON\tFILE")
				for _, e := range entries {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, orDash(e.Playbook), e.What, orDash(e.File))
				}
				tw.Flush()
			})
		}),
	}
	out.flag(cmd.Flags(), "print the triggers as JSON")
	return cmd
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printSchedules(w io.Writer, entries []ScheduleEntry) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULE\tPLAYBOOK\tWHEN\tSTATE\tNEXT RUN")
	for _, e := range entries {
		state, next := "active", "-"
		if e.Paused {
			state = "paused"
		}
		if len(e.NextRuns) > 0 && !e.Paused {
			next = e.NextRuns[0].Local().Format(time.DateTime + " MST")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.Playbook, strings.Join(e.When, "; "), state, next)
	}
	tw.Flush()
}

// ScheduleView is what `schedule describe --json` prints.
type ScheduleView struct {
	ID             string         `json:"id"`
	Playbook       string         `json:"playbook,omitempty"`
	File           string         `json:"file,omitempty"`
	TaskQueue      string         `json:"task_queue"`
	Workload       map[string]any `json:"workload,omitempty"`
	When           []string       `json:"when"`
	Jitter         string         `json:"jitter,omitempty"`
	Overlap        string         `json:"overlap"`
	CatchupWindow  string         `json:"catchup_window"`
	PauseOnFailure bool           `json:"pause_on_failure"`
	Paused         bool           `json:"paused"`
	Note           string         `json:"note,omitempty"`
	AppliedFrom    string         `json:"applied_from,omitempty"`
	Actions        int            `json:"actions"`
	SkippedOverlap int            `json:"skipped_overlap"`
	MissedCatchup  int            `json:"missed_catchup_window"`
	NextRuns       []time.Time    `json:"next_runs"`
	Running        []string       `json:"running"`
	RecentRuns     []ScheduledRun `json:"recent_runs"`
}

// ScheduledRun is one of a schedule's recent runs, with its outcome.
type ScheduledRun struct {
	runs.Run
	ScheduledAt time.Time `json:"scheduled_at"`
}

func (a *app) scheduleDescribeCommand() *cobra.Command {
	var out printer
	cmd := &cobra.Command{
		Use:   "describe ID",
		Short: "show a schedule: when it runs, its policies, paused or not and why, next run times, recent runs and their outcome",
		Args:  exactArgs(1, "the schedule ID"),
		RunE: a.connected(func(c *call, conn *connection) error {
			v, err := describeSchedule(c.ctx, conn, c.args[0])
			if err != nil {
				return err
			}
			return out.print(c.stdout, v, func(w io.Writer) { printSchedule(w, v) })
		}),
	}
	out.flag(cmd.Flags(), "print it as JSON")
	return cmd
}

func describeSchedule(ctx context.Context, conn *connection, id string) (*ScheduleView, error) {
	d, err := conn.client.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		return nil, runs.ScheduleError(id, err)
	}
	v := &ScheduleView{ID: id, When: runs.SpecWhen(d.Schedule.Spec), NextRuns: d.Info.NextActionTimes, Running: []string{}, RecentRuns: []ScheduledRun{},
		Actions: d.Info.NumActions, SkippedOverlap: d.Info.NumActionsSkippedOverlap, MissedCatchup: d.Info.NumActionsMissedCatchupWindow}
	if d.Schedule.State != nil && d.Schedule.State.Paused {
		v.NextRuns = []time.Time{} // none runs while it is paused
	}
	if w, err := runs.ScheduleFromDescription(id, d); err == nil {
		v.File, v.TaskQueue, v.Workload = w.Input.File, w.TaskQueue, w.Input.Workload
		if w.Playbook != nil {
			v.Playbook = w.Playbook.Name
		}
	}
	if d.Schedule.Spec != nil && d.Schedule.Spec.Jitter != 0 {
		v.Jitter = d.Schedule.Spec.Jitter.String()
	}
	if p := d.Schedule.Policy; p != nil {
		v.Overlap, v.CatchupWindow, v.PauseOnFailure = runs.OverlapName(p.Overlap), p.CatchupWindow.String(), p.PauseOnFailure
	}
	if s := d.Schedule.State; s != nil {
		v.Paused, v.Note = s.Paused, s.Note
	}
	if p := d.Memo.GetFields()[runs.MemoApplied]; p != nil {
		// Encrypted under a codec key, as the client that made it wrote it.
		if dc, err := runs.PayloadConverter(); err == nil {
			_ = dc.FromPayload(p, &v.AppliedFrom)
		}
	}
	for _, r := range d.Info.RunningWorkflows {
		v.Running = append(v.Running, r.WorkflowID)
	}
	for _, a := range d.Info.RecentActions {
		r := ScheduledRun{ScheduledAt: a.ScheduleTime, Run: runs.Run{Start: a.ActualTime, FailedSteps: []string{}}}
		if res := a.StartWorkflowResult; res != nil {
			r.WorkflowID, r.RunID = res.WorkflowID, res.FirstExecutionRunID
			if wd, err := conn.client.DescribeWorkflowExecution(ctx, res.WorkflowID, res.FirstExecutionRunID); err == nil {
				r.Run = runs.RunOf(wd.GetWorkflowExecutionInfo())
				if r.Status == "" {
					r.Status = strings.ToLower(strings.TrimPrefix(wd.GetWorkflowExecutionInfo().GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
				}
			}
		}
		v.RecentRuns = append(v.RecentRuns, r)
	}
	return v, nil
}

func printSchedule(out io.Writer, v *ScheduleView) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	state := "active"
	if v.Paused {
		state = "paused"
	}
	if v.Note != "" {
		state += ": " + v.Note
	}
	rows := [][2]string{
		{"Schedule", v.ID},
		{"Playbook", v.Playbook + " (" + v.File + ")"},
		{"When", strings.Join(v.When, "; ")},
		{"Overlap", v.Overlap},
		{"Catch-up window", v.CatchupWindow},
		{"State", state},
		{"Runs started", fmt.Sprintf("%d (%d skipped for overlap, %d missed the catch-up window)", v.Actions, v.SkippedOverlap, v.MissedCatchup)},
	}
	if v.Jitter != "" {
		rows = append(rows, [2]string{"Jitter", v.Jitter})
	}
	if v.PauseOnFailure {
		rows = append(rows, [2]string{"Pause on failure", "yes"})
	}
	if len(v.Workload) > 0 {
		b, _ := json.Marshal(v.Workload)
		rows = append(rows, [2]string{"Workload overrides", string(b)})
	}
	if v.AppliedFrom != "" {
		rows = append(rows, [2]string{"Applied from", v.AppliedFrom})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	tw.Flush()
	fmt.Fprintln(out, "\nNext runs:")
	if v.Paused || len(v.NextRuns) == 0 {
		fmt.Fprintln(out, "  none while paused")
	}
	for i, t := range v.NextRuns {
		if i == 5 || v.Paused {
			break
		}
		fmt.Fprintf(out, "  %s\n", t.Local().Format(time.DateTime+" MST"))
	}
	fmt.Fprintln(out, "\nRecent runs:")
	if len(v.RecentRuns) == 0 {
		fmt.Fprintln(out, "  none yet")
		return
	}
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  RUN\tSCHEDULED FOR\tSTATUS\tFAILED STEPS")
	for _, r := range v.RecentRuns {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.WorkflowID, r.ScheduledAt.Local().Format(time.DateTime), r.Status, strings.Join(r.FailedSteps, ","))
	}
	tw.Flush()
}

// schedulePauseCommand is `pause` (pause true) or `unpause`.
func (a *app) schedulePauseCommand(pause bool) *cobra.Command {
	name, done, usage := "unpause", "Unpaused", "let a paused schedule start runs again (missed times within the catch-up window start)"
	if pause {
		name, done, usage = "pause", "Paused", "stop a schedule from starting runs (runs already going go on)"
	}
	var note string
	cmd := &cobra.Command{
		Use:   name + " ID",
		Short: usage,
		Args:  exactArgs(1, "the schedule ID"),
		RunE: action(func(c *call) error {
			return a.onSchedule(c, done, func(ctx context.Context, h client.ScheduleHandle) error {
				if pause {
					return h.Pause(ctx, client.SchedulePauseOptions{Note: note})
				}
				return h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: note})
			})
		}),
	}
	cmd.Flags().StringVar(&note, "note", name+"d with playbook schedule "+name, "why, shown by describe (`TEXT`)")
	return cmd
}

func (a *app) scheduleTriggerCommand() *cobra.Command {
	var overlap string
	cmd := &cobra.Command{
		Use:   "trigger ID",
		Short: "start one run of a schedule now, paused or not",
		Long: "The schedule's overlap policy applies: under skip, nothing starts while a run of the\n" +
			"schedule is still going; --overlap allow-all starts one anyway.",
		Args: exactArgs(1, "the schedule ID"),
		RunE: action(func(c *call) error {
			var policy enumspb.ScheduleOverlapPolicy
			if overlap != "" {
				var err error
				if policy, err = runs.OverlapPolicy(overlap); err != nil {
					return invalidf("--overlap: %v", err)
				}
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				id := c.args[0]
				h := conn.client.ScheduleClient().GetHandle(c.ctx, id)
				before, err := h.Describe(c.ctx)
				if err != nil {
					return runs.ScheduleError(id, err)
				}
				if err := h.Trigger(c.ctx, client.ScheduleTriggerOptions{Overlap: policy}); err != nil {
					return runs.ScheduleError(id, err)
				}
				fmt.Fprintf(c.stdout, "Triggered schedule %s: %s\n", id, triggerOutcome(c.ctx, h, before))
				return nil
			})
		}),
	}
	cmd.Flags().StringVar(&overlap, "overlap", "", "overlap `POLICY` for this run (default: the schedule's)")
	return cmd
}

func (a *app) scheduleDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "delete a schedule (its runs, finished or going, stay)",
		Args:  exactArgs(1, "the schedule ID"),
		RunE: action(func(c *call) error {
			return a.onSchedule(c, "Deleted", func(ctx context.Context, h client.ScheduleHandle) error { return h.Delete(ctx) })
		}),
	}
}

// onSchedule does one thing to the schedule the argument names and says
// so: "<done> schedule ID."
func (a *app) onSchedule(c *call, done string, do func(context.Context, client.ScheduleHandle) error) error {
	return a.withConnection(c, func(c *call, conn *connection) error {
		id := c.args[0]
		if err := do(c.ctx, conn.client.ScheduleClient().GetHandle(c.ctx, id)); err != nil {
			return runs.ScheduleError(id, err)
		}
		fmt.Fprintf(c.stdout, "%s schedule %s.\n", done, id)
		return nil
	})
}

// triggerWait bounds how long `schedule trigger` waits to see what its
// trigger did: the schedule acts on it after the call returns.
const triggerWait = 10 * time.Second

// triggerOutcome says what a trigger did, once the schedule shows it: the
// run it started, or that its overlap policy skipped it; before is the
// schedule before the trigger.
func triggerOutcome(ctx context.Context, h client.ScheduleHandle, before *client.ScheduleDescription) string {
	known := map[string]bool{}
	for _, a := range before.Info.RecentActions {
		if r := a.StartWorkflowResult; r != nil {
			known[r.WorkflowID] = true
		}
	}
	deadline := time.Now().Add(triggerWait)
	for {
		d, err := h.Describe(ctx)
		switch {
		case err != nil:
		case d.Info.NumActions > before.Info.NumActions:
			// The newest run it had not started before (a time of the
			// schedule falling in these seconds would start one too).
			for i := len(d.Info.RecentActions) - 1; i >= 0; i-- {
				if r := d.Info.RecentActions[i].StartWorkflowResult; r != nil && !known[r.WorkflowID] {
					return "started run " + r.WorkflowID + "."
				}
			}
			return "started a run."
		case d.Info.NumActionsSkippedOverlap > before.Info.NumActionsSkippedOverlap:
			return "no run started: a run of the schedule is still going, and its overlap policy skips one then (--overlap allow-all starts one anyway)."
		}
		if time.Now().After(deadline) {
			return "no run started yet: under its overlap policy the schedule may hold it until its running run ends (`playbook schedule describe " + h.GetID() + "` shows its runs)."
		}
		select {
		case <-ctx.Done():
			return "no run seen yet (`playbook schedule describe " + h.GetID() + "` shows its runs)."
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// maxMatchingTimes is the most times Temporal lists for a schedule in one
// answer (ListScheduleMatchingTimes).
const maxMatchingTimes = 1000

// backfillTimes are the times of schedule id a backfill from start to end
// starts runs for: start and end included, as Temporal's backfill takes
// them (the listing takes the times after its start).
func backfillTimes(ctx context.Context, conn *connection, id string, start, end time.Time) ([]time.Time, error) {
	resp, err := conn.client.WorkflowService().ListScheduleMatchingTimes(ctx, &workflowservice.ListScheduleMatchingTimesRequest{
		Namespace: conn.namespace, ScheduleId: id, StartTime: timestamppb.New(start.Add(-time.Millisecond)), EndTime: timestamppb.New(end)})
	if err != nil {
		return nil, err
	}
	var times []time.Time
	for _, t := range resp.GetStartTime() {
		times = append(times, t.AsTime().UTC())
	}
	return times, nil
}

func (a *app) scheduleBackfillCommand() *cobra.Command {
	var (
		from, to rfc3339
		overlap  string
	)
	cmd := &cobra.Command{
		Use:   "backfill ID",
		Short: "start the runs a schedule would have started between two past times",
		Long: "Times are RFC 3339 (2026-11-20T02:00:00Z, 2026-11-20T02:00:00+01:00). The default overlap\n" +
			"for a backfill is buffer-all, so its runs go one after another: under the schedule's skip, a\n" +
			"backfill would start one run and drop the rest. Backfills start even while the schedule is paused.",
		Args: exactArgs(1, "the schedule ID"),
		RunE: action(func(c *call) error {
			start, end := time.Time(from), time.Time(to)
			if !start.Before(end) {
				return invalidf("--from must be before --to")
			}
			policy, err := runs.OverlapPolicy(overlap)
			if err != nil {
				return invalidf("--overlap: %v", err)
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				id := c.args[0]
				times, err := backfillTimes(c.ctx, conn, id, start, end)
				if err != nil {
					return runs.ScheduleError(id, err)
				}
				if len(times) == 0 {
					fmt.Fprintf(c.stdout, "No time of schedule %s falls from %s to %s: nothing to backfill.\n", id, start.Format(time.RFC3339), end.Format(time.RFC3339))
					return nil
				}
				h := conn.client.ScheduleClient().GetHandle(c.ctx, id)
				if err := h.Backfill(c.ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{Start: start, End: end, Overlap: policy}}}); err != nil {
					return runs.ScheduleError(id, err)
				}
				count := countOf(len(times), "run")
				if len(times) == maxMatchingTimes {
					count = "at least " + count
				}
				fmt.Fprintf(c.stdout, "Backfilling schedule %s: %s, for its times from %s to %s (overlap %s).\n", id, count,
					times[0].Format(time.RFC3339), times[len(times)-1].Format(time.RFC3339), runs.OverlapName(policy))
				return nil
			})
		}),
	}
	fs := cmd.Flags()
	fs.Var(&from, "from", "start of the window (`TIME`)")
	fs.Var(&to, "to", "end of the window (`TIME`)")
	fs.StringVar(&overlap, "overlap", defaultBackfill, "overlap `POLICY` for the backfilled runs")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// rfc3339 is a time flag: 2026-11-20T02:00:00Z, or a date, 2026-11-20,
// which is its midnight UTC. The zero time (0001-01-01T00:00:00Z) is
// refused: it is what a flag not given holds.
type rfc3339 time.Time

func (t *rfc3339) Set(s string) error {
	parsed, err := time.Parse(time.RFC3339, s)
	if err != nil {
		var dateErr error
		if parsed, dateErr = time.Parse(time.DateOnly, s); dateErr != nil {
			return fmt.Errorf("give RFC 3339, e.g. 2026-03-01T00:00:00Z, or a date, 2026-03-01 (midnight UTC)")
		}
	}
	if parsed.IsZero() {
		return fmt.Errorf("%s is the zero time, which stands for no time given: give the time itself", s)
	}
	*t = rfc3339(parsed)
	return nil
}

func (t *rfc3339) String() string {
	if time.Time(*t).IsZero() {
		return ""
	}
	return time.Time(*t).Format(time.RFC3339)
}

func (t *rfc3339) Type() string { return "time" }

func (a *app) scheduleUpdateCommand() *cobra.Command {
	var flags scheduleFlags
	cmd := &cobra.Command{
		Use:   "update ID [FILE]",
		Short: "change a schedule: a new version of its playbook (FILE), and/or when and how it runs (flags)",
		Long: "With FILE, the playbook is validated and frozen again, as at create. Changes take effect\n" +
			"from the next run; runs already started keep the playbook they started with. Flags not\n" +
			"given keep their value; --set and --input go on top of the workload overrides the schedule has.",
		Args: oneOrTwoArgs("the schedule ID and, to change its playbook, the playbook file"),
		RunE: action(func(c *call) error {
			id := c.args[0]
			var fresh *runs.Schedule
			if len(c.args) == 2 {
				var err error
				if fresh, err = runs.ScheduleFromFile(c.args[1], a.conn.taskQueue); err != nil {
					return invalidFile(err)
				}
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				if err := conn.checkCodec(c.ctx, a.conn.taskQueue); err != nil {
					return err
				}
				h := conn.client.ScheduleClient().GetHandle(c.ctx, id)
				var flagErr error
				err := h.Update(c.ctx, client.ScheduleUpdateOptions{DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
					w, err := runs.ScheduleFromDescription(id, &u.Description)
					if err != nil && !(errors.Is(err, runs.ErrForeignCalendar) && flags.setsWhen()) {
						return nil, fmt.Errorf("schedule %s %v", id, err)
					}
					if fresh != nil {
						w.Playbook, w.Input.File, w.Input.BaseDir, w.Input.Source, w.Input.Files = fresh.Playbook, fresh.Input.File, fresh.Input.BaseDir, fresh.Input.Source, fresh.Input.Files
					}
					if flagErr = applyFlags(w, &flags); flagErr != nil {
						return nil, flagErr
					}
					return w.Update(runs.Indexed(c.ctx, conn.client, conn.namespace), u.Description.Schedule.State), nil
				}})
				if flagErr != nil {
					return invalid(flagErr)
				}
				if err != nil {
					return runs.ScheduleError(id, err)
				}
				fmt.Fprintf(c.stdout, "Updated schedule %s: the change takes effect from the next run; runs already started keep the playbook they started with.\n", id)
				return nil
			})
		}),
	}
	flags.register(cmd.Flags())
	return cmd
}

func (a *app) scheduleApplyCommand() *cobra.Command {
	var prune string
	cmd := &cobra.Command{
		Use:   "apply [FILE...]",
		Short: "create or update the schedules and triggers playbooks carry in their schedule: and triggers: keys, idempotently",
		Long: "Each playbook's schedule: key says when it runs; the schedule ID is schedule.id, else\n" +
			"metadata.name. A schedule that matches its file is left alone; one that differs is updated\n" +
			"(its paused state kept); a missing one is created and marked (a memo) as made by apply.\n" +
			"With --prune DIR and no FILE, every playbook under DIR with a schedule: or triggers: key is\n" +
			"applied, and the schedules and triggers apply made from files under DIR that are gone, or\n" +
			"no longer carry them, are deleted. Every file is validated first: one bad file (exit 2)\n" +
			"changes nothing. A playbook's triggers: (webhook, after) are registered too, each as a\n" +
			"workflow of its own (docs/SCHEDULING.md#triggers); a registered one is updated in place,\n" +
			"a deleted one's workflow is terminated.\n" +
			scheduleDefaults,
		RunE: action(func(c *call) error {
			files := c.args
			explicit := len(files) > 0
			if !explicit && prune == "" {
				return invalidf("give playbook files, or --prune DIR")
			}
			if !explicit {
				var err error
				if files, err = playbookFiles(prune); err != nil {
					return invalidf("--prune: %v", err)
				}
			}
			wanted, err := runs.LoadApplied(files, explicit, a.conn.taskQueue)
			if err != nil {
				return invalidFile(err)
			}
			triggers, err := runs.LoadTriggers(files, a.conn.taskQueue)
			if err != nil {
				return invalidFile(err)
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				for _, w := range wanted {
					outcome, err := runs.ApplySchedule(c.ctx, conn.client, conn.namespace, w, conn.checkCodec)
					if err != nil {
						return fmt.Errorf("%s: %w", w.Input.File, err)
					}
					fmt.Fprintf(c.stdout, "%s: schedule %s %s\n", w.Input.File, w.ID, outcome)
				}
				for _, r := range triggers {
					outcome, err := runs.ApplyTrigger(c.ctx, conn.client, r)
					if err != nil {
						return fmt.Errorf("%s: %w", r.Run.File, err)
					}
					fmt.Fprintf(c.stdout, "%s: trigger %s %s\n", r.Run.File, runs.TriggerWhat(r), outcome)
					if runs.UpstreamUnknown(c.ctx, conn.client, conn.namespace, r) {
						fmt.Fprintf(c.stderr, "warning: %s: no run of playbook %s is known to this namespace: check that it is its metadata.name (the trigger waits for one)\n", r.Run.File, r.Upstream)
					}
				}
				if prune == "" {
					return nil
				}
				pruned, err := runs.PruneSchedules(c.ctx, conn.client, prune, a.conn.taskQueue, wanted)
				if err == nil {
					var more []runs.Pruned
					more, err = runs.PruneTriggers(c.ctx, conn.client, conn.namespace, prune, a.conn.taskQueue, triggers)
					pruned = append(pruned, more...)
				}
				for _, p := range pruned {
					fmt.Fprintf(c.stdout, "%s: %s; %s deleted\n", p.File, p.Why, p.What)
				}
				return err
			})
		}),
	}
	cmd.Flags().StringVar(&prune, "prune", "", "delete the schedules and triggers apply made from files under `DIR` that are gone or no longer carry them")
	return cmd
}

// playbookFiles lists the YAML files under dir, but test files
// (NAME.test.yaml, playbook test's).
func playbookFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) && !strings.HasSuffix(path, playtest.Suffix) {
			files = append(files, path)
		}
		return err
	})
	return files, err
}
