package activities

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// No step process outlives its worker, whatever kills the worker (SIGKILL
// included). Each step runs in a process group of its own, led by its
// process. One keeper per worker process holds the list of those groups:
// the worker's own binary started again in keeper mode (keep), reading
// group IDs from a pipe whose write end only the worker holds (it is
// close-on-exec, so no child inherits it). When the worker dies the kernel
// closes that end, the keeper's read returns end-of-file (at most
// keeperPause after the last lines it read), and the keeper kills every
// group still on its list.
//
// A group is on the list from just after its leader started (one pipe
// write: the keeper is started before the step) until it was killed at the
// step's end. For that instant before, the leader has a parent-death
// signal: it is killed if the worker dies then. Linux sends that signal
// when the thread that forked the process exits, and Go ends a thread only
// when a goroutine locked to it ends without unlocking it: so the attempt
// that starts a step process holds its goroutine locked to its thread from
// before the fork until the leader is reaped (startInGroup's caller), and
// that thread neither runs anything else nor ends meanwhile. (A dedicated
// goroutine locked to a thread of its own forked every step process until
// #46: the two hand-offs between threads cost about a dozen futex calls an
// attempt.) A keeper that dies, or stops reading for keeperWriteLimit, is
// replaced at once and told the whole list again.
//
// A child the leader forked in that instant is in a group the keeper does
// not know; the worker's mark finds it. Every step process starts with
// PLAYBOOK_WORKER_MARK in its environment, one value per worker process,
// and what it starts inherits it. Once it has killed its list, the keeper
// kills every process of the worker's session whose environment holds the
// mark (sweepMarked). One that started a session of its own (setsid, a
// daemon) is spared: it left its step on purpose, and outlives it as it
// always did.
//
// One keeper for all steps, not a watcher process per step: starting a
// second process for every step cost about 3 ms of every step's wall time.
// The keeper is this binary, so the worker itself needs no other program
// (a step needs its own: /bin/sh, python3). It reads its pipe in blocks and
// keeps the list in a map (a shell reading line by line took about 70 us
// of CPU for each line with hundreds of steps running).

// keeperEnv in a process's environment makes it the keeper. Steps never
// inherit it: the worker never has it (it would be a keeper), and a step's
// environment holds no PLAYBOOK_* variable but the engine's own.
const keeperEnv = "PLAYBOOK_KEEPER"

// workerMarkEnv holds the worker's mark in each step process's
// environment; a step cannot set it (every PLAYBOOK_* name is the
// engine's).
const workerMarkEnv = "PLAYBOOK_WORKER_MARK"

// keeperSweepEnv gives the keeper the mark it sweeps for and the worker's
// process group, as "MARK GROUP"; under another name than the steps' own,
// so that no keeper's sweep finds another keeper.
const keeperSweepEnv = "PLAYBOOK_KEEPER_SWEEP"

// newWorkerMark is a keeper's mark: this process's ID and a random part,
// so that no other keeper's, before or since, is the same.
func newWorkerMark() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%d.%x", os.Getpid(), b)
}

// keeperName is the keeper's argv[0], what ps shows for it.
const keeperName = "playbook-keeper"

// keeperPath is the binary the keeper runs: the worker's own, through the
// kernel's link to it, which still runs the same file after an upgrade
// replaced or removed the one at the worker's path.
const keeperPath = "/proc/self/exe"

// A process started as the keeper becomes it here, before main or a test
// binary's TestMain: every binary that runs steps links this package, so
// none can forget the check and run itself again as a worker or a test
// suite. Go first initializes the packages this one does not depend on
// whose import paths sort before it: in the full binary, the embedded
// Temporal server's. There a keeper reaches keep 45-75 ms after it starts
// and holds about 12 MB of its own besides the binary's shared pages; in
// the worker-only build, about 12 ms and 4 MB (2-core VM). It starts once
// per worker, not per step, and no step waits for it: the worker's lines
// wait in the pipe.
func init() {
	if os.Getenv(keeperEnv) != "" {
		keep()
	}
}

// keep is the keeper process: it kills every group still on its list when
// its input ends, and exits. It ignores SIGTERM, SIGINT and SIGHUP, which
// a stop may send to every process of the worker (systemd does): the
// worker drains its steps meanwhile, and its keeper must outlive it. (One
// that such a signal reaches before keep dies, and is replaced.)
func keep() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for pgid := range keptGroups(&gathering{r: os.Stdin, pause: keeperPause}) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	var mark string
	var workerGroup int
	if _, err := fmt.Sscanf(os.Getenv(keeperSweepEnv), "%s %d", &mark, &workerGroup); err == nil {
		sweepMarked(mark, workerGroup)
	}
	os.Exit(0)
}

