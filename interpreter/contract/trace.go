package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// A run's trace, as OpenTelemetry sees it. Nothing here is recorded in a
// history: every ID is a hash of the run's identity (its workflow ID and
// run ID), a step's name, a loop element's index and an attempt's number,
// so that the workflow (which emits the run's, the steps' and the
// elements' spans) and the activity (which emits an attempt's span and
// hands its context to the step's code) name the same spans without
// telling each other, and a replay, a restarted worker or a driver
// continued as new names them again the same: a span emitted twice is the
// same span, never a second one.

// TraceID names a run's trace; SpanID one span in it.
type (
	TraceID [16]byte
	SpanID  [8]byte
)

func (t TraceID) String() string { return hex.EncodeToString(t[:]) }
func (s SpanID) String() string  { return hex.EncodeToString(s[:]) }

// LoopElementSpans is how many elements of a loop step get a span of their
// own (those numbered 0 to LoopElementSpans-1), with their attempts under
// them; the attempts of the elements past it hang under the step's span,
// whose attributes count all the elements, so that a loop of 100,000
// elements emits 100 element spans, not 100,000.
const LoopElementSpans = 100

// NoElement is the element index of a step that is not a loop's element.
const NoElement = -1

// hashID is the first n bytes of the sha256 of the parts, each ended by a
// NUL (no part holds one: workflow IDs and step names are text), never all
// zero (an invalid ID to OpenTelemetry).
func hashID(n int, parts ...string) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)[:n]
	for _, b := range sum {
		if b != 0 {
			return sum
		}
	}
	sum[n-1] = 1
	return sum
}

// RunTrace is the trace of the run with this workflow ID and run ID.
func RunTrace(workflowID, runID string) TraceID {
	var t TraceID
	copy(t[:], hashID(16, "playbook-trace", workflowID, runID))
	return t
}

// RootSpan is the run's own span.
func RootSpan(t TraceID) SpanID { return spanID(t, "run") }

// StepSpan is a step's span.
func StepSpan(t TraceID, step string) SpanID { return spanID(t, "step", step) }

// ElementSpan is the span of a loop step's element.
func ElementSpan(t TraceID, step string, index int) SpanID {
	return spanID(t, "element", step, strconv.Itoa(index))
}

// AttemptSpan is the span of an attempt (numbered from 1, across
// classifications) of a step, or of one of a loop's elements.
func AttemptSpan(t TraceID, step string, index, attempt int) SpanID {
	return spanID(t, "attempt", step, strconv.Itoa(index), strconv.Itoa(attempt))
}

// AttemptParent is the span an attempt hangs under: its element's, for the
// elements that have one, else its step's.
func AttemptParent(t TraceID, step string, index int) SpanID {
	if index >= 0 && index < LoopElementSpans {
		return ElementSpan(t, step, index)
	}
	return StepSpan(t, step)
}

func spanID(t TraceID, parts ...string) SpanID {
	var s SpanID
	copy(s[:], hashID(8, append([]string{t.String()}, parts...)...))
	return s
}

// Traceparent is the W3C trace context naming span s of trace t, sampled:
// what a step's process reads as TRACEPARENT and an http step or a webhook
// sends as the traceparent header.
func Traceparent(t TraceID, s SpanID) string { return "00-" + t.String() + "-" + s.String() + "-01" }

// ElementOf splits a step input's name into its step and its element's
// index: "fetch[3]" is element 3 of step fetch; a name without an index
// is the step's own, with index NoElement.
func ElementOf(name string) (step string, index int) {
	if !strings.HasSuffix(name, "]") {
		return name, NoElement
	}
	open := strings.LastIndexByte(name, '[')
	if open <= 0 {
		return name, NoElement
	}
	i, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil || i < 0 {
		return name, NoElement
	}
	return name[:open], i
}

// AttemptTrace is where an attempt of in stands in its run's trace: the
// trace, its own span and the span it hangs under.
func AttemptTrace(in StepInput, attempt int) (t TraceID, span, parent SpanID) {
	t = RunTrace(in.WorkflowID, in.RunID)
	step, index := ElementOf(in.Step)
	return t, AttemptSpan(t, step, index, attempt), AttemptParent(t, step, index)
}

// Span is one span of a run's trace, as the workflow or an activity makes
// it: the worker's exporter turns it into OpenTelemetry's.
type Span struct {
	Trace  TraceID
	ID     SpanID
	Parent SpanID // zero: the trace's root
	Name   string
	Start  time.Time
	End    time.Time
	// Attrs are the span's attributes, by name: string, int, bool or
	// []string values.
	Attrs map[string]any
	// Failed marks a span whose work failed, StatusMessage saying how.
	Failed        bool
	StatusMessage string
	// Links name spans of other traces: a sub-playbook's run links to the
	// step that started it.
	Links []SpanLink
}

// SpanLink names a span of another trace.
type SpanLink struct {
	Trace TraceID
	Span  SpanID
}

// ErrorAttrs are the attributes of a span whose work ended with err: its
// type, and an exit code when its details have one.
func ErrorAttrs(attrs map[string]any, err *StepError) {
	if err == nil {
		return
	}
	attrs["playbook.error.type"] = err.Type
	if d, ok := err.Details.(map[string]any); ok {
		switch c := d["exit_code"].(type) {
		case int:
			attrs["playbook.exit_code"] = c
		case float64:
			attrs["playbook.exit_code"] = int(c)
		case int64:
			attrs["playbook.exit_code"] = int(c)
		}
	}
}
