package testsuite

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// markedLoop is a parallel loop of n elements, each noting its item in
// DIR/marks; element 7 fails until DIR/fixed exists.
func markedLoop(n int) string {
	return fmt.Sprintf(`metadata: {name: partitions}
workload: {dir: /tmp}
workflow:
  - step: checksum
    loop: {in: "1..%d", mode: parallel, max_in_flight: 50}
    tool:
      kind: shell
      command: 'echo $I >> "$D/marks"; [ $I != 7 ] || [ -e "$D/fixed" ] || exit 3; echo $I'
      env: {D: "{{ workload.dir }}", I: "{{ item }}"}
    next: report
  - step: report
    tool: {kind: noop, result: "{{ len(steps.checksum.result) }}"}
`, n)
}

// countMarks counts the lines of DIR/marks, and those of item.
func countMarks(t *testing.T, dir, item string) (all, of int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "marks"))
	require.NoError(t, err)
	for _, l := range strings.Fields(string(b)) {
		all++
		if l == item {
			of++
		}
	}
	return all, of
}

// Issue 41 (1): a retried loop runs only the element that failed; the
// others are reused, the loop's result whole and in order; in the
// workflow (300 elements) and in the loop's driver (600, 2,000).
func TestRetryRunsOnlyTheFailedElements(t *testing.T) {
	parallel(t)
	for _, n := range []int{300, 600, 2000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			file := writePlaybook(t, dir, "p.yaml", markedLoop(n))
			first := runPlaybookFile(t, file, "--set", "dir="+dir)
			require.Equal(t, "failed", first.Status)
			all, _ := countMarks(t, dir, "7")
			require.Equal(t, n, all)

			require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))
			code, out, _ := cli(t, "retry", "--address", server.Address, "--dry-run", "--json", first.WorkflowID)
			require.Equal(t, 0, code)
			var plan struct {
				Steps []struct {
					Step     string          `json:"step"`
					Why      string          `json:"why"`
					Elements *map[string]int `json:"elements"`
				} `json:"steps"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
			require.Equal(t, "checksum", plan.Steps[0].Step)
			require.Equal(t, &map[string]int{"total": n, "run": 1, "reused": n - 1}, plan.Steps[0].Elements)
			all, _ = countMarks(t, dir, "7")
			require.Equal(t, n, all, "a dry run starts nothing")

			code, agg, errOut := retryJSON(t, first.WorkflowID)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, errOut, fmt.Sprintf("  checksum  1 of %s elements run (failed before), %s reused\n", thousands(n), thousands(n-1)))
			require.Equal(t, "completed", agg.Status)
			all, again := countMarks(t, dir, "7")
			require.Equal(t, n+1, all, "one element ran again")
			require.Equal(t, 2, again, "the one that failed")
			results, ok := agg.Steps["checksum"].Result.([]any)
			require.True(t, ok, "the loop's result is whole: %v", agg.Steps["checksum"].Result)
			require.Len(t, results, n)
			for i, r := range results {
				require.Equal(t, fmt.Sprint(i+1)+"\n", r.(map[string]any)["stdout"], "element %d in order", i)
			}
			require.Equal(t, contract.StatusCompleted, agg.Steps["report"].Status)
			replay(t, "", agg.WorkflowID, agg.RunID)
			if n > 500 {
				replay(t, "", agg.WorkflowID+".checksum.loop", "") // the driver, which skipped the reused elements
			}
		})
	}
}

// thousands is the CLI's way of writing a count.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Issue 41 (4): a sub-playbook whose third step failed is retried as a
// retry of its child: the child's first two steps are reused, its third
// and what follows run; the child's plan is under the parent's.
func TestRetryResumesASubPlaybook(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	writePlaybook(t, dir, "child.yaml", `metadata: {name: child}
workload: {dir: /tmp}
workflow:
  - step: one
    tool: { kind: shell, command: 'echo one >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
    next: two
  - step: two
    tool: { kind: shell, command: 'echo two >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
    next: three
  - step: three
    tool: { kind: shell, command: 'echo three >> "$D/marks"; [ -e "$D/fixed" ]', env: { D: "{{ workload.dir }}" } }
    next: four
  - step: four
    tool: { kind: shell, command: 'echo four >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
`)
	file := writePlaybook(t, dir, "parent.yaml", `metadata: {name: parent}
workload: {dir: /tmp}
workflow:
  - step: before
    tool: { kind: shell, command: 'echo before >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
    next: sub
  - step: sub
    tool: { kind: playbook, path: child.yaml, workload: { dir: "{{ workload.dir }}" } }
    next: after
  - step: after
    tool: { kind: shell, command: 'echo after >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
`)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, []string{"sub"}, first.FailedSteps)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))

	code, agg, errOut := retryJSON(t, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  before  reused\n  sub     runs: failed before; a retry of its sub-playbook:\n"+
		"      one    reused\n      two    reused\n      three  runs: failed before\n      four   runs: upstream three runs again\n"+
		"      end    runs: the end step always runs\n  after   runs: upstream sub runs again\n")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, []string{"after", "before", "four", "one", "three", "three", "two"}, marks(t, dir), "one and two ran once in all")
	child := agg.Steps["sub"].Result.(map[string]any)
	steps := child["steps"].(map[string]any)
	require.Equal(t, "reused", steps["two"].(map[string]any)["status"])
	require.Equal(t, map[string]any{"retry_of": first.WorkflowID + ".sub", "by": osUser()}, child["origin"])
	replay(t, "retry_subplaybook.yaml", agg.WorkflowID, agg.RunID)
	replay(t, "retry_subplaybook_child.yaml", agg.WorkflowID+".sub", "")
}

// osUser is who the CLI says asks when --by is not given (approve,
// classify, retry): the OS user.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

// Elements are matched by what they run (their item): a changed list runs
// only its new items, drops the removed ones, and reuses the rest, of a
// loop that completed too; this run reused elements of the one before.
func TestRetryRunsOnlyTheNewItemsOfAChangedList(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "parts.yaml", `metadata: {name: parts}
workload: {dir: /tmp, parts: [a, b, c]}
workflow:
  - step: copy
    loop: {in: "workload.parts", mode: parallel}
    tool: { kind: shell, command: 'echo $P >> "$D/marks"; echo $P', env: { D: "{{ workload.dir }}", P: "{{ item }}" } }
`)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, "completed", first.Status)

	code, agg, errOut := retryJSON(t, "--set", "parts=[a, b, c, d]", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  copy  1 of 4 elements run (workload.parts changed (read by loop.in)), 3 reused\n")
	require.Equal(t, []string{"a", "b", "c", "d"}, marks(t, dir))

	code, agg, errOut = retryJSON(t, "--set", "parts=[c, d, e]", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  copy  1 of 3 elements run (workload.parts changed (read by loop.in)), 2 reused\n")
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, marks(t, dir), "c was reused from the first run, through the second")
	var out []any
	for _, r := range agg.Steps["copy"].Result.([]any) {
		out = append(out, r.(map[string]any)["stdout"])
	}
	require.Equal(t, []any{"c\n", "d\n", "e\n"}, out, "the result is the new list's, in order")
	replay(t, "retry_loop_elements.yaml", agg.WorkflowID, agg.RunID)
}

// Elements whose tools render alike (this loop's tool reads no item) are
// matched one for one: three of four completed, so three are reused and
// one runs, not four reused on the strength of any one of them.
func TestRetryMatchesAlikeElementsOneForOne(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "p.yaml", `metadata: {name: alike}
workload: {dir: ""}
workflow:
  - step: each
    loop: {in: "0..3", mode: sequential}
    tool:
      kind: shell
      command: 'echo x >> "$D/marks"; n=$(wc -l < "$D/marks"); [ "$n" -ne 2 ] || [ -e "$D/fixed" ]'
      env: {D: "{{ workload.dir }}"}
`)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, "failed", first.Status)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))
	code, agg, errOut := retryJSON(t, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  each  1 of 4 elements run (failed before), 3 reused\n")
	require.Equal(t, "completed", agg.Status)
	marks, err := os.ReadFile(filepath.Join(dir, "marks"))
	require.NoError(t, err)
	require.Equal(t, 5, strings.Count(string(marks), "x"), "four ran first, one ran again")
}
