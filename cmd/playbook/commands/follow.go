package commands

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
	"playbook/runs"
)

// pollEvery is how often `run` asks a run for new events while following it.
const pollEvery = 200 * time.Millisecond

// pollTimeout bounds each of those questions: a query can wait on the server
// (seen: 16s for one sent as the run closed), and a slow answer must not
// hold up noticing that the run has ended.
const pollTimeout = 2 * time.Second

// failureReadTimeout bounds reading a run's history for why its workflow
// task fails.
const failureReadTimeout = 10 * time.Second

// pollBound is the bound of a question asked while following a run
// (pollTimeout), none otherwise.
func pollBound(following bool) time.Duration {
	if following {
		return pollTimeout
	}
	return 0
}

// follow prints a run's step transitions as they happen, and its retries as
// the server reports them, until the run ends; it returns the aggregate.
// p remembers what was printed, so that following again after an
// interruption prints only what is new.
func follow(ctx context.Context, c client.Client, wr client.WorkflowRun, p *progress) (*contract.Aggregate, error) {
	type ended struct {
		agg *contract.Aggregate
		err error
	}
	done := make(chan ended, 1)
	go func() {
		agg, err := runs.Result(ctx, wr)
		done <- ended{agg, err}
	}()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	// finish tells the events the run's end left untold, unless following
	// it was stopped (Ctrl-C): then the run goes on, and its caller says so.
	finish := func(e ended) (*contract.Aggregate, error) {
		if ctx.Err() == nil {
			p.lastEvents(ctx, c, wr)
		}
		return e.agg, e.err
	}
	for {
		select {
		case e := <-done:
			return finish(e)
		case <-tick.C:
			p.events(ctx, c, wr)
			select {
			case e := <-done:
				return finish(e)
			default:
			}
			p.retries(ctx, c, wr)
			p.loops(ctx, c, wr)
		}
	}
}

type progress struct {
	out   io.Writer
	reach string // see connection.reach
	seen  int
	pb    *spec.Playbook
	// told are the attempts of each step whose start after a failure was
	// told (a retrying or a retried line), by step.
	told map[string]map[int32]bool
	// width is the step column's: the longest step name (loop elements
	// add their index), at least 14.
	width int
	// loopSteps are the playbook's loop steps; running those that have
	// started and not ended, with the progress line last printed.
	loopSteps map[string]bool
	running   map[string]string
	loopsAt   time.Time
	// stuckAt is the workflow task attempt past which `run` says again
	// that the run is not progressing.
	stuckAt int32
}

// newProgress is the progress of a run of pb, printed on out; reach is
// what the command lines it suggests add to reach the server
// (connection.reach).
func newProgress(pb *spec.Playbook, out io.Writer, reach string) *progress {
	p := &progress{out: out, reach: reach, pb: pb, told: map[string]map[int32]bool{}, width: stepWidth(pb), loopSteps: map[string]bool{}, running: map[string]string{}}
	for _, s := range pb.Steps {
		if s.Loop != nil {
			p.loopSteps[s.Name] = true
		}
	}
	return p
}

// stepWidth is the width of a step column: the longest step name (a loop
// element's name included), 14 at least.
func stepWidth(pb *spec.Playbook) int {
	width := 14
	for _, s := range pb.Steps {
		name := s.Name
		if s.Loop != nil {
			name += "[000]"
		}
		width = max(width, len(name)+1)
	}
	return width
}

func (p *progress) line(at time.Time, step, text string) {
	fmt.Fprintf(p.out, "%s  %-*s %s\n", at.Local().Format("15:04:05"), p.width, oneLine(step), oneLine(text))
}

// loopEvery is how often `run` asks for a running loop's progress.
const loopEvery = time.Second

// loops prints the progress of running loop steps (elements done, failed,
// running, of the total) when it changed, at most once a second.
func (p *progress) loops(ctx context.Context, c client.Client, wr client.WorkflowRun) {
	if len(p.running) == 0 || time.Since(p.loopsAt) < loopEvery {
		return
	}
	p.loopsAt = time.Now()
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, wr.GetID(), wr.GetRunID(), contract.QueryState)
	var agg contract.Aggregate
	if err != nil || v.Get(&agg) != nil {
		return
	}
	for name, last := range p.running {
		st := agg.Steps[name]
		if st == nil || st.Loop == nil {
			continue
		}
		if line := "loop: " + st.Loop.String(); line != last {
			p.running[name] = line
			p.line(time.Now(), name, line)
		}
	}
}

