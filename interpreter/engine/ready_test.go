package engine

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// readyByScan is Ready as it was before it kept counts: passes over every
// step in file order until one resolves nothing. Ready must decide the
// same, in the same order, whatever happened to the run in between.
func readyByScan(r *Run) []*spec.Step {
	var ready []*spec.Step
	for changed := true; changed; {
		changed = false
		for i, s := range r.pb.Steps {
			st := r.ordered[i]
			if s.Name == spec.EndStep || st.Status != contract.StatusPending {
				continue
			}
			run, resolved, reason, origin := r.decide(s)
			if !resolved {
				continue
			}
			changed = true
			if r.resolve(s, st, run, reason, origin) {
				ready = append(ready, s)
			}
		}
	}
	return ready
}

func endReadyByScan(r *Run) bool {
	for i, s := range r.pb.Steps {
		if s.Name != spec.EndStep && !r.ordered[i].Status.Terminal() {
			return false
		}
	}
	return true
}

// randomGraph writes a playbook of n steps whose arcs (next, when/else
// branches, depends_on) may point backwards in the file, so that passes
// over the file matter.
func randomGraph(rng *rand.Rand, n int) string {
	var b strings.Builder
	modes := []string{"continue", "stop", "cancel"}
	fmt.Fprintf(&b, "metadata: {name: g}\nfailure_mode: %s\nuse_pending_failed: %v\nworkflow:\n", modes[rng.Intn(3)], rng.Intn(2) == 0)
	// A random order of the steps is the graph's topological order, so
	// arcs only go forward in it, never in a cycle.
	order := rng.Perm(n)
	for i := range n {
		fmt.Fprintf(&b, "  - step: s%d\n    tool: {kind: noop}\n", i)
		if rng.Intn(4) == 0 {
			b.WriteString("    on_failure: run\n")
		}
		var later, earlier []string
		for j := range n {
			switch {
			case order[j] > order[i] && rng.Intn(n) < 2:
				later = append(later, fmt.Sprintf("s%d", j))
			case order[j] < order[i] && rng.Intn(n) < 2:
				earlier = append(earlier, fmt.Sprintf("s%d", j))
			}
		}
		if len(later) > 0 {
			if rng.Intn(3) == 0 {
				fmt.Fprintf(&b, "    next:\n      - when: \"steps.s%d.result == 1\"\n        then: [%s]\n      - else: [%s]\n", i, later[0], strings.Join(later, ", "))
			} else {
				fmt.Fprintf(&b, "    next: [%s]\n", strings.Join(later, ", "))
			}
		}
		if len(earlier) > 0 {
			fmt.Fprintf(&b, "    depends_on: [%s]\n", strings.Join(earlier, ", "))
		}
	}
	return b.String()
}

// Ready, which looks only at what changed, resolves the same steps in the
// same order as passes over every step, through random runs: results,
// failures, cancellations, steps held pending_failed and classified,
// cancel and drain requests, steps reused from an earlier run.
func TestReadyMatchesAScanOfEveryStep(t *testing.T) {
	rng := rand.New(rand.NewSource(24))
	clock := func() time.Time { return time.Unix(0, 0) }
	for round := range 400 {
		src := randomGraph(rng, 2+rng.Intn(14))
		pb, err := spec.Parse("g.yaml", []byte(src))
		require.NoError(t, err, src)
		opts := []RunOption{}
		if rng.Intn(4) == 0 {
			opts = append(opts, WithFirstArcOnly())
		}
		counted, scanned := NewRun(pb, nil, "a", clock, opts...), NewRun(pb, nil, "a", clock, opts...)
		if rng.Intn(4) == 0 {
			earlier := map[string]*contract.StepState{}
			for _, s := range pb.Steps {
				if rng.Intn(2) == 0 {
					earlier[s.Name] = &contract.StepState{Status: contract.StatusCompleted, Result: 1}
				}
			}
			reuse, err := ReusableSteps(pb, earlier, "")
			require.NoError(t, err)
			counted.Reuse(reuse)
			scanned.Reuse(reuse)
		}
		for moves := 0; ; moves++ {
			require.Equal(t, endReadyByScan(scanned), counted.EndReady(), "round %d\n%s", round, src)
			if endReadyByScan(scanned) && rng.Intn(3) > 0 {
				break
			}
			want := names(readyByScan(scanned))
			require.Equal(t, want, names(counted.Ready()), "round %d, move %d\n%s", round, moves, src)
			// One thing happens to both runs.
			running, pending := scanned.Running(), scanned.Pending()
			switch k := rng.Intn(20); {
			case k == 0:
				counted.CancelRun("x")
				scanned.CancelRun("x")
			case k == 1:
				counted.Drain()
				scanned.Drain()
			case k < 5 && len(pending) > 0:
				name := pending[rng.Intn(len(pending))].Step
				action := []string{ClassifyRetry, ClassifyFail, ClassifySkip}[rng.Intn(3)]
				require.NoError(t, counted.Classify(name, action, "test", ""))
				require.NoError(t, scanned.Classify(name, action, "test", ""))
			case len(running) > 0:
				name := running[rng.Intn(len(running))]
				o := []contract.Outcome{
					{Result: 1, Attempts: 1},
					{Result: 2, Attempts: 1},
					{Err: &contract.StepError{Type: contract.ErrTool, Message: "no"}, Attempts: 1, Recovery: contract.RecoveryNoHandler},
					{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "cancelled"}, Attempts: 1},
				}[rng.Intn(4)]
				counted.Settle(name, o)
				scanned.Settle(name, o)
			case len(pending) > 0:
				name := pending[0].Step
				require.NoError(t, counted.Classify(name, ClassifySkip, "test", ""))
				require.NoError(t, scanned.Classify(name, ClassifySkip, "test", ""))
			case endReadyByScan(scanned):
			default:
				t.Fatalf("round %d: stalled\n%s", round, src)
			}
		}
		require.Equal(t, eventLines(scanned.Events()), eventLines(counted.Events()), "round %d\n%s", round, src)
	}
}

func eventLines(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type+" "+e.Step+" "+e.Message)
	}
	return out
}
