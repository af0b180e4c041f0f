// Package testsuite holds the end-to-end tests: real playbooks through the
// real CLI, on a real embedded Temporal server with a real worker, and the
// replay tests that keep the interpreter deterministic.
package testsuite

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/activities"
	"playbook/cmd/playbook/commands"
	"playbook/internal/devserver"
	"playbook/internal/proctest"
	"playbook/internal/quietlog"
	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/runs"
	"playbook/worker"
)

// maxRecordedHistory is the largest history file kept in the corpus,
// testdata/histories; a history over gzipRecordedHistory is kept gzipped.
const (
	maxRecordedHistory  = 1 << 20
	gzipRecordedHistory = 256 << 10
)

var update = flag.Bool("update", false, "record the named runs' histories into a new folder of the corpus, testdata/histories/v<N+1>")

// The package shares one server and worker, as a user's dev server would.
var (
	server *devserver.Server
	tc     client.Client
	logDir string
	// storeURL is the shared worker's store (files_test.go).
	storeURL string
)

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	slots := parallelTests
	if given {
		slots, _ = strconv.Atoi(flag.Lookup("test.parallel").Value.String())
	}
	// The testing package lets every parallel test go on; parallel holds
	// it until one of the slots is free, once its shares are its own.
	_ = flag.Set("test.parallel", strconv.Itoa(maxParallelTests))
	running = make(chan struct{}, max(slots, 1))
	if os.Getenv("GOGC") == "" {
		// The server, the shared worker and the CLI run in this process: at
		// twice the heap between collections, collecting took half the CPU
		// it took at the default (11% of the process's), for a peak of
		// about 4 GiB rather than 3.
		debug.SetGCPercent(200)
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if run := flag.Lookup("test.run"); run == nil || run.Value.String() == "" {
		// Many tests run the binary: build it while the server starts.
		go buildOnce.Do(buildBinary)
	}
	// The binary (over 200 MB) goes with the suite: left behind, every run
	// filled the disk a little more.
	defer func() {
		buildOnce.Do(func() {}) // a build under way ends first
		if binary != "" {
			_ = os.RemoveAll(filepath.Dir(binary))
		}
	}()
	var err error
	server, err = devserver.Start(devserver.Options{IP: "127.0.0.1", SearchAttributes: runs.SearchAttributes()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded server:", err)
		return 1
	}
	defer server.Stop()
	opts := client.Options{HostPort: server.Address, Logger: quietlog.New()}
	worker.RefuseOversizedUpdates(&opts)
	tc, err = client.Dial(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}
	defer tc.Close()
	logDir, _ = os.MkdirTemp("", "playbook-e2e-logs")
	defer os.RemoveAll(logDir)
	storeDir, _ := os.MkdirTemp("", "playbook-e2e-store")
	defer os.RemoveAll(storeDir)
	storeURL = "file://" + storeDir
	st, err := store.Open(context.Background(), storeURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "store:", err)
		return 1
	}
	w := worker.New(tc, worker.Options{LogDir: logDir, Store: st})
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	defer w.Stop()
	return m.Run()
}

// cli runs the playbook CLI in-process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = commands.Main(context.Background(), append([]string{"playbook"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// runResult is one `playbook run --json` on the shared server.
type runResult struct {
	code   int
	agg    *contract.Aggregate
	stderr string
}

// runExample runs a playbook from playbooks/ with `run --json`, checks that
// stdout holds only the aggregate, and replays the run's history.
func runExample(t *testing.T, name string, extra ...string) runResult {
	t.Helper()
	args := append([]string{"run", "--address", server.Address, "--json"}, extra...)
	code, out, errOut := cli(t, append(args, filepath.Join("..", "playbooks", name))...)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), "stdout is exactly the aggregate; stderr:\n%s", errOut)
	require.Equal(t, exitCodeFor(agg.Status), code, errOut)
	replay(t, name, agg.WorkflowID, agg.RunID)
	return runResult{code: code, agg: &agg, stderr: errOut}
}

// runTook is how long a finished run took by its history's clock, from
// its start to its close: what a bound on a run's duration measures, with
// the CLI's start and the replay left out.
func runTook(t *testing.T, agg *contract.Aggregate) time.Duration {
	t.Helper()
	events := history(t, agg.WorkflowID, agg.RunID).GetEvents()
	return events[len(events)-1].GetEventTime().AsTime().Sub(events[0].GetEventTime().AsTime())
}

