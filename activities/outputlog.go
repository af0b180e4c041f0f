package activities

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultMaxLogBytes is how much of each output stream (stdout, stderr) an
// attempt's log file keeps unless the worker says otherwise
// (Activities.MaxLogBytes).
const DefaultMaxLogBytes = 64 << 20

// minLogBytes is the smallest cap a worker may set: below it a log keeps
// little more than the line saying what it dropped.
const minLogBytes = 1 << 10

// outputGrace is how long a step's end waits for the last of its output
// once its process group is gone. Only a process that left the group
// (setsid, a daemon) holds the stream open longer: what it writes goes on
// into the log file, and the step does not wait for it.
const outputGrace = time.Second

// copyBufferSize is the buffer the streams are copied through (copyBuffers):
// one per running step, which copies both, and one per stream a goroutine
// follows.
const copyBufferSize = 16 << 10

// outputLog is the log file of one output stream of an attempt. The process
// writes into a pipe, which the worker copies into the file, so that the
// file keeps at most limit bytes of the stream however much the process
// writes: when the stream passes the limit, the file is rewritten with the
// last half of the limit after one line saying how many bytes before it
// were dropped (a new file renamed over the old one, so that a reader sees
// either whole), and appended to again. Memory stays at one copy buffer;
// the rewrites cost at most as much writing again as the stream itself.
type outputLog struct {
	path  string
	limit int64
	done  chan struct{} // closed when the copy has ended
	mu    sync.Mutex
	f     *os.File
	// marker is the length of the line saying what was dropped, at the
	// start of f; 0 while nothing was. kept is what follows it, dropped
	// what came before.
	marker, kept, dropped int64
	// err is the first write the disk refused.
	err error
	// redact hides the attempt's secrets in the stream (nil: it has none).
	redact *stream
	// fd is the pipe's read end while the attempt reads it itself (pump,
	// settle); -1 once a goroutine copies it (follow) or it has ended.
	fd int
}

// newOutputLog creates the log file at path (readable by the worker's user
// only) and starts copying a pipe into it on a goroutine of its own. The
// process's stream is the pipe's write end, which the caller closes once
// the process has started, or failed to: the copy ends when no process
// holds it any more.
func newOutputLog(path string, limit int64, secrets *redactor) (*outputLog, *os.File, error) {
	l, w, err := newStream(path, limit, secrets)
	if err != nil {
		return nil, nil, err
	}
	if err := l.open(); err != nil {
		_ = w.Close()
		_ = syscall.Close(l.fd)
		return nil, nil, err
	}
	l.follow()
	return l, w, nil
}

// newStream is the log of one output stream before its file exists: the
// pipe the process writes into, which nothing reads until the file is
// created (open). An attempt creates its files once its process has
// started, while the process starts up: on a disk where a new file is
// slow (The log disk's recent past, in docs/INTERNALS.md), the attempt
// does not wait for the files before its process runs. What the process
// writes meanwhile waits in the pipe.
func newStream(path string, limit int64, secrets *redactor) (*outputLog, *os.File, error) {
	r, w, err := streamPipe()
	if err != nil {
		return nil, nil, err
	}
	l := &outputLog{path: path, limit: max(limit, minLogBytes), done: make(chan struct{}), fd: r}
	if secrets != nil {
		l.redact = &stream{r: secrets}
	}
	return l, w, nil
}

// open creates the log's file. Should it fail, the stream is read and
// dropped, and the failure is the log's as a write the disk refused is
// (writeErr). Called before anything reads the pipe.
func (l *outputLog) open() error {
	f, err := openLogFile(l.path)
	if err != nil {
		l.err = err
		return err
	}
	l.f = f
	return nil
}

// openLogFile creates (or truncates) a log file for writing and reading
// back. Not through os.OpenFile, which offers every file it opens to the
// runtime's poller, which refuses regular files: one failed system call
// per log, two per attempt.
func openLogFile(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// streamPipe is a pipe for one output stream: the read end, non-blocking,
// a bare descriptor that the attempt polls itself (pump) and that the
// runtime's poller gets only if a goroutine takes the stream on (follow);
// the write end, which only the process uses, blocking and not in the
// poller. os.Pipe puts both ends in the poller, and handing its write end
// to a process takes it out again.
func streamPipe() (r int, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return -1, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		_ = syscall.Close(p[0])
		_ = syscall.Close(p[1])
		return -1, nil, os.NewSyscallError("fcntl", err)
	}
	// os.NewFile leaves a blocking descriptor out of the poller.
	return p[0], os.NewFile(uintptr(p[1]), "|1"), nil
}

// copyBuffers are the streams' copy buffers, kept from one attempt to the
// next rather than allocated (and cleared) for every stream.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// follow copies the rest of the stream on a goroutine of its own.
func (l *outputLog) follow() {
	// os.NewFile puts a non-blocking descriptor in the runtime's poller.
	r := os.NewFile(uintptr(l.fd), "|0")
	l.fd = -1
	go l.copyFrom(r)
}

// copyFrom copies r into the log until its end, then closes both.
func (l *outputLog) copyFrom(r *os.File) {
	defer close(l.done)
	pooled := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(pooled)
	buf := *pooled
	for {
		n, err := r.Read(buf)
		if n > 0 {
			l.take(buf[:n])
		}
		if err != nil {
			break
		}
	}
	_ = r.Close()
	l.end()
}

// take writes what the stream gave, its secrets hidden.
func (l *outputLog) take(data []byte) {
	if l.redact != nil {
		data = l.redact.feed(data)
	}
	l.mu.Lock()
	l.write(data)
	l.mu.Unlock()
}

// end writes what the redactor held back and closes the file.
func (l *outputLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.redact != nil {
		l.write(l.redact.end())
	}
	if l.f != nil {
		_ = l.f.Close()
	}
}

