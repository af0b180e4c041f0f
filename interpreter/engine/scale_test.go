package engine

import (
	"fmt"
	"testing"
	"time"

	"playbook/internal/playbooktest"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// settleChain runs a chain the way the workflow does: each step that is
// ready completes, then Ready again, until end may start.
func settleChain(t testing.TB, pb *spec.Playbook) []string {
	r := NewRun(pb, nil, "chain", func() time.Time { return time.Time{} })
	var order []string
	for !r.EndReady() {
		ready := r.Ready()
		if len(ready) == 0 {
			t.Fatalf("stalled after %d steps", len(order))
		}
		for _, s := range ready {
			order = append(order, s.Name)
			r.Settle(s.Name, contract.Outcome{Result: 1, Attempts: 1})
		}
	}
	return order
}

// Ready and EndReady, called after every step settles, look at what
// changed, not at every step: settling a chain of 5,000 steps one by one
// took 2.5 s when each call went over every step, and takes milliseconds.
func TestSettlingALongChain(t *testing.T) {
	pb, err := spec.Parse("chain.yaml", playbooktest.Chain(5_000, false, false))
	require.NoError(t, err)
	start := time.Now()
	order := settleChain(t, pb)
	took := time.Since(start)
	require.Len(t, order, 5_000)
	require.Equal(t, "step_4999", order[4_999])
	if !raceDetector {
		require.Less(t, took, time.Second, "a wide margin over the milliseconds it takes")
	}
}

// BenchmarkSettleChain times a run of a chain of 5,000 steps settled one
// by one, as the workflow does (Ready, Settle, EndReady), without parsing.
func BenchmarkSettleChain(b *testing.B) {
	const n = 5_000
	pb, err := spec.Parse("chain.yaml", playbooktest.Chain(n, false, false))
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
