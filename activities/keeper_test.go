package activities

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"playbook/internal/proctest"
	"playbook/interpreter/contract"
)

// fakeWorkerEnv makes this test binary a worker that runs one long step
// (TestStepProcessesDieWithTheirWorker starts it and kills it).
const fakeWorkerEnv = "PLAYBOOK_TEST_FAKE_WORKER"

// killKeeperEnv makes the fake worker kill its keeper after a first step,
// before the long one.
const killKeeperEnv = "PLAYBOOK_TEST_KILL_KEEPER"

// slowKeeperEnv makes the fake worker pause for a while after each keeper
// it starts (keeperStarted), before it goes on.
const slowKeeperEnv = "PLAYBOOK_TEST_SLOW_KEEPER"

// unlistedEnv makes the fake worker stop for good between its step's start
// and the step's group joining the keeper's list (startedUnlisted), and
// its step fork a child at once.
const unlistedEnv = "PLAYBOOK_TEST_UNLISTED"

// daemonEnv makes the fake worker's step start a daemon: a process in a
// session of its own.
const daemonEnv = "PLAYBOOK_TEST_DAEMON"

func TestMain(m *testing.M) {
	if marker := os.Getenv(fakeWorkerEnv); marker != "" {
		a := &Activities{LogDir: os.TempDir()}
		if os.Getenv(slowKeeperEnv) != "" {
			keeperStarted = func(int) { time.Sleep(3 * time.Second) }
		}
		if os.Getenv(killKeeperEnv) != "" {
			first := contract.StepInput{WorkflowID: "orphan-test", Step: "first", Kind: "shell", Spec: map[string]any{"command": "true"}}
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
		// A child in the background and a grandchild: the whole group goes.
		// The child starts half a second after the step, once the group is
		// on the keeper's list: the test kills the worker when it sees the
		// child. (A child forked in the instant before is the unlisted
		// case's.)
		command := "sleep 0.5; sh -c \"sleep 60\" " + marker + " & sleep 60 # " + marker
		if os.Getenv(daemonEnv) != "" {
			command = "setsid sh -c \"sleep 60\" " + marker + "-daemon & sleep 60 # " + marker
		}
		if os.Getenv(unlistedEnv) != "" {
			startedUnlisted = func() { time.Sleep(time.Hour) }
			command = "sh -c \"sleep 60\" " + marker + " & sleep 60 # " + marker
		}
		in := contract.StepInput{WorkflowID: "orphan-test", Step: "s", Kind: "shell", Spec: map[string]any{"command": command}}
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
	stepsDieWithWorker(t, replaceKeeper(t))
}

// A worker that dies the instant after it started a new keeper, before
// it went on, leaves that keeper the whole list: the list was in its pipe
// before it started. (Written after, it was lost with the worker, and the
// step's background process outlived it.)
func TestStepProcessesDieWithTheirWorkerKilledAsItsNewKeeperStarts(t *testing.T) {
	stepsDieWithWorker(t, replaceKeeper(t), slowKeeperEnv+"=1")
}

// A worker killed in the instant after its step's process started, before
// the step's group joined the keeper's list, takes what that process
// forked meanwhile with it: the keeper finds it by the worker's mark in
// its environment. (Only the leader's parent-death signal covered that
// instant before, and the child outlived the worker.)
func TestStepProcessesDieWithTheirWorkerKilledBeforeTheirGroupIsListed(t *testing.T) {
	stepsDieWithWorker(t, nil, unlistedEnv+"=1")
}

// A process a step started in a session of its own (setsid: a daemon)
// left the step on purpose: it outlives its worker, as it outlives its
// step. The keeper's sweep kills only the processes of the worker's
// session.
func TestADaemonAStepStartedOutlivesItsWorker(t *testing.T) {
	marker := fmt.Sprintf("playbook-daemon-test-%d", time.Now().UnixNano())
	killFakeWorker(t, marker, nil, daemonEnv+"=1")
	proctest.WaitFor(t, "the step's own process to go", 5*time.Second, func() bool { return len(proctest.Matching(marker)) == 1 })
	left := proctest.Matching(marker)
	require.Len(t, left, 1, "the daemon is left")
	daemon, _ := strconv.Atoi(left[0])
	_ = syscall.Kill(daemon, syscall.SIGKILL)
}

// replaceKeeper kills the worker's keeper and waits until a new one runs.
func replaceKeeper(t *testing.T) func(worker int) {
	return func(worker int) {
		first := keeperOf(t, worker)
		require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
		proctest.WaitFor(t, "a new keeper", 5*time.Second, func() bool {
			k := keeperOf(t, worker)
			return k != 0 && k != first
		})
	}
}

// keeperOf is the keeper child of the worker process, 0 when it has none.
func keeperOf(t *testing.T, worker int) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || string(cmdline) != keeperName+"\x00" {
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
	killFakeWorker(t, marker, during, env...)
	deadline := time.Now().Add(5 * time.Second)
	for len(proctest.Matching(marker)) > 0 {
		require.True(t, time.Now().Before(deadline), "step processes outlived their worker: %v", proctest.Matching(marker))
		time.Sleep(20 * time.Millisecond)
	}
}

// killFakeWorker starts the fake worker, whose step's processes carry
// marker, with env; once two of them run, calls during (if not nil), kills
// the worker with SIGKILL and waits for its keeper to end.
func killFakeWorker(t *testing.T, marker string, during func(worker int), env ...string) {
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
	keeper := keeperOf(t, w.Process.Pid)
	require.NotZero(t, keeper, "the worker has a keeper")
	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_ = w.Wait()
	// The keeper kills the groups on its list (and sweeps for the worker's
	// mark) and exits once it reads the end of its input: wait for that,
	// however slow a loaded machine makes it, and then for the killed
	// processes to go.
	proctest.WaitFor(t, "the keeper to end", time.Minute, func() bool {
		_, ok := running(keeper)
		return !ok
	})
}

// The keeper's list: what "+" puts on it and "-" takes off, any other line
// changing nothing, however long.
func TestKeptGroups(t *testing.T) {
	for _, c := range []struct {
		name, input string
		want        []int
	}{
		{"added", "+ 100\n+ 200\n", []int{100, 200}},
		{"removed", "+ 100\n+ 200\n- 100\n", []int{200}},
		{"added again", "+ 100\n- 100\n+ 100\n", []int{100}},
		{"removed twice, or never added", "+ 100\n- 100\n- 100\n- 300\n", nil},
		{"a last line without its newline", "+ 100\n+ 200", []int{100, 200}},
		{"no input", "", nil},
		// To kill(2), group 0 is the keeper's own and group 1 every process.
		{"no group 0 or 1", "+ 0\n+ 1\n+ 00\n", nil},
		{"malformed", "+100\n* 100\n+  100\n+ -100\n+ 100x\n+ \n+\n\n+ 1e3\n", nil},
		{"beyond a process ID", "+ 2147483648\n+ 99999999999999999999999\n+ 2147483647\n", []int{2147483647}},
		{"a line longer than the buffer", "+ 100\n- " + strings.Repeat("1", 200<<10) + "\n+ 200\n", []int{100, 200}},
		{"a long line at the end", "+ 100\n+ 2" + strings.Repeat("0", 200<<10), []int{100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []int
			for pgid := range keptGroups(strings.NewReader(c.input)) {
				got = append(got, pgid)
			}
			sort.Ints(got)
			require.Equal(t, c.want, got)
		})
	}
}

// The keeper's input gathers the lines written during its pause into one
// read, reads at once after waiting idle, and reads the end of input, with
// the lines before it, as it does any other.
func TestKeeperGathersLinesBetweenReads(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	g := &gathering{r: r, pause: 500 * time.Millisecond}
	buf := make([]byte, 1024)

	// Idle: the read waits for the first line, and returns it at once.
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, _ = w.WriteString("+ 100\n")
	}()
	n, err := g.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "+ 100\n", string(buf[:n]))

	// Busy: the lines written one by one during the pause, 30 ms apart,
	// come in one read.
	go func() {
		for _, line := range []string{"+ 200\n", "- 100\n", "+ 300\n"} {
			time.Sleep(30 * time.Millisecond)
			_, _ = w.WriteString(line)
		}
	}()
	n, err = g.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "+ 200\n- 100\n+ 300\n", string(buf[:n]))

	// The worker's end: what it wrote last, then the end of input.
	_, err = w.WriteString("- 300\n")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	rest, err := io.ReadAll(g)
	require.NoError(t, err)
	require.Equal(t, "- 300\n", string(rest))
}

