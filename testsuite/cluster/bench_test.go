package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"playbook/internal/proctest"
	"playbook/interpreter/contract"
)

// benchRounds is how many times each cluster figure is measured, the
// median printed: PLAYBOOK_BENCH_ROUNDS, 3 when unset.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("PLAYBOOK_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// TestClusterBench is `make bench-cluster`: on the cluster
// TestClusterSurvivesCrashes starts (PostgreSQL, Temporal's own server,
// three `playbook worker` processes), beside three workers of the
// hand-written twin (benchworker), it prints runs per second of 200
// concurrent 5-step runs and milliseconds per step of a 50-step chain,
// playbook then hand-written, each step `sh -c true`, the medians of
// benchRounds() rounds taken in turn, with the machine's cores and load.
// It measures, it asserts nothing of the figures: `make test` and `make
// test-cluster` skip it.
func TestClusterBench(t *testing.T) {
	if os.Getenv("PLAYBOOK_BENCH_CLUSTER") == "" {
		t.Skip("the cluster bench runs with `make bench-cluster` (PLAYBOOK_BENCH_CLUSTER=1)")
	}
	work := t.TempDir()
	bins := buildBinaries(t, work)
	native := filepath.Join(work, "benchworker")
	build(t, "", native, "playbook/testsuite/cluster/benchworker")
	pgPort := startPostgres(t)
	setupSchema(t, bins, pgPort)
	srv := &temporalServer{bin: bins.server, dir: work, port: proctest.FreePort(t), pgPort: pgPort}
	srv.writeConfig(t)
	srv.start(t)
	t.Cleanup(srv.kill)
	address := srv.address()
	out, err := exec.Command(bins.playbook, "setup", "--address", address).CombinedOutput()
	require.NoError(t, err, "%s", out)

	const nativeQueue = "bench-native"
	for i := range 3 {
		startWorker(t, bins.playbook, address, filepath.Join(work, fmt.Sprintf("worker-%d-logs", i)))
		startBenchWorker(t, filepath.Join(work, fmt.Sprintf("native-%d.out", i)), native, "--address", address, "--task-queue", nativeQueue)
	}
	c, err := client.Dial(client.Options{HostPort: address, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()

	playbook := func(source string) benchWorkflow {
		return benchWorkflow{contract.TaskQueue, contract.WorkflowName, []any{contract.Input{File: "bench.yaml", Source: source}}}
	}
	hand := func(n int) benchWorkflow { return benchWorkflow{nativeQueue, "BenchChain", []any{n}} }
	// A first run of each warms the workers (their caches, the keeper).
	clusterRuns(t, c, 3, playbook(chainSource(5)))
	clusterRuns(t, c, 3, hand(5))

	const runs, steps, chain = 200, 5, 50
	loadBefore := loadAverage()
	var pRate, nRate, pStep, nStep []float64
	rounds := benchRounds()
	for round := range rounds {
		figures := []func(){
			func() {
				pRate = append(pRate, float64(runs)/clusterRuns(t, c, runs, playbook(chainSource(steps))).Seconds())
			},
			func() { nRate = append(nRate, float64(runs)/clusterRuns(t, c, runs, hand(steps)).Seconds()) },
			func() { pStep = append(pStep, ms(clusterRuns(t, c, 1, playbook(chainSource(chain))))/chain) },
			func() { nStep = append(nStep, ms(clusterRuns(t, c, 1, hand(chain)))/chain) },
		}
		// Every other round the hand-written twin goes first, so that
		// neither always runs on a server the other has just warmed.
		if round%2 == 1 {
			figures[0], figures[1], figures[2], figures[3] = figures[1], figures[0], figures[3], figures[2]
		}
		for _, f := range figures {
			f()
		}
	}
	fmt.Printf("bench-cluster: PostgreSQL, Temporal server %s, 3 playbook workers and 3 hand-written; %d cores, load %s before, %s after; medians of %d rounds\n",
		serverVersion(t), runtime.NumCPU(), loadBefore, loadAverage(), rounds)
	// Ratios as make bench prints them: the playbook's cost over the
	// hand-written one's (1.00 as fast, above 1 slower).
	fmt.Printf("cluster %d concurrent %d-step runs: playbook %.1f runs/s | hand-written %.1f runs/s | ratio %.2f\n",
		runs, steps, median(pRate), median(nRate), median(nRate)/median(pRate))
	fmt.Printf("cluster chain %d: playbook %.1f ms/step | hand-written %.1f ms/step | ratio %.2f\n",
		chain, median(pStep), median(nStep), median(pStep)/median(nStep))
}

// chainSource is a playbook of n `sh -c true` steps one after another.
func chainSource(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: bench-chain-%d}\nworkflow:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - step: s%d\n    tool: {kind: shell, command: \"true\"}\n", i)
		if i < n {
			fmt.Fprintf(&b, "    next: s%d\n", i+1)
		}
	}
	return b.String()
}

// benchWorkflow is a workflow to run: its task queue, type and arguments.
type benchWorkflow struct {
	queue, name string
	args        []any
}

// clusterRuns starts n runs of a workflow at once and returns the time
// until the last has completed.
func clusterRuns(t *testing.T, c client.Client, n int, wf benchWorkflow) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runToEnd(c, fmt.Sprintf("bench-%s-%d-%d", wf.name, i, time.Now().UnixNano()), wf)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		require.NoError(t, err)
	}
	return wall
}

// runToEnd starts a run and waits for its end. Two hundred starts at
// once may take a loaded server past a call's deadline: a start or a wait
// that times out is made again (a start again joins the run the first one
// may have started).
func runToEnd(c client.Client, id string, wf benchWorkflow) error {
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: wf.queue, WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}
	var err error
	for try := 0; try < 20; try++ {
		if _, err = c.ExecuteWorkflow(context.Background(), opts, wf.name, wf.args...); err == nil {
			err = c.GetWorkflow(context.Background(), id, "").Get(context.Background(), nil)
		}
		var deadline *serviceerror.DeadlineExceeded
		if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &deadline)) {
			return err
		}
	}
	return err
}

// startBenchWorker starts a process for the test's length, its output in out.
func startBenchWorker(t *testing.T, out, bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	logFile, err := os.Create(out)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// loadAverage is the machine's load over the last minute, as /proc says.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// serverVersion is go.temporal.io/server's version in go.mod, the one built.
func serverVersion(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "go.temporal.io/server").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
