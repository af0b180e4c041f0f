package activities

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"playbook/internal/proctest"
	"playbook/interpreter/contract"
)

// BenchmarkAttempt runs one attempt of a `sh -c true` shell step through
// the SDK's activity environment, as a worker runs it (RunStep: attempt
// log, heartbeats, secrets, log files, process group, keeper, result),
// beside a bare activity running the same command (the hand-written
// twin's), one at a time. Besides the wall time it reports the worker's
// own CPU per attempt (cpu-us/op, the process's user and system time
// without its children's) and the goroutines it starts (goroutines/op),
// which a loaded machine changes far less than the wall time (the second
// not at all): the difference between the two is what the step's
// machinery costs. Profile with -cpuprofile and -memprofile.
func BenchmarkAttempt(b *testing.B) {
	fmt.Println("disk:", proctest.SettleDisk(b))
	b.Run("step", func(b *testing.B) {
		a := &Activities{LogDir: b.TempDir()}
		env := quietSuite().NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(a.RunStep, activity.RegisterOptions{Name: "RunStep"})
		base := b.TempDir()
		attempts(b, func(i int) error {
			in := contract.StepInput{WorkflowID: "wf", RunID: "run", Step: fmt.Sprintf("s%d", i), Kind: "shell",
				Spec: map[string]any{"command": "true"}, BaseDir: base, Timeout: time.Minute, Lost: &contract.LostSpec{Attempts: 3}}
			v, err := env.ExecuteActivity("RunStep", in)
			if err != nil {
				return err
			}
			var out contract.StepOutput
			return v.Get(&out)
		})
	})
	b.Run("bare", func(b *testing.B) {
		env := quietSuite().NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(bareTrue, activity.RegisterOptions{Name: "BareTrue"})
		attempts(b, func(int) error {
			v, err := env.ExecuteActivity("BareTrue")
			if err != nil {
				return err
			}
			var out map[string]any
			return v.Get(&out)
		})
	})
}

// bareTrue is the hand-written twin's activity: the command, its exit code.
func bareTrue(ctx context.Context) (map[string]any, error) {
	err := exec.CommandContext(ctx, "/bin/sh", "-c", "true").Run()
	return map[string]any{"exit_code": 0}, err
}

// attempts runs b.N attempts one after another and reports the worker's
// CPU per attempt.
func attempts(b *testing.B, attempt func(i int) error) {
	b.ReportAllocs()
	before, goBefore := selfCPU(), goroutinesCreated()
	b.ResetTimer()
	for i := range b.N {
		if err := attempt(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((selfCPU()-before).Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(goroutinesCreated()-goBefore)/float64(b.N), "goroutines/op")
}

// goroutinesCreated counts the goroutines this process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// selfCPU is this process's user and system time, its children's left out.
func selfCPU() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// quietSuite is the SDK's test suite with its logger discarding: the
// attempts' debug lines would cost more than what is measured.
func quietSuite() *testsuite.WorkflowTestSuite {
	s := &testsuite.WorkflowTestSuite{}
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	return s
}