// The keeper process kills, at end of input, exactly the groups still on
// its list, a group already gone not stopping it, and exits.
func TestKeeperKillsTheGroupsOnItsList(t *testing.T) {
	kept, kept2, removed, never, gone := group(t), group(t), group(t), group(t), group(t)
	require.NoError(t, syscall.Kill(-gone.Process.Pid, syscall.SIGKILL))
	_ = gone.Wait()
	keeper := keeperCommand(newWorkerMark())
	keeper.Stdin = strings.NewReader(fmt.Sprintf("+ %d\n+ %d\n+ %d\n+ %d\n- %d\n- %d\n- %d\n",
		gone.Process.Pid, removed.Process.Pid, kept.Process.Pid, kept2.Process.Pid, never.Process.Pid, removed.Process.Pid, removed.Process.Pid))
	require.NoError(t, keeper.Start())
	defer time.AfterFunc(10*time.Second, func() { _ = keeper.Process.Kill() }).Stop()
	require.NoError(t, keeper.Wait(), "the keeper exits when its input ends")
	proctest.WaitFor(t, "the kept groups' death", 5*time.Second, func() bool { return !alive(kept) && !alive(kept2) })
	require.True(t, alive(removed), "a removed group is left alone")
	require.True(t, alive(never), "a group never added is left alone")
}

