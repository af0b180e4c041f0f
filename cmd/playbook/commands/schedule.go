package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	// Time zones are checked where the playbook is submitted, whatever the
	// machine has installed.
	_ "time/tzdata"

	"github.com/urfave/cli/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/playbookwf"
)

const scheduleDefaults = "Defaults, safe for batch work: --overlap skip (a run still going when the next is due\n" +
	"means the next is skipped, never doubled) and --catchup-window 1h (after an outage, only\n" +
	"runs at most an hour late still start)."

func scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "run playbooks by themselves, on Temporal Schedules (create, list, describe, pause, unpause, trigger, backfill, update, delete, apply)",
		Description: "A schedule's runs start the playbook as frozen when the schedule was created or last updated,\n" +
			"on the playbook task queue; their workflow IDs are the schedule ID followed by the scheduled time,\n" +
			"and `playbook list --schedule ID` lists them. A worker must poll the task queue (`playbook dev`\n" +
			"runs one). " + scheduleDefaults,
		Subcommands: []*cli.Command{
			scheduleCreateCommand(),
			scheduleListCommand(),
			scheduleDescribeCommand(),
			schedulePauseCommand(true),
			schedulePauseCommand(false),
			scheduleTriggerCommand(),
			scheduleBackfillCommand(),
			scheduleUpdateCommand(),
			scheduleDeleteCommand(),
			scheduleApplyCommand(),
		},
	}
}

// scheduleAction connects to Temporal and runs do; errors from do are
// failures (exit 1) unless they are cli exit errors already.
func scheduleAction(c *cli.Context, do func(conn *connection) error) error {
	conn, err := connect(c, false, c.App.ErrWriter, quietLogs)
	if err != nil {
		return cli.Exit(scheduleCmdName(c)+": "+err.Error(), exitFailed)
	}
	defer conn.Close()
	if err := do(conn); err != nil {
		var coder cli.ExitCoder
		if errors.As(err, &coder) {
			return err
		}
		return cli.Exit(scheduleCmdName(c)+": "+err.Error(), exitFailed)
	}
	return nil
}

func scheduleCmdName(c *cli.Context) string { return "schedule " + c.Command.Name }

func invalid(c *cli.Context, format string, args ...any) error {
	return cli.Exit(scheduleCmdName(c)+": "+fmt.Sprintf(format, args...), exitInvalid)
}

// oneID is the ID argument of the commands that take one schedule.
func oneID(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", invalid(c, "give the schedule ID")
	}
	return c.Args().First(), nil
}

func scheduleCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "create a schedule that runs a playbook",
		ArgsUsage: "FILE",
		Description: "Validates the playbook (exit 2 on a bad one, nothing created) and freezes it, sub-playbooks\n" +
			"included, as `run` does. Flags override the playbook's schedule: key, if it has one.\n" + scheduleDefaults,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "id", Usage: "schedule `ID` (default: schedule.id, else the playbook's metadata.name)"},
			&cli.StringFlag{Name: "note", Usage: "a note shown with the schedule (`TEXT`)"},
			&cli.BoolFlag{Name: "paused", Usage: "create it paused"},
		}, scheduleFlags()...), connectionFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return invalid(c, "give exactly one playbook file")
			}
			w, err := wantedFromFile(c.Args().First(), c.String("task-queue"))
			if err != nil {
				return cli.Exit(err.Error(), exitInvalid)
			}
			if c.IsSet("id") {
				w.ID = c.String("id")
			}
			if err := w.applyFlags(c); err != nil {
				return invalid(c, "%v", err)
			}
			return scheduleAction(c, func(conn *connection) error {
				if err := createSchedule(c.Context, conn, w, c.String("note"), c.Bool("paused"), nil); err != nil {
					return fmt.Errorf("cannot create %s: %w", w.ID, err)
				}
				fmt.Fprintf(c.App.Writer, "Created schedule %s: playbook %s, %s, overlap %s.\n", w.ID, w.pb.Name, w.when(), w.Overlap)
				return nil
			})
		},
	}
}

func createSchedule(ctx context.Context, conn *connection, w *scheduleWanted, note string, paused bool, memo map[string]any) error {
	indexed := conn.indexed(ctx)
	pol := w.policies()
	_, err := conn.client.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:                    w.ID,
		Spec:                  w.spec(),
		Action:                w.action(indexed),
		Overlap:               pol.Overlap,
		CatchupWindow:         pol.CatchupWindow,
		PauseOnFailure:        pol.PauseOnFailure,
		Note:                  note,
		Paused:                paused,
		Memo:                  memo,
		TypedSearchAttributes: w.attributes(indexed),
	})
	return err
}