func exitCodeFor(status string) int {
	return map[string]int{"completed": 0, "completed_with_warnings": 0, "failed": 1, "cancelled": 3}[status]
}

// history fetches a run's full history.
func history(t *testing.T, workflowID, runID string) *historypb.History {
	t.Helper()
	it := tc.GetWorkflowHistory(context.Background(), workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	return h
}

// replay replays a finished run against the current interpreter; with
// -update it also records the history in the corpus, as NAME.json (gzipped,
// NAME.json.gz, when large) in this recording's folder (recordDir).
func replay(t *testing.T, name, workflowID, runID string) {
	t.Helper()
	h := history(t, workflowID, runID)
	require.NoError(t, worker.Replay(h, quietlog.New()), "replaying %s", workflowID)
	if *update && name != "" {
		record(t, name, h)
	}
}

// record writes h into this recording's folder of the corpus.
func record(t *testing.T, name string, h *historypb.History) {
	t.Helper()
	dir, err := recordDir()
	require.NoError(t, err)
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	file := filepath.Join(dir, strings.ReplaceAll(strings.TrimSuffix(name, ".yaml"), "/", "_")+".json")
	if len(b) > gzipRecordedHistory {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, err = zw.Write(b)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		b, file = z.Bytes(), file+".gz"
	}
	if len(b) > maxRecordedHistory {
		return // replayed above; too big to keep in the repository
	}
	// Tests run some examples more than once: the first run of a name is
	// the one kept.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return
	}
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, errors.Join(err, f.Close()))
}

// recordDir is the folder -update records into: a new one after the
// corpus's last, v<N+1>, so that recording adds to the corpus and never
// replaces a history (docs/VERSIONING.md). Its RECORDED_BY says which
// build recorded it.
var recordDir = sync.OnceValues(func() (string, error) {
	root := filepath.Join("testdata", "histories")
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	last := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "v")); e.IsDir() && err == nil && strings.HasPrefix(e.Name(), "v") {
			last = max(last, n)
		}
	}
	dir := filepath.Join(root, fmt.Sprintf("v%d", last+1))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	build := "unknown"
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		build = strings.TrimSpace(string(out))
	}
	note := fmt.Sprintf("%s\nrecorded by `make histories` on %s\n", build, time.Now().UTC().Format("2006-01-02"))
	return dir, os.WriteFile(filepath.Join(dir, "RECORDED_BY"), []byte(note), 0o644)
})

// readLog reads a log file of a step in the latest run of workflowID.
func readLog(t *testing.T, workflowID, step, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(activities.RunLogDir(logDir, workflowID, ""), step, file))
	require.NoError(t, err)
	return string(b)
}

// processesMatching lists the PIDs whose command line contains s.
var processesMatching = proctest.Matching