// A worker's keeper kills the groups on its list when the worker's end of
// the pipe closes, and not before.
func TestKeeperKillsItsGroupsWhenTheWorkerGoes(t *testing.T) {
	k := newKeeper()
	listed, removed := group(t), group(t)
	require.NoError(t, k.add(listed.Process.Pid))
	require.NoError(t, k.add(removed.Process.Pid))
	k.remove(removed.Process.Pid)
	k.mu.Lock()
	pid := k.cmd.Process.Pid
	k.mu.Unlock()
	keeping(t, pid)
	time.Sleep(200 * time.Millisecond)
	require.True(t, alive(listed), "the keeper kills nothing while the worker lives")
	loseWorker(t, k)
	proctest.WaitFor(t, "the listed group's death", 5*time.Second, func() bool { return !alive(listed) })
	require.True(t, alive(removed), "a group taken off the list is left alone")
}

// The keeper ignores SIGTERM, SIGINT and SIGHUP (a stop may send them to
// every process of the worker) and still kills its groups after them.
func TestKeeperIgnoresStopSignals(t *testing.T) {
	k := newKeeper()
	listed := group(t)
	require.NoError(t, k.add(listed.Process.Pid))
	k.mu.Lock()
	pid := k.cmd.Process.Pid
	k.mu.Unlock()
	keeping(t, pid)
	for _, s := range keeperIgnores {
		require.NoError(t, syscall.Kill(pid, s))
	}
	time.Sleep(300 * time.Millisecond)
	_, ok := running(pid)
	require.True(t, ok, "the keeper outlives the stop signals")
	k.mu.Lock()
	require.Equal(t, pid, k.cmd.Process.Pid, "and is still the worker's keeper")
	k.mu.Unlock()
	loseWorker(t, k)
	proctest.WaitFor(t, "the listed group's death", 5*time.Second, func() bool { return !alive(listed) })
}

