package activities

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime/metrics"
	"strconv"
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
// CPU per attempt, its keeper's (keeper-cpu-us/op: the keeper wakes for
// each line the attempts write to it, a cost cpu-us/op leaves out) and
// their processes' (children-cpu-us/op).
func attempts(b *testing.B, attempt func(i int) error) {
	b.ReportAllocs()
	before, goBefore := selfCPU(), goroutinesCreated()
	keeperPid, keeperBefore := keeperCPU()
	childrenBefore := childrenCPU()
	b.ResetTimer()
	for i := range b.N {
		if err := attempt(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((selfCPU()-before).Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(goroutinesCreated()-goBefore)/float64(b.N), "goroutines/op")
	b.ReportMetric(float64((childrenCPU()-childrenBefore).Microseconds())/float64(b.N), "children-cpu-us/op")
	// A keeper started during the run (the first attempt's) counts from
	// its start, which costs more than the attempts: only the same
	// keeper's is reported.
	if pid, after := keeperCPU(); pid == keeperPid && pid != 0 {
		b.ReportMetric(float64((after-keeperBefore).Microseconds())/float64(b.N), "keeper-cpu-us/op")
	}
}

// goroutinesCreated counts the goroutines this process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// selfCPU is this process's user and system time, its children's left out.
func selfCPU() time.Duration { return rusageCPU(syscall.RUSAGE_SELF) }

// childrenCPU is the user and system time of this process's reaped
// children: the steps' processes, not the keeper, which runs on.
func childrenCPU() time.Duration { return rusageCPU(syscall.RUSAGE_CHILDREN) }

func rusageCPU(who int) time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(who, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// keeperCPU is the current keeper's process ID and its user and system
// time so far (0, 0 when none runs), from /proc/PID/stat in clock ticks
// of 10 ms: enough over the thousands of attempts a benchmark runs.
func keeperCPU() (int, time.Duration) {
	groupKeeper.mu.Lock()
	cmd := groupKeeper.cmd
	groupKeeper.mu.Unlock()
	if cmd == nil {
		return 0, 0
	}
	// utime and stime, the 14th and 15th fields of the line.
	fields := procStat(strconv.Itoa(cmd.Process.Pid))
	if len(fields) < 13 {
		return 0, 0
	}
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return cmd.Process.Pid, time.Duration(utime+stime) * 10 * time.Millisecond
}

// quietSuite is the SDK's test suite with its logger discarding: the
// attempts' debug lines would cost more than what is measured.
func quietSuite() *testsuite.WorkflowTestSuite {
	s := &testsuite.WorkflowTestSuite{}
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	return s
}