func (p *progress) events(ctx context.Context, c client.Client, wr client.WorkflowRun) {
	evs, err := runs.Events(ctx, c, wr.GetID(), wr.GetRunID(), p.seen, pollTimeout)
	if err != nil {
		return // not yet picked up by a worker; the next tick asks again
	}
	p.print(evs, wr)
}

// lastEventsTimeout bounds the question for the events a run's end left
// untold: an ended run answers a query by replaying its history on a
// worker, longer than a tick's question may take.
const lastEventsTimeout = 30 * time.Second

// lastEvents prints the events not told yet once the run has ended, or
// says that it cannot and where they are.
func (p *progress) lastEvents(ctx context.Context, c client.Client, wr client.WorkflowRun) {
	ctx, cancel := context.WithTimeout(ctx, lastEventsTimeout)
	defer cancel()
	evs, err := runs.Events(ctx, c, wr.GetID(), wr.GetRunID(), p.seen, 0)
	p.print(evs, wr)
	if err != nil {
		p.line(time.Now(), "(run)", fmt.Sprintf("the run's last events cannot be shown (%v): `playbook events %s%s` shows them", err, wr.GetID(), p.reach))
	}
}

func (p *progress) print(evs []engine.Event, wr client.WorkflowRun) {
	for _, e := range evs {
		p.seen = e.Seq
		if p.loopSteps[e.Step] {
			if e.Type == "step_started" {
				p.running[e.Step] = ""
			} else {
				delete(p.running, e.Step)
			}
		}
		if e.Type == "step_retry" && !p.tell(e.Step, int32(e.Attempts+1)) {
			// A retry the pending-activity view showed is not told twice; one
			// over before a poll saw it (a quick one) is told now.
			continue
		}
		if line := p.describe(e, wr.GetID()); line != "" {
			step := e.Step
			if step == "" {
				step = "(run)"
			}
			p.line(e.Time, step, line)
		}
	}
}

// retries prints each new attempt of a running step, from the server's
// pending-activity view: attempts happen inside Temporal's activity retry,
// so the workflow itself does not see them.
func (p *progress) retries(parent context.Context, c client.Client, wr client.WorkflowRun) {
	ctx, cancel := context.WithTimeout(parent, pollTimeout)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, wr.GetID(), wr.GetRunID())
	if err != nil {
		return
	}
	if wt := d.GetPendingWorkflowTask(); wt.GetAttempt() >= stuckAttempts && wt.GetAttempt() > p.stuckAt {
		p.stuckAt = wt.GetAttempt() * 4 // says it again when it has failed four times as often
		// The history is read with a bound of its own: what is left of the
		// poll's was too short on a loaded machine, and the line lost its why.
		hctx, cancel := context.WithTimeout(parent, failureReadTimeout)
		why := runs.LastTaskFailure(hctx, c, wr)
		cancel()
		p.line(time.Now(), "(run)", fmt.Sprintf("not progressing: its workflow task failed %d times in a row%s; the run waits for a worker that can run it (playbook cancel or terminate ends it)",
			wt.GetAttempt()-1, why))
	}
	for _, pa := range d.GetPendingActivities() {
		step, attempt := pa.GetActivityId(), pa.GetAttempt()
		if attempt <= 1 || !p.tell(step, attempt) {
			continue
		}
		line := fmt.Sprintf("retrying: attempt %d failed", attempt-1)
		if f := pa.GetLastFailure(); f != nil {
			line += ": " + expr.FirstLine(f.GetMessage())
		}
		failed, known := runs.FailedAttempt(pa.GetHeartbeatDetails(), int(attempt-1))
		if known && failed.RecoveryExitCode != nil {
			line += fmt.Sprintf("; its recovery script exited %d", *failed.RecoveryExitCode)
		}
		// Of the attempts the failure may take: its exit-code rule's, or the
		// retry block's.
		limit := 0
		if s := runs.StepOfActivity(p.pb, step); s != nil {
			limit = runs.AttemptsAfter(s, failed, known)
		}
		line += "; " + attemptOf(attempt, limit)
		// The delay the retry policy chose: from the failed attempt's end
		// to the next one's start, whenever this poll saw it.
		if next, last := pa.GetNextAttemptScheduleTime(), pa.GetLastAttemptCompleteTime(); next != nil && last != nil {
			if delay := next.AsTime().Sub(last.AsTime()); delay >= time.Millisecond {
				line += fmt.Sprintf(" after %s (at %s)", roundDelay(delay), next.AsTime().Local().Format("15:04:05.0"))
			}
		}
		p.line(time.Now(), step, line)
	}
}

