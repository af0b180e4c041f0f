package testsuite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"playbook/internal/proctest"
	"playbook/internal/quietlog"
	"playbook/worker"
)

// hugeLoopElements is the length of BenchmarkHugeLoops' loops; a shorter
// one profiles quicker (-huge-loop 20000).
var hugeLoopElements = flag.Int("huge-loop", 100_000, "elements of each loop BenchmarkHugeLoops runs")

// hugeLoopsLocal runs only the local loops of BenchmarkHugeLoops: the
// playbook's and the hand-written one (-huge-loops-local).
var hugeLoopsLocal = flag.Bool("huge-loops-local", false, "BenchmarkHugeLoops runs only the local shell loop and the hand-written loop of local activities")

// BenchmarkHugeLoops runs a loop of 100,000 elements, of noop, of
// `shell true` (its worker's logs on the disk, then on tmpfs) and of local
// `shell true` (`local: true`), 200 in flight, each on a `playbook worker`
// of its own, and prints the wall time, that worker's peak RSS and the
// size of the parent run's history (the loop's driver keeps the elements'
// events in its own); then the same loop hand-written, of activities (on
// a worker with the SDK's defaults, then on one set as playbook's is: no
// compression on loopback, worker.EagerStepsPerTask) and of local
// activities, and the bare processes. Minutes on two cores.
func BenchmarkHugeLoops(b *testing.B) {
	n, inFlight := *hugeLoopElements, 200
	fmt.Printf("%-26s %v\n", "disk, before:", proctest.SettleDisk(b))
	b.ResetTimer()
	for range b.N {
		walls := map[string]time.Duration{}
		loops := []struct {
			name, source string
			tmpfs        bool // the worker's logs on tmpfs
		}{
			{"noop", loopSource(n, inFlight, `{kind: noop, result: "{{ item }}"}`), false},
			{"shell true", loopSource(n, inFlight, shellTrue), false},
			{"shell true, tmpfs logs", loopSource(n, inFlight, shellTrue), true},
			{"local shell true", localLoopSource(n, inFlight), false},
		}
		if *hugeLoopsLocal {
			loops = loops[3:]
		}
		for _, loop := range loops {
			var server syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &server)
			logDir := b.TempDir()
			if loop.tmpfs {
				logDir = tmpfsDir(b)
			}
			r, rss, parent := hugeLoop(b, loop.source, logDir)
			var after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := lastWorkerCPU
			walls[loop.name] = r.wall
			fmt.Printf("%-26s %7.1f s wall, %.2f ms/element | worker %4.0f MiB peak RSS | parent history %6.1f KiB, %d events | CPU ms/element: server %.2f, worker %.2f, its processes %.2f\n",
				fmt.Sprintf("loop %d %s:", n, loop.name), r.wall.Seconds(), ms(r.wall)/float64(n), rss, float64(parent)/1024, r.events,
				1000*(rusageSeconds(after)-rusageSeconds(server))/float64(n), 1000*cpu.own/float64(n), 1000*cpu.children/float64(n))
		}
		if !*hugeLoopsLocal {
			wall := nativeLongLoop(b, tc, sdkworker.Options{}, BenchNativeLongLoop, n, inFlight)
			fmt.Printf("%-26s %7.1f s wall, %.2f ms/element (hand-written, continuing as new every %d elements)\n",
				fmt.Sprintf("loop %d native:", n), wall.Seconds(), ms(wall)/float64(n), nativeLoopChunk)
			walls["native"] = wall
			wall = nativeLongLoop(b, uncompressedClient(b), sdkworker.Options{MaxEagerActivityReservationsPerWorkflowTask: new(int(worker.EagerStepsPerTask))},
				BenchNativeLongLoop, n, inFlight)
			fmt.Printf("%-26s %7.1f s wall, %.2f ms/element (the same on a worker set as playbook's: no gzip, %d eager activities a task)\n",
				fmt.Sprintf("loop %d native, tuned:", n), wall.Seconds(), ms(wall)/float64(n), worker.EagerStepsPerTask)
			walls["native, tuned"] = wall
		}
		// What is left without the server's per-activity work, then
		// without Temporal at all: the floor one process per element sets.
		wall := nativeLongLoop(b, tc, sdkworker.Options{}, BenchNativeLocalLongLoop, n, inFlight)
		fmt.Printf("%-26s %7.1f s wall, %.2f ms/element (hand-written, local activities)\n",
			fmt.Sprintf("loop %d native local:", n), wall.Seconds(), ms(wall)/float64(n))
		walls["native local"] = wall
		if *hugeLoopsLocal {
			fmt.Printf("%-26s local shell true %.2fx native local (playbook's wall over the hand-written's, this run)\n",
				fmt.Sprintf("loop %d ratios:", n), walls["local shell true"].Seconds()/walls["native local"].Seconds())
			continue
		}
		fmt.Printf("%-26s shell true %.2fx native (%.2fx with tmpfs logs; %.2fx and %.2fx native tuned), local shell true %.2fx native local (playbook's wall over the hand-written's, this run)\n",
			fmt.Sprintf("loop %d ratios:", n), walls["shell true"].Seconds()/walls["native"].Seconds(),
			walls["shell true, tmpfs logs"].Seconds()/walls["native"].Seconds(),
			walls["shell true"].Seconds()/walls["native, tuned"].Seconds(),
			walls["shell true, tmpfs logs"].Seconds()/walls["native, tuned"].Seconds(),
			walls["local shell true"].Seconds()/walls["native local"].Seconds())
		wall = bareProcesses(b, n, inFlight)
		fmt.Printf("%-26s %7.1f s wall, %.2f ms/element (sh -c true from %d goroutines, no Temporal)\n",
			fmt.Sprintf("loop %d processes:", n), wall.Seconds(), ms(wall)/float64(n), inFlight)
	}
}