// ScheduleEntry is one line of `schedule list`.
type ScheduleEntry struct {
	ID          string      `json:"id"`
	Playbook    string      `json:"playbook,omitempty"`
	When        []string    `json:"when"`
	Paused      bool        `json:"paused"`
	Note        string      `json:"note,omitempty"`
	NextRuns    []time.Time `json:"next_runs"`
	AppliedFrom string      `json:"applied_from,omitempty"`
}

func scheduleListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the schedules that run playbooks",
		Flags: append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the schedules as JSON"}}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			return scheduleAction(c, func(conn *connection) error {
				entries, err := listSchedules(c.Context, conn)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, entries)
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "SCHEDULE\tPLAYBOOK\tWHEN\tSTATE\tNEXT RUN")
				for _, e := range entries {
					state, next := "active", "-"
					if e.Paused {
						state = "paused"
					}
					if len(e.NextRuns) > 0 && !e.Paused {
						next = e.NextRuns[0].Local().Format(time.DateTime)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.Playbook, strings.Join(e.When, "; "), state, next)
				}
				tw.Flush()
				return nil
			})
		},
	}
}

// listSchedules lists, through visibility (so a schedule created a moment
// ago may be missing), the schedules whose action starts playbook runs.
func listSchedules(ctx context.Context, conn *connection) ([]ScheduleEntry, error) {
	it, err := conn.client.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, err
	}
	entries := []ScheduleEntry{}
	dc := converter.GetDefaultDataConverter()
	for it.HasNext() {
		s, err := it.Next()
		if err != nil {
			return nil, err
		}
		if s.WorkflowType.Name != playbookwf.WorkflowName {
			continue
		}
		e := ScheduleEntry{ID: s.ID, Paused: s.Paused, Note: s.Note, NextRuns: s.NextActionTimes, When: specWhen(s.Spec)}
		if p := s.SearchAttributes.GetIndexedFields()[playbookwf.AttrPlaybookName.GetName()]; p != nil {
			_ = dc.FromPayload(p, &e.Playbook)
		}
		if p := s.Memo.GetFields()[memoApplied]; p != nil {
			_ = dc.FromPayload(p, &e.AppliedFrom)
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
	return entries, nil
}

// specWhen says when a spec starts runs: the cron expressions playbook
// kept in the calendars' comments, and the intervals.
func specWhen(spec *client.ScheduleSpec) []string {
	when := []string{}
	if spec == nil {
		return when
	}
	tz := ""
	if spec.TimeZoneName != "" {
		tz = " (" + spec.TimeZoneName + ")"
	}
	for _, cal := range spec.Calendars {
		if cal.Comment != "" {
			when = append(when, "cron "+cal.Comment+tz)
		} else {
			when = append(when, "a calendar"+tz)
		}
	}
	for _, iv := range spec.Intervals {
		when = append(when, "every "+iv.Every.String())
	}
	return when
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
	Run
	ScheduledAt time.Time `json:"scheduled_at"`
}

func scheduleDescribeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show a schedule: when it runs, its policies, paused or not and why, next run times, recent runs and their outcome",
		ArgsUsage: "ID",
		Flags:     append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print it as JSON"}}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			id, err := oneID(c)
			if err != nil {
				return err
			}
			return scheduleAction(c, func(conn *connection) error {
				v, err := describeSchedule(c.Context, conn, id)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, v)
				}
				printSchedule(c.App.Writer, v)
				return nil
			})
		},
	}
}