// attemptOf names a running step's attempt, as the server counts them,
// beside the attempts its playbook gives it (max; 0: unknown). Attempts
// lost with their worker are retried beyond those, so the count can pass
// them: "attempt 2 of 1" would read as a mistake.
func attemptOf(attempt int32, max int) string {
	switch {
	case max <= 0:
		return fmt.Sprintf("attempt %d", attempt)
	case int(attempt) <= max:
		return fmt.Sprintf("attempt %d of %d", attempt, max)
	default:
		return fmt.Sprintf("attempt %d (the step has %d; attempts lost with their worker are retried beyond them)", attempt, max)
	}
}

// roundDelay rounds a retry delay as people read it: 1s, 1.5s, 250ms.
func roundDelay(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// stuckAttempts is the attempt of a run's workflow task from which `run`
// says that the run is not progressing: a task that keeps failing (a
// worker that cannot parse the playbook, a bug) leaves the run running.
const stuckAttempts = 4

func describeEvent(e engine.Event, run, reach string) string {
	switch e.Type {
	case "step_started":
		return "started"
	case "step_completed":
		if e.Attempts > 1 {
			return fmt.Sprintf("completed on attempt %d", e.Attempts)
		}
		return "completed"
	case "step_failed":
		if e.Data["allow_failure"] == true {
			return fmt.Sprintf("failed%s: %s: %s (allowed to fail: the run goes on)", afterAttempts(e.Attempts), e.Error.Type, e.Error.Message)
		}
		return fmt.Sprintf("failed%s: %s: %s (routed to end)", afterAttempts(e.Attempts), e.Error.Type, e.Error.Message)
	case "step_retry":
		line := fmt.Sprintf("retried: attempt %d failed", e.Attempts)
		if e.Error != nil {
			line += ": " + expr.FirstLine(e.Error.Message)
		}
		if code, ok := e.Data["recovery_exit_code"].(float64); ok {
			line += fmt.Sprintf("; its recovery script exited %d", int(code))
		}
		return line + fmt.Sprintf("; attempt %d followed", e.Attempts+1)
	case "step_skipped":
		return "skipped: " + e.Message
	case "step_pending_failed":
		return fmt.Sprintf("pending_failed%s: %s: %s; waiting for `%s%s`", afterAttempts(e.Attempts), e.Error.Type, e.Error.Message, engine.ClassifyCommand(run, e.Step), reach)
	case "step_classified":
		return "classified " + e.Message
	case "step_waiting":
		if event, ok := strings.CutPrefix(e.Message, "waiting for event "); ok {
			return fmt.Sprintf("%s; send it with `%s%s`", e.Message, engine.SendCommand(run, event), reach)
		}
		return fmt.Sprintf("%s; decide with `playbook approve %s %s%s` or `playbook reject %s %s%s` (`playbook pending %s%s` shows its inputs)", e.Message, run, e.Step, reach, run, e.Step, reach, run, reach)
	case "step_approved", "step_rejected", "step_waiting_until":
		return e.Message
	case "step_timed_out":
		return "timed out: " + e.Message
	case "step_reused":
		return "reused: " + e.Message
	case "step_cancelled":
		return "cancelled: " + e.Message
	case "cancel_requested", "drain_requested", "deadline_passed":
		return e.Message
	case "concurrency_queued", "concurrency_granted", "concurrency_left", "concurrency_refused":
		// A run waiting for its slot says so, and when it has it.
		return e.Message
	case "end_evaluated":
		if e.Error != nil {
			return fmt.Sprintf("%s (%s: %s)", e.Message, e.Error.Type, e.Error.Message)
		}
		return e.Message
	}
	return ""
}

func afterAttempts(n int) string {
	if n > 1 {
		return fmt.Sprintf(" after %d attempts", n)
	}
	return ""
}

// printSummary prints the table of steps, in file order, and the outcome.
func printSummary(out io.Writer, pb *spec.Playbook, agg *contract.Aggregate) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tNOTE")
	for _, s := range pb.Steps {
		st := agg.Steps[s.Name]
		if st == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", s.Name, st.Status, st.Attempts, oneLine(tableNote(st)))
	}
	tw.Flush()
	if agg.StepsOmitted > 0 {
		fmt.Fprintf(out, "(%s that completed, were reused or skipped are left out: the aggregate would be over its budget.)\n", countOf(agg.StepsOmitted, "step"))
	}
	line := fmt.Sprintf("Run %s %s: %s%s%d of %s failed", agg.WorkflowID, agg.Status, refusal(agg, "; "), deadlinePassed(agg, "; "), agg.FailedStepsCount, countOf(agg.TotalSteps, "step"))
	if len(agg.FailedSteps) > 0 {
		line += " (" + strings.Join(agg.FailedSteps, ", ") + ")"
	}
	fmt.Fprintln(out, line+allowedToFail(agg)+".")
	for _, n := range agg.Notifications {
		if n.Delivered {
			fmt.Fprintf(out, "Notified %s (%s).\n", n.Webhook, n.Event)
		} else {
			fmt.Fprintf(out, "Could not notify %s (%s): %s\n", n.Webhook, n.Event, n.Error)
		}
	}
}

