package testsuite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/internal/claims"
	"playbook/internal/devserver"
	"playbook/internal/proctest"
	"playbook/internal/quietlog"
	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/worker"
)

// benchRounds is how many times each light figure is measured; the bench
// prints the medians. The heavy ones (the loops) are measured in the
// first round only, to keep the bench within a few minutes on two cores.
const benchRounds = 5

const benchQueue = "bench"

// tmpfsQueue is served by a second worker whose log directory is on tmpfs
// (/dev/shm): the playbook's figures there leave the log disk's cost out.
const tmpfsQueue = "bench-tmpfs"

// stockRest lets the stock server's transfer-queue limiter fill up again.
const stockRest = 1100 * time.Millisecond

// shellTrue is the tiny real work every benchmarked step does.
const shellTrue = "{kind: shell, command: \"true\"}"

// BenchTrue is the hand-written activity: it runs what a playbook's
// `shell: true` step runs.
func BenchTrue(ctx context.Context) error {
	return exec.CommandContext(ctx, "/bin/sh", "-c", "true").Run()
}

// BenchEmpty is an activity that does nothing: a chain of them measures the
// server and the SDK alone.
func BenchEmpty(context.Context) error { return nil }

// BenchNativeEmptyChain runs n empty activities one after another.
func BenchNativeEmptyChain(ctx workflow.Context, n int) error {
	return nativeChain(ctx, n, func(ctx workflow.Context, _ int) workflow.Future {
		return workflow.ExecuteActivity(ctx, BenchEmpty)
	})
}

// BenchNativeLocalChain runs n local activities one after another: the
// hand-written twin of a chain of local steps.
func BenchNativeLocalChain(ctx workflow.Context, n int) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return nativeChain(ctx, n, func(ctx workflow.Context, _ int) workflow.Future {
		return workflow.ExecuteLocalActivity(ctx, BenchTrue)
	})
}

// nativeOptions match what the playbook gives a step without retry or timeout.
func nativeOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    playbookwf.DefaultHeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// BenchNativeChain runs n activities one after another.
func BenchNativeChain(ctx workflow.Context, n int) error {
	return nativeChain(ctx, n, startBenchTrue)
}

// BenchNativeFanOut runs n activities at once and waits for all.
func BenchNativeFanOut(ctx workflow.Context, n int) error {
	return nativeFanOut(ctx, n, startBenchTrue)
}

// BenchNativeChainRunStep and BenchNativeFanOutRunStep run the playbook's
// own activity, with the input the playbook gives a `shell: true` step:
// against the playbook they tell the interpreter's share of its cost from
// the activity's (log files, process group).
func BenchNativeChainRunStep(ctx workflow.Context, n int) error {
	return nativeChain(ctx, n, startRunStep)
}

func BenchNativeFanOutRunStep(ctx workflow.Context, n int) error {
	return nativeFanOut(ctx, n, startRunStep)
}

// A benchStart starts step i (from 1) of a hand-written workflow.
type benchStart func(ctx workflow.Context, i int) workflow.Future

func startBenchTrue(ctx workflow.Context, _ int) workflow.Future {
	return workflow.ExecuteActivity(ctx, BenchTrue)
}

func startRunStep(ctx workflow.Context, i int) workflow.Future {
	return workflow.ExecuteActivity(ctx, contract.RunStepName, shellTrueInput(ctx, i))
}