func describeSchedule(ctx context.Context, conn *connection, id string) (*ScheduleView, error) {
	d, err := conn.client.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		return nil, scheduleError(id, err)
	}
	v := &ScheduleView{ID: id, When: specWhen(d.Schedule.Spec), NextRuns: d.Info.NextActionTimes, Running: []string{}, RecentRuns: []ScheduledRun{},
		Actions: d.Info.NumActions, SkippedOverlap: d.Info.NumActionsSkippedOverlap, MissedCatchup: d.Info.NumActionsMissedCatchupWindow}
	if w, err := wantedFromDescription(id, d); err == nil {
		v.File, v.TaskQueue, v.Workload = w.in.File, w.TaskQueue, w.in.Workload
		if w.pb != nil {
			v.Playbook = w.pb.Name
		}
	}
	if d.Schedule.Spec != nil && d.Schedule.Spec.Jitter != 0 {
		v.Jitter = d.Schedule.Spec.Jitter.String()
	}
	if p := d.Schedule.Policy; p != nil {
		v.Overlap, v.CatchupWindow, v.PauseOnFailure = overlapName(p.Overlap), p.CatchupWindow.String(), p.PauseOnFailure
	}
	if s := d.Schedule.State; s != nil {
		v.Paused, v.Note = s.Paused, s.Note
	}
	if p := d.Memo.GetFields()[memoApplied]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &v.AppliedFrom)
	}
	for _, r := range d.Info.RunningWorkflows {
		v.Running = append(v.Running, r.WorkflowID)
	}
	for _, a := range d.Info.RecentActions {
		r := ScheduledRun{ScheduledAt: a.ScheduleTime, Run: Run{Start: a.ActualTime, FailedSteps: []string{}}}
		if res := a.StartWorkflowResult; res != nil {
			r.WorkflowID, r.RunID = res.WorkflowID, res.FirstExecutionRunID
			if wd, err := conn.client.DescribeWorkflowExecution(ctx, res.WorkflowID, res.FirstExecutionRunID); err == nil {
				r.Run = runOf(wd.GetWorkflowExecutionInfo())
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

func printJSON(out io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		fmt.Fprintln(out, string(b))
	}
	return err
}

// scheduleError says "no schedule X" for a schedule that does not exist.
func scheduleError(id string, err error) error {
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return fmt.Errorf("no schedule %q", id)
	}
	return err
}

// schedulePauseCommand is `pause` (pause true) or `unpause`.
func schedulePauseCommand(pause bool) *cli.Command {
	name, done, usage := "unpause", "Unpaused", "let a paused schedule start runs again (missed times within the catch-up window start)"
	if pause {
		name, done, usage = "pause", "Paused", "stop a schedule from starting runs (runs already going go on)"
	}
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "ID",
		Flags:     append([]cli.Flag{&cli.StringFlag{Name: "note", Value: name + "d with playbook schedule " + name, Usage: "why, shown by describe (`TEXT`)"}}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			return onSchedule(c, done, func(ctx context.Context, h client.ScheduleHandle) error {
				if pause {
					return h.Pause(ctx, client.SchedulePauseOptions{Note: c.String("note")})
				}
				return h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: c.String("note")})
			})
		},
	}
}

func scheduleTriggerCommand() *cli.Command {
	return &cli.Command{
		Name:      "trigger",
		Usage:     "start one run of a schedule now, paused or not",
		ArgsUsage: "ID",
		Description: "The schedule's overlap policy applies: under skip, nothing starts while a run of the\n" +
			"schedule is still going; --overlap allow-all starts one anyway.",
		Flags: append([]cli.Flag{&cli.StringFlag{Name: "overlap", Usage: "overlap `POLICY` for this run (default: the schedule's)"}}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			var overlap enumspb.ScheduleOverlapPolicy
			if c.IsSet("overlap") {
				var err error
				if overlap, err = overlapPolicy(c.String("overlap")); err != nil {
					return invalid(c, "--overlap: %v", err)
				}
			}
			return onSchedule(c, "Triggered", func(ctx context.Context, h client.ScheduleHandle) error {
				return h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: overlap})
			})
		},
	}
}

func scheduleDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "delete a schedule (its runs, finished or going, stay)",
		ArgsUsage: "ID",
		Flags:     connectionFlags(),
		Action: func(c *cli.Context) error {
			return onSchedule(c, "Deleted", func(ctx context.Context, h client.ScheduleHandle) error { return h.Delete(ctx) })
		},
	}
}

// onSchedule does one thing to the schedule named by the argument and says
// so: "<done> schedule ID."
func onSchedule(c *cli.Context, done string, do func(context.Context, client.ScheduleHandle) error) error {
	id, err := oneID(c)
	if err != nil {
		return err
	}
	return scheduleAction(c, func(conn *connection) error {
		if err := do(c.Context, conn.client.ScheduleClient().GetHandle(c.Context, id)); err != nil {
			return scheduleError(id, err)
		}
		fmt.Fprintf(c.App.Writer, "%s schedule %s.\n", done, id)
		return nil
	})
}

