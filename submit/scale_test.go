package submit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/internal/playbooktest"
)

// A long chain validates: the time it takes grows with the number of
// steps, not with its square (BenchmarkValidateChain times it), so a file
// at the size limit does not keep `playbook run` or the workflow's re-parse
// busy for minutes.
func TestLongChainsValidate(t *testing.T) {
	pb, err := ParseStrict("chain.yaml", playbooktest.Chain(30_000, false, true), "")
	require.NoError(t, err)
	require.Len(t, pb.Steps, 30_001, "the steps and end")

	// The checks still see the graph: far down a chain, a step reading
	// itself, or a step below it, is told so.
	src := strings.Replace(string(playbooktest.Chain(3_000, false, true)), `"{{ steps.step_2998.result }}"`, `"{{ steps.step_2999.result }}"`, 1)
	_, err = ParseStrict("chain.yaml", []byte(src), "")
	require.EqualError(t, err, `chain.yaml:9004: step "step_2999": tool: "steps.step_2999.result": reads steps.step_2999, the step itself, which has not run yet (its own next, retry_when and stop_when may read it)`)
	src = strings.Replace(string(playbooktest.Chain(3_000, true, true)), `"{{ steps.step_2000.result }}"`, `"{{ steps.step_2002.result }}"`, 1)
	_, err = ParseStrict("chain.yaml", []byte(src), "")
	require.EqualError(t, err, `chain.yaml:6009: step "step_2001": tool: "steps.step_2002.result": reads steps.step_2002, but step "step_2002" is not upstream of "step_2001" (it would read null): make it a predecessor through next or depends_on`)
}

// BenchmarkValidateChain times the submission's parse and checks
// (ParseStrict) of a chain of 10,000 steps, each reading the result of the
// step before it (`make bench` prints the line).
func BenchmarkValidateChain(b *testing.B) {
	const n = 10_000
	src := playbooktest.Chain(n, false, true)
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
