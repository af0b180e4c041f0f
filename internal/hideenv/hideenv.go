// Package hideenv keeps a worker's secrets out of what its steps can read.
//
// A step runs as the worker's user, with the worker as its parent: it could
// read /proc/$PPID/environ, the environment the worker started with
// (TEMPORAL_API_KEY, cloud credentials, PLAYBOOK_LOGS_TOKEN...). Hide
// re-executes the process in place (same PID, execve) with only a few
// harmless variables in its initial environment, and hands the others over
// through an anonymous memory file, which the new image reads back into its
// own environment (Go's os.Getenv sees them; /proc/PID/environ, which shows
// the initial block, does not). It also marks the process non-dumpable, so
// that a process of the same user cannot read its memory (/proc/PID/mem)
// or attach to it either; root still can, which a step running as root on
// the worker's machine is.
package hideenv

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdVar names the descriptor of the memory file in the re-executed image.
const fdVar = "PLAYBOOK_HIDDEN_ENV_FD"

// kept are the variables left in the initial environment: what tools
// showing a process (ps e, top) expect, what the Go runtime reads before
// any package can set it (GOMAXPROCS, GOGC...), and what packages read
// while they initialize, before this one can give the environment back
// (gRPC's GRPC_* settings); none is a secret.
var kept = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LC_ALL": true, "TZ": true, "TMPDIR": true, "TERM": true,
	"GOMAXPROCS": true, "GOGC": true, "GOMEMLIMIT": true, "GODEBUG": true, "GOTRACEBACK": true,
}

// keptPrefixes are the prefixes of kept variables.
var keptPrefixes = []string{"GRPC_"}

// isKept tells whether a variable stays in the initial environment.
func isKept(name string) bool {
	if kept[name] {
		return true
	}
	for _, p := range keptPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func init() {
	// The re-executed image takes its environment back before main runs
	// and before the packages that sort after this one initialize (Go
	// initializes independent packages in import-path order: those under
	// github.com/, go.temporal.io/, google.golang.org/ come first, and the
	// variables they read then are kept, see kept). execve made it
	// dumpable again: it is not, before it holds a secret.
	if fd := os.Getenv(fdVar); fd != "" {
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		if err := restore(fd); err != nil {
			fmt.Fprintln(os.Stderr, "playbook: cannot read the environment back:", err)
			os.Exit(1)
		}
	}
}

// restore reads the environment from the memory file fd and sets it.
func restore(fd string) error {
	_ = os.Unsetenv(fdVar)
	n, err := strconv.Atoi(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(n), "hidden-environment")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok && k != "" {
			if err := os.Setenv(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Hide re-executes the process with its secrets out of its initial
// environment (see the package comment), and marks it non-dumpable. A
// process that is already the re-executed image, or whose environment
// holds only kept variables, is not re-executed. It returns only when the
// process goes on as it is: on an error it says so and the caller decides.
func Hide() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl: %w", err)
	}
	if hidden {
		return nil
	}
	var initial, rest []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); isKept(k) {
			initial = append(initial, kv)
		} else {
			rest = append(rest, kv)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	fd, err := unix.MemfdCreate("playbook-environment", 0) // no CLOEXEC: the new image inherits it
	if err != nil {
		return fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "hidden-environment")
	if _, err := f.WriteString(strings.Join(rest, "\x00")); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	self, err := os.Executable()
	if err != nil {
		f.Close()
		return err
	}
	initial = append(initial, fmt.Sprintf("%s=%d", fdVar, fd))
	// os.NewFile set the descriptor close-on-exec; the new image needs it.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
		f.Close()
		return err
	}
	err = syscall.Exec("/proc/self/exe", append([]string{self}, os.Args[1:]...), initial)
	f.Close()
	return fmt.Errorf("exec: %w", err)
}

// hidden tells whether this process is the re-executed image, whose
// environment comes back from the memory file (init).
var hidden = os.Getenv(fdVar) != ""

// CloseInherited marks every descriptor but 0, 1 and 2 close-on-exec: a
// step gets only its standard streams, never what the worker inherited
// from whoever started it (an open pipe, a socket, a credential's file).
// Go opens its own descriptors close-on-exec already.
func CloseInherited() error {
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	// Kernels before 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
