package testsuite

import (
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/activities"
	"playbook/interpreter/contract"
	"playbook/worker"
)

// BenchmarkConcurrentRuns is `make bench`'s 200 concurrent 5-step runs
// alone, playbook and hand-written taking turns going first, each b.N
// times: the figure to profile (-cpuprofile) for where a run's start and
// first workflow task go. Besides the medians it prints the CPU a run
// cost each side, and each round's ratio: on two cores they spread widely
// from round to round.
func BenchmarkConcurrentRuns(b *testing.B) {
	defer inProcessBenchWorker(b)()
	f := figures{}
	for round := range b.N {
		concurrentRound(b, f, round)
	}
	b.StopTimer()
	p, n := "concurrent playbook runs/s", "concurrent native runs/s"
	pc, nc := "concurrent playbook cpu ms/run", "concurrent native cpu ms/run"
	fmt.Printf("concurrent %d runs of %d steps: playbook %.1f runs/s, native %.1f runs/s (%.2fx)\n", concurrentN, concurrentSteps,
		f.median(p), f.median(n), f.median(p)/f.median(n))
	fmt.Printf("CPU a run (server, worker, client, steps): playbook %.1f ms, native %.1f ms (%.2fx)\n",
		f.median(pc), f.median(nc), f.median(pc)/f.median(nc))
	rounds := make([]string, b.N)
	for i := range rounds {
		rounds[i] = fmt.Sprintf("%.2f", f[p][i]/f[n][i])
	}
	fmt.Printf("each round's ratio: %s\n", strings.Join(rounds, " "))
}

// BenchmarkLoop is `make bench`'s loop of 1,000 `sh -c true` elements,
// ten in flight, alone: the playbook's loop, the hand-written loop, and
// the hand-written loop running the playbook's activity, in turn, b.N
// rounds; it prints the medians and the split (interpreter, activity) as
// BenchmarkSpeed does, in a minute rather than its quarter of an hour.
func BenchmarkLoop(b *testing.B) {
	defer inProcessBenchWorker(b)()
	const loopN, inFlight = 1000, 10
	f := figures{}
	for round := range b.N {
		inTurn(round,
			func() {
				f.add("playbook", ms(measure(b, tc, benchQueue, contract.WorkflowName, pb(loopSource(loopN, inFlight, shellTrue))).wall)/loopN)
			},
			func() { f.add("native", ms(measure(b, tc, benchQueue, BenchNativeLoop, loopN, inFlight).wall)/loopN) },
			func() {
				f.add("own", ms(measure(b, tc, benchQueue, BenchNativeLoopRunStep, loopN, inFlight).wall)/loopN)
			})
	}
	b.StopTimer()
	p, nat, own := f.median("playbook"), f.median("native"), f.median("own")
	fmt.Printf("loop %d, %d in flight: playbook %.2f ms/element | native %.2f ms/element | ratio %.2f (medians of %d rounds)\n",
		loopN, inFlight, p, nat, p/nat, b.N)
	fmt.Printf("loop %d split: native running the playbook's activity %.2f ms/element | interpreter %.2f (playbook over it), activity %.2f (it over native)\n",
		loopN, own, p/own, own/nat)
}

// inProcessBenchWorker starts a worker in this process on the bench's
// queue, running the playbook's workflow and activity and the hand-written
// twins, its logs in a temporary directory; stop stops it.
func inProcessBenchWorker(b *testing.B) (stop func()) {
	w := sdkworker.New(tc, benchQueue, sdkworker.Options{})
	worker.RegisterWorkflow(w)
	w.RegisterActivityWithOptions((&activities.Activities{LogDir: b.TempDir()}).RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	registerNative(w)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	return w.Stop
}
