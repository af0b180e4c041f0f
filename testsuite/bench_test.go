package testsuite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/interpreter/playbookwf"
	"playbook/worker"
)

const chainLength = 50

// chainPlaybook is a sequential chain of noop steps.
func chainPlaybook(n int) string {
	var b strings.Builder
	b.WriteString("metadata: {name: chain}\nworkflow:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - step: s%d\n    tool: {kind: noop, result: %d}\n", i, i)
		if i < n {
			fmt.Fprintf(&b, "    next: s%d\n", i+1)
		}
	}
	return b.String()
}

// NativeChain is the same chain written by hand against the SDK: the floor
// the interpreter is measured against.
func NativeChain(ctx workflow.Context, n int) ([]any, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    playbookwf.DefaultHeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	info := workflow.GetInfo(ctx)
	results := make([]any, 0, n)
	for i := 1; i <= n; i++ {
		var out activities.StepOutput
		in := activities.StepInput{WorkflowID: info.WorkflowExecution.ID, Step: fmt.Sprintf("s%d", i), Kind: "noop",
			Spec: map[string]any{"result": i}, Retry: activities.RetrySpec{MaxAttempts: 1}}
		if err := workflow.ExecuteActivity(ctx, activities.RunStepName, in).Get(ctx, &out); err != nil {
			return nil, err
		}
		results = append(results, out.Result)
	}
	return results, nil
}

// BenchmarkChain50 runs the 50-step chain as a playbook and as NativeChain,
// alternately, on one worker, and reports per-step time for each, their
// ratio, and history events per step.
func BenchmarkChain50(b *testing.B) {
	const queue = "bench-chain"
	w := sdkworker.New(tc, queue, sdkworker.Options{})
	worker.RegisterWorkflow(w)
	w.RegisterWorkflow(NativeChain)
	w.RegisterActivityWithOptions((&activities.Activities{LogDir: logDir}).RunStep, activity.RegisterOptions{Name: activities.RunStepName})
	require.NoError(b, w.Start())
	defer w.Stop()
	ctx := context.Background()
	in := playbookwf.Input{File: "chain.yaml", Source: chainPlaybook(chainLength)}

	var pbTime, nativeTime time.Duration
	var pbEvents, nativeEvents int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bench-pb-%d-%d", time.Now().UnixNano(), i), TaskQueue: queue}, playbookwf.WorkflowName, in)
		require.NoError(b, err)
		require.NoError(b, run.Get(ctx, nil))
		pbTime += time.Since(start)
		pbEvents += historyLength(b, run)

		start = time.Now()
		run, err = tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bench-native-%d-%d", time.Now().UnixNano(), i), TaskQueue: queue}, NativeChain, chainLength)
		require.NoError(b, err)
		require.NoError(b, run.Get(ctx, nil))
		nativeTime += time.Since(start)
		nativeEvents += historyLength(b, run)
	}
	b.StopTimer()
	steps := float64(b.N * chainLength)
	b.ReportMetric(float64(pbTime.Microseconds())/steps/1000, "playbook-ms/step")
	b.ReportMetric(float64(nativeTime.Microseconds())/steps/1000, "native-ms/step")
	b.ReportMetric(float64(pbTime)/float64(nativeTime), "ratio")
	b.ReportMetric(float64(pbEvents)/steps, "playbook-events/step")
	b.ReportMetric(float64(nativeEvents)/steps, "native-events/step")
}

func historyLength(b *testing.B, run client.WorkflowRun) int {
	d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
	require.NoError(b, err)
	return int(d.GetWorkflowExecutionInfo().GetHistoryLength())
}
