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
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
	"playbook/runs"
)

// Live is a step's retry state as the server sees it between attempts.
type Live struct {
	Attempt         int32      `json:"attempt"`
	MaximumAttempts int32      `json:"maximum_attempts,omitempty"`
	State           string     `json:"state"`
	LastFailure     string     `json:"last_failure,omitempty"`
	NextAttemptTime *time.Time `json:"next_attempt_time,omitempty"`
}

// Status is what `playbook status --json` prints: the aggregate in the same
// shape as `run --json` (so `jq .failed_steps` works on both), with the
// live retry state of running steps beside it under "live".
type Status struct {
	*contract.Aggregate
	Live map[string]Live `json:"live,omitempty"`
	// WaitsUntil is when each running wait step's timer fires.
	WaitsUntil map[string]time.Time `json:"waits_until,omitempty"`
	// playbook is the run's frozen playbook, nil when it cannot be read:
	// the table follows its file order.
	playbook *spec.Playbook
	// byTemporal says that Temporal ended the run without its end step
	// (terminated, timed out): the table, if any, is where its steps stood.
	byTemporal bool
}

func (a *app) statusCommand() *cobra.Command {
	var out printer
	cmd := &cobra.Command{
		Use:   "status RUN",
		Short: "show where a run stands: each step's status, attempts, times and error, and live retry state",
		Args:  exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			st, err := runStatus(c.ctx, conn.client, c.args[0])
			if err != nil {
				return err
			}
			return out.print(c.stdout, st, func(w io.Writer) { printStatus(w, c.args[0], conn.reach, st) })
		}),
	}
	out.flag(cmd.Flags(), "print the aggregate so far (the shape of run --json), with live retry state under \"live\"")
	return cmd
}

// runStatus reads where a run stands. An open run answers a query (its
// step table) and the server adds its running activities' retry state
// (attempt, last failure, next attempt time). A run that has ended is read
// from its history, with no worker needed: its result, or its failure's or
// cancellation's details, are the aggregate. A run Temporal ended by itself
// (terminate, an execution timeout) has none: its status is Temporal's, and
// its step table is asked of a worker if one polls.
func runStatus(ctx context.Context, c client.Client, run string) (*Status, error) {
	d, err := c.DescribeWorkflowExecution(ctx, run, "")
	if err != nil {
		return nil, err
	}
	info := d.GetWorkflowExecutionInfo()
	st := &Status{Live: map[string]Live{}, playbook: frozenPlaybook(ctx, c, run)}
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		if st.Aggregate, err = queryState(ctx, c, run); err != nil {
			return nil, err
		}
		st.WaitsUntil = waitsUntil(ctx, c, run, info.GetExecution().GetRunId(), st.Aggregate, st.playbook)
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		if st.Aggregate, err = result(ctx, c.GetWorkflow(ctx, run, info.GetExecution().GetRunId())); err != nil {
			return nil, err
		}
	default:
		st.Aggregate, st.byTemporal = endedByTemporal(ctx, c, run, info, st.playbook), true
	}
	st.Aggregate.WorkflowID = run
	st.Aggregate.RunID = info.GetExecution().GetRunId()
	for _, pa := range d.GetPendingActivities() {
		l := Live{Attempt: pa.GetAttempt(), MaximumAttempts: pa.GetMaximumAttempts(), State: strings.TrimPrefix(pa.GetState().String(), "PENDING_ACTIVITY_STATE_")}
		if f := pa.GetLastFailure(); f != nil {
			l.LastFailure = f.GetMessage()
		}
		if t := pa.GetNextAttemptScheduleTime(); t != nil {
			at := t.AsTime()
			l.NextAttemptTime = &at
		}
		st.Live[pa.GetActivityId()] = l
	}
	if st.playbook != nil {
		for id, l := range st.Live {
			if s := st.playbook.Step(strings.SplitN(id, "[", 2)[0]); s != nil {
				l.MaximumAttempts = int32(configuredAttempts(s))
				st.Live[id] = l
			}
		}
	}
	return st, nil
}