// readsAtOnce bounds the buffers readNow reads in one call: a process that
// writes faster than its log is written (redacted, or cut to its limit)
// would otherwise keep the pipe from ever being empty, and the caller from
// seeing its process exit (pump) or its grace end (settle).
const readsAtOnce = 4

// readNow reads what the pipe holds now into the log, readsAtOnce buffers
// at most, on the calling goroutine; at the stream's end (or a read that
// fails) it closes the pipe and the log, and says so.
func (l *outputLog) readNow(buf []byte) (ended bool) {
	for reads := 0; reads < readsAtOnce; {
		n, err := syscall.Read(l.fd, buf)
		switch {
		case n > 0:
			l.take(buf[:n])
			reads++
			continue
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		}
		_ = syscall.Close(l.fd)
		l.fd = -1
		l.end()
		close(l.done)
		return true
	}
	return false
}

// pump copies the logs' pipes into their files on the calling goroutine
// until the process pidfd refers to has exited (it is not reaped): an
// attempt waits for its process and copies its output in one poll(2)
// loop, starting no goroutine. An error is poll's.
func pump(pidfd int, logs ...*outputLog) error {
	pooled := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(pooled)
	var fds [3]unix.PollFd
	for {
		polled := append(fds[:0], unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
		var open []*outputLog
		for _, l := range logs {
			if l.fd >= 0 {
				polled = append(polled, unix.PollFd{Fd: int32(l.fd), Events: unix.POLLIN})
				open = append(open, l)
			}
		}
		if _, err := unix.Poll(polled, -1); err == syscall.EINTR {
			continue
		} else if err != nil {
			return err
		}
		for i, l := range open {
			if polled[i+1].Revents != 0 {
				l.readNow(*pooled)
			}
		}
		if polled[0].Revents != 0 {
			return nil
		}
	}
}

// settle reads what is left of the logs' streams once their process group
// is gone, for outputGrace at most: a stream still held open then (by a
// process that left the group: setsid, a daemon) goes on into its log on a
// goroutine of its own (follow), and the step does not wait for it.
func settle(logs ...*outputLog) {
	pooled := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(pooled)
	deadline := time.Now().Add(outputGrace)
	var fds [2]unix.PollFd
	for {
		polled := fds[:0]
		var open []*outputLog
		for _, l := range logs {
			if l.fd >= 0 && !l.readNow(*pooled) {
				polled = append(polled, unix.PollFd{Fd: int32(l.fd), Events: unix.POLLIN})
				open = append(open, l)
			}
		}
		wait := time.Until(deadline)
		if len(open) == 0 {
			return
		}
		if wait <= 0 {
			for _, l := range open {
				l.follow()
			}
			return
		}
		if _, err := unix.Poll(polled, int(wait.Milliseconds())+1); err != nil && err != syscall.EINTR {
			for _, l := range open {
				l.follow()
			}
			return
		}
	}
}

// write appends p, dropping the head of the stream whenever the file holds
// limit bytes of it. A write the disk refuses loses that part of the stream;
// a log whose file could not be created loses all of it.
func (l *outputLog) write(p []byte) {
	if l.f == nil {
		return
	}
	for len(p) > 0 {
		if l.kept >= l.limit {
			l.dropHead()
		}
		n := min(int64(len(p)), l.limit-l.kept)
		written, err := l.f.Write(p[:n])
		l.kept += int64(written)
		if err != nil {
			if l.err == nil {
				l.err = err
			}
			return
		}
		p = p[n:]
	}
}

// dropHead keeps the last half of the limit: copied after a new marker line
// into a new file that replaces the log. Without room for that file, the
// log starts again empty after its marker.
func (l *outputLog) dropHead() {
	keep := l.limit / 2
	drop := l.kept - keep
	marker := fmt.Sprintf("[playbook: the first %d bytes of this output were dropped: its log keeps the last part, at most %s]\n",
		l.dropped+drop, size(l.limit))
	if f, err := l.rewrite(marker, l.marker+drop, keep); err == nil {
		_ = l.f.Close()
		l.f = f
		l.dropped, l.kept, l.marker = l.dropped+drop, keep, int64(len(marker))
		return
	}
	marker = fmt.Sprintf("[playbook: the first %d bytes of this output were dropped: its log keeps the last part, at most %s]\n",
		l.dropped+l.kept, size(l.limit))
	_ = l.f.Truncate(0)
	_, _ = l.f.Seek(0, io.SeekStart)
	_, _ = l.f.WriteString(marker)
	l.dropped, l.kept, l.marker = l.dropped+l.kept, 0, int64(len(marker))
}

// rewrite writes marker, then n bytes of the log from offset from, into a
// new file that it renames over the log.
func (l *outputLog) rewrite(marker string, from, n int64) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(l.path), "."+filepath.Base(l.path)+".*")
	if err != nil {
		return nil, err
	}
	if _, err = f.WriteString(marker); err == nil {
		if _, err = l.f.Seek(from, io.SeekStart); err == nil {
			_, err = io.Copy(f, io.LimitReader(l.f, n))
		}
	}
	if err == nil {
		err = os.Rename(f.Name(), l.path)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// empty says whether the stream has written nothing so far.
func (l *outputLog) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kept == 0 && l.dropped == 0
}

// writeErr is the first write of the stream the disk refused, nil when
// none was.
func (l *outputLog) writeErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// waitOutput waits until the logs' copies have ended, at most outputGrace.
func waitOutput(logs ...*outputLog) {
	grace := time.NewTimer(outputGrace)
	defer grace.Stop()
	for _, l := range logs {
		select {
		case <-l.done:
		case <-grace.C:
			return
		}
	}
}
