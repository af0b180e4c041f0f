package contract

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The IDs are a function of the run's identity and the span's place: the
// same inputs name the same span (a replay, a restarted worker, the
// activity and the workflow agree), any other input another one.
func TestTraceIDsDeriveFromTheRunsIdentity(t *testing.T) {
	tr := RunTrace("deploy-1", "run-a")
	require.Equal(t, tr, RunTrace("deploy-1", "run-a"), "stable")
	require.Equal(t, "26a806ee147fa9fbf505f604178179b2", RunTrace("deploy-1", "run-a").String(), "the derivation never changes: spans of a run in flight stay its own")
	seen := map[string]string{}
	add := func(what string, id string) {
		t.Helper()
		prev, dup := seen[id]
		require.False(t, dup, "%s and %s share ID %s", what, prev, id)
		seen[id] = what
	}
	add("trace", tr.String())
	add("trace of another run of the same ID", RunTrace("deploy-1", "run-b").String())
	add("trace of a joined identity", RunTrace("deploy-1r", "un-a").String())
	for _, c := range []struct {
		what string
		id   SpanID
	}{
		{"root", RootSpan(tr)},
		{"step a", StepSpan(tr, "a")},
		{"step b", StepSpan(tr, "b")},
		{"element a[0]", ElementSpan(tr, "a", 0)},
		{"element a[1]", ElementSpan(tr, "a", 1)},
		{"attempt 1 of a", AttemptSpan(tr, "a", NoElement, 1)},
		{"attempt 2 of a", AttemptSpan(tr, "a", NoElement, 2)},
		{"attempt 1 of a[0]", AttemptSpan(tr, "a", 0, 1)},
		{"attempt 1 of a[1]", AttemptSpan(tr, "a", 1, 1)},
		{"root of another run", RootSpan(RunTrace("deploy-1", "run-b"))},
	} {
		require.NotEqual(t, SpanID{}, c.id, c.what)
		add(c.what, c.id.String())
	}
}

func TestAttemptTraceHangsUnderItsElementOrItsStep(t *testing.T) {
	in := StepInput{WorkflowID: "w", RunID: "r"}
	tr := RunTrace("w", "r")
	cases := []struct {
		step   string
		parent SpanID
		span   SpanID
	}{
		{"fetch", StepSpan(tr, "fetch"), AttemptSpan(tr, "fetch", NoElement, 2)},
		{"fetch[0]", ElementSpan(tr, "fetch", 0), AttemptSpan(tr, "fetch", 0, 2)},
		{"fetch[99]", ElementSpan(tr, "fetch", 99), AttemptSpan(tr, "fetch", 99, 2)},
		// Past the bound an element has no span: its attempts hang under the step.
		{"fetch[100]", StepSpan(tr, "fetch"), AttemptSpan(tr, "fetch", 100, 2)},
	}
	for _, c := range cases {
		in.Step = c.step
		gotTrace, span, parent := AttemptTrace(in, 2)
		require.Equal(t, tr, gotTrace, c.step)
		require.Equal(t, c.span, span, c.step)
		require.Equal(t, c.parent, parent, c.step)
	}
}

func TestElementOf(t *testing.T) {
	cases := []struct {
		name  string
		step  string
		index int
	}{
		{"fetch", "fetch", NoElement},
		{"fetch[3]", "fetch", 3},
		{"fetch[120000]", "fetch", 120000},
		{"fetch[]", "fetch[]", NoElement},
		{"fetch[x]", "fetch[x]", NoElement},
		{"[3]", "[3]", NoElement},
		{"fetch[-1]", "fetch[-1]", NoElement},
	}
	for _, c := range cases {
		step, index := ElementOf(c.name)
		require.Equal(t, c.step, step, c.name)
		require.Equal(t, c.index, index, c.name)
	}
}

func TestTraceparentIsW3C(t *testing.T) {
	tr := RunTrace("w", "r")
	tp := Traceparent(tr, RootSpan(tr))
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, tp)
	require.Equal(t, "00-"+tr.String()+"-"+RootSpan(tr).String()+"-01", tp)
}

func TestErrorAttrs(t *testing.T) {
	for _, c := range []struct {
		err  *StepError
		want map[string]any
	}{
		{nil, map[string]any{}},
		{&StepError{Type: "http_error"}, map[string]any{"playbook.error.type": "http_error"}},
		{&StepError{Type: "exit_code", Details: map[string]any{"exit_code": 3}}, map[string]any{"playbook.error.type": "exit_code", "playbook.exit_code": 3}},
		{&StepError{Type: "exit_code", Details: map[string]any{"exit_code": float64(4)}}, map[string]any{"playbook.error.type": "exit_code", "playbook.exit_code": 4}},
	} {
		got := map[string]any{}
		ErrorAttrs(got, c.err)
		require.Equal(t, c.want, got)
	}
}
