package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
	"playbook/runs"
)

func (a *app) statusCommand() *cobra.Command {
	var out printer
	cmd := &cobra.Command{
		Use:   "status RUN",
		Short: "show where a run stands: each step's status, attempts, times and error, and live retry state",
		Args:  exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			st, err := runs.StatusOf(c.ctx, conn.client, c.args[0])
			if err != nil {
				return err
			}
			return out.print(c.stdout, st, func(w io.Writer) { printStatus(w, c.args[0], conn.reach, st) })
		}),
	}
	out.flag(cmd.Flags(), "print the aggregate so far (the shape of run --json), with live retry state under \"live\"")
	return cmd
}

func printStatus(out io.Writer, run, reach string, st *runs.Status) {
	agg := st.Aggregate
	switch {
	case st.EndedByTemporal() && len(agg.Steps) == 0:
		fmt.Fprintf(out, "Run %s (playbook %s): %s\n", run, agg.Playbook, agg.Status)
		fmt.Fprintln(out, "Temporal ended it without its end step: no aggregate, and no step table (a worker polling its task queue replays one: start `playbook worker`).")
		return
	case st.EndedByTemporal():
		fmt.Fprintf(out, "Run %s (playbook %s): %s\n", run, agg.Playbook, agg.Status)
		fmt.Fprintln(out, "Temporal ended it without its end step: no aggregate; the steps stood as below when it ended, and those running were abandoned.")
	default:
		fmt.Fprintf(out, "Run %s (playbook %s): %s, %s%s%d of %s failed%s\n", run, agg.Playbook, agg.Status, refusal(agg, ", "), deadlinePassed(agg, ", "), agg.FailedStepsCount, countOf(agg.TotalSteps, "step"), allowedToFail(agg))
	}
	if agg.Origin != nil {
		fmt.Fprintf(out, "Started as a %s\n", agg.Origin)
	}
	if agg.LogicalTime != "" {
		fmt.Fprintf(out, "Logical time: %s\n", agg.LogicalTime)
	}
	if agg.CancelReason != "" {
		fmt.Fprintf(out, "Cancel reason: %s\n", agg.CancelReason)
	}
	switch agg.WindingDown {
	case contract.WindingDownCancel:
		fmt.Fprintln(out, "Winding down: cancelled: running steps are being cancelled, no new step starts; then the cleanup steps, then end")
	case contract.WindingDownDrain:
		fmt.Fprintln(out, "Winding down: draining: running steps finish, no new step starts; then the cleanup steps, then end")
	case contract.WindingDownDeadline:
		fmt.Fprintln(out, "Winding down: its deadline passed: running steps are being cancelled, no new step starts; then the cleanup steps, then end")
	}
	if agg.Queued != nil {
		fmt.Fprintf(out, "Waiting for a slot: %s\n", engine.QueuedNote(agg.Queued))
	}
	for _, name := range stepOrder(agg, st.Playbook()) {
		if w := agg.Steps[name].Waiting; w != nil {
			how := fmt.Sprintf("`playbook pending %s%s` says how to decide it", run, reach)
			if event, ok := strings.CutPrefix(w.For, "event "); ok {
				how = fmt.Sprintf("`%s%s` sends it", engine.SendCommand(run, event), reach)
			}
			fmt.Fprintf(out, "Waiting for %s: step %s since %s (%s)\n", w.For, name, w.Since.Local().Format("15:04:05"), how)
		}
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tSTARTED\tENDED\tNOTE")
	for _, name := range stepOrder(agg, st.Playbook()) {
		s := agg.Steps[name]
		note, attempts := tableNote(s), s.Attempts
		l, live := st.Live[name]
		if live {
			// The run learns of an attempt when the step settles; the
			// server's view of the running one counts them all, the
			// running one included.
			attempts = max(attempts, int(l.Attempt))
		}
		if live && (l.Attempt > 1 || l.LastFailure != "") {
			note = "retrying: " + attemptOf(l.Attempt, int(l.MaximumAttempts))
			if l.NextAttemptTime != nil {
				note += fmt.Sprintf(", next attempt at %s", l.NextAttemptTime.Local().Format("15:04:05.0"))
			} else {
				note += " " + strings.ToLower(l.State)
			}
			if l.LastFailure != "" {
				note += "; last failure: " + expr.FirstLine(l.LastFailure)
			}
		}
		if until, ok := st.WaitsUntil[name]; ok && s.Status == contract.StatusRunning {
			note = "waits until " + until.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", name, s.Status, attempts, clock(s.StartedAt), clock(s.EndedAt), oneLine(note))
	}
	tw.Flush()
	printFilesAndQueues(out, st)
}

// stepOrder lists the steps in the playbook's file order (pb nil: by start
// time, then name), with end last; a step the playbook does not name (a
// loop element) after those it names.
func stepOrder(agg *contract.Aggregate, pb *spec.Playbook) []string {
	rank := map[string]int{}
	if pb != nil {
		for i, s := range pb.Steps {
			rank[s.Name] = i + 1
		}
	}
	names := make([]string, 0, len(agg.Steps))
	for name := range agg.Steps {
		if name != spec.EndStep {
			names = append(names, name)
		}
	}
	start := func(n string) time.Time {
		if t := agg.Steps[n].StartedAt; t != nil {
			return *t
		}
		return time.Unix(1<<40, 0)
	}
	sort.SliceStable(names, func(i, j int) bool {
		a, b := names[i], names[j]
		ra, rb := rank[a], rank[b]
		switch {
		case ra != rb && ra != 0 && rb != 0:
			return ra < rb
		case (ra == 0) != (rb == 0):
			return ra != 0
		case !start(a).Equal(start(b)):
			return start(a).Before(start(b))
		}
		return a < b
	})
	if _, ok := agg.Steps[spec.EndStep]; ok {
		names = append(names, spec.EndStep)
	}
	return names
}

func clock(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("15:04:05")
}

func (a *app) eventsCommand() *cobra.Command {
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "events RUN",
		Short: "print a run's event log (step_started, step_retry, step_failed, end_evaluated, ...)",
		Args:  exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			run := c.args[0]
			seen, width := 0, 0
			if !asJSON {
				width = eventsWidth(c.ctx, conn, run)
			}
			for {
				closed := false
				if follow {
					ctx, cancel := context.WithTimeout(c.ctx, pollTimeout)
					d, err := conn.client.DescribeWorkflowExecution(ctx, run, "")
					timedOut := ctx.Err() != nil
					cancel()
					if err != nil && !timedOut {
						return err
					}
					// A slow answer is asked again on the next tick.
					closed = err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
				}
				evs, err := runs.Events(c.ctx, conn.client, run, "", seen, pollBound(follow && !closed))
				if err != nil {
					return err
				}
				for _, e := range evs {
					seen = e.Seq
					printEvent(c.stdout, e, asJSON, width)
				}
				if !follow || closed {
					return nil
				}
				select {
				case <-c.ctx.Done():
					return nil
				case <-time.After(pollEvery):
				}
			}
		}),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events until the run ends")
	// One JSON object per line, as the events come: not the one document
	// of the other commands' --json.
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per event")
	return cmd
}