// nativeChain runs n steps one after another.
func nativeChain(ctx workflow.Context, n int, step benchStart) error {
	ctx = nativeOptions(ctx)
	for i := 1; i <= n; i++ {
		if err := step(ctx, i).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// nativeFanOut starts n steps at once and waits for all.
func nativeFanOut(ctx workflow.Context, n int, step benchStart) error {
	ctx = nativeOptions(ctx)
	futures := make([]workflow.Future, n)
	for i := range futures {
		futures[i] = step(ctx, i+1)
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// shellTrueInput is the activity input the playbook gives step s<i> when
// it is a `shell: true` step.
func shellTrueInput(ctx workflow.Context, i int) contract.StepInput {
	run := workflow.GetInfo(ctx).WorkflowExecution
	return contract.StepInput{
		WorkflowID: run.ID, RunID: run.RunID, Step: fmt.Sprintf("s%d", i), Kind: "shell",
		Spec: map[string]any{"command": "true"}, Lost: &contract.LostSpec{Attempts: spec.DefaultLostAttempts},
	}
}

// BenchNativeLoop runs n activities, at most inFlight at a time.
func BenchNativeLoop(ctx workflow.Context, n, inFlight int) error {
	return nativeLoop(ctx, n, inFlight, startBenchTrue)
}

// BenchNativeLoopRunStep is BenchNativeLoop running the playbook's own
// activity, as the loop splits below tell.
func BenchNativeLoopRunStep(ctx workflow.Context, n, inFlight int) error {
	return nativeLoop(ctx, n, inFlight, startRunStep)
}

// nativeLoop runs n steps, at most inFlight at a time.
func nativeLoop(ctx workflow.Context, n, inFlight int, step benchStart) error {
	ctx = nativeOptions(ctx)
	sel := workflow.NewSelector(ctx)
	var failed error
	running := 0
	for next := 0; next < n || running > 0; {
		for ; running < inFlight && next < n; next++ {
			running++
			sel.AddFuture(step(ctx, next+1), func(f workflow.Future) {
				running--
				if err := f.Get(ctx, nil); err != nil {
					failed = err
				}
			})
		}
		sel.Select(ctx)
	}
	return failed
}

func chainSource(n int, tool func(i int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: chain-%d}\nworkflow:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - step: s%d\n    tool: %s\n", i, tool(i))
		if i < n {
			fmt.Fprintf(&b, "    next: s%d\n", i+1)
		}
	}
	return b.String()
}

func fanOutSource(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: fan-out-%d}\nworkflow:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - step: s%d\n    tool: %s\n", i, shellTrue)
	}
	return b.String()
}

func loopSource(n, inFlight int, tool string) string {
	return fmt.Sprintf("metadata: {name: loop-%d}\nworkflow:\n  - step: each\n    loop: {in: \"1..%d\", mode: parallel, max_in_flight: %d}\n    tool: %s\n", n, n, inFlight, tool)
}

// localChainSource is chainSource of shell steps, every one local.
func localChainSource(n int) string {
	return strings.Replace(chainSource(n, shellStep), "workflow:\n", "local: true\nworkflow:\n", 1)
}

func shellStep(int) string  { return shellTrue }
func noopStep(i int) string { return fmt.Sprintf("{kind: noop, result: %d}", i) }

// benchRun is one finished workflow as its history tells it.
type benchRun struct {
	id         string
	wall       time.Duration // WorkflowExecutionStarted to its close
	events     int
	activities int
	// markers are its local activities' markers.
	markers int
	// taskTimes are the workflow tasks' STARTED to COMPLETED times.
	taskTimes []time.Duration
	// taskWaits are the workflow tasks' SCHEDULED to STARTED times.
	taskWaits []time.Duration
	// activityTimes are the activities' (last attempts') STARTED to
	// COMPLETED times: running the step, as the server sees it.
	activityTimes []time.Duration
}

func measure(b *testing.B, c client.Client, queue string, wf any, args ...any) benchRun {
	b.Helper()
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bench-%d", time.Now().UnixNano()), TaskQueue: queue}, wf, args...)
	require.NoError(b, err)
	require.NoError(b, run.Get(ctx, nil))
	return fromHistory(b, c, run.GetID(), run.GetRunID())
}

func fromHistory(b *testing.B, c client.Client, id, runID string) benchRun {
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(b, err)
		events = append(events, e)
	}
	r := benchRun{id: id, events: len(events), wall: events[len(events)-1].GetEventTime().AsTime().Sub(events[0].GetEventTime().AsTime())}
	at := map[int64]time.Time{}
	for _, e := range events {
		at[e.GetEventId()] = e.GetEventTime().AsTime()
		switch e.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			r.taskWaits = append(r.taskWaits, at[e.GetEventId()].Sub(at[e.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId()]))
		case enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			r.taskTimes = append(r.taskTimes, at[e.GetEventId()].Sub(at[e.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()]))
		case enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			r.activityTimes = append(r.activityTimes, at[e.GetEventId()].Sub(at[e.GetActivityTaskCompletedEventAttributes().GetStartedEventId()]))
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			r.activities++
		case enums.EVENT_TYPE_MARKER_RECORDED:
			if e.GetMarkerRecordedEventAttributes().GetMarkerName() == localActivityMarker {
				r.markers++
			}
		}
	}
	return r
}

