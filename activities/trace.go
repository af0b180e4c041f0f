package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
)

// AttemptSpans takes the span of each attempt as it ends: the worker's
// exporter when tracing is on (worker.Tracing). An attempt runs once,
// never replayed, so its span is emitted once, by the worker that ran it.
type AttemptSpans interface {
	Attempt(span contract.Span)
}

type traceKey struct{}

// traceparentOf is the W3C trace context of the attempt running in ctx,
// "" when tracing is off: a process step reads it as TRACEPARENT, an http
// step sends it as the traceparent header.
func traceparentOf(ctx context.Context) string {
	tp, _ := ctx.Value(traceKey{}).(string)
	return tp
}

// traceEnv are the variables that carry the attempt's span into its
// process; none when tracing is off. TRACESTATE is set, empty (playbook
// keeps no state of its own in it), so that a step's own env cannot pair
// another trace's state with this span.
func traceEnv(ctx context.Context) []string {
	tp := traceparentOf(ctx)
	if tp == "" {
		return nil
	}
	return []string{"TRACEPARENT=" + tp, "TRACESTATE="}
}

// traced runs one attempt (run) under its span, which it emits once the
// attempt has ended; without a.Trace it only runs it.
func (a *Activities) traced(ctx context.Context, in contract.StepInput, run func(context.Context) (*contract.StepOutput, error)) (*contract.StepOutput, error) {
	if a.Trace == nil {
		return run(ctx)
	}
	// The step's attempt number, as runStep counts it: across
	// classifications, and a local step's local activities.
	number := in.PriorAttempts + int(activity.GetInfo(ctx).Attempt)
	if in.Local != nil {
		number += in.Local.Before
	}
	t, id, parent := contract.AttemptTrace(in, number)
	start := time.Now()
	out, err := run(context.WithValue(ctx, traceKey{}, contract.Traceparent(t, id)))
	step, index := contract.ElementOf(in.Step)
	a.Trace.Attempt(attemptSpan(contract.Span{Trace: t, ID: id, Parent: parent, Start: start, End: time.Now()}, step, index, number, in.Kind, err))
	return out, err
}

// attemptSpan fills an attempt's span: its name, attributes and status,
// from the error the attempt returned (nil: it succeeded).
func attemptSpan(span contract.Span, step string, index, number int, kind string, err error) contract.Span {
	span.Name = fmt.Sprintf("attempt %d %s", number, step)
	if index != contract.NoElement {
		span.Name = fmt.Sprintf("attempt %d %s[%d]", number, step, index)
	}
	span.Attrs = map[string]any{"playbook.step": step, "playbook.attempt": number, "playbook.kind": kind, "playbook.status": "completed"}
	if index != contract.NoElement {
		span.Attrs["playbook.loop.index"] = index
	}
	if err == nil {
		return span
	}
	span.Failed = true
	var appErr *temporal.ApplicationError
	var canErr *temporal.CanceledError
	switch {
	case errors.As(err, &appErr):
		var d contract.FailureDetails
		stepErr := contract.StepError{Type: appErr.Type(), Message: appErr.Message()}
		if appErr.HasDetails() && appErr.Details(&d) == nil {
			stepErr = d.Error
		}
		span.Attrs["playbook.status"] = "failed"
		if !appErr.NonRetryable() || d.RetryAfter > 0 {
			// Retried by Temporal, or by the run after a local step's
			// longer delay.
			span.Attrs["playbook.status"] = "retried"
		}
		contract.ErrorAttrs(span.Attrs, &stepErr)
		span.StatusMessage = stepErr.Type + ": " + stepErr.Message
	case errors.As(err, &canErr):
		span.Attrs["playbook.status"] = "cancelled"
		span.StatusMessage = err.Error()
	default:
		span.Attrs["playbook.status"] = "failed"
		span.StatusMessage = err.Error()
	}
	return span
}