// tableNote is a step's NOTE in the tables `run` and `status` print: its
// note, and what of it the aggregate carries only as a stub (a value over
// its budget), with where the whole value is.
func tableNote(st *contract.StepState) string {
	note := st.Note()
	for _, part := range []struct {
		what string
		v    any
	}{{"result", st.Result}, {"error details", errorDetails(st.Error)}} {
		m, _ := part.v.(map[string]any)
		if n, ok := expr.TruncatedSize(part.v); ok {
			cut := fmt.Sprintf("%s truncated (%s, over the budget; whole in %v)", part.what, expr.FormatBytes(n), m["full_in"])
			if note == "" {
				note = cut
			} else {
				note += "; " + cut
			}
		}
	}
	return note
}

func errorDetails(e *contract.StepError) any {
	if e == nil {
		return nil
	}
	return e.Details
}

// allowedToFail says which steps failed with allow_failure, after a
// run's "N of M steps failed": "; 1 allowed to fail (probe)", or "".
// deadlinePassed leads a run's outcome with its deadline, when it passed:
// "the run's deadline of 3s passed (on_timeout: cancel)" and then sep.
func deadlinePassed(agg *contract.Aggregate, sep string) string {
	if agg.Timeout == nil {
		return ""
	}
	return fmt.Sprintf("%s (on_timeout: %s)%s", agg.Timeout, agg.Timeout.OnTimeout, sep)
}

// refusal says why the run's concurrency limit refused it, then sep; ""
// when it did not.
func refusal(agg *contract.Aggregate, sep string) string {
	if agg.Refused == "" {
		return ""
	}
	return agg.Refused + sep
}

func allowedToFail(agg *contract.Aggregate) string {
	if len(agg.WarningSteps) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d allowed to fail (%s)", len(agg.WarningSteps), strings.Join(agg.WarningSteps, ", "))
}

// countOf says "1 step", "2 steps".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// tell marks a step's attempt as told, and says whether it was not yet.
func (p *progress) tell(step string, attempt int32) bool {
	if p.told[step][attempt] {
		return false
	}
	if p.told[step] == nil {
		p.told[step] = map[int32]bool{}
	}
	p.told[step][attempt] = true
	return true
}

// describe is describeEvent, but that an approval's lines to decide it
// are whole, as `pending` prints them: its inputs, and --by an approver
// when it names approvers (one who is not would be refused).
func (p *progress) describe(e engine.Event, run string) string {
	if s := p.pb.Step(e.Step); e.Type == "step_waiting" && s != nil && s.Tool != nil && s.Tool.Kind == "approval" {
		cmds := withReach(engine.ApprovalCommands(run, e.Step, s.Tool.Approval()), p.reach)
		return fmt.Sprintf("%s; decide with `%s` or `%s` (`playbook pending %s%s` shows its inputs)", e.Message, cmds[0], cmds[1], run, p.reach)
	}
	return describeEvent(e, run, p.reach)
}