func pb(source string) contract.Input {
	return contract.Input{File: "bench.yaml", Source: source}
}

// concurrency is one round of concurrentRuns: runs a second, and the CPU
// a run took in this process (the server, the worker and the client all
// run here) and in the steps' processes it reaped, in milliseconds. On two
// cores the runs/s of a round spread widely; the CPU a run costs says
// where a gap between two workflows comes from.
type concurrency struct{ perSecond, cpuMs float64 }

// concurrentRuns starts n runs at once and measures them.
func concurrentRuns(b *testing.B, c client.Client, n int, wf any, args ...any) concurrency {
	cpu := processCPU(b, os.Getpid())
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("bench-c-%d-%d", i, time.Now().UnixNano()), TaskQueue: benchQueue}, wf, args...)
			if err == nil {
				err = run.Get(context.Background(), nil)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	after := processCPU(b, os.Getpid())
	for _, err := range errs {
		require.NoError(b, err)
	}
	used := after.own + after.children - cpu.own - cpu.children
	return concurrency{perSecond: float64(n) / wall.Seconds(), cpuMs: used * 1000 / float64(n)}
}

// concurrentN runs of concurrentSteps steps each are what the concurrent
// figure starts at once.
const concurrentN, concurrentSteps = 200, 5

// concurrentRound runs the concurrent figure once for the playbook and
// once for the hand-written chain, in turn, and adds each side's runs/s
// and CPU a run to f ("concurrent playbook runs/s", "concurrent native
// cpu ms/run", ...).
func concurrentRound(b *testing.B, f figures, round int) {
	side := func(name string, wf any, args ...any) func() {
		return func() {
			r := concurrentRuns(b, tc, concurrentN, wf, args...)
			f.add("concurrent "+name+" runs/s", r.perSecond)
			f.add("concurrent "+name+" cpu ms/run", r.cpuMs)
		}
	}
	inTurn(round,
		side("playbook", contract.WorkflowName, pb(chainSource(concurrentSteps, shellStep))),
		side("native", BenchNativeChain, concurrentSteps))
}

// loopOnOwnWorker runs a playbook loop on a `playbook worker` process of
// its own, its logs in logDir, and returns the run and that worker's peak
// RSS in MiB. The worker keeps large values in a store of the benchmark's
// own, from which the run's result is read (a loop of 100,000 results is
// a claim).
func loopOnOwnWorker(b *testing.B, source, logDir string) (benchRun, float64) {
	queue := fmt.Sprintf("bench-loop-%d", time.Now().UnixNano())
	storeURL := "file://" + b.TempDir()
	cmd := exec.Command(playbookBinary(b), "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", logDir, "--store", storeURL)
	cmd.Env = append(os.Environ(), "TEMPORAL_CONFIG_FILE="+filepath.Join(b.TempDir(), "none.toml"))
	require.NoError(b, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	st, err := store.Open(context.Background(), storeURL)
	require.NoError(b, err)
	opts := client.Options{HostPort: server.Address, Logger: quietlog.New()}
	claims.Use(&opts, claims.Open(st), false)
	c, err := client.Dial(opts)
	require.NoError(b, err)
	defer c.Close()
	awaitPoller(b, queue)
	r := measure(b, c, queue, contract.WorkflowName, pb(source))
	lastWorkerCPU = processCPU(b, cmd.Process.Pid)
	return r, peakRSS(b, cmd.Process.Pid)
}

// awaitPoller waits until a worker polls queue's workflow tasks: a run
// measured before that would count the worker's start-up as the run's.
func awaitPoller(b *testing.B, queue string) {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := tc.DescribeTaskQueue(context.Background(), queue, enums.TASK_QUEUE_TYPE_WORKFLOW)
		require.NoError(b, err)
		if len(resp.GetPollers()) > 0 {
			return
		}
		require.True(b, time.Now().Before(deadline), "no worker polls %s", queue)
		time.Sleep(20 * time.Millisecond)
	}
}

// cpuTimes are a process's CPU seconds, its own and its reaped children's.
type cpuTimes struct{ own, children float64 }

// lastWorkerCPU is what the worker of the last loopOnOwnWorker used.
var lastWorkerCPU cpuTimes

