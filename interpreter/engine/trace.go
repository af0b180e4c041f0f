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
}

// Spans are the run's span and one span for each step that started (the
// steps skipped or reused have none): what the workflow emits once the
// run has ended. Their times are the workflow's, as the step table shows
// them; an attempt's span, under its step's, is the activity's, with the
// worker's clock.
func (r *Run) Spans(rs RunSpan, agg *contract.Aggregate) []contract.Span {
	root := contract.RootSpan(rs.Trace)
	rootAttrs := map[string]any{
		"playbook.name":         r.pb.Name,
		"playbook.run_id":       r.executionID,
		"playbook.logical_time": r.logicalTime,
		"playbook.outcome":      agg.Status,
		"playbook.steps":        agg.TotalSteps,
		"playbook.failed_steps": agg.FailedStepsCount,
	}
	run := contract.Span{Trace: rs.Trace, ID: root, Name: "playbook " + r.pb.Name, Start: rs.Start, End: rs.End, Attrs: rootAttrs}
	switch agg.Status {
	case contract.RunCompleted, contract.RunCompletedWithWarnings:
	default:
		run.Failed, run.StatusMessage = true, agg.Status
		if why := r.FirstFailure(); why != "" {
			run.StatusMessage += ": " + why
		}
	}
	if rs.StartedBy != nil {
		run.Links = []contract.SpanLink{*rs.StartedBy}
	}
	spans := []contract.Span{run}
	for i, s := range r.pb.Steps {
		st := r.ordered[i]
		if st.StartedAt == nil {
			continue
		}
		end := rs.End
		if st.EndedAt != nil {
			end = *st.EndedAt
		}
		span := contract.Span{Trace: rs.Trace, ID: contract.StepSpan(rs.Trace, s.Name), Parent: root, Name: "step " + s.Name, Start: *st.StartedAt, End: end, Attrs: stepAttrs(s, st)}
		if st.Error != nil && !st.AllowedFailure {
			span.Failed, span.StatusMessage = true, st.Error.Type+": "+st.Error.Message
		}
		if child, ok := rs.Children[s.Name]; ok {
			span.Links = []contract.SpanLink{{Trace: child, Span: contract.RootSpan(child)}}
		}
		spans = append(spans, span)
	}
	return spans
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
