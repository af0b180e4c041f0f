package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/cmd/playbook/commands"
	"playbook/interpreter/contract"
)

// BenchmarkHugeLoopsRetry runs a loop of -huge-loop elements (100,000 by
// default), 200 in flight, one of which fails, then retries it once that
// element's cause is fixed, and prints the retry's wall time (its plan
// included), its worker's peak RSS and the size of its parent run's
// history, and how many elements ran. The elements are shell steps that
// note their item and print nothing, the cheapest element that can fail:
// a noop cannot, and is decided in the workflow, with nothing to reuse; a
// fail step cannot loop. The first run takes minutes on two cores (at
// 100,000, about an hour on a loaded one); the retry runs one element.
func BenchmarkHugeLoopsRetry(b *testing.B) {
	n := *hugeLoopElements
	for range b.N {
		dir := b.TempDir()
		file := filepath.Join(dir, "loop.yaml")
		fail := n / 2
		require.NoError(b, os.WriteFile(file, []byte(fmt.Sprintf(`metadata: {name: retry-loop-%d}
workflow:
  - step: each
    loop: {in: "1..%d", mode: parallel, max_in_flight: 200}
    tool:
      kind: shell
      command: 'echo $I >> marks; [ $I != %d ] || [ -e fixed ]'
      env: {I: "{{ item }}"}
`, n, n, fail)), 0o644))
		queue := fmt.Sprintf("bench-retry-%d", time.Now().UnixNano())

		stop := benchWorker(b, queue, dir)
		first := benchCLI(b, "run", "--address", server.Address, "--task-queue", queue, "--json", file)
		stop()
		require.Equal(b, "failed", first.Status)
		require.NoError(b, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))
		// The marks the first run left: an element it ran again (a lost
		// attempt on a loaded machine) marked twice.
		before, err := os.ReadFile(filepath.Join(dir, "marks"))
		require.NoError(b, err)

		stop = benchWorker(b, queue, dir)
		start := time.Now()
		again := benchCLI(b, "retry", "--address", server.Address, "--task-queue", queue, "--json", first.WorkflowID)
		wall := time.Since(start)
		rss := stop()
		require.Equal(b, "completed", again.Status)
		marks, err := os.ReadFile(filepath.Join(dir, "marks"))
		require.NoError(b, err)
		ran := len(strings.Fields(string(marks))) - len(strings.Fields(string(before)))
		parent := historyBytes(b, again.WorkflowID)
		_, whole := again.Steps["each"].Result.([]any)
		fmt.Printf("%-26s %7.1f s wall (its plan included), %d of %d elements run | worker %4.0f MiB peak RSS | parent history %6.1f KiB (the loop's result: %s)\n",
			fmt.Sprintf("retry of loop %d:", n), wall.Seconds(), ran, n, rss, float64(parent)/1024, map[bool]string{true: "the whole list", false: "a stub"}[whole])
		require.Equal(b, 1, ran)
		if !whole {
			// Results over the loop's budget are not carried: the history
			// holds the reused indexes as spans. (Under it, the run's input
			// carries the reused results once, and its aggregate the loop's
			// result, as a first run's carries its driver's result and its
			// aggregate: TestRetryCarriesReusedResultsOnce.)
			require.Less(b, parent, 1<<20, "the parent's history is under 1 MB")
		}
	}
}

// benchWorker starts a `playbook worker` on queue, its steps in dir, and
// returns what stops it, which gives its peak RSS in MiB.
func benchWorker(b *testing.B, queue, dir string) (stop func() float64) {
	cmd := exec.Command(playbookBinary(b), "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", b.TempDir())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TEMPORAL_CONFIG_FILE="+filepath.Join(b.TempDir(), "none.toml"))
	require.NoError(b, cmd.Start())
	awaitPoller(b, queue)
	return func() float64 {
		rss := peakRSS(b, cmd.Process.Pid)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		return rss
	}
}

// benchCLI runs the playbook CLI in this process and reads the aggregate
// it prints with --json.
func benchCLI(b *testing.B, args ...string) *contract.Aggregate {
	var out, errOut bytes.Buffer
	commands.Main(context.Background(), append([]string{"playbook"}, args...), &out, &errOut)
	var agg contract.Aggregate
	require.NoError(b, json.Unmarshal(out.Bytes(), &agg), "stderr:\n%s", errOut.String())
	return &agg
}
