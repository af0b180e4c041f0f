package engine

import (
	"fmt"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// RunSpan says what the run's own span needs beyond the run's state: the
// trace, when the run started and ended (workflow times), and the span of
// the step that started it, for a sub-playbook's run.
type RunSpan struct {
	Trace      contract.TraceID
	Start, End time.Time
	// StartedBy is the step span of the parent run, for a sub-playbook's
	// run; nil for a run of its own.
	StartedBy *contract.SpanLink
	// Children are the runs of the sub-playbooks the run's steps started,
	// by step: each step's span links to its child's trace.
	Children map[string]contract.TraceID
	// Err, when set, is why the run's workflow failed without reaching
	// `end` (no aggregate then): the run's span fails with it.
	Err string
}

// StepSpans follow the steps as they end: the workflow asks for the spans
// of the steps that ended since it last asked, and emits them at once, so
// that a long run shows its steps as they end, not all when it ends.
type StepSpans struct {
	// seen is how many of the run's events were read; emitted holds the
	// steps whose span was made.
	seen    int
	emitted map[string]bool
}

// Ended are the spans of the steps that ended for good (completed,
// failed, skipped after a wait for a classification, cancelled) since the
// last call: a step waiting in pending_failed may run again, and gets its
// span once it has ended for good, or when the run ends. Each step's span
// is made once.
func (r *Run) Ended(ss *StepSpans, rs RunSpan) []contract.Span {
	if ss.emitted == nil {
		ss.emitted = map[string]bool{}
	}
	var spans []contract.Span
	for _, e := range r.events[ss.seen:] {
		if e.Step == "" || ss.emitted[e.Step] {
			continue
		}
		st, s := r.states[e.Step], r.pb.Step(e.Step)
		if st == nil || s == nil || st.StartedAt == nil || st.EndedAt == nil {
			continue
		}
		switch st.Status {
		case contract.StatusCompleted, contract.StatusFailed, contract.StatusSkipped, contract.StatusCancelled:
			ss.emitted[e.Step] = true
			spans = append(spans, r.stepSpan(rs, s, st))
		}
	}
	ss.seen = len(r.events)
	return spans
}

// Spans are the run's span and one span for each step that started (the
// steps skipped or reused have none) and has none in ss yet: what the
// workflow emits once the run has ended. agg is nil when the workflow
// failed before `end` (rs.Err says why). Their times are the workflow's,
// as the step table shows them; an attempt's span, under its step's, is
// the activity's, with the worker's clock.
func (r *Run) Spans(ss *StepSpans, rs RunSpan, agg *contract.Aggregate) []contract.Span {
	rootAttrs := map[string]any{
		"playbook.name":         r.pb.Name,
		"playbook.run_id":       r.executionID,
		"playbook.logical_time": r.logicalTime,
	}
	run := contract.Span{Trace: rs.Trace, ID: contract.RootSpan(rs.Trace), Name: "playbook " + r.pb.Name, Start: rs.Start, End: rs.End, Attrs: rootAttrs}
	if agg != nil {
		rootAttrs["playbook.outcome"] = agg.Status
		rootAttrs["playbook.steps"] = agg.TotalSteps
		rootAttrs["playbook.failed_steps"] = agg.FailedStepsCount
		switch agg.Status {
		case contract.RunCompleted, contract.RunCompletedWithWarnings:
		default:
			run.Failed, run.StatusMessage = true, agg.Status
			if why := r.FirstFailure(); why != "" {
				run.StatusMessage += ": " + why
			}
		}
	} else {
		rootAttrs["playbook.outcome"] = contract.RunFailed
		run.Failed, run.StatusMessage = true, contract.RunFailed+": "+rs.Err
	}
	if rs.StartedBy != nil {
		run.Links = []contract.SpanLink{*rs.StartedBy}
	}
	spans := []contract.Span{run}
	for i, s := range r.pb.Steps {
		if st := r.ordered[i]; st.StartedAt != nil && !ss.emitted[s.Name] {
			spans = append(spans, r.stepSpan(rs, s, st))
		}
	}
	return spans
}

// stepSpan is the span of step s, in state st, under the run's; a step
// that has not ended ends with the run.
func (r *Run) stepSpan(rs RunSpan, s *spec.Step, st *contract.StepState) contract.Span {
	end := rs.End
	if st.EndedAt != nil {
		end = *st.EndedAt
	}
	span := contract.Span{Trace: rs.Trace, ID: contract.StepSpan(rs.Trace, s.Name), Parent: contract.RootSpan(rs.Trace), Name: "step " + s.Name, Start: *st.StartedAt, End: end, Attrs: stepAttrs(s, st)}
	if st.Error != nil && !st.AllowedFailure {
		span.Failed, span.StatusMessage = true, st.Error.Type+": "+st.Error.Message
	}
	if child, ok := rs.Children[s.Name]; ok {
		span.Links = []contract.SpanLink{{Trace: child, Span: contract.RootSpan(child)}}
	}
	return span
}

// stepAttrs are a step span's attributes: what the step table says of it.
func stepAttrs(s *spec.Step, st *contract.StepState) map[string]any {
	attrs := map[string]any{
		"playbook.step":          s.Name,
		"playbook.status":        string(st.Status),
		"playbook.attempts":      st.Attempts,
		"playbook.routed_to_end": st.RoutedToEnd,
	}
	if s.Tool != nil {
		attrs["playbook.kind"] = s.Tool.Kind
	}
	if st.AllowedFailure {
		attrs["playbook.allowed_failure"] = true
	}
	if st.Recovery != "" {
		attrs["playbook.recovery"] = st.Recovery
	}
	contract.ErrorAttrs(attrs, st.Error)
	if s.Loop != nil {
		if list, ok := st.Result.([]any); ok {
			attrs["playbook.loop.elements"] = len(list)
			attrs["playbook.loop.element_spans"] = min(len(list), contract.LoopElementSpans)
		}
	}
	// What an approval decided, and who: the span shows what the run
	// waited for and how long.
	if m, ok := st.Result.(map[string]any); ok && s.Tool != nil && spec.IsPause(s.Tool.Kind) {
		for _, k := range []string{"decision", "by"} {
			if v, ok := m[k].(string); ok {
				attrs["playbook.approval."+k] = v
			}
		}
	}
	if st.Error != nil && s.Tool != nil && s.Tool.Kind == "approval" {
		if d, ok := st.Error.Details.(map[string]any); ok {
			if by, ok := d["by"].(string); ok {
				attrs["playbook.approval.decision"], attrs["playbook.approval.by"] = "rejected", by
			}
		}
	}
	return attrs
}

// ElementSpan is the span of element index of loop step step, which ran
// from start to end with outcome o; ok is false for the elements past
// contract.LoopElementSpans, which have none.
func ElementSpan(t contract.TraceID, step string, index int, start, end time.Time, o contract.Outcome) (contract.Span, bool) {
	if index < 0 || index >= contract.LoopElementSpans {
		return contract.Span{}, false
	}
	attrs := map[string]any{"playbook.step": step, "playbook.loop.index": index, "playbook.attempts": o.Attempts}
	span := contract.Span{Trace: t, ID: contract.ElementSpan(t, step, index), Parent: contract.StepSpan(t, step),
		Name: fmt.Sprintf("element %s[%d]", step, index), Start: start, End: end, Attrs: attrs}
	if o.Err != nil {
		contract.ErrorAttrs(attrs, o.Err)
		span.Failed, span.StatusMessage = true, o.Err.Type+": "+o.Err.Message
	}
	return span, true
}