// A keeper that died is replaced at once, and the new one is told every
// group on the list: it kills them when the worker goes.
func TestReplacedKeeperIsToldTheWholeList(t *testing.T) {
	k := newKeeper()
	first, second := group(t), group(t)
	require.NoError(t, k.add(first.Process.Pid))
	require.NoError(t, k.add(second.Process.Pid))
	k.mu.Lock()
	dead := k.cmd.Process.Pid
	k.mu.Unlock()
	require.NoError(t, syscall.Kill(dead, syscall.SIGKILL))
	proctest.WaitFor(t, "a new keeper", 5*time.Second, func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.cmd != nil && k.cmd.Process.Pid != dead
	})
	require.True(t, alive(first) && alive(second), "a keeper killed kills nothing")
	loseWorker(t, k)
	proctest.WaitFor(t, "the groups' death", 5*time.Second, func() bool { return !alive(first) && !alive(second) })
}

// group is a process leading a group of its own, killed at the test's end.
func group(t *testing.T) *exec.Cmd {
	c := exec.Command("sleep", "60")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Wait() })
	return c
}

// alive says whether c's process has not exited.
func alive(c *exec.Cmd) bool {
	_, ok := running(c.Process.Pid)
	return ok
}

// loseWorker does to k's keeper what the worker's death does: the write
// end of its pipe closes. Nothing replaces it; loseWorker waits for its end.
func loseWorker(t *testing.T, k *keeper) {
	k.mu.Lock()
	pid := k.cmd.Process.Pid
	k.live = map[int]bool{}
	_ = k.to.Close()
	k.mu.Unlock()
	proctest.WaitFor(t, "the keeper's end", 5*time.Second, func() bool {
		_, ok := running(pid)
		return !ok
	})
}

// keeperIgnores are the signals a keeper ignores.
var keeperIgnores = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// keeping waits until the keeper pid has started and ignores
// keeperIgnores: it has reached keep. Until then, one of those signals
// would kill it.
func keeping(t *testing.T, pid int) {
	proctest.WaitFor(t, "the keeper to ignore "+fmt.Sprint(keeperIgnores), 10*time.Second, func() bool {
		ignored := ignoredSignals(pid)
		for _, s := range keeperIgnores {
			if ignored&(1<<(s-1)) == 0 {
				return false
			}
		}
		return true
	})
}

// ignoredSignals is the mask of the signals process pid ignores (bit
// signal-1), as /proc shows it; 0 when it cannot be read.
func ignoredSignals(pid int) uint64 {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, _ := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return mask
		}
	}
	return 0
}

// A keeper that stops reading is replaced once a line has waited
// keeperWriteLimit, and the new one is told every live group. The short
// limit is the stopped keeper's: its replacement is held to the usual
// one once it reads (it must not be given up for starting slowly, as a
// race-built binary on a loaded machine does), and is the only one.
func TestKeeperThatStopsReadingIsReplaced(t *testing.T) {
	defer func(limit time.Duration) { keeperWriteLimit = limit }(keeperWriteLimit)
	usual := keeperWriteLimit
	keeperWriteLimit = 200 * time.Millisecond
	k := newKeeper()
	require.NoError(t, k.ensure())
	k.mu.Lock()
	stopped := k.cmd.Process.Pid
	k.mu.Unlock()
	require.NoError(t, syscall.Kill(stopped, syscall.SIGSTOP))
	var replacements []int
	var startingUp time.Duration // the replacement's start, not the limit's
	keeperStarted = func(pid int) {
		replacements = append(replacements, pid)
		begin := time.Now()
		keeping(t, pid) // reading its input
		keeperWriteLimit = usual
		startingUp += time.Since(begin)
	}
	defer func() { keeperStarted = nil }()
	// IDs above the largest PID Linux allows name no group: the keepers
	// never kill anything here.
	const noGroup = 1 << 23
	start := time.Now()
	for i := range 20000 { // far more than a pipe holds
		require.NoError(t, k.add(noGroup+i))
	}
	require.Less(t, time.Since(start)-startingUp, 10*time.Second)
	k.mu.Lock()
	defer k.mu.Unlock()
	require.NotEqual(t, stopped, k.cmd.Process.Pid, "the stopped keeper was replaced")
	require.Equal(t, []int{k.cmd.Process.Pid}, replacements, "by one keeper, which took every line after")
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
