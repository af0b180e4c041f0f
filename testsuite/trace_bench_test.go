package testsuite

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/worker"
)

// BenchmarkTracingChain runs the 50-step shell chain (BenchmarkSpeed's) on
// two workers of one process, one exporting traces over OTLP gRPC to a
// receiver the benchmark runs and one not, in turns, and prints the
// median wall time of each and their ratio: what tracing costs a run. It
// checks that each traced run sent its whole trace (the run's span, 51
// steps' spans with end, 50 attempts') and the others none.
func BenchmarkTracingChain(b *testing.B) {
	recv := startOTLPReceiver(b)
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + recv.grpcAddr, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"} {
		prev, had := os.LookupEnv(k)
		require.NoError(b, os.Setenv(k, v))
		defer func() {
			if had {
				_ = os.Setenv(k, prev)
			} else {
				_ = os.Unsetenv(k)
			}
		}()
	}
	tracing, err := worker.TracingFromEnv(context.Background())
	require.NoError(b, err)
	require.NotNil(b, tracing)
	defer func() { _ = tracing.Shutdown(context.Background()) }()
	on, off := fmt.Sprintf("bench-traced-%d", time.Now().UnixNano()), fmt.Sprintf("bench-untraced-%d", time.Now().UnixNano())
	for queue, tr := range map[string]*worker.Tracing{on: tracing, off: nil} {
		w := worker.New(tc, worker.Options{TaskQueue: queue, LogDir: b.TempDir(), Tracing: tr})
		require.NoError(b, w.Start())
		defer w.Stop()
	}
	const n = 50
	var traced, plain []time.Duration
	for range b.N {
		for round := 0; round < 3; round++ {
			p := measure(b, tc, off, contract.WorkflowName, pb(chainSource(n, shellStep)))
			plain = append(plain, p.wall)
			require.Empty(b, recv.trace(contract.RunTrace(p.id, runIDOf(b, p.id))), "a worker without tracing sends nothing")
			t := measure(b, tc, on, contract.WorkflowName, pb(chainSource(n, shellStep)))
			traced = append(traced, t.wall)
			tid := contract.RunTrace(t.id, runIDOf(b, t.id))
			deadline := time.Now().Add(30 * time.Second)
			for len(recv.trace(tid)) < 1+(n+1)+n && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			require.Len(b, recv.trace(tid), 1+(n+1)+n, "the run's span, its steps' (end too) and its attempts'")
		}
	}
	b.StopTimer()
	on50, off50 := medianDuration(traced), medianDuration(plain)
	ratio := float64(on50) / float64(off50)
	b.ReportMetric(ratio, "on/off")
	fmt.Printf("tracing chain %d: on %.0f ms, off %.0f ms, on/off %.3f\n", n, ms(on50), ms(off50), ratio)
}

// runIDOf is the run ID of the latest run of workflow ID id.
func runIDOf(b *testing.B, id string) string {
	d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(b, err)
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}