// sweepMarked kills what the list could not name: every process of the
// keeper's session (the worker's) whose environment holds the worker's
// mark, with the rest of its group unless that is the worker's own (a
// marked process may have joined it), in passes until one finds no process
// it has not signalled yet (at most sweepPasses, sweepPause apart: what a
// process forks meanwhile is in its group, or found by the next pass). It
// runs once, when the worker has gone. Each process is held by a pidfd
// from before its environment is read to its signal, so that a process
// that ended meanwhile cannot have passed its ID on to another.
func sweepMarked(mark string, workerGroup int) {
	want := []byte(workerMarkEnv + "=" + mark)
	self, own := os.Getpid(), syscall.Getpgrp()
	session, err := unix.Getsid(0)
	if err != nil {
		return
	}
	signalled := map[int]bool{}
	for pass := range sweepPasses {
		if pass > 0 {
			time.Sleep(sweepPause)
		}
		found := false
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == self || signalled[pid] {
				continue
			}
			if sid, err := unix.Getsid(pid); err != nil || sid != session {
				continue
			}
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
			if err == nil && slices.ContainsFunc(bytes.Split(env, []byte{0}), func(v []byte) bool { return bytes.Equal(v, want) }) {
				if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != own && pgid != workerGroup {
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
				_ = unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
				signalled[pid], found = true, true
			}
			_ = syscall.Close(fd)
		}
		if !found {
			return
		}
	}
}

// sweepPasses bounds sweepMarked's passes over /proc, sweepPause apart.
const (
	sweepPasses = 5
	sweepPause  = 10 * time.Millisecond
)

// keeperPause is how long the keeper lets lines gather in its pipe after
// a read that brought some, before it reads again. Each wake-up of the
// keeper cost about 30 us of its CPU on a 2-core VM, and every step wrote
// it two lines, each read on its own while steps ended by the hundred a
// second (65 to 130 us of the keeper's CPU an attempt, BenchmarkAttempt's
// keeper-cpu-us/op): now it wakes at most 1/keeperPause times a second
// while steps run, and not at all while none start or end. The pipe holds
// thousands of lines, far more than a pause gathers, so a line never waits
// for room (keeperWriteLimit); and a worker's end is an end of input like
// any other, read at most one pause later: what the dead worker wrote
// before it is still in the pipe, read before the end, so the list the
// keeper kills is the whole one.
const keeperPause = 20 * time.Millisecond

// gathering is the keeper's input: after a read that brought something,
// the next one waits pause first, so that it reads what came meanwhile in
// one go; after one that brought nothing (an error), it does not.
type gathering struct {
	r     io.Reader
	pause time.Duration
	// read: the last read brought something.
	read bool
}

func (g *gathering) Read(p []byte) (int, error) {
	if g.read {
		time.Sleep(g.pause)
	}
	n, err := g.r.Read(p)
	g.read = n > 0
	return n, err
}

// keptGroups reads the keeper's input to its end and returns the groups
// still on the list: "+ PGID" puts a group on it, "- PGID" takes one off,
// any other line is ignored. It reads in blocks and allocates nothing per
// line but the list's growth.
func keptGroups(r io.Reader) map[int]bool {
	in := bufio.NewReaderSize(r, 64<<10)
	live := map[int]bool{}
	for {
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // longer than any line the worker writes
			for err == bufio.ErrBufferFull {
				_, err = in.ReadSlice('\n')
			}
			line = nil
		}
		if add, pgid, ok := keeperLine(line); ok {
			if add {
				live[pgid] = true
			} else {
				delete(live, pgid)
			}
		}
		if err != nil { // end of input: the worker is gone
			return live
		}
	}
}

// keeperLine reads one line of the keeper's input, its newline optional.
// ok is false for a line that is not "+ PGID" or "- PGID" with a group ID
// above 1: to kill(2), group 0 is the keeper's own and group 1 (-1) every
// process the keeper may signal.
func keeperLine(line []byte) (add bool, pgid int, ok bool) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if len(line) < 3 || line[1] != ' ' || (line[0] != '+' && line[0] != '-') {
		return false, 0, false
	}
	for _, c := range line[2:] {
		if c < '0' || c > '9' || pgid > math.MaxInt32 {
			return false, 0, false
		}
		pgid = pgid*10 + int(c-'0')
	}
	return line[0] == '+', pgid, pgid > 1 && pgid <= math.MaxInt32
}

// keeperWriteLimit is how long a line to the keeper may wait for room in
// its pipe; a keeper that stopped reading for that long is replaced.
var keeperWriteLimit = 2 * time.Second

// keeperStarted, when set (by a test), is called with each keeper started,
// before it is told what of the live groups its pipe could not hold.
var keeperStarted func(pid int)

// startedUnlisted, when set (by a test), is called as each step process
// has started, before its group joins the keeper's list.
var startedUnlisted func()

// groupKeeper is the worker process's keeper.
var groupKeeper = newKeeper()

type keeper struct {
	// mark is in the environment of every process started in a group it
	// keeps (startInGroup), and its keeper sweeps for it.
	mark string
	mu   sync.Mutex
	// live are the groups on the list; a keeper that died is replaced and
	// told them all again.
	live map[int]bool
	to   *os.File // the keeper's stdin; nil while none runs
	cmd  *exec.Cmd
}

func newKeeper() *keeper { return &keeper{mark: newWorkerMark(), live: map[int]bool{}} }

