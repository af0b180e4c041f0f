package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter"
	"playbook/interpreter/playbookwf"
)

// pollEvery is how often `run` asks a run for new events while following it.
const pollEvery = 200 * time.Millisecond

// pollTimeout bounds each of those questions: a query can wait on the server
// (seen: 16s for one sent as the run closed), and a slow answer must not
// hold up noticing that the run has ended.
const pollTimeout = 2 * time.Second

// follow prints a run's step transitions as they happen, and its retries as
// the server reports them, until the run ends; it returns the aggregate.
func follow(ctx context.Context, c client.Client, wr client.WorkflowRun, out io.Writer) (*interpreter.Aggregate, error) {
	type ended struct {
		agg *interpreter.Aggregate
		err error
	}
	done := make(chan ended, 1)
	go func() {
		agg, err := result(ctx, wr)
		done <- ended{agg, err}
	}()
	p := &progress{out: out, attempts: map[string]int32{}}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case e := <-done:
			p.events(ctx, c, wr)
			return e.agg, e.err
		case <-tick.C:
			p.events(ctx, c, wr)
			select {
			case e := <-done:
				p.events(ctx, c, wr)
				return e.agg, e.err
			default:
			}
			p.retries(ctx, c, wr)
		}
	}
}

// result waits for the run and reads its aggregate, whatever the outcome.
func result(ctx context.Context, wr client.WorkflowRun) (*interpreter.Aggregate, error) {
	var agg interpreter.Aggregate
	err := wr.Get(ctx, &agg)
	if err == nil {
		return &agg, nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == playbookwf.FailedErrorType && appErr.Details(&agg) == nil {
		return &agg, nil
	}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) && canErr.HasDetails() && canErr.Details(&agg) == nil {
		return &agg, nil
	}
	return nil, fmt.Errorf("%s ended without an aggregate: %w", wr.GetID(), err)
}

type progress struct {
	out      io.Writer
	seen     int
	attempts map[string]int32
}

func (p *progress) events(ctx context.Context, c client.Client, wr client.WorkflowRun) {
	evs, err := queryEvents(ctx, c, wr.GetID(), wr.GetRunID(), p.seen, true)
	if err != nil {
		return // not yet picked up by a worker; the next tick asks again
	}
	for _, e := range evs {
		p.seen = e.Seq
		if line := describeEvent(e); line != "" {
			step := e.Step
			if step == "" {
				step = "(run)"
			}
			fmt.Fprintf(p.out, "%s  %-14s %s\n", e.Time.Local().Format("15:04:05"), step, line)
		}
	}
}

// retries prints each new attempt of a running step, from the server's
// pending-activity view: attempts happen inside Temporal's activity retry,
// so the workflow itself does not see them.
func (p *progress) retries(ctx context.Context, c client.Client, wr client.WorkflowRun) {
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, wr.GetID(), wr.GetRunID())
	if err != nil {
		return
	}
	for _, pa := range d.GetPendingActivities() {
		step, attempt := pa.GetActivityId(), pa.GetAttempt()
		if attempt <= 1 || attempt <= p.attempts[step] {
			continue
		}
		p.attempts[step] = attempt
		line := fmt.Sprintf("retrying: attempt %d failed", attempt-1)
		if f := pa.GetLastFailure(); f != nil {
			line += ": " + f.GetMessage()
		}
		line += fmt.Sprintf("; attempt %d", attempt)
		if m := pa.GetMaximumAttempts(); m > 0 {
			line += fmt.Sprintf(" of %d", m)
		}
		if next := pa.GetNextAttemptScheduleTime(); next != nil {
			if wait := time.Until(next.AsTime()).Round(100 * time.Millisecond); wait > 0 {
				line += fmt.Sprintf(" in %s", wait)
			}
		}
		fmt.Fprintf(p.out, "%s  %-14s %s\n", time.Now().Format("15:04:05"), step, line)
	}
}

func describeEvent(e interpreter.Event) string {
	switch e.Type {
	case "step_started":
		return "started"
	case "step_completed":
		if e.Attempts > 1 {
			return fmt.Sprintf("completed on attempt %d", e.Attempts)
		}
		return "completed"
	case "step_failed":
		return fmt.Sprintf("failed%s: %s: %s (routed to end)", afterAttempts(e.Attempts), e.Error.Type, e.Error.Message)
	case "step_skipped":
		return "skipped: " + e.Message
	case "step_pending_failed":
		return fmt.Sprintf("pending_failed%s: %s: %s; waiting for `playbook classify RUN %s retry|fail|skip`", afterAttempts(e.Attempts), e.Error.Type, e.Error.Message, e.Step)
	case "step_classified":
		return "classified " + e.Message
	case "step_reused":
		return "reused: " + e.Message
	case "step_cancelled":
		return "cancelled: " + e.Message
	case "cancel_requested", "drain_requested":
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
func printSummary(out io.Writer, pb *interpreter.Playbook, agg *interpreter.Aggregate) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tNOTE")
	for _, s := range pb.Steps {
		st := agg.Steps[s.Name]
		if st == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", s.Name, st.Status, st.Attempts, st.Note())
	}
	tw.Flush()
	line := fmt.Sprintf("Run %s %s: %d of %d steps failed", agg.WorkflowID, agg.Status, agg.FailedStepsCount, agg.TotalSteps)
	if len(agg.FailedSteps) > 0 {
		line += " (" + strings.Join(agg.FailedSteps, ", ") + ")"
	}
	fmt.Fprintln(out, line+".")
	for _, n := range agg.Notifications {
		if n.Delivered {
			fmt.Fprintf(out, "Notified %s (%s).\n", n.Webhook, n.Event)
		} else {
			fmt.Fprintf(out, "Could not notify %s (%s): %s\n", n.Webhook, n.Event, n.Error)
		}
	}
}

func firstLineOf(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