// waitsUntil reads, from the run's events, until when its running wait
// steps wait; nil when none runs.
func waitsUntil(ctx context.Context, c client.Client, run, runID string, agg *contract.Aggregate, pb *spec.Playbook) map[string]time.Time {
	if pb == nil {
		return nil
	}
	waiting := false
	for name, s := range agg.Steps {
		step := pb.Step(name)
		waiting = waiting || (s.Status == contract.StatusRunning && step != nil && step.Tool != nil && step.Tool.Kind == "wait")
	}
	if !waiting {
		return nil
	}
	var out map[string]time.Time
	evs, _ := queryEvents(ctx, c, run, runID, 0, true)
	for _, e := range evs {
		until, _ := e.Data["until"].(string)
		t, err := time.Parse(time.RFC3339Nano, until)
		if s := agg.Steps[e.Step]; e.Type != "step_waiting_until" || err != nil || s == nil || s.Status != contract.StatusRunning {
			continue
		}
		if out == nil {
			out = map[string]time.Time{}
		}
		out[e.Step] = t
	}
	return out
}

// queryState asks a run's worker for its step table.
func queryState(ctx context.Context, c client.Client, run string) (*contract.Aggregate, error) {
	v, err := c.QueryWorkflow(ctx, run, "", contract.QueryState)
	if err != nil {
		return nil, err
	}
	var agg contract.Aggregate
	if err := v.Get(&agg); err != nil {
		return nil, err
	}
	return &agg, nil
}

// endedByTemporal is the aggregate of a run Temporal ended without its
// end step (terminated, timed out): its status is Temporal's, whatever the
// run last said; its steps are the table a worker replays, when one polls
// its task queue, else none.
func endedByTemporal(ctx context.Context, c client.Client, run string, info *workflowpb.WorkflowExecutionInfo, pb *spec.Playbook) *contract.Aggregate {
	agg := &contract.Aggregate{}
	if polled(ctx, c, info.GetTaskQueue()) {
		qctx, cancel := context.WithTimeout(ctx, queryWait)
		if a, err := queryState(qctx, c, run); err == nil {
			agg = a
		}
		cancel()
	}
	if agg.Playbook == "" && pb != nil {
		agg.Playbook = pb.Name
	}
	agg.Status = temporalStatus(info)
	return agg
}

// queryWait bounds the query of a run that has ended: a worker replays its
// whole history to answer.
const queryWait = 10 * time.Second

// polled says whether a worker has polled the task queue lately.
func polled(ctx context.Context, c client.Client, queue string) bool {
	resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	return err == nil && len(resp.GetPollers()) > 0
}

// frozenPlaybook is the playbook a run was started with, as its history
// holds it; nil when it cannot be read.
func frozenPlaybook(ctx context.Context, c client.Client, run string) *spec.Playbook {
	in, err := frozenInput(ctx, c, run)
	if err != nil {
		return nil
	}
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		return nil
	}
	return pb
}

// configuredAttempts is how many attempts a step's own failures may take:
// its retry block's max_attempts, or one more than its exit-code rules'
// largest max_retries. The attempts lost with their worker come on top
// (lost_attempts), counted apart.
func configuredAttempts(s *spec.Step) int {
	n := s.RetryBlock().MaxAttempts
	if s.FailureHandler != nil {
		for _, r := range s.FailureHandler.Rules {
			n = max(n, r.MaxRetries+1)
		}
	}
	return n
}