// eventsWidth is the step column's width for a run's events: as wide as
// its frozen playbook's longest step name (14 when it cannot be read).
func eventsWidth(ctx context.Context, conn *connection, run string) int {
	in, err := runs.FrozenInput(ctx, conn.client, run)
	if err != nil {
		return 14
	}
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		return 14
	}
	return stepWidth(pb)
}

func printEvent(out io.Writer, e engine.Event, asJSON bool, width int) {
	if asJSON {
		b, _ := json.Marshal(e)
		fmt.Fprintln(out, string(b))
		return
	}
	line := fmt.Sprintf("%s  %-20s %-*s", e.Time.Local().Format("15:04:05.000"), e.Type, width, e.Step)
	if e.Attempts > 0 {
		line += fmt.Sprintf(" attempt %d", e.Attempts)
	}
	if e.Message != "" {
		line += "  " + oneLine(e.Message)
	}
	if e.Error != nil {
		line += fmt.Sprintf("  [%s: %s]", e.Error.Type, oneLine(expr.FirstLine(e.Error.Message)))
	}
	for _, k := range []string{"routed_to_end", "original_failed_step", "allow_failure", "evaluated_by_end_step", "total_steps", "failed_steps_count", "warning_steps_count"} {
		if v, ok := e.Data[k]; ok {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
	}
	fmt.Fprintln(out, strings.TrimRight(line, " "))
}

func (a *app) listCommand() *cobra.Command {
	var (
		status, playbook, schedule string
		limit                      int
		out                        printer
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list runs (running first, then by when they ended), through the PlaybookName / PlaybookStatus / FailedSteps search attributes",
		Args:  noArgs,
		RunE: action(func(c *call) error {
			filter := runs.Filter{Status: status, Playbook: playbook, Schedule: schedule}
			if _, err := filter.Query(); err != nil {
				return invalid(err)
			}
			if limit < 0 {
				return invalidf("--limit %d: give a number of runs, 1 or more (0: all of them)", limit)
			}
			if limit == 0 {
				limit = -1
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				list, err := runs.List(c.ctx, conn.client, conn.namespace, filter, limit)
				if err != nil {
					return err
				}
				return out.print(c.stdout, list, func(w io.Writer) { printRuns(w, list) })
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&status, "status", "", "only runs in this `STATUS` ("+strings.Join(runs.ListStatuses, ", ")+")")
	fs.StringVar(&playbook, "playbook", "", "only runs of the playbook named `NAME`")
	fs.StringVar(&schedule, "schedule", "", "only runs started by the schedule `ID`")
	fs.IntVar(&limit, "limit", 100, "at most this many runs (0: all)")
	out.flag(fs, "print the runs as JSON")
	return cmd
}

func printRuns(w io.Writer, list []runs.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPLAYBOOK\tSTATUS\tSTARTED\tFAILED STEPS\tSCHEDULE")
	for _, r := range list {
		status := r.Status
		if r.DeadlinePassed {
			status += " (deadline)"
		}
		steps := r.FailedSteps
		for _, w := range r.WarningSteps {
			steps = append(steps, w+contract.WarningMark)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, r.Playbook, status, r.Start.Local().Format("2006-01-02 15:04:05"), strings.Join(steps, ","), r.Schedule)
	}
	tw.Flush()
}

func (a *app) setupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "setup",
		Short: "create the namespace when it does not exist, and register playbook's search attributes (PlaybookName, PlaybookStatus, FailedSteps) on it; `playbook dev` has both already",
		Args:  noArgs,
		RunE: a.connected(func(c *call, conn *connection) error {
			created, err := ensureNamespace(c.ctx, conn)
			if err != nil {
				return err
			}
			if created {
				fmt.Fprintf(c.stdout, "Namespace %s created (retention %s).\n", conn.namespace, namespaceRetention)
			}
			ops := conn.client.OperatorService()
			have, err := ops.ListSearchAttributes(c.ctx, &operatorservice.ListSearchAttributesRequest{Namespace: conn.namespace})
			if err != nil {
				return err
			}
			missing := map[string]enumspb.IndexedValueType{}
			for name, typ := range runs.SearchAttributes() {
				if _, ok := have.GetCustomAttributes()[name]; !ok {
					missing[name] = typ
				}
			}
			if len(missing) > 0 {
				_, err := ops.AddSearchAttributes(c.ctx, &operatorservice.AddSearchAttributesRequest{Namespace: conn.namespace, SearchAttributes: missing})
				var exists *serviceerror.AlreadyExists
				if err != nil && !errors.As(err, &exists) {
					return err
				}
			}
			fmt.Fprintf(c.stdout, "Namespace %s has playbook's search attributes (%d added).\n", conn.namespace, len(missing))
			return nil
		}),
	}
}
