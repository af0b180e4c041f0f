// Package playbooktest writes playbooks for the tests and benchmarks of
// more than one package.
package playbooktest

import (
	"fmt"
	"strings"
)

// Chain writes a chain of n noop steps, step_0 to step_{n-1}, each
// after the one before it: by the earlier step's next, or, with dependsOn,
// by the later step's depends_on. With reads, each step's result is a
// template reading the result of the step before it.
func Chain(n int, dependsOn, reads bool) []byte {
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
