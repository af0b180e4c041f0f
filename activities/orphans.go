package activities

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// No step process outlives its worker, whatever kills the worker (SIGKILL
// included). Each step runs in a process group of its own, led by its
// process. One keeper per worker process holds the list of those groups: a
// shell reading group IDs from a pipe whose write end only the worker holds
// (it is close-on-exec, so no child inherits it). When the worker dies the
// kernel closes that end, the keeper's read returns end-of-file, and the
// keeper kills every group still on its list.
//
// A group is on the list from just after its leader started until it was
// killed at the step's end. For the moment before (the leader forked and
// not yet on the list) the leader has a parent-death signal: it is killed
// if the worker dies then. Linux sends that signal when the thread that
// forked the process exits, so every step process is forked by one goroutine
// locked to a thread of its own that never exits (starts).
//
// One keeper for all steps, not a watcher process per step: starting a
// second process for every step cost about 3 ms of every step's wall time.
const keeperScript = `trap '' TERM INT HUP
groups=' '
while read -r op id; do
  case $op in
    +) groups="$groups$id " ;;
    -) case $groups in *" $id "*) groups="${groups%% $id *} ${groups#* $id }" ;; esac ;;
  esac
done
for id in $groups; do kill -KILL -$id 2>/dev/null; done`

// groupKeeper is the worker process's keeper.
var groupKeeper = &keeper{live: map[int]bool{}}

type keeper struct {
	mu sync.Mutex
	// live are the groups on the list; a keeper that died is replaced and
	// told them all again.
	live map[int]bool
	to   io.WriteCloser // the keeper's stdin; nil while none runs
	pid  int            // the keeper's process
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
// gone, a new one starts and is told every live group, this line's change
// included.
func (k *keeper) send(line string) error {
	if k.to != nil {
		if _, err := io.WriteString(k.to, line); err == nil {
			return nil
		}
		_ = k.to.Close()
		k.to = nil
	}
	return k.start()
}

// start starts a keeper in a process group of its own and tells it every
// live group.
func (k *keeper) start() error {
	cmd := exec.Command("/bin/sh", "-c", keeperScript)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	to, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped when it exits, killed or not
	for pgid := range k.live {
		if _, err := fmt.Fprintf(to, "+ %d\n", pgid); err != nil {
			_ = to.Close()
			return err
		}
	}
	k.to, k.pid = to, cmd.Process.Pid
	return nil
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
// the worker dies, and puts the group on the keeper's list. The caller
// kills the group (killGroup) once cmd has exited.
func startInGroup(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	starts <- func() { done <- cmd.Start() }
	if err := <-done; err != nil {
		return err
	}
	if err := groupKeeper.add(cmd.Process.Pid); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		groupKeeper.remove(cmd.Process.Pid)
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