func scheduleBackfillCommand() *cli.Command {
	return &cli.Command{
		Name:      "backfill",
		Usage:     "start the runs a schedule would have started between two past times",
		ArgsUsage: "ID",
		Description: "Times are RFC 3339 (2026-11-20T02:00:00Z, 2026-11-20T02:00:00+01:00). The default overlap\n" +
			"for a backfill is buffer-all, so its runs go one after another: under the schedule's skip, a\n" +
			"backfill would start one run and drop the rest. Backfills start even while the schedule is paused.",
		Flags: append([]cli.Flag{
			&cli.TimestampFlag{Name: "from", Layout: time.RFC3339, Required: true, Usage: "start of the window (`TIME`)"},
			&cli.TimestampFlag{Name: "to", Layout: time.RFC3339, Required: true, Usage: "end of the window (`TIME`)"},
			&cli.StringFlag{Name: "overlap", Value: defaultBackfill, Usage: "overlap `POLICY` for the backfilled runs"},
		}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			from, to := *c.Timestamp("from"), *c.Timestamp("to")
			if !from.Before(to) {
				return invalid(c, "--from must be before --to")
			}
			overlap, err := overlapPolicy(c.String("overlap"))
			if err != nil {
				return invalid(c, "--overlap: %v", err)
			}
			return onSchedule(c, "Backfilling", func(ctx context.Context, h client.ScheduleHandle) error {
				return h.Backfill(ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{Start: from, End: to, Overlap: overlap}}})
			})
		},
	}
}

func scheduleUpdateCommand() *cli.Command {
	return &cli.Command{
		Name:      "update",
		Usage:     "change a schedule: a new version of its playbook (FILE), and/or when and how it runs (flags)",
		ArgsUsage: "ID [FILE]",
		Description: "With FILE, the playbook is validated and frozen again, as at create. Changes take effect\n" +
			"from the next run; runs already started keep the playbook they started with. Flags not\n" +
			"given keep their value; --set and --input go on top of the workload overrides the schedule has.",
		Flags: append(scheduleFlags(), connectionFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return invalid(c, "give the schedule ID and, to change its playbook, the playbook file")
			}
			id := c.Args().Get(0)
			var fresh *scheduleWanted
			if c.NArg() == 2 {
				var err error
				if fresh, err = wantedFromFile(c.Args().Get(1), c.String("task-queue")); err != nil {
					return cli.Exit(err.Error(), exitInvalid)
				}
			}
			return scheduleAction(c, func(conn *connection) error {
				h := conn.client.ScheduleClient().GetHandle(c.Context, id)
				var flagErr error
				err := h.Update(c.Context, client.ScheduleUpdateOptions{DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
					w, err := wantedFromDescription(id, &u.Description)
					if err != nil && !(errors.Is(err, errForeignCalendar) && (c.IsSet("cron") || c.IsSet("every"))) {
						return nil, fmt.Errorf("schedule %s %v", id, err)
					}
					if fresh != nil {
						w.pb, w.in.File, w.in.BaseDir, w.in.Source, w.in.Files = fresh.pb, fresh.in.File, fresh.in.BaseDir, fresh.in.Source, fresh.in.Files
					}
					if flagErr = w.applyFlags(c); flagErr != nil {
						return nil, flagErr
					}
					return w.schedule(conn.indexed(c.Context), u.Description.Schedule.State), nil
				}})
				if flagErr != nil {
					return invalid(c, "%v", flagErr)
				}
				if err != nil {
					return scheduleError(id, err)
				}
				fmt.Fprintf(c.App.Writer, "Updated schedule %s: the change takes effect from the next run; runs already started keep the playbook they started with.\n", id)
				return nil
			})
		},
	}
}

func scheduleApplyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "create or update the schedules playbooks carry in their schedule: key, idempotently",
		ArgsUsage: "[FILE...]",
		Description: "Each playbook's schedule: key says when it runs; the schedule ID is schedule.id, else\n" +
			"metadata.name. A schedule that matches its file is left alone; one that differs is updated\n" +
			"(its paused state kept); a missing one is created and marked (a memo) as made by apply.\n" +
			"With --prune DIR and no FILE, every playbook under DIR with a schedule: key is applied, and\n" +
			"the schedules apply made from files under DIR that are gone, or no longer carry that\n" +
			"schedule, are deleted. Every file is validated first: one bad file (exit 2) changes nothing.\n" +
			scheduleDefaults,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "prune", Usage: "delete the schedules apply made from files under `DIR` that are gone"},
		}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			files := c.Args().Slice()
			explicit := len(files) > 0
			if !explicit && c.String("prune") == "" {
				return invalid(c, "give playbook files, or --prune DIR")
			}
			if !explicit {
				var err error
				if files, err = playbookFiles(c.String("prune")); err != nil {
					return invalid(c, "--prune: %v", err)
				}
			}
			wanted, err := loadApplied(files, explicit, c.String("task-queue"))
			if err != nil {
				return cli.Exit(err.Error(), exitInvalid)
			}
			return scheduleAction(c, func(conn *connection) error {
				for _, w := range wanted {
					outcome, err := applySchedule(c.Context, conn, w)
					if err != nil {
						return fmt.Errorf("%s: %w", w.in.File, err)
					}
					fmt.Fprintf(c.App.Writer, "%s: schedule %s %s\n", w.in.File, w.ID, outcome)
				}
				if dir := c.String("prune"); dir != "" {
					return pruneSchedules(c, conn, dir, wanted)
				}
				return nil
			})
		},
	}
}