// ensure starts the keeper if none runs, so that a step's start does not
// wait for one.
func (k *keeper) ensure() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.to != nil {
		return nil
	}
	return k.start()
}

// add puts a group on the keeper's list.
func (k *keeper) add(pgid int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.live[pgid] = true
	return k.send(fmt.Sprintf("+ %d\n", pgid))
}

// remove takes a killed group off the list.
func (k *keeper) remove(pgid int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.live, pgid)
	_ = k.send(fmt.Sprintf("- %d\n", pgid))
}

// send writes one line to the keeper. When none runs, or the last one is
// gone or stopped reading, a new one starts and is told every live group,
// this line's change included.
func (k *keeper) send(line string) error {
	if k.to != nil {
		_ = k.to.SetWriteDeadline(time.Now().Add(keeperWriteLimit))
		if _, err := k.to.WriteString(line); err == nil {
			return nil
		}
		k.drop()
	}
	return k.start()
}

// drop gives the current keeper up: killed (it may only have stopped
// reading) and its pipe closed.
func (k *keeper) drop() {
	_ = k.cmd.Process.Kill()
	_ = k.to.Close()
	k.to, k.cmd = nil, nil
}

// start starts a keeper (keeperCommand) and tells it every live group.
// When it exits, killed or not, the next one starts at once.
//
// The list goes into the keeper's pipe before the keeper starts: lines
// written after its start would be lost with a worker that died in
// between, and the new keeper, reading the end of its input at once,
// would kill none of the running steps' groups (their leaders would die
// by their parent-death signal, what they forked would live on). A pipe
// holds 64 KiB, some 6,000 groups; a longer list gets a larger pipe, as
// far as the system allows (fs.pipe-max-size, 1 MiB by default, some
// 100,000 groups), and what still does not fit is written once the
// keeper reads.
func (k *keeper) start() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	var list []byte
	for pgid := range k.live {
		list = fmt.Appendf(list, "+ %d\n", pgid)
	}
	if len(list) > 64<<10 {
		if c, err := w.SyscallConn(); err == nil {
			_ = c.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, len(list)) })
		}
	}
	// No one reads yet: a write that does not fit waits for nothing.
	_ = w.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
	told, _ := w.Write(list)
	cmd := keeperCommand(k.mark)
	cmd.Stdin = r
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return err
	}
	k.to, k.cmd = w, cmd
	go k.replaceWhenGone(cmd)
	if keeperStarted != nil {
		keeperStarted(cmd.Process.Pid)
	}
	if told < len(list) {
		_ = w.SetWriteDeadline(time.Now().Add(keeperWriteLimit))
		if _, err := w.Write(list[told:]); err != nil {
			k.drop()
			return err
		}
	}
	return nil
}

// keeperCommand is a keeper sweeping for mark, in a process group of its
// own (a signal to the worker's group is not for it), its input still to
// be given.
func keeperCommand(mark string) *exec.Cmd {
	cmd := exec.Command(keeperPath)
	cmd.Args = []string{keeperName}
	cmd.Dir = "/"
	cmd.Env = []string{keeperEnv + "=1", fmt.Sprintf("%s=%s %d", keeperSweepEnv, mark, syscall.Getpgrp())}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// replaceWhenGone waits for a keeper to exit and, if it was still the
// current one (nobody gave it up), starts the next: running steps are
// never left without one until the next step starts or ends.
func (k *keeper) replaceWhenGone(cmd *exec.Cmd) {
	_ = cmd.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd != cmd {
		return
	}
	_ = k.to.Close()
	k.to, k.cmd = nil, nil
	if len(k.live) > 0 {
		_ = k.start()
	}
}

// startInGroup starts cmd as the leader of a new process group, killed if
// the worker dies, and puts the group on the keeper's list. The caller's
// goroutine is locked to its thread (runtime.LockOSThread) from before
// this call until cmd is reaped: the leader's parent-death signal follows
// that thread (see the top of this file). Once cmd has exited
// (waitExited, or its pidfd), the caller kills the group, takes it off the
// list (groupKeeper.remove) and only then reaps cmd.
func startInGroup(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Env = append(cmd.Environ(), workerMarkEnv+"="+groupKeeper.mark)
	if err := groupKeeper.ensure(); err != nil {
		return fmt.Errorf("no keeper for the step's processes: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if startedUnlisted != nil {
		startedUnlisted()
	}
	// The group joins the keeper's list at once: until then the leader's
	// parent-death signal covers the step, and the keeper finds what the
	// leader forks meanwhile only by the worker's mark, after the list.
	if err := groupKeeper.add(cmd.Process.Pid); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		groupKeeper.remove(cmd.Process.Pid)
		_ = cmd.Wait()
		return fmt.Errorf("no keeper for the step's processes: %w", err)
	}
	return nil
}

// waitExited waits until the process pid has exited, without reaping it:
// until it is reaped its ID names its group and no other, so that whatever
// it left in its group can be killed safely.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != syscall.EINTR {
			return err
		}
	}
}
