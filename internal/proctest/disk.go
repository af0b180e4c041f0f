package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A benchmark with log files in it measures the disk's recent past unless
// the disk has settled. ext4 without a journal (the root file system of
// the VMs this project is developed and tested on) picks a new file's
// inode by skipping every free inode of its group that was deleted in
// the last minute (the last six while its inode table block is not yet
// written back), one buffer look-up each: after a cleanup has deleted a
// few thousand files near the log directory, every new file or directory
// there costs ten to twenty times what it does on a quiet disk, for one
// to six minutes (0.7 ms a file against 0.04, measured on
// 2026-11-28; `perf` puts the time in the kernel's recently_deleted).
// Each attempt of a playbook step creates a directory and two files and
// the hand-written twin none, so a benchmark that starts right after a
// test's cleanup (its own earlier round's, or another package's) counts
// that cleanup as the playbook's cost. A journalled file system does no
// such look-up.

// settledLogFilesMs is what one attempt's log directory and two files
// (LogFilesCost) may cost on a settled disk: a quiet disk here takes 0.05
// to 0.1 ms, one just after a cleanup 0.5 to 2.5.
const settledLogFilesMs = 0.2

// The disk is probed every settleEvery, settleLimit in all, each time with
// settleProbe attempts' log files.
const (
	settleProbe = 200
	settleEvery = 10 * time.Second
	settleLimit = 7 * time.Minute
)

// LogFilesCost is what a step's log files cost on the disk of the test's
// temporary directory (where the benchmarks' workers keep their logs), in
// ms per attempt, over n attempts: the step's directory and its two
// files, as every attempt of a process step creates them.
func LogFilesCost(tb testing.TB, n int) float64 {
	tb.Helper()
	dir := tb.TempDir()
	start := time.Now()
	for i := range n {
		step := filepath.Join(dir, "run", fmt.Sprintf("s%d", i))
		if err := os.MkdirAll(step, 0o700); err != nil {
			tb.Fatal(err)
		}
		for _, name := range []string{"attempt-1.stdout", "attempt-1.stderr"} {
			f, err := os.OpenFile(filepath.Join(step, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				tb.Fatal(err)
			}
			if err := f.Close(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(n)
}

// DiskSettle is what SettleDisk found: one attempt's log files' cost when
// it started and when it returned, and how long it waited.
type DiskSettle struct {
	First, Last float64 // ms
	Waited      time.Duration
}

func (d DiskSettle) String() string {
	switch {
	case d.Waited == 0:
		return fmt.Sprintf("one attempt's log files cost %.2f ms: settled", d.Last)
	case d.Last <= settledLogFilesMs:
		return fmt.Sprintf("one attempt's log files cost %.2f ms after a recent cleanup; waited %.0f s, until %.2f ms", d.First, d.Waited.Seconds(), d.Last)
	}
	return fmt.Sprintf("one attempt's log files cost %.2f ms, still %.2f ms after %.0f s: the figures include the disk's own slowness", d.First, d.Last, d.Waited.Seconds())
}

// SettleDisk waits, at most settleLimit, until one attempt's log files in
// the test's temporary directory cost no more than settledLogFilesMs. Its
// probes' files stay until the test's own cleanup, deleting them would
// start the wait again: call it in a benchmark's top function, whose
// cleanup comes after every sub-benchmark, not in one that runs again with
// a larger b.N after a cleanup.
func SettleDisk(tb testing.TB) DiskSettle {
	tb.Helper()
	start := time.Now()
	d := DiskSettle{First: LogFilesCost(tb, settleProbe)}
	d.Last = d.First
	for d.Last > settledLogFilesMs && time.Since(start) < settleLimit {
		time.Sleep(settleEvery)
		d.Last = LogFilesCost(tb, settleProbe)
		d.Waited = time.Since(start)
	}
	return d
}
