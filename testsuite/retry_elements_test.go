package testsuite

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"playbook/interpreter/contract"
)

// markedLoop is a parallel loop of n elements, each noting its item in
// DIR/marks; element 7 fails until DIR/fixed exists.
func markedLoop(n int) string {
	return sevenFails("partitions", "checksum", n, 50, `echo $I >> "$D/marks"; [ $I != 7 ] || [ -e "$D/fixed" ] || exit 3; echo $I`) + `    next: report
  - step: report
    tool: {kind: noop, result: "{{ len(steps.checksum.result) }}"}
`
}

// sevenFails is a playbook whose step is a parallel loop over 1..n, its
// shell command (in which element 7 fails until DIR/fixed exists) reading
// the item as $I and the workload's dir as $D.
func sevenFails(name, step string, n, inFlight int, command string) string {
	return fmt.Sprintf(`metadata: {name: %s}
workload: {dir: /tmp}
workflow:
  - step: %s
    loop: {in: "1..%d", mode: parallel, max_in_flight: %d}
    tool:
      kind: shell
      command: '%s'
      env: {D: "{{ workload.dir }}", I: "{{ item }}"}
`, name, step, n, inFlight, command)
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
// workflow (300 elements) and in the loop's driver (600, 2,000). The
// retry takes the new side of reuse-elements (its history is the corpus's
// change_reuse_elements).
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
			onlySevenRanAgain(t, agg, dir, n)
			require.Equal(t, contract.StatusCompleted, agg.Steps["report"].Status)
			require.True(t, hasMarker(t, agg.WorkflowID, "reuse-elements"), "the retry takes the new side of reuse-elements")
			name := map[int]string{300: "change_reuse_elements", 600: "change_reuse_elements_driver"}[n]
			replay(t, name, agg.WorkflowID, agg.RunID)
			if n > 500 {
				replay(t, "", agg.WorkflowID+".checksum.loop", "") // the driver, which skipped the reused elements
			}
		})
	}
}

// onlySevenRanAgain checks a completed retry of markedLoop(n) in dir:
// element 7, which failed, ran once more and no other did, and the loop's
// result is whole and in order.
func onlySevenRanAgain(t *testing.T, agg *contract.Aggregate, dir string, n int) {
	t.Helper()
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
}

// A retried loop of local elements runs only the element that failed, as
// one of activities does: a local activity's marker holds no input, and
// the elements are matched by the item digest their results give back;
// in the workflow (300 elements) and in the loop's driver (600).
func TestRetryRunsOnlyTheFailedLocalElements(t *testing.T) {
	parallel(t)
	for _, n := range []int{300, 600} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			src := strings.Replace(markedLoop(n), "  - step: checksum\n", "  - step: checksum\n    local: true\n", 1)
			require.Contains(t, src, "local: true")
			file := writePlaybook(t, dir, "p.yaml", src)
			first, agg, errOut := failThenRetry(t, file, dir)
			require.Contains(t, errOut, fmt.Sprintf("Retrying %s as %s; no step is reused whole, but the steps that run reuse %d loop elements that completed:\n", first.WorkflowID, agg.WorkflowID, n-1))
			require.Contains(t, errOut, fmt.Sprintf("  checksum  1 of %d elements run (failed before), %d reused\n", n, n-1))
			code, out, _ := cli(t, "retry", "--address", server.Address, "--dry-run", first.WorkflowID)
			require.Equal(t, 0, code)
			require.True(t, strings.HasPrefix(out, fmt.Sprintf("Retrying %s would reuse 0 steps, and %d loop elements within the steps that run, and run the rest (dry run: nothing started):\n", first.WorkflowID, n-1)), out)
			onlySevenRanAgain(t, agg, dir, n)
		})
	}
}

