package activities

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"playbook/internal/proctest"
	"playbook/interpreter"
)

// fakeWorkerEnv makes this test binary a worker that runs one long step
// (TestStepProcessesDieWithTheirWorker starts it and kills it).
const fakeWorkerEnv = "PLAYBOOK_TEST_FAKE_WORKER"

// killKeeperEnv makes the fake worker kill its keeper after a first step,
// before the long one.
const killKeeperEnv = "PLAYBOOK_TEST_KILL_KEEPER"

func TestMain(m *testing.M) {
	if marker := os.Getenv(fakeWorkerEnv); marker != "" {
		a := &Activities{LogDir: os.TempDir()}
		if os.Getenv(killKeeperEnv) != "" {
			first := interpreter.StepInput{WorkflowID: "orphan-test", Step: "first", Kind: "shell", Spec: map[string]any{"command": "true"}}
			if o := a.runTool(context.Background(), first, 1); o.Err != nil {
				panic(o.Err.Message)
			}
			groupKeeper.mu.Lock()
			pid := groupKeeper.cmd.Process.Pid
			groupKeeper.mu.Unlock()
			_ = syscall.Kill(pid, syscall.SIGKILL)
			for syscall.Kill(pid, 0) == nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
		in := interpreter.StepInput{WorkflowID: "orphan-test", Step: "s", Kind: "shell", Spec: map[string]any{
			// A child in the background and a grandchild: the whole group goes.
			"command": "sh -c \"sleep 60\" " + marker + " & sleep 60 # " + marker}}
		a.runTool(context.Background(), in, 1)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A worker killed by SIGKILL (no chance to clean up) takes its step's
// processes with it: the keeper of their groups sees the worker go.
func TestStepProcessesDieWithTheirWorker(t *testing.T) {
	stepsDieWithWorker(t, nil)
}

// A keeper that died between steps is replaced for the next step.
func TestStepProcessesDieWithTheirWorkerAfterItsKeeperDied(t *testing.T) {
	stepsDieWithWorker(t, nil, killKeeperEnv+"=1")
}

// A keeper that dies while a step runs is replaced at once, and the new one
// knows the running step's group.
func TestStepProcessesDieWithTheirWorkerWhoseKeeperDiedDuringTheStep(t *testing.T) {
	stepsDieWithWorker(t, func(worker int) {
		first := keeperOf(t, worker)
		require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
		proctest.WaitFor(t, "a new keeper", 5*time.Second, func() bool {
			k := keeperOf(t, worker)
			return k != 0 && k != first
		})
	})
}

// keeperOf is the keeper child of the worker process, 0 when it has none.
func keeperOf(t *testing.T, worker int) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "live[$2]") {
			continue
		}
		if ppid, ok := running(pid); ok && ppid == worker {
			return pid
		}
	}
	return 0
}

// running says whether pid is a process that has not exited (a zombie has),
// and its parent.
func running(pid int) (ppid int, ok bool) {
	fields := procStat(strconv.Itoa(pid))
	if len(fields) < 2 || fields[0] == "Z" {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

func stepsDieWithWorker(t *testing.T, during func(worker int), env ...string) {
	marker := fmt.Sprintf("playbook-orphan-test-%d", time.Now().UnixNano())
	w := exec.Command(os.Args[0], "-test.run=^$")
	w.Env = append(append(os.Environ(), fakeWorkerEnv+"="+marker), env...)
	require.NoError(t, w.Start())
	deadline := time.Now().Add(20 * time.Second)
	// The step's shell and its child in the background both carry the
	// marker: the worker dies once the step has a process of its own.
	for len(proctest.Matching(marker)) < 2 {
		require.True(t, time.Now().Before(deadline), "the step did not start")
		time.Sleep(20 * time.Millisecond)
	}
	if during != nil {
		during(w.Process.Pid)
	}
	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_ = w.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for len(proctest.Matching(marker)) > 0 {
		require.True(t, time.Now().Before(deadline), "step processes outlived their worker: %v", proctest.Matching(marker))
		time.Sleep(20 * time.Millisecond)
	}
}

// The keeper kills, at end of input, exactly the groups still on its list:
// added and not removed, a group already gone not stopping it. Removing a
// group it never had changes nothing.
func TestKeeperKillsTheGroupsOnItsList(t *testing.T) {
	group := func() *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, c.Start())
		t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Wait() })
		return c
	}
	kept, kept2, removed, never, gone := group(), group(), group(), group(), group()
	require.NoError(t, syscall.Kill(-gone.Process.Pid, syscall.SIGKILL))
	_ = gone.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keeper := exec.CommandContext(ctx, "/bin/sh", "-c", keeperScript)
	// Removing an unknown group many times must not grow the list (a list
	// that grew would double with each line: the keeper would not finish).
	unknown := strings.Repeat(fmt.Sprintf("- %d\n", never.Process.Pid), 64)
	keeper.Stdin = strings.NewReader(fmt.Sprintf("+ %d\n+ %d\n+ %d\n+ %d\n%s- %d\n- %d\n",
		gone.Process.Pid, removed.Process.Pid, kept.Process.Pid, kept2.Process.Pid, unknown, removed.Process.Pid, removed.Process.Pid))
	require.NoError(t, keeper.Run(), "the keeper reads its list quickly")
	alive := func(c *exec.Cmd) bool {
		_, ok := running(c.Process.Pid)
		return ok
	}
	proctest.WaitFor(t, "the kept groups' death", 5*time.Second, func() bool { return !alive(kept) && !alive(kept2) })
	require.True(t, alive(removed), "a removed group is left alone")
	require.True(t, alive(never), "a group never added is left alone")
}