// localLoopSource is loopSource of `shell true` elements, run as local
// activities: the twin of BenchNativeLocalLongLoop.
func localLoopSource(n, inFlight int) string {
	return strings.Replace(loopSource(n, inFlight, shellTrue), "workflow:\n", "local: true\nworkflow:\n", 1)
}

// nativeLoopChunk is how many elements a run of the hand-written long loop
// runs before it continues as new.
const nativeLoopChunk = 2000

// BenchNativeLongLoop runs n activities, at most inFlight at a time, in
// runs of nativeLoopChunk that continue as new: a hand-written long loop.
func BenchNativeLongLoop(ctx workflow.Context, n, inFlight int) error {
	chunk := min(n, nativeLoopChunk)
	if err := BenchNativeLoop(ctx, chunk, inFlight); err != nil || n == chunk {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, BenchNativeLongLoop, n-chunk, inFlight)
}

// nativeLongLoop runs a hand-written long loop (BenchNativeLongLoop, or
// BenchNativeLocalLongLoop) on a worker of the test's own with opts,
// through client c, and returns its wall time across its runs.
func nativeLongLoop(b *testing.B, c client.Client, opts sdkworker.Options, loop func(workflow.Context, int, int) error, n, inFlight int) time.Duration {
	const queue = "bench-native-long-loop"
	w := sdkworker.New(c, queue, opts)
	w.RegisterWorkflow(loop)
	w.RegisterActivity(BenchTrue)
	require.NoError(b, w.Start())
	defer w.Stop()
	start := time.Now()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("bench-long-%d", time.Now().UnixNano()), TaskQueue: queue}, loop, n, inFlight)
	require.NoError(b, err)
	require.NoError(b, run.Get(context.Background(), nil))
	return time.Since(start)
}

// uncompressedClient is a client of the test's server that compresses
// nothing, as playbook's worker does on loopback (--grpc-compression).
func uncompressedClient(b *testing.B) client.Client {
	c, err := client.Dial(client.Options{HostPort: server.Address, Logger: quietlog.New(),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
	require.NoError(b, err)
	b.Cleanup(c.Close)
	return c
}

// tmpfsDir is a directory of the benchmark's own on tmpfs (/dev/shm),
// removed with the benchmark's other files (its cleanup).
func tmpfsDir(b *testing.B) string {
	dir, err := os.MkdirTemp("/dev/shm", "playbook-bench-")
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// hugeLoop runs a loop on its own worker, its logs in logDir, and returns
// the parent run, the worker's peak RSS in MiB and the parent history's
// size in bytes.
func hugeLoop(b *testing.B, source, logDir string) (benchRun, float64, int) {
	start := time.Now()
	r, rss := loopOnOwnWorker(b, source, logDir)
	require.Less(b, time.Since(start), 30*time.Minute)
	return r, rss, historyBytes(b, r.id)
}

// historyBytes is the encoded size of a run's whole history.
func historyBytes(b *testing.B, id string) int {
	it := tc.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(b, err)
		n += proto.Size(e)
	}
	return n
}

func rusageSeconds(r syscall.Rusage) float64 {
	return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
}

// BenchNativeLocalLongLoop is BenchNativeLongLoop with local activities:
// the server records their results with the workflow's tasks, and does
// no work of its own per element.
func BenchNativeLocalLongLoop(ctx workflow.Context, n, inFlight int) error {
	chunk := min(n, nativeLoopChunk)
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute})
	err := nativeLoop(ctx, chunk, inFlight, func(ctx workflow.Context, _ int) workflow.Future {
		return workflow.ExecuteLocalActivity(ctx, BenchTrue)
	})
	if err != nil || n == chunk {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, BenchNativeLocalLongLoop, n-chunk, inFlight)
}

// bareProcesses runs n `sh -c true`, inFlight at a time, from this
// process, with no Temporal: the floor of a loop of one process each.
func bareProcesses(b *testing.B, n, inFlight int) time.Duration {
	start := time.Now()
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			require.NoError(b, BenchTrue(context.Background()))
		}()
	}
	wg.Wait()
	return time.Since(start)
}
