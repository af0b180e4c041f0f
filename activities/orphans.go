package activities

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// No step process outlives its worker, whatever kills the worker (SIGKILL
// included). Each step runs in a process group of its own, led by its
// process. One keeper per worker process holds the list of those groups: an
// awk reading group IDs from a pipe whose write end only the worker holds
// (it is close-on-exec, so no child inherits it). When the worker dies the
// kernel closes that end, the keeper's read returns end-of-file, and the
// keeper kills every group still on its list.
//
// A group is on the list from just after its leader started (one pipe
// write: the keeper is started before the step) until it was killed at the
// step's end. For that instant before, the leader has a parent-death
// signal: it is killed if the worker dies then, though a child it forked
// in the same instant would not be. Linux sends that signal when the thread
// that forked the process exits, so every step process is forked by one
// goroutine locked to a thread of its own that never exits (starts). A
// keeper that dies, or stops reading for keeperWriteLimit, is replaced at
// once and told the whole list again.
//
// One keeper for all steps, not a watcher process per step: starting a
// second process for every step cost about 3 ms of every step's wall time.
// The keeper is awk (POSIX; mawk on Debian), which reads its pipe in blocks
// and keeps the list in a hash: a shell reading line by line took about
// 70 us of CPU for each line with hundreds of steps running. The shell
// before it only sets the signals the keeper ignores; awk inherits them.
const keeperScript = `trap '' TERM INT HUP
exec awk '$1 == "+" { live[$2] = 1; next }
$1 == "-" { delete live[$2]; next }
END {
  ids = ""
  for (id in live) ids = ids " -" id
  if (ids != "") system("kill -KILL" ids " 2>/dev/null")
}'`

// keeperWriteLimit is how long a line to the keeper may wait for room in
// its pipe; a keeper that stopped reading for that long is replaced.
var keeperWriteLimit = 2 * time.Second

// groupKeeper is the worker process's keeper.
var groupKeeper = newKeeper()

type keeper struct {
	mu sync.Mutex
	// live are the groups on the list; a keeper that died is replaced and
	// told them all again.
	live map[int]bool
	to   *os.File // the keeper's stdin; nil while none runs
	cmd  *exec.Cmd
}

func newKeeper() *keeper { return &keeper{live: map[int]bool{}} }

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

// start starts a keeper in a process group of its own and tells it every
// live group. When it exits, killed or not, the next one starts at once.
func (k *keeper) start() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", keeperScript)
	cmd.Stdin, cmd.Dir, cmd.Env = r, "/", []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return err
	}
	k.to, k.cmd = w, cmd
	go k.replaceWhenGone(cmd)
	for pgid := range k.live {
		_ = w.SetWriteDeadline(time.Now().Add(keeperWriteLimit))
		if _, err := fmt.Fprintf(w, "+ %d\n", pgid); err != nil {
			k.drop()
			return err
		}
	}
	return nil
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

// starts runs every cmd.Start of a step process on one locked thread; see
// the top of this file.
var starts = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the worker
		for start := range starts {
			start()
		}
	}()
}

// startInGroup starts cmd as the leader of a new process group, killed if
// the worker dies, and puts the group on the keeper's list. Once cmd has
// exited (waitExited), the caller kills the group, takes it off the list
// (groupKeeper.remove) and only then reaps cmd.
func startInGroup(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := groupKeeper.ensure(); err != nil {
		return fmt.Errorf("no keeper for the step's processes: %w", err)
	}
	// The group joins the keeper's list on the thread that forked it, at
	// once: until then only the leader's parent-death signal covers the
	// step, and what the leader forks meanwhile would outlive a worker
	// that died in that instant.
	var startErr, addErr error
	done := make(chan struct{})
	starts <- func() {
		if startErr = cmd.Start(); startErr == nil {
			addErr = groupKeeper.add(cmd.Process.Pid)
		}
		close(done)
	}
	<-done
	if startErr != nil {
		return startErr
	}
	if err := addErr; err != nil {
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
