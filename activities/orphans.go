package activities

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// No step process outlives its worker, whatever kills the worker (SIGKILL
// included). Each step's process group holds a watcher: a shell blocked
// reading a pipe whose write end only the worker process holds (it is
// close-on-exec, so no child inherits it). When the worker dies the kernel
// closes that end, the read returns, and the watcher kills its whole group.
// (A parent-death signal would not do: Linux sends it when the forking
// thread exits, and only to the direct child.)
const watcherScript = `trap '' TERM INT HUP; read line <&3; kill -KILL 0`

var lifeline struct {
	once sync.Once
	r, w *os.File
	err  error
}

// lifelineReader is the read end every watcher inherits; the write end is
// kept open, never written, for as long as this process lives.
func lifelineReader() (*os.File, error) {
	lifeline.once.Do(func() { lifeline.r, lifeline.w, lifeline.err = os.Pipe() })
	return lifeline.r, lifeline.err
}

// groupWatcher leads a step's process group and kills it if the worker dies.
type groupWatcher struct{ cmd *exec.Cmd }

// startGroupWatcher starts a watcher in a new process group; the step's
// processes join that group (pgid).
func startGroupWatcher() (*groupWatcher, error) {
	r, err := lifelineReader()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", watcherScript)
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &groupWatcher{cmd: cmd}, nil
}

func (g *groupWatcher) pgid() int { return g.cmd.Process.Pid }

// killGroup kills whatever is left in the group, the watcher included, and
// reaps the watcher.
func (g *groupWatcher) killGroup() {
	_ = syscall.Kill(-g.pgid(), syscall.SIGKILL)
	_ = g.cmd.Wait()
}