// processCPU reads a process's CPU times from /proc/PID/stat.
func processCPU(b *testing.B, pid int) cpuTimes {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(b, err)
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	tick := func(i int) float64 { // fields 14-17 of stat, counted from 1
		v, err := strconv.ParseFloat(f[i-3], 64)
		require.NoError(b, err)
		return v / 100
	}
	return cpuTimes{own: tick(14) + tick(15), children: tick(16) + tick(17)}
}

// peakRSS reads a process's VmHWM in MiB.
func peakRSS(b *testing.B, pid int) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.Atoi(f[1])
			require.NoError(b, err)
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}

// figures collects each figure's samples, one per round.
type figures map[string][]float64

func (f figures) add(name string, v float64) { f[name] = append(f[name], v) }

func (f figures) median(name string) float64 {
	v := slices.Clone(f[name])
	if len(v) == 0 {
		panic("no samples of " + name)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func medianDuration(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSpeed measures the playbook against hand-written Temporal
// workflows doing the same work (a `shell: true` step against an activity
// running `sh -c true`), on one embedded server with the tuned settings and
// one worker (a second one keeps its logs on tmpfs, where /dev/shm is),
// and the hand-written chain again on a server with Temporal's stock
// settings. Every figure is measured benchRounds times, the runs compared
// in turn (inTurn); the medians are printed, one line per figure. Times
// come from the histories' timestamps.
func BenchmarkSpeed(b *testing.B) {
	w := sdkworker.New(tc, benchQueue, sdkworker.Options{})
	worker.RegisterWorkflow(w)
	w.RegisterActivityWithOptions((&activities.Activities{LogDir: b.TempDir()}).RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	registerNative(w)
	require.NoError(b, w.Start())
	defer w.Stop()

	tmpfs := ""
	if dir, err := os.MkdirTemp("/dev/shm", "playbook-bench-logs-"); err == nil {
		defer os.RemoveAll(dir)
		fw := sdkworker.New(tc, tmpfsQueue, sdkworker.Options{})
		worker.RegisterWorkflow(fw)
		fw.RegisterActivityWithOptions((&activities.Activities{LogDir: dir}).RunStep, activity.RegisterOptions{Name: contract.RunStepName})
		require.NoError(b, fw.Start())
		defer fw.Stop()
		tmpfs = tmpfsQueue
	}

	stock, err := devserver.Start(devserver.Options{IP: "127.0.0.1", StockSettings: true, SearchAttributes: runs.SearchAttributes()})
	require.NoError(b, err)
	defer stock.Stop()
	stockClient, err := client.Dial(client.Options{HostPort: stock.Address, Logger: quietlog.New()})
	require.NoError(b, err)
	defer stockClient.Close()
	sw := sdkworker.New(stockClient, benchQueue, sdkworker.Options{})
	registerNative(sw)
	require.NoError(b, sw.Start())
	defer sw.Stop()

	disk := proctest.SettleDisk(b)
	b.ResetTimer()
	f := figures{}
	for range b.N {
		for round := 0; round < benchRounds; round++ {
			benchRound(b, f, stockClient, tmpfs, round)
		}
	}
	b.StopTimer()
	fmt.Printf("%-26s %v\n", "disk, before:", disk)
	printFigures(f, tmpfs != "")
}

func registerNative(w sdkworker.Worker) {
	w.RegisterWorkflow(BenchNativeChain)
	w.RegisterWorkflow(BenchNativeFanOut)
	w.RegisterWorkflow(BenchNativeLoop)
	w.RegisterWorkflow(BenchNativeLoopRunStep)
	w.RegisterWorkflow(BenchNativeEmptyChain)
	w.RegisterWorkflow(BenchNativeFanOutRunStep)
	w.RegisterWorkflow(BenchNativeChainRunStep)
	w.RegisterWorkflow(BenchNativeLocalChain)
	w.RegisterActivity(BenchTrue)
	w.RegisterActivity(BenchEmpty)
}

// benchRound measures every figure once (the heavy ones in round 0 only);
// tmpfs, when not empty, is the queue of the worker keeping its logs on
// tmpfs.
func benchRound(b *testing.B, f figures, stockClient client.Client, tmpfs string, round int) {
	heavy := round == 0
	for _, n := range []int{50, 200} {
		var p, nat, fast, own benchRun
		runs := []func(){
			func() { p = measure(b, tc, benchQueue, contract.WorkflowName, pb(chainSource(n, shellStep))) },
			func() { nat = measure(b, tc, benchQueue, BenchNativeChain, n) },
		}
		if n == 50 {
			runs = append(runs, func() { own = measure(b, tc, benchQueue, BenchNativeChainRunStep, n) })
			if tmpfs != "" {
				runs = append(runs, func() { fast = measure(b, tc, tmpfs, contract.WorkflowName, pb(chainSource(n, shellStep))) })
			}
		}
		inTurn(round, runs...)
		key := fmt.Sprintf("chain %d", n)
		f.add(key+" playbook ms/step", ms(p.wall)/float64(n))
		f.add(key+" native ms/step", ms(nat.wall)/float64(n))
		f.add(key+" playbook events/step", float64(p.events)/float64(n))
		f.add(key+" native events/step", float64(nat.events)/float64(n))
		if n == 50 && tmpfs != "" {
			f.add(key+" playbook tmpfs ms/step", ms(fast.wall)/float64(n))
		}
		if n == 50 {
			f.add(key+" native with the playbook's activity ms/step", ms(own.wall)/float64(n))
			for _, r := range []struct {
				who string
				run benchRun
			}{{"playbook", p}, {"native", nat}} {
				f.add(key+" "+r.who+" activity ms", ms(medianDuration(r.run.activityTimes)))
				f.add(key+" "+r.who+" task wait ms", ms(medianDuration(r.run.taskWaits)))
				f.add(key+" "+r.who+" task ms", ms(medianDuration(r.run.taskTimes)))
			}
		}
	}
	localChain(b, f, round, 50, tmpfs)
	for _, n := range []int{50, 500} {
		var p, nat, fast, own benchRun
		runs := []func(){
			func() { p = measure(b, tc, benchQueue, contract.WorkflowName, pb(fanOutSource(n))) },
			func() { nat = measure(b, tc, benchQueue, BenchNativeFanOut, n) },
		}
		if n == 500 {
			runs = append(runs, func() { own = measure(b, tc, benchQueue, BenchNativeFanOutRunStep, n) })
			if tmpfs != "" {
				runs = append(runs, func() { fast = measure(b, tc, tmpfs, contract.WorkflowName, pb(fanOutSource(n))) })
			}
		}
		inTurn(round, runs...)
		key := fmt.Sprintf("fan-out %d", n)
		f.add(key+" playbook ms/run", ms(p.wall))
		f.add(key+" native ms/run", ms(nat.wall))
		f.add(key+" playbook task ms", ms(medianDuration(p.taskTimes)))
		f.add(key+" native task ms", ms(medianDuration(nat.taskTimes)))
		if n == 500 {
			f.add(key+" native with the playbook's activity ms/run", ms(own.wall))
			if tmpfs != "" {
				f.add(key+" playbook tmpfs ms/run", ms(fast.wall))
			}
		}
	}
	// The stock server reads its transfer queue at most 20 times a second,
	// after a burst of 20: every stock figure starts after a second's rest,
	// with the burst whole, so that none depends on what ran before it.
	time.Sleep(stockRest)
	stockRun := measure(b, stockClient, benchQueue, BenchNativeChain, 50)
	f.add("stock chain 50 native ms/step", ms(stockRun.wall)/50)
	time.Sleep(stockRest)
	emptyStock := measure(b, stockClient, benchQueue, BenchNativeEmptyChain, 50)
	emptyTuned := measure(b, tc, benchQueue, BenchNativeEmptyChain, 50)
	f.add("stock empty chain 50 ms/step", ms(emptyStock.wall)/50)
	f.add("tuned empty chain 50 ms/step", ms(emptyTuned.wall)/50)
	f.add("log files ms", proctest.LogFilesCost(b, 100))

	// 200 runs at once, in turn (each round starts with the other side),
	// in every round: a single round's order weighed on its ratio.
	concurrentRound(b, f, round)

	noop := measure(b, tc, benchQueue, contract.WorkflowName, pb(chainSource(50, noopStep)))
	f.add("noop chain 50 ms/step", ms(noop.wall)/50)
	f.add("noop chain 50 activities", float64(noop.activities))
	if !heavy {
		return
	}

	const loopN, inFlight = 1000, 10
	// The ratios compare runs on one worker, the bench's; the worker's
	// memory is measured on a worker process of its own, running the loop
	// again.
	var p, nat, own, fast benchRun
	loops := []func(){
		func() {
			p = measure(b, tc, benchQueue, contract.WorkflowName, pb(loopSource(loopN, inFlight, shellTrue)))
		},
		func() { nat = measure(b, tc, benchQueue, BenchNativeLoop, loopN, inFlight) },
		func() { own = measure(b, tc, benchQueue, BenchNativeLoopRunStep, loopN, inFlight) },
	}
	if tmpfs != "" {
		loops = append(loops, func() {
			fast = measure(b, tc, tmpfs, contract.WorkflowName, pb(loopSource(loopN, inFlight, shellTrue)))
		})
	}
	inTurn(round, loops...)
	alone, rss := loopOnOwnWorker(b, loopSource(loopN, inFlight, shellTrue), b.TempDir())
	if tmpfs != "" {
		f.add("loop 1000 playbook tmpfs ms/element", ms(fast.wall)/loopN)
	}
	f.add("loop 1000 playbook ms/element", ms(p.wall)/loopN)
	f.add("loop 1000 playbook own worker ms/element", ms(alone.wall)/loopN)
	f.add("loop 1000 native ms/element", ms(nat.wall)/loopN)
	f.add("loop 1000 native with the playbook's activity ms/element", ms(own.wall)/loopN)
	f.add("loop 1000 playbook worker MiB", rss)

	const bigLoop = 10000
	p, rss = loopOnOwnWorker(b, loopSource(bigLoop, 50, "{kind: noop, result: \"{{ item }}\"}"), b.TempDir())
	f.add("noop loop 10000 ms/element", ms(p.wall)/bigLoop)
	f.add("noop loop 10000 worker MiB", rss)
}

// localChain measures a chain of n local shell steps beside the chain of
// ordinary steps and the hand-written chain of local activities, in turn,
// and, when tmpfs names the queue of a worker keeping its logs on tmpfs,
// the local chain again there.
func localChain(b *testing.B, f figures, round, n int, tmpfs string) {
	var local, plain, nat, fast benchRun
	runs := []func(){
		func() { local = measure(b, tc, benchQueue, contract.WorkflowName, pb(localChainSource(n))) },
		func() { plain = measure(b, tc, benchQueue, contract.WorkflowName, pb(chainSource(n, shellStep))) },
		func() { nat = measure(b, tc, benchQueue, BenchNativeLocalChain, n) },
	}
	if tmpfs != "" {
		runs = append(runs, func() { fast = measure(b, tc, tmpfs, contract.WorkflowName, pb(localChainSource(n))) })
	}
	inTurn(round, runs...)
	k := fmt.Sprintf("local chain %d", n)
	if tmpfs != "" {
		f.add(k+" playbook tmpfs ms/step", ms(fast.wall)/float64(n))
	}
	f.add(k+" playbook ms/step", ms(local.wall)/float64(n))
	f.add(k+" activities ms/step", ms(plain.wall)/float64(n))
	f.add(k+" native ms/step", ms(nat.wall)/float64(n))
	f.add(k+" playbook markers/step", float64(local.markers)/float64(n))
	f.add(k+" playbook activities", float64(local.activities))
}

// printLocalChain prints localChain's figures: ms/step, and the ratios to
// the chain of activities and to the hand-written chain of local
// activities.
func printLocalChain(f figures, n int) {
	m := f.median
	k := fmt.Sprintf("local chain %d", n)
	fmt.Printf("%-26s playbook %7.2f ms/step, %.2f markers/step, %.0f activities | activity chain %7.2f ms/step | native local %7.2f ms/step | ratio %.2f to the activity chain, %.2f to native local\n", k+":",
		m(k+" playbook ms/step"), m(k+" playbook markers/step"), m(k+" playbook activities"), m(k+" activities ms/step"), m(k+" native ms/step"),
		m(k+" playbook ms/step")/m(k+" activities ms/step"), m(k+" playbook ms/step")/m(k+" native ms/step"))
	if _, ok := f[k+" playbook tmpfs ms/step"]; ok {
		fmt.Printf("%-26s playbook %7.2f ms/step | ratio %.2f to native local (logs on tmpfs)\n", k+", tmpfs logs:",
			m(k+" playbook tmpfs ms/step"), m(k+" playbook tmpfs ms/step")/m(k+" native ms/step"))
	}
}

// BenchmarkLocalChain is the local chain of BenchmarkSpeed alone, at
// -local-chain steps: a quick look at it (`go test -run '^$' -bench
// LocalChain -benchtime 1x ./testsuite/`).
func BenchmarkLocalChain(b *testing.B) {
	w := sdkworker.New(tc, benchQueue, sdkworker.Options{})
	worker.RegisterWorkflow(w)
	w.RegisterActivityWithOptions((&activities.Activities{LogDir: b.TempDir()}).RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	registerNative(w)
	require.NoError(b, w.Start())
	defer w.Stop()
	disk := proctest.SettleDisk(b)
	b.ResetTimer()
	f := figures{}
	for range b.N {
		localChain(b, f, 0, *localChainSteps, "")
	}
	b.StopTimer()
	fmt.Printf("%-26s %v\n", "disk, before:", disk)
	printLocalChain(f, *localChainSteps)
}

var localChainSteps = flag.Int("local-chain", 50, "the steps of BenchmarkLocalChain's chains")

// inTurn runs what a round compares, starting with a different one each
// round: none always runs first, just after the round's other work.
func inTurn(round int, runs ...func()) {
	for i := range runs {
		runs[(round+i)%len(runs)]()
	}
}

// printFigures prints one line per figure: the playbook's and the
// hand-written workflow's medians, and their ratio (playbook cost over
// native cost: 1.00 is as fast as hand-written).
func printFigures(f figures, tmpfs bool) {
	m := f.median
	fmt.Printf("Medians of %d rounds (loops: one); one embedded server (tuned settings), one worker (a second one keeps its logs on tmpfs); every step runs `sh -c true`.\n", benchRounds)
	for _, n := range []int{50, 200} {
		k := fmt.Sprintf("chain %d", n)
		fmt.Printf("%-26s playbook %7.2f ms/step %5.2f events/step | native %7.2f ms/step %5.2f events/step | ratio %.2f\n", k+":",
			m(k+" playbook ms/step"), m(k+" playbook events/step"), m(k+" native ms/step"), m(k+" native events/step"), m(k+" playbook ms/step")/m(k+" native ms/step"))
	}
	fmt.Printf("%-26s playbook activity %5.2f ms, task wait %5.2f ms, task %5.2f ms | native %5.2f, %5.2f, %5.2f (medians per step)\n", "chain 50 phases:",
		m("chain 50 playbook activity ms"), m("chain 50 playbook task wait ms"), m("chain 50 playbook task ms"),
		m("chain 50 native activity ms"), m("chain 50 native task wait ms"), m("chain 50 native task ms"))
	k := "chain 50"
	fmt.Printf("%-26s native running the playbook's activity %7.2f ms/step | interpreter %.2f (playbook over it), activity %.2f (it over native)\n", k+" split:",
		m(k+" native with the playbook's activity ms/step"), m(k+" playbook ms/step")/m(k+" native with the playbook's activity ms/step"), m(k+" native with the playbook's activity ms/step")/m(k+" native ms/step"))
	if tmpfs {
		fmt.Printf("%-26s playbook %7.2f ms/step | ratio %.2f to native (a second worker keeps its logs on tmpfs: the log disk's cost left out)\n", "chain 50, tmpfs logs:",
			m(k+" playbook tmpfs ms/step"), m(k+" playbook tmpfs ms/step")/m(k+" native ms/step"))
	}
	fmt.Printf("%-26s %.2f (playbook ms/step, chain 200 over chain 50)\n", "chain growth:", m("chain 200 playbook ms/step")/m("chain 50 playbook ms/step"))
	printLocalChain(f, 50)
	for _, n := range []int{50, 500} {
		k := fmt.Sprintf("fan-out %d", n)
		fmt.Printf("%-26s playbook %7.1f ms/run, task %5.2f ms | native %7.1f ms/run, task %5.2f ms | ratio %.2f, task ratio %.2f\n", k+":",
			m(k+" playbook ms/run"), m(k+" playbook task ms"), m(k+" native ms/run"), m(k+" native task ms"),
			m(k+" playbook ms/run")/m(k+" native ms/run"), m(k+" playbook task ms")/m(k+" native task ms"))
	}
	k = "fan-out 500"
	fmt.Printf("%-26s native running the playbook's activity %7.1f ms/run | interpreter %.2f (playbook over it), activity %.2f (it over native)\n", k+" split:",
		m(k+" native with the playbook's activity ms/run"), m(k+" playbook ms/run")/m(k+" native with the playbook's activity ms/run"), m(k+" native with the playbook's activity ms/run")/m(k+" native ms/run"))
	if tmpfs {
		fmt.Printf("%-26s playbook %7.1f ms/run | ratio %.2f to native (logs on tmpfs)\n", k+", tmpfs logs:",
			m(k+" playbook tmpfs ms/run"), m(k+" playbook tmpfs ms/run")/m(k+" native ms/run"))
	}
	fmt.Printf("%-26s playbook %7.2f ms/element | native %7.2f ms/element | ratio %.2f\n", "loop 1000, 10 in flight:",
		m("loop 1000 playbook ms/element"), m("loop 1000 native ms/element"), m("loop 1000 playbook ms/element")/m("loop 1000 native ms/element"))
	if tmpfs {
		fmt.Printf("%-26s playbook %7.2f ms/element | ratio %.2f to native (logs on tmpfs)\n", "loop 1000, tmpfs logs:",
			m("loop 1000 playbook tmpfs ms/element"), m("loop 1000 playbook tmpfs ms/element")/m("loop 1000 native ms/element"))
	}
	fmt.Printf("%-26s playbook %7.2f ms/element, worker %.0f MiB peak RSS (a worker process of its own, `playbook worker`)\n", "loop 1000, own worker:",
		m("loop 1000 playbook own worker ms/element"), m("loop 1000 playbook worker MiB"))
	k = "loop 1000"
	fmt.Printf("%-26s native running the playbook's activity %7.2f ms/element | interpreter %.2f (playbook over it), activity %.2f (it over native)\n", k+" split:",
		m(k+" native with the playbook's activity ms/element"), m(k+" playbook ms/element")/m(k+" native with the playbook's activity ms/element"), m(k+" native with the playbook's activity ms/element")/m(k+" native ms/element"))
	fmt.Printf("%-26s playbook %7.1f runs/s | native %7.1f runs/s | ratio %.2f\n", "200 concurrent 5-step runs:",
		m("concurrent playbook runs/s"), m("concurrent native runs/s"), m("concurrent native runs/s")/m("concurrent playbook runs/s"))
	fmt.Printf("%-26s playbook %7.1f ms/run | native %7.1f ms/run | ratio %.2f (CPU of the server, the worker, the client and the steps, all in this process)\n", "200 concurrent, CPU:",
		m("concurrent playbook cpu ms/run"), m("concurrent native cpu ms/run"), m("concurrent playbook cpu ms/run")/m("concurrent native cpu ms/run"))
	fmt.Printf("%-26s native %7.2f ms/step on stock settings | %7.2f tuned | tuned is %.1fx faster\n", "stock server, chain 50:",
		m("stock chain 50 native ms/step"), m("chain 50 native ms/step"), m("stock chain 50 native ms/step")/m("chain 50 native ms/step"))
	fmt.Printf("%-26s native %7.2f ms/step on stock settings | %7.2f tuned | tuned is %.1fx faster (no process: the server and the SDK alone)\n", "stock server, empty chain:",
		m("stock empty chain 50 ms/step"), m("tuned empty chain 50 ms/step"), m("stock empty chain 50 ms/step")/m("tuned empty chain 50 ms/step"))
	fmt.Printf("%-26s %.2f ms per attempt on the bench's log disk (a directory and two files; the hand-written activity keeps no logs)\n", "log files:", m("log files ms"))
	fmt.Printf("%-26s playbook %7.3f ms/step, %.0f activities | %.1fx cheaper than the shell chain 50\n", "noop chain 50:",
		m("noop chain 50 ms/step"), m("noop chain 50 activities"), m("chain 50 playbook ms/step")/m("noop chain 50 ms/step"))
	fmt.Printf("%-26s playbook %7.3f ms/element (worker %.0f MiB) | %.1fx cheaper per element than the shell loop 1000\n", "noop loop 10000:",
		m("noop loop 10000 ms/element"), m("noop loop 10000 worker MiB"), m("loop 1000 playbook ms/element")/m("noop loop 10000 ms/element"))
}
