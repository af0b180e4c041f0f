package contract

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A decision is refused before it reaches a run when it is too large, or
// when who decides or why is not one line of printable UTF-8 text; the
// message says which and where.
func TestCheckDecision(t *testing.T) {
	cases := []struct {
		name string
		d    ApprovalDecision
		want string // "" when the decision is taken
	}{
		{"plain", ApprovalDecision{Step: "gate", Decision: "approve", By: "ana", Reason: "looks right"}, ""},
		{"name at the bound", ApprovalDecision{Step: "gate", Decision: "approve", By: strings.Repeat("a", MaxNameBytes)}, ""},
		{"name over the bound", ApprovalDecision{Step: "gate", Decision: "approve", By: strings.Repeat("a", MaxNameBytes+1)},
			"by is 201 bytes, over the limit of 200 for a name"},
		{"newline in by", ApprovalDecision{Step: "gate", Decision: "approve", By: "ana\nbob"},
			`by holds a control character (\n at byte 3): give one line of printable text`},
		{"escape in the reason", ApprovalDecision{Step: "gate", Decision: "reject", Reason: "ok \x1b[2J"},
			`the reason holds a control character (\x1b at byte 3): give one line of printable text`},
		{"C1 control", ApprovalDecision{Step: "gate", Decision: "reject", Reason: "a\u009bb"},
			`the reason holds a control character (\u009b at byte 1): give one line of printable text`},
		{"not UTF-8", ApprovalDecision{Step: "gate", Decision: "reject", By: "\xff"}, "by is not UTF-8 text"},
		{"inputs over the size bound", ApprovalDecision{Step: "gate", Decision: "approve", Inputs: map[string]any{"blob": strings.Repeat("x", MaxDecisionBytes)}},
			"the decision is 262201 bytes, over the limit of 262144 (256 KiB) on what is sent to a run: nothing was sent"},
		{"too large for the worker to pass on", ApprovalDecision{OversizedBytes: 3 << 20},
			"the decision is 3145728 bytes, over the limit of 262144 (256 KiB) on what is sent to a run: nothing was sent"},
		{"inputs JSON cannot carry", ApprovalDecision{Step: "gate", Decision: "approve", Inputs: map[string]any{"x": math.NaN()}},
			"the decision is not JSON: json: unsupported value: NaN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDecision(tc.d)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
	require.NoError(t, CheckSize("the inputs", MaxDecisionBytes), "the bound itself is allowed")
}

// A worker hands the validator a marker in place of an Update's arguments
// it would not decode; only a marker reads as one.
func TestOversizedMarker(t *testing.T) {
	n, ok := Oversized(OversizedMarker(5 << 20))
	require.True(t, ok)
	require.Equal(t, 5<<20, n)
	for _, s := range []string{"", "12", "oversized:12", "\x00oversized:", "\x00oversized:x", "gate"} {
		_, ok := Oversized(s)
		require.False(t, ok, "%q", s)
	}
}

// A retry's reused loop elements are half-open spans: Has and Count read
// them as the booleans they came from.
func TestElementReuseSpans(t *testing.T) {
	cases := []struct {
		reused []bool
		spans  [][2]int
	}{
		{nil, nil},
		{[]bool{false, false}, nil},
		{[]bool{true}, [][2]int{{0, 1}}},
		{[]bool{true, true, false, true}, [][2]int{{0, 2}, {3, 4}}},
		{[]bool{false, true, true, true, false, false, true, true}, [][2]int{{1, 4}, {6, 8}}},
	}
	for _, tc := range cases {
		r := &ElementReuse{Total: len(tc.reused), Spans: SpansOf(tc.reused)}
		require.Equal(t, tc.spans, r.Spans, "%v", tc.reused)
		count := 0
		for i, want := range tc.reused {
			require.Equal(t, want, r.Has(i), "%v at %d", tc.reused, i)
			if want {
				count++
			}
		}
		require.False(t, r.Has(-1))
		require.False(t, r.Has(len(tc.reused)), "past the end")
		require.Equal(t, count, r.Count())
	}
	var none *ElementReuse
	require.False(t, none.Has(0), "a step with nothing reused")
	require.Zero(t, none.Count())
}

// A loop's progress counts each finished element once, by how it ended.
func TestLoopProgress(t *testing.T) {
	p := LoopProgress{Total: 6, Running: 2}
	p.Add(Outcome{Result: 1}, Outcome{Err: &StepError{Type: ErrExitCode}}, Outcome{Err: &StepError{Type: ErrCancelled}}, Outcome{Result: nil})
	require.Equal(t, LoopProgress{Total: 6, Done: 2, Failed: 1, Cancelled: 1, Running: 2}, p)
	require.Equal(t, "2 of 6 elements done, 1 failed, 2 running, 1 cancelled", p.String())
	require.Equal(t, "0 of 3 elements done, 0 failed, 3 running", LoopProgress{Total: 3, Running: 3}.String(), "no cancelled part while none is")
}

// Where a retried run came from, in one line.
func TestOriginString(t *testing.T) {
	cases := []struct {
		o    Origin
		want string
	}{
		{Origin{RetryOf: "etl-1"}, "retry of etl-1"},
		{Origin{RetryOf: "etl-1", File: "etl.yaml", FileChanged: true}, "retry of etl-1 with a changed playbook"},
		{Origin{RetryOf: "etl-1", File: "etl.yaml"}, "retry of etl-1 with an unchanged playbook"},
		{Origin{RetryOf: "etl-1", Overrides: map[string]any{"rate": 2, "a": "x"}, From: "load", By: "mcp", Reason: "the source is back"},
			`retry of etl-1 and workload {"a":"x","rate":2} from step load by mcp: the source is back`},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tc.o.String())
	}
}

func TestRunTimeoutString(t *testing.T) {
	require.Equal(t, "the run's deadline of 3s passed", (&RunTimeout{After: "3s", OnTimeout: "cancel"}).String())
	require.Equal(t, "the run's deadline of 1h (inherited from parent-1) passed", (&RunTimeout{After: "1h", SetBy: "parent-1"}).String())
}

// Which statuses are final, and which errors are the engine's own (no
// exit-code rule or retry applies to them).
func TestStatusesAndErrorKinds(t *testing.T) {
	for s, terminal := range map[Status]bool{StatusPending: false, StatusRunning: false, StatusPendingFailed: false,
		StatusCompleted: true, StatusFailed: true, StatusSkipped: true, StatusCancelled: true, StatusReused: true} {
		require.Equal(t, terminal, s.Terminal(), s)
	}
	engine := map[string]bool{ErrExpression: true, ErrTemplate: true, ErrTool: true}
	for _, typ := range BuiltinErrorTypes {
		require.Equal(t, engine[typ], IsEngineError(typ), typ)
	}
	require.False(t, IsEngineError("my_own_kind"), "a fail step's own type")
	require.Equal(t, "exit_code: exited with code 2", (&StepError{Type: ErrExitCode, Message: "exited with code 2"}).Error())
}

// Attempts missing from a step's records were lost with their worker:
// each gets a record of its own, in attempt order, and records already
// there stay as they are.
func TestWithLostAttempts(t *testing.T) {
	own := AttemptRecord{Attempt: 2, Error: StepError{Type: ErrExitCode, Message: "exited with code 1"}}
	got := WithLostAttempts([]AttemptRecord{own}, 1, 4)
	require.Equal(t, []AttemptRecord{LostAttempt(1), own, LostAttempt(3), LostAttempt(4)}, got)
	require.Equal(t, AttemptRecord{Attempt: 3, Lost: true, Error: StepError{Type: ErrHeartbeatTimeout, Message: "attempt 3 was lost: its worker stopped heartbeating"}}, got[2])
	require.Equal(t, []AttemptRecord{own}, WithLostAttempts([]AttemptRecord{own}, 2, 2), "nothing lost")
	require.Empty(t, WithLostAttempts(nil, 1, 0), "no attempt yet")
}

// Cut keeps at most n bytes and never splits a character.
func TestCut(t *testing.T) {
	require.Equal(t, "short", Cut("short", 5))
	require.Equal(t, "sho…", Cut("short", 3))
	require.Equal(t, "a…", Cut("aé", 2), "é is two bytes: half of it is dropped")
}

// An item's digest is the same whatever its maps' order or its numbers'
// Go types, and differs when the item says something else.
func TestItemDigest(t *testing.T) {
	a := ItemDigest(map[string]any{"id": 1, "region": "eu"})
	require.Equal(t, a, ItemDigest(map[string]any{"region": "eu", "id": float64(1)}))
	require.NotEqual(t, a, ItemDigest(map[string]any{"id": 1, "region": "us"}))
	require.Len(t, a, 64)
	require.Equal(t, ItemDigest("x"), ItemDigest("x"))
}

// A long loop's tally keeps its elements' files as [INDEX]/PATH, as a
// short loop's step lists them, and drops them with the results past the
// budget.
func TestLoopTallyKeepsElementsFiles(t *testing.T) {
	ref := func(s string) FileRef {
		return FileRef{URI: "file:///s/" + s, Bytes: 1, SHA256: strings.Repeat("a", 64)}
	}
	tally := NewLoopTally(2)
	tally.Add(1, Outcome{Result: "b", Files: map[string]FileRef{"out/b.csv": ref("b")}})
	tally.Add(0, Outcome{Result: "a", Files: map[string]FileRef{"out/a.csv": ref("a")}})
	o := tally.Outcome("history")
	require.Nil(t, o.Err)
	require.Equal(t, map[string]FileRef{"[0]/out/a.csv": ref("a"), "[1]/out/b.csv": ref("b")}, o.Files)

	over := NewLoopTally(2)
	over.Add(0, Outcome{Result: strings.Repeat("x", LoopResultBudget), Files: map[string]FileRef{"a": ref("a")}})
	over.Add(1, Outcome{Result: "b", Files: map[string]FileRef{"b": ref("b")}})
	require.Nil(t, over.Outcome("history").Files)
}