// playbookFiles lists the YAML files under dir.
func playbookFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	return files, err
}

// loadApplied loads every file before anything changes. A file named on
// the command line must carry a schedule; one found under --prune's DIR
// without one (a sub-playbook, say) is passed over.
func loadApplied(files []string, explicit bool, taskQueue string) ([]*scheduleWanted, error) {
	var wanted []*scheduleWanted
	var problems []string
	byID := map[string]string{}
	for _, f := range files {
		w, err := wantedFromFile(f, taskQueue)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
			continue
		case w.pb.Schedule == nil && explicit:
			problems = append(problems, f+": has no schedule: key")
			continue
		case w.pb.Schedule == nil:
			continue
		}
		if other, ok := byID[w.ID]; ok {
			problems = append(problems, fmt.Sprintf("%s: schedule %s is also %s's", f, w.ID, other))
			continue
		}
		byID[w.ID] = f
		wanted = append(wanted, w)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return wanted, nil
}

// applySchedule makes the schedule w describes exist as described:
// "created", "updated (what changed)" or "unchanged".
func applySchedule(ctx context.Context, conn *connection, w *scheduleWanted) (string, error) {
	h := conn.client.ScheduleClient().GetHandle(ctx, w.ID)
	indexed := conn.indexed(ctx)
	d, err := h.Describe(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		abs, _ := filepath.Abs(w.in.File)
		if err := createSchedule(ctx, conn, w, "", false, map[string]any{memoApplied: abs}); err != nil {
			return "", err
		}
		return "created (" + w.when() + ")", nil
	}
	if err != nil {
		return "", err
	}
	have, err := wantedFromDescription(w.ID, d)
	if errors.Is(err, errNotOurs) {
		return "", fmt.Errorf("schedule %s exists and %v: left alone", w.ID, err)
	}
	if err == nil && len(w.differences(have, indexed)) == 0 {
		return "unchanged", nil
	}
	var changed []string
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		changed = []string{"all"}
		if have, err := wantedFromDescription(w.ID, &u.Description); err == nil {
			changed = w.differences(have, indexed)
		}
		return w.schedule(indexed, u.Description.Schedule.State), nil
	}})
	if err != nil {
		return "", err
	}
	return "updated (" + strings.Join(changed, ", ") + "); it takes effect from the next run", nil
}

// pruneSchedules deletes the schedules apply made from files under dir
// that are gone or no longer carry that schedule, except those just applied.
func pruneSchedules(c *cli.Context, conn *connection, dir string, applied []*scheduleWanted) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, w := range applied {
		keep[w.ID] = true
	}
	entries, err := listSchedules(c.Context, conn)
	if err != nil {
		return err
	}
	for _, e := range entries {
		rel, err := filepath.Rel(absDir, e.AppliedFrom)
		if e.AppliedFrom == "" || keep[e.ID] || err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		why := "gone"
		if _, err := os.Stat(e.AppliedFrom); err == nil {
			w, err := wantedFromFile(e.AppliedFrom, c.String("task-queue"))
			if err != nil || (w.pb.Schedule != nil && w.ID == e.ID) {
				continue // its file still carries it, or does not load: leave it be
			}
			why = "no longer carries it"
		}
		if err := conn.client.ScheduleClient().GetHandle(c.Context, e.ID).Delete(c.Context); err != nil {
			return scheduleError(e.ID, err)
		}
		fmt.Fprintf(c.App.Writer, "%s: %s; schedule %s deleted\n", e.AppliedFrom, why, e.ID)
	}
	return nil
}