// A retried loop of 10,000 elements whose results fit the loop's budget
// (they print nothing, but the one that failed, which says "new" once it
// ran again): the retry's history carries the reused results once, in its
// input; its driver's input holds their spans, and the list the driver
// returns holds null in their places. (Before, the driver's input carried
// them again and the driver returned them too: 2.1 MB, twice what a run
// that completes such a loop holds: the driver's result and its
// aggregate.) Its aggregate holds the loop's whole result, so at this
// size, the most the loop's result budget holds, the history is about
// 1.1 MB; a loop whose results are over the budget leaves a stub, and its
// retry's history is a few KiB (BenchmarkHugeLoopsRetry). The result is
// whole, in order, reused and new alike.
func TestRetryCarriesReusedResultsOnce(t *testing.T) {
	// Its 20,000 steps keep a core busy, on a worker of its own.
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "retry-carries-once")
	const n = 10_000
	dir := t.TempDir()
	file := writePlaybook(t, dir, "p.yaml", sevenFails("small-results", "each", n, 200, `[ $I != 7 ] || { [ -e "$D/fixed" ] || exit 3; echo new >&2; }`))
	_, agg, errOut := failThenRetry(t, file, dir, "--task-queue", queue)
	require.Contains(t, errOut, "  each  1 of 10,000 elements run (failed before), 9,999 reused\n")
	results, ok := agg.Steps["each"].Result.([]any)
	require.True(t, ok, "the loop's result is whole: %v", agg.Steps["each"].Result)
	require.Len(t, results, n)
	for i, r := range results {
		require.Equal(t, map[bool]string{true: "new\n", false: ""}[i == 6], r.(map[string]any)["stderr"], "element %d in its place", i)
		require.Equal(t, 0.0, r.(map[string]any)["exit_code"], "element %d", i)
	}
	// The reused results are in the run's input, the loop's result in its
	// aggregate, and no other event of its history is large: not the
	// driver's input, nor the list the driver returns.
	var large []string
	size := 0
	for _, e := range history(t, agg.WorkflowID, "").GetEvents() {
		n := proto.Size(e)
		size += n
		if t := e.GetEventType(); n > 64<<10 && t != enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED && t != enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
			large = append(large, fmt.Sprintf("%s (%d bytes)", t, n))
		}
	}
	t.Logf("the retry's history: %d bytes", size)
	require.Empty(t, large, "the reused results are carried once")
	replay(t, "", agg.WorkflowID, agg.RunID)
	replay(t, "", agg.WorkflowID+".each.loop", "")
}

// failThenRetry runs a playbook whose workload's dir is dir, which fails
// until dir/fixed exists; then makes it, retries the run and gives both
// runs' aggregates and what the retry printed on stderr. args go to both
// run and retry.
func failThenRetry(t *testing.T, file, dir string, args ...string) (first, again *contract.Aggregate, errOut string) {
	t.Helper()
	first = runPlaybookFile(t, file, slices.Concat(args, []string{"--set", "dir=" + dir})...)
	require.Equal(t, "failed", first.Status)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))
	code, again, errOut := retryJSON(t, slices.Concat(args, []string{first.WorkflowID})...)
	require.Equal(t, 0, code, errOut)
	return first, again, errOut
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

// A fix to the failing step of a sub-playbook's file, retried with the
// parent's file read again (--file), runs the child as a retry of the
// earlier child: its completed steps are reused, and the fixed step runs.
func TestRetryWithAFixedSubPlaybookReusesItsCompletedSteps(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	child := `metadata: {name: child}
workload: {dir: /tmp}
workflow:
  - step: one
    tool: { kind: shell, command: 'echo one >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
    next: two
  - step: two
    tool: { kind: shell, command: 'echo two >> "$D/marks"; exit 3', env: { D: "{{ workload.dir }}" } }
`
	writePlaybook(t, dir, "child.yaml", child)
	file := writePlaybook(t, dir, "parent.yaml", `metadata: {name: parent}
workload: {dir: /tmp}
workflow:
  - step: sub
    tool: { kind: playbook, path: child.yaml, workload: { dir: "{{ workload.dir }}" } }
`)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, []string{"sub"}, first.FailedSteps)
	writePlaybook(t, dir, "child.yaml", strings.Replace(child, "; exit 3", "", 1))

	code, agg, errOut := retryJSON(t, "--file", file, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  sub  runs: failed before; a retry of its sub-playbook:\n"+
		"      one  reused\n      two  runs: tool.command changed\n      end  runs: the end step always runs\n")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, []string{"one", "two", "two"}, marks(t, dir), "one ran once in all")
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
	require.Equal(t, []any{"c\n", "d\n", "e\n"}, loopStdouts(agg, "copy"), "the result is the new list's, in order")
	replay(t, "retry_loop_elements.yaml", agg.WorkflowID, agg.RunID)
}