// A keeper that stops reading is replaced once a line has waited
// keeperWriteLimit, and the new one is told every live group.
func TestKeeperThatStopsReadingIsReplaced(t *testing.T) {
	defer func(limit time.Duration) { keeperWriteLimit = limit }(keeperWriteLimit)
	keeperWriteLimit = 200 * time.Millisecond
	k := newKeeper()
	require.NoError(t, k.ensure())
	k.mu.Lock()
	stopped := k.cmd.Process.Pid
	k.mu.Unlock()
	require.NoError(t, syscall.Kill(stopped, syscall.SIGSTOP))
	// IDs above the largest PID Linux allows name no group: the keepers
	// never kill anything here.
	const noGroup = 1 << 23
	start := time.Now()
	for i := range 20000 { // far more than a pipe holds
		require.NoError(t, k.add(noGroup+i))
	}
	require.Less(t, time.Since(start), 10*time.Second)
	k.mu.Lock()
	defer k.mu.Unlock()
	require.NotEqual(t, stopped, k.cmd.Process.Pid, "the stopped keeper was replaced")
	require.Len(t, k.live, 20000)
	proctest.WaitFor(t, "the stopped keeper's end", 5*time.Second, func() bool {
		_, ok := running(stopped)
		return !ok
	})
	k.live = map[int]bool{}  // nothing to replace it for
	_ = k.cmd.Process.Kill() // no end of input: it kills nothing
}

// A process a step left behind dies by the group's SIGKILL and stays in
// the group as a zombie until its parent reaps it. Its parent here is this
// process (a subreaper, as a worker running as PID 1 would be): the zombie
// runs nothing, and the step's end reaps it rather than wait for it.
func TestZombiesDoNotHoldAStep(t *testing.T) {
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	defer func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) }()

	cmd := exec.Command("/bin/sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output() // the shell exits: its sleep is now this process's child
	require.NoError(t, err)
	pgid := cmd.Process.Pid
	left, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err)
	reaped := false
	defer func() {
		if !reaped { // still this process's child, so its PID is still its own
			_ = syscall.Kill(left, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(left, &ws, 0, nil)
		}
	}()
	require.True(t, groupRuns(pgid), "the sleep the shell left runs in its group")

	require.NoError(t, syscall.Kill(-pgid, syscall.SIGKILL))
	proctest.WaitFor(t, "the sleep to be a zombie", 5*time.Second, func() bool {
		f := procStat(strconv.Itoa(left))
		return len(f) > 0 && f[0] == "Z"
	})
	require.NoError(t, syscall.Kill(-pgid, 0), "the zombie is still a member of the group")
	require.False(t, groupRuns(pgid), "but it runs nothing")
	start := time.Now()
	groupGone(pgid)
	reaped = syscall.Kill(-pgid, 0) != nil
	require.Less(t, time.Since(start), 500*time.Millisecond, "groupGone waits for no zombie (it gives up on a running group after a second)")
	require.True(t, reaped, "the zombie's parent, this process, reaped it")
}
