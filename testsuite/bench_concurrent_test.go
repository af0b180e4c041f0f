package testsuite

import (
	"fmt"
	"testing"

	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/activities"
	"playbook/interpreter/contract"
	"playbook/worker"
)

// BenchmarkConcurrentRuns is `make bench`'s 200 concurrent 5-step runs
// alone, playbook then hand-written, each b.N times: the figure to profile
// (-cpuprofile) for where a run's start and first workflow task go.
func BenchmarkConcurrentRuns(b *testing.B) {
	w := sdkworker.New(tc, benchQueue, sdkworker.Options{})
	worker.RegisterWorkflow(w)
	w.RegisterActivityWithOptions((&activities.Activities{LogDir: b.TempDir()}).RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	registerNative(w)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	const runs, steps = 200, 5
	f := figures{}
	for range b.N {
		f.add("playbook", concurrentRuns(b, tc, runs, contract.WorkflowName, pb(chainSource(steps, shellStep))))
		f.add("native", concurrentRuns(b, tc, runs, BenchNativeChain, steps))
	}
	b.StopTimer()
	fmt.Printf("concurrent %d runs of %d steps: playbook %.1f runs/s, native %.1f runs/s (%.2fx)\n", runs, steps,
		f.median("playbook"), f.median("native"), f.median("playbook")/f.median("native"))
}
