package interpreter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chainPlaybook writes a chain of n noop steps, step_0 to step_{n-1}, each
// after the one before it: by the earlier step's next, or, with dependsOn,
// by the later step's depends_on. With reads, each step's result is a
// template reading the result of the step before it.
func chainPlaybook(n int, dependsOn, reads bool) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: playbook/v1\nkind: Playbook\nmetadata:\n  name: chain\nworkflow:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - step: step_%d\n", i)
		if reads && i > 0 {
			fmt.Fprintf(&b, "    tool: {kind: noop, result: \"{{ steps.step_%d.result }}\"}\n", i-1)
		} else {
			fmt.Fprintf(&b, "    tool: {kind: noop, result: %d}\n", i)
		}
		switch {
		case dependsOn && i > 0:
			fmt.Fprintf(&b, "    depends_on: step_%d\n", i-1)
		case !dependsOn && i+1 < n:
			fmt.Fprintf(&b, "    next: step_%d\n", i+1)
		}
	}
	return []byte(b.String())
}

// A long chain validates: the time it takes grows with the number of
// steps, not with its square (BenchmarkValidateChain times it), so a file
// at the size limit does not keep `playbook run` or the workflow's re-parse
// busy for minutes.
func TestLongChainsValidate(t *testing.T) {
	pb, err := ParseStrict("chain.yaml", chainPlaybook(30_000, false, true), "")
	require.NoError(t, err)
	require.Len(t, pb.Steps, 30_001, "the steps and end")

	// The checks still see the graph: far down a chain, a step reading
	// itself, or a step below it, is told so.
	src := strings.Replace(string(chainPlaybook(3_000, false, true)), `"{{ steps.step_2998.result }}"`, `"{{ steps.step_2999.result }}"`, 1)
	_, err = ParseStrict("chain.yaml", []byte(src), "")
	require.EqualError(t, err, `chain.yaml:9004: step "step_2999": tool: "steps.step_2999.result": reads steps.step_2999, the step itself, which has not run yet (its own next, retry_when and stop_when may read it)`)
	src = strings.Replace(string(chainPlaybook(3_000, true, true)), `"{{ steps.step_2000.result }}"`, `"{{ steps.step_2002.result }}"`, 1)
	_, err = ParseStrict("chain.yaml", []byte(src), "")
	require.EqualError(t, err, `chain.yaml:6009: step "step_2001": tool: "steps.step_2002.result": reads steps.step_2002, but step "step_2002" is not upstream of "step_2001" (it would read null): make it a predecessor through next or depends_on`)
}

// settleChain runs a chain the way the workflow does: each step that is
// ready completes, then Ready again, until end may start.
func settleChain(t testing.TB, pb *Playbook) []string {
	r := NewRun(pb, nil, "chain", func() time.Time { return time.Time{} })
	var order []string
	for !r.EndReady() {
		ready := r.Ready()
		if len(ready) == 0 {
			t.Fatalf("stalled after %d steps", len(order))
		}
		for _, s := range ready {
			order = append(order, s.Name)
			r.Settle(s.Name, Outcome{Result: 1, Attempts: 1})
		}
	}
	return order
}

// Ready and EndReady, called after every step settles, look at what
// changed, not at every step: settling a chain of 5,000 steps one by one
// took 2.5 s when each call went over every step, and takes milliseconds.
func TestSettlingALongChain(t *testing.T) {
	pb, err := Parse("chain.yaml", chainPlaybook(5_000, false, false))
	require.NoError(t, err)
	start := time.Now()
	order := settleChain(t, pb)
	took := time.Since(start)
	require.Len(t, order, 5_000)
	require.Equal(t, "step_4999", order[4_999])
	require.Less(t, took, time.Second, "a wide margin over the milliseconds it takes")
}

// BenchmarkValidateChain times the submission's parse and checks
// (ParseStrict) of a chain of 10,000 steps, each reading the result of the
// step before it (`make bench` prints the line).
func BenchmarkValidateChain(b *testing.B) {
	const n = 10_000
	src := chainPlaybook(n, false, true)
	start := time.Now()
	for b.Loop() {
		if _, err := ParseStrict("chain.yaml", src, ""); err != nil {
			b.Fatal(err)
		}
	}
	per := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(per, "s/validate")
	fmt.Printf("validate chain %d: %.2f s (ParseStrict; each step's result reads the step before)\n", n, per)
}

// BenchmarkSettleChain times a run of a chain of 5,000 steps settled one
// by one, as the workflow does (Ready, Settle, EndReady), without parsing.
func BenchmarkSettleChain(b *testing.B) {
	const n = 5_000
	pb, err := Parse("chain.yaml", chainPlaybook(n, false, false))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for b.Loop() {
		settleChain(b, pb)
	}
	per := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(per*1000, "ms/run")
	fmt.Printf("settle chain %d: %.1f ms (Ready, Settle, EndReady after each step)\n", n, per*1000)
}