// Running tests in parallel. Most of the suite's time is waiting (timers,
// backoffs, heartbeats, processes sleeping), so its tests run side by side:
// a test opts in with parallel(t) as its first line. It then runs once the
// serial tests are done, beside the other parallel ones, up to
// parallelTests at once (or -test.parallel when it is given): a test
// waiting for a share another holds (below) takes none of those slots,
// so the tests that can run do. A test may opt in when
//   - its runs have workflow IDs of their own (run's default NAME-RANDOM,
//     or an --id no other test uses), and any worker it starts polls a task
//     queue of its own (named for the test, as "ops-logs" or
//     fmt.Sprintf("on-lost-%d", time.Now().UnixNano())): the shared worker
//     takes every test's runs on the default queue, which is what it is for;
//   - what it lists or counts is its own: `list` finds its runs by ID or by
//     a playbook name no other test runs;
//   - it leaves the process alone: no t.Setenv (the testing package refuses
//     it in a parallel test), no os.Chdir, no process-wide flags.
//
// A test that counts the processes of a marker its steps share with other
// tests' steps (playbooks/long_running.yaml's "playbook-long-running")
// says so with counts(marker); one whose steps carry the marker, with
// carries(marker): a counting test runs alone among those naming its marker
// (once the processes other tests' runs left are gone), the others beside
// each other. Something else only one test may use at a time is named
// with alone(name): the default port 127.0.0.1:7233 an embedded server
// takes; "cpu" for a test that keeps a core busy for a while (pages of
// large events, runs of thousands of steps, results of megabytes), so
// that such tests run one after another, in a slot of their own, beside
// the tests that wait: a starved workflow task trips the SDK's deadlock
// detector, and a starved step misses its heartbeat; and "browser" for a
// headless Chromium on a `playbook dev` of its own, the other core's. A
// run of thousands of steps goes to a worker of the test's own
// (ownQueueWorker): on the shared one, its activities would fill the
// slots every other test's steps need. A test that gives its CLI an
// environment variable runs the
// CLI as a process of its own (cliEnv) rather than set it with t.Setenv.
//
// Tests that stay serial, and why, say so beside their first line:
// setting the environment of this process (the docs tests, which also
// change directory; the codec key of in-process workers; the logs token;
// envconfig), changing the namespace (`setup`), timing something in
// seconds against the wall clock (TestRetryDelaysFireOnTime, the outage
// tests, retry budgets and heartbeat timeouts of seconds), or keeping
// both cores busy for long (replaying the corpus, whose starved replay
// trips the deadlock detector).
func parallel(t *testing.T, shares ...share) {
	t.Helper()
	t.Parallel()
	asked := time.Now()
	slices.SortFunc(shares, func(a, b share) int { return strings.Compare(a.name, b.name) })
	for _, s := range shares {
		l := shared(s.name)
		if s.alone {
			l.Lock()
			t.Cleanup(l.Unlock)
			if s.counted {
				// A run another test terminated or detached from may
				// leave its steps' processes a moment longer.
				waitFor(t, "the processes of other tests' "+s.name+" steps to end", func() bool { return len(processesMatching(s.name)) == 0 })
			}
		} else {
			l.RLock()
			t.Cleanup(l.RUnlock)
		}
	}
	// The test that holds "cpu" takes no slot: the tests that keep a core
	// busy run one after another, and their sum is the suite's floor; in
	// the queue for a slot, behind every test that waits for one, each
	// held the others back for minutes.
	if !slices.Contains(shares, alone("cpu")) {
		running <- struct{}{}
		t.Cleanup(func() { <-running }) // before the shares: cleanups run last first
	}
	ran := time.Now()
	t.Cleanup(func() { timed(t.Name(), ran.Sub(asked), time.Since(ran)) })
}

// timed appends a parallel test's wait for its shares and slot and its
// own run to the file $PLAYBOOK_TEST_TIMES names, when it names one: what
// the suite's wall time is made of (docs/INTERNALS.md, the suite's speed).
func timed(test string, waited, ran time.Duration) {
	file := os.Getenv("PLAYBOOK_TEST_TIMES")
	if file == "" {
		return
	}
	timesMu.Lock()
	defer timesMu.Unlock()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%.1f\t%.1f\n", test, waited.Seconds(), ran.Seconds())
}

var timesMu sync.Mutex

// running holds a token for each parallel test running (TestMain makes
// it, with a slot for each test that may run at once).
var running chan struct{}

// share is something parallel tests use that is not theirs alone.
type share struct {
	name           string
	alone, counted bool
}

// carries says a test's steps carry marker on their command lines.
func carries(marker string) share { return share{name: marker} }

// counts says a test counts the processes carrying marker: it runs alone
// among the tests that name marker.
func counts(marker string) share { return share{name: marker, alone: true, counted: true} }

// alone says a test uses name, which only one test may use at a time.
func alone(name string) share { return share{name: name, alone: true} }

var (
	sharesMu   sync.Mutex
	shareLocks = map[string]*sync.RWMutex{}
)

func shared(name string) *sync.RWMutex {
	sharesMu.Lock()
	defer sharesMu.Unlock()
	if shareLocks[name] == nil {
		shareLocks[name] = &sync.RWMutex{}
	}
	return shareLocks[name]
}

// parallelTests is how many parallel tests run at once unless
// -test.parallel says: most wait, so more than the CPUs.
const parallelTests = 6

// maxParallelTests is what TestMain sets -test.parallel to: more than the
// suite's parallel tests, so that the testing package holds none of them
// back (parallel does); a test's parallel subtests run in its slot.
const maxParallelTests = 1000