func printStatus(out io.Writer, run, reach string, st *Status) {
	agg := st.Aggregate
	switch {
	case st.byTemporal && len(agg.Steps) == 0:
		fmt.Fprintf(out, "Run %s (playbook %s): %s\n", run, agg.Playbook, agg.Status)
		fmt.Fprintln(out, "Temporal ended it without its end step: no aggregate, and no step table (a worker polling its task queue replays one: start `playbook worker`).")
		return
	case st.byTemporal:
		fmt.Fprintf(out, "Run %s (playbook %s): %s\n", run, agg.Playbook, agg.Status)
		fmt.Fprintln(out, "Temporal ended it without its end step: no aggregate; the steps stood as below when it ended, and those running were abandoned.")
	default:
		fmt.Fprintf(out, "Run %s (playbook %s): %s, %s%d of %s failed%s\n", run, agg.Playbook, agg.Status, deadlinePassed(agg, ", "), agg.FailedStepsCount, countOf(agg.TotalSteps, "step"), allowedToFail(agg))
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
	for _, name := range stepOrder(agg, st.playbook) {
		if w := agg.Steps[name].Waiting; w != nil {
			fmt.Fprintf(out, "Waiting for %s: step %s since %s (`playbook pending %s%s` says how to decide it)\n", w.For, name, w.Since.Local().Format("15:04:05"), run, reach)
		}
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tSTARTED\tENDED\tNOTE")
	for _, name := range stepOrder(agg, st.playbook) {
		s := agg.Steps[name]
		note, attempts := tableNote(s), s.Attempts
		if l, ok := st.Live[name]; ok && (l.Attempt > 1 || l.LastFailure != "") {
			// The run learns of an attempt when the step settles; the
			// server's view of the running one counts them all.
			attempts = max(attempts, int(l.Attempt))
			note = fmt.Sprintf("retrying: attempt %d", l.Attempt)
			if l.MaximumAttempts > 0 {
				note += fmt.Sprintf(" of %d", l.MaximumAttempts)
			}
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
				evs, err := queryEvents(c.ctx, conn.client, run, "", seen, follow && !closed)
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

// queryEvents asks a run for its events after seq. While following a live
// run, each question is bounded (see pollTimeout) and a slow one yields no
// events, to be asked again on the next tick.
func queryEvents(ctx context.Context, c client.Client, workflowID, runID string, seq int, bounded bool) ([]engine.Event, error) {
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pollTimeout)
		defer cancel()
	}
	var evs []engine.Event
	for {
		v, err := c.QueryWorkflow(ctx, workflowID, runID, contract.QueryEvents, seq, contract.EventsPage, contract.EventsPageBytes)
		var page []engine.Event
		if err == nil {
			err = v.Get(&page)
		}
		if bounded && ctx.Err() != nil {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, page...)
		// A page is cut by count or by size: the events end at the first
		// empty one (a worker from before pages answered with every event
		// at once, and then with none).
		if len(page) == 0 {
			return evs, nil
		}
		seq = page[len(page)-1].Seq
	}
}

// eventsWidth is the step column's width for a run's events: as wide as
// its frozen playbook's longest step name (14 when it cannot be read).
func eventsWidth(ctx context.Context, conn *connection, run string) int {
	in, err := frozenInput(ctx, conn.client, run)
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

// Run is one line of `playbook list`.
type Run struct {
	WorkflowID  string   `json:"workflow_id"`
	RunID       string   `json:"run_id"`
	Playbook    string   `json:"playbook"`
	Status      string   `json:"status"`
	FailedSteps []string `json:"failed_steps"`
	// WarningSteps failed with allow_failure.
	WarningSteps []string `json:"warning_steps,omitempty"`
	// DeadlinePassed: the run's own deadline (its timeout) passed.
	DeadlinePassed bool      `json:"deadline_passed,omitempty"`
	Start          time.Time `json:"start_time"`
	// Schedule is the ID of the schedule that started the run, if one did.
	Schedule string `json:"schedule,omitempty"`
}

func (a *app) listCommand() *cobra.Command {
	var (
		status, playbook, schedule string
		limit                      int
		out                        printer
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list runs, newest first, through the PlaybookName / PlaybookStatus / FailedSteps search attributes",
		Args:  noArgs,
		RunE: action(func(c *call) error {
			where, err := statusQuery(status)
			if err != nil {
				return invalid(err)
			}
			if limit < 0 {
				return invalidf("--limit %d: give a number of runs, 1 or more (0: all of them)", limit)
			}
			if limit == 0 {
				limit = -1
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				query := fmt.Sprintf("WorkflowType = '%s'", contract.WorkflowName) + where
				if playbook != "" {
					query += fmt.Sprintf(" AND %s = '%s'", contract.AttrPlaybookName, quoteQuery(playbook))
				}
				if schedule != "" {
					query += fmt.Sprintf(" AND %s = '%s'", scheduledByID, quoteQuery(schedule))
				}
				runs, err := listRuns(c.ctx, conn, query, limit)
				if err != nil {
					if !conn.indexed(c.ctx) {
						return errors.New("this namespace lacks playbook's search attributes; run `playbook setup` once")
					}
					return err
				}
				return out.print(c.stdout, runs, func(w io.Writer) { printRuns(w, runs) })
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&status, "status", "", "only runs in this `STATUS` ("+strings.Join(listStatuses, ", ")+")")
	fs.StringVar(&playbook, "playbook", "", "only runs of the playbook named `NAME`")
	fs.StringVar(&schedule, "schedule", "", "only runs started by the schedule `ID`")
	fs.IntVar(&limit, "limit", 100, "at most this many runs (0: all)")
	out.flag(fs, "print the runs as JSON")
	return cmd
}

func printRuns(w io.Writer, runs []Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPLAYBOOK\tSTATUS\tSTARTED\tFAILED STEPS\tSCHEDULE")
	for _, r := range runs {
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

// listStatuses are the statuses `list --status` takes: a run's own, and
// those Temporal gives a run it ended itself.
var listStatuses = []string{contract.RunRunning, contract.RunWaiting, contract.RunCompleted, contract.RunCompletedWithWarnings, contract.RunFailed, contract.RunCancelled, runTerminated, runTimedOut}

// The statuses of a run Temporal ended without its end step: the run
// could not record them in its PlaybookStatus, which stays "running".
const (
	runTerminated = "terminated"
	runTimedOut   = "timed_out"
)

// statusQuery is the part of a list query that keeps the runs in status
// ("" all of them). A run's PlaybookStatus is what the run last recorded;
// a run Temporal terminated or timed out could not record it, so its
// ExecutionStatus decides: running means both say so. timed_out is also a
// run failed by its own deadline (which is failed as well).
func statusQuery(status string) (string, error) {
	attr := contract.AttrPlaybookStatus
	switch status {
	case "":
		return "", nil
	case contract.RunRunning, contract.RunWaiting:
		return fmt.Sprintf(" AND %s = '%s' AND ExecutionStatus = 'Running'", attr, status), nil
	case runTerminated:
		return " AND ExecutionStatus = 'Terminated'", nil
	case runTimedOut:
		// Temporal's execution timeout, or the run's own deadline that
		// failed it.
		return fmt.Sprintf(" AND (ExecutionStatus = 'TimedOut' OR (%s = '%s' AND %s = '%s'))",
			contract.AttrFailedSteps, contract.DeadlineMark, attr, contract.RunFailed), nil
	case contract.RunCompleted, contract.RunCompletedWithWarnings, contract.RunFailed, contract.RunCancelled:
		return fmt.Sprintf(" AND %s = '%s'", attr, status), nil
	}
	return "", fmt.Errorf("--status %q is not a run status (%s)", status, strings.Join(listStatuses, ", "))
}

// scheduledByID is the search attribute Temporal sets on a run a schedule started.
const scheduledByID = "TemporalScheduledById"

// quoteQuery escapes s for a single-quoted string of a visibility query:
// a backslash escapes a quote and itself.
func quoteQuery(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}

func listRuns(ctx context.Context, conn *connection, query string, limit int) ([]Run, error) {
	infos, err := listExecutions(ctx, conn, query, limit)
	runs := make([]Run, len(infos))
	for i, e := range infos {
		runs[i] = runOf(e)
	}
	return runs, err
}

// listExecutions lists the runs query matches, newest first, page by page:
// at most limit of them, all of them when limit is negative.
func listExecutions(ctx context.Context, conn *connection, query string, limit int) ([]*workflowpb.WorkflowExecutionInfo, error) {
	var infos []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for limit < 0 || len(infos) < limit {
		size := 1000
		if limit >= 0 {
			size = min(limit, size)
		}
		resp, err := conn.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: conn.namespace, Query: query, NextPageToken: token, PageSize: int32(size)})
		if err != nil {
			return nil, err
		}
		infos = append(infos, resp.GetExecutions()...)
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if limit >= 0 && len(infos) > limit {
		infos = infos[:limit]
	}
	return infos, nil
}

// temporalStatus is a run's status as Temporal gives it, in lower case:
// running, completed, terminated...
func temporalStatus(e *workflowpb.WorkflowExecutionInfo) string {
	return strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
}

func runOf(e *workflowpb.WorkflowExecutionInfo) Run {
	r := Run{WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(), Start: e.GetStartTime().AsTime(), FailedSteps: []string{}}
	fields := e.GetSearchAttributes().GetIndexedFields()
	dc := converter.GetDefaultDataConverter()
	if p := fields[contract.AttrPlaybookName]; p != nil {
		_ = dc.FromPayload(p, &r.Playbook)
	}
	if p := fields[contract.AttrPlaybookStatus]; p != nil {
		_ = dc.FromPayload(p, &r.Status)
	}
	if p := fields[contract.AttrFailedSteps]; p != nil {
		var indexed []string
		_ = dc.FromPayload(p, &indexed)
		for _, s := range indexed {
			if s == contract.DeadlineMark {
				r.DeadlinePassed = true
			} else if name, ok := strings.CutSuffix(s, contract.WarningMark); ok {
				r.WarningSteps = append(r.WarningSteps, name)
			} else {
				r.FailedSteps = append(r.FailedSteps, s)
			}
		}
	}
	if p := fields[scheduledByID]; p != nil {
		_ = dc.FromPayload(p, &r.Schedule)
	}
	switch e.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		if r.Status == "" {
			r.Status = temporalStatus(e)
		}
	default:
		// Terminated or timed out: the run could not say so itself.
		r.Status = temporalStatus(e)
	}
	return r
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