// loopStdouts are the stdout of each element of loop step step's result,
// in order.
func loopStdouts(agg *contract.Aggregate, step string) []any {
	var out []any
	for _, r := range agg.Steps[step].Result.([]any) {
		out = append(out, r.(map[string]any)["stdout"])
	}
	return out
}

// A loop whose tool reads where its element stands (loop.index) reuses an
// element only where it renders as it did: items that kept their place
// are reused, one that moved runs again, so that no result says another
// place than its own.
func TestRetryOfALoopReadingItsIndexReusesOnlyWhatStayed(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "shards.yaml", `metadata: {name: shards}
workload: {dir: /tmp, parts: [a, b, c]}
workflow:
  - step: shard
    loop: {in: "workload.parts", mode: parallel}
    tool: { kind: shell, command: 'echo $P >> "$D/marks"; echo "shard $I: $P"', env: { D: "{{ workload.dir }}", P: "{{ item }}", I: "{{ loop.index }}" } }
`)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, "completed", first.Status)

	code, agg, errOut := retryJSON(t, "--set", "parts=[a, b, c, d]", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  shard  1 of 4 elements run (workload.parts changed (read by loop.in)), 3 reused\n")
	require.Equal(t, []any{"shard 0: a\n", "shard 1: b\n", "shard 2: c\n", "shard 3: d\n"}, loopStdouts(agg, "shard"))

	code, agg, errOut = retryJSON(t, "--set", "parts=[z, a, b, c]", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, []any{"shard 0: z\n", "shard 1: a\n", "shard 2: b\n", "shard 3: c\n"}, loopStdouts(agg, "shard"), "every item moved: none is reused")
	require.Equal(t, []string{"a", "a", "b", "b", "c", "c", "d", "z"}, marks(t, dir))
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
	_, agg, errOut := failThenRetry(t, file, dir)
	require.Contains(t, errOut, "  each  1 of 4 elements run (failed before), 3 reused\n")
	require.Equal(t, "completed", agg.Status)
	marks, err := os.ReadFile(filepath.Join(dir, "marks"))
	require.NoError(t, err)
	require.Equal(t, 5, strings.Count(string(marks), "x"), "four ran first, one ran again")
}

// Elements are matched by their item, as JSON: an item whose fields
// changed runs again even where the tool reads only its id (its rendered
// tool is the same), beside the element that failed; the rest are reused.
func TestRetryMatchesElementsByItem(t *testing.T) {
	dir := t.TempDir()
	var parts []string
	for i := 1; i <= 10; i++ {
		parts = append(parts, fmt.Sprintf("{id: %d, rows: %d}", i, i*100))
	}
	file := writePlaybook(t, dir, "p.yaml", `metadata: {name: by-item}
workload: {dir: /tmp, parts: [`+strings.Join(parts, ", ")+`]}
workflow:
  - step: each
    loop: {in: "workload.parts", mode: parallel}
    tool:
      kind: shell
      command: 'echo $I >> "$D/marks"; [ $I != 7 ] || [ -e "$D/fixed" ] || exit 3; echo $I'
      env: {D: "{{ workload.dir }}", I: "{{ item.id }}"}
`)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, "failed", first.Status)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))

	parts[2] = "{id: 3, rows: 301}" // part 3 was loaded again upstream
	code, agg, errOut := retryJSON(t, "--set", "parts=["+strings.Join(parts, ", ")+"]", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  each  2 of 10 elements run (")
	require.Contains(t, errOut, "), 8 reused\n")
	require.Equal(t, "completed", agg.Status)
	_, again3 := countMarks(t, dir, "3")
	_, again7 := countMarks(t, dir, "7")
	require.Equal(t, []int{2, 2}, []int{again3, again7}, "the changed item and the failed one ran again")
	all, _ := countMarks(t, dir, "1")
	require.Equal(t, 12, all)
	replay(t, "", agg.WorkflowID, agg.RunID)
}
