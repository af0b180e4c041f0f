package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/submit"
)

// limited is a playbook named name whose runs share `concurrency` by
// workload.service. Its one step records, as its result, when it started
// and ended (the step process's clock, in nanoseconds), after waiting
// until the file workload.hold exists (when one is named) and sleeping
// workload.sleep seconds.
func limited(t *testing.T, name, concurrency string) string {
	t.Helper()
	return writePlaybook(t, t.TempDir(), "limited.yaml", fmt.Sprintf(`metadata: {name: %s}
workload: {service: a, hold: "", sleep: 0}
concurrency: %s
workflow:
  - step: work
    heartbeat_timeout: 2s
    retry: {max_attempts: 2, initial_delay: 100ms}
    tool:
      kind: shell
      env: {HOLD: "{{ workload.hold }}", SLEEP: "{{ workload.sleep }}"}
      command: |
        s=$(date +%%s%%N)
        while [ -n "$HOLD" ] && [ ! -f "$HOLD" ]; do sleep 0.05; done
        sleep "$SLEEP"
        echo "{\"start\": $s, \"end\": $(date +%%s%%N)}"
`, name, concurrency))
}

// interval is when a run's step ran, from its result.
type interval struct {
	run        string
	start, end int64
}

func intervalOf(t *testing.T, agg *contract.Aggregate) interval {
	t.Helper()
	require.Equal(t, "completed", agg.Status, "%s: %+v", agg.WorkflowID, agg.Steps["work"].Error)
	res, _ := agg.Steps["work"].Result.(map[string]any)
	j, _ := res["json"].(map[string]any)
	s, ok1 := j["start"].(float64)
	e, ok2 := j["end"].(float64)
	require.True(t, ok1 && ok2, "%s: result %v", agg.WorkflowID, res)
	return interval{run: agg.WorkflowID, start: int64(s), end: int64(e)}
}

// mostAtOnce is the most intervals that overlap at one time.
func mostAtOnce(ivs []interval) int {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, iv := range ivs {
		edges = append(edges, edge{iv.start, 1}, edge{iv.end, -1})
	}
	// An end before a start at the same time: touching is not overlapping.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	return most
}

// submitAll starts n runs of file at once, on the shared worker's queue.
func submitAll(t *testing.T, file string, n int, workload map[string]any) []client.WorkflowRun {
	t.Helper()
	runs := make([]client.WorkflowRun, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = startOn(t, tc, file, fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "."), i, time.Now().UnixNano()), contract.TaskQueue, workload)
		}()
	}
	wg.Wait()
	return runs
}

// Twenty runs submitted at once with limit 1 run one at a time, and all
// complete; with limit 2, two at a time.
func TestConcurrencyLimitRunsOneAtATime(t *testing.T) {
	parallel(t)
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit-%d", limit), func(t *testing.T) {
			t.Parallel()
			file := limited(t, fmt.Sprintf("limit-%d", limit), fmt.Sprintf(`{key: "{{ workload.service }}", limit: %d}`, limit))
			// The steps sleep long enough that, without the limit, runs
			// started together surely overlap; with limit 2, that two
			// granted together do.
			sleep := map[int]string{1: "0.3", 2: "1"}[limit]
			runs := submitAll(t, file, 20, map[string]any{"service": fmt.Sprintf("svc-%d", limit), "sleep": sleep})
			var ivs []interval
			for _, r := range runs {
				ivs = append(ivs, intervalOf(t, finish(t, r)))
			}
			require.Equal(t, limit, mostAtOnce(ivs), "intervals: %v", ivs)
			// The key's coordinator ends once idle, and its history replays.
			coordinator := contract.CoordinatorID(fmt.Sprintf("limit-%d", limit), fmt.Sprintf("svc-%d", limit))
			waitFor(t, "the coordinator to end", func() bool {
				d, err := tc.DescribeWorkflowExecution(context.Background(), coordinator, "")
				return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
			})
			replay(t, fmt.Sprintf("concurrency_coordinator_limit_%d", limit), coordinator, "")
		})
	}
}

// holdOn starts a run of file with key service that holds its slot until
// the returned file exists.
func holdOn(t *testing.T, file, queue, service string) (client.WorkflowRun, string) {
	t.Helper()
	flag := filepath.Join(t.TempDir(), "go-"+service)
	return startOn(t, tc, file, "", queue, map[string]any{"service": service, "hold": flag}), flag
}

// queuedBehind waits until run is queued behind holder.
func queuedBehind(t *testing.T, run, holder string) {
	t.Helper()
	waitFor(t, run+" to queue behind "+holder, func() bool {
		agg, err := queryState(run)
		return err == nil && agg.Queued != nil && len(agg.Queued.Holders) == 1 && agg.Queued.Holders[0] == holder
	})
}

// stepRuns waits until run's step runs.
func stepRuns(t *testing.T, run string) {
	t.Helper()
	waitFor(t, run+"'s step to run", func() bool {
		agg, err := queryState(run)
		return err == nil && agg.Steps["work"].Status == contract.StatusRunning
	})
}

func queryState(run string) (*contract.Aggregate, error) {
	v, err := tc.QueryWorkflow(context.Background(), run, "", contract.QueryState)
	if err != nil {
		return nil, err
	}
	var agg contract.Aggregate
	return &agg, v.Get(&agg)
}

// A run of another key is not held by a key's holder; a run of the same
// key is, and `status` says behind which run.
func TestConcurrencyKeysAreApartAndStatusSaysQueuedBehind(t *testing.T) {
	parallel(t)
	file := limited(t, "keys-apart", `{key: "{{ workload.service }}", limit: 1}`)
	holder, flag := holdOn(t, file, contract.TaskQueue, "one")
	stepRuns(t, holder.GetID())
	other := finish(t, start(t, file, contract.TaskQueue, map[string]any{"service": "two"}))
	require.Equal(t, "completed", other.Status, "a run of key two does not wait for key one's holder")

	queued := start(t, file, contract.TaskQueue, map[string]any{"service": "one"})
	queuedBehind(t, queued.GetID(), holder.GetID())
	code, out, errOut := cli(t, "status", "--address", server.Address, queued.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "queued behind "+holder.GetID()+` (concurrency key "one", limit 1; 1st in the queue)`)
	require.Equal(t, contract.StatusPending, mustState(t, queued.GetID()).Steps["work"].Status, "a queued run runs no step")

	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	first, second := intervalOf(t, finish(t, holder)), intervalOf(t, finish(t, queued))
	require.Less(t, first.end, second.start, "the queued run's step started after the holder's ended")
	code, out, _ = cli(t, "status", "--address", server.Address, queued.GetID())
	require.Equal(t, 0, code)
	require.NotContains(t, out, "queued behind")
}

func mustState(t *testing.T, run string) *contract.Aggregate {
	t.Helper()
	agg, err := queryState(run)
	require.NoError(t, err)
	return agg
}

// A holder that ends in any way frees its slot for the next run:
// cancelled, terminated, timed out, and one whose worker was killed (the
// run goes on when a worker is back, and frees the slot when it ends).
func TestConcurrencyHolderEndedAnyWayReleasesTheNext(t *testing.T) {
	parallel(t)
	ends := map[string]func(t *testing.T, holder client.WorkflowRun){
		"cancelled": func(t *testing.T, holder client.WorkflowRun) {
			require.NoError(t, tc.CancelWorkflow(context.Background(), holder.GetID(), holder.GetRunID()))
		},
		"terminated": func(t *testing.T, holder client.WorkflowRun) {
			require.NoError(t, tc.TerminateWorkflow(context.Background(), holder.GetID(), holder.GetRunID(), "test"))
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			file := limited(t, "release-"+name, `{key: "{{ workload.service }}", limit: 1}`)
			holder, _ := holdOn(t, file, contract.TaskQueue, name)
			// The holder holds the slot before the next run asks: started
			// together, either may get it first.
			stepRuns(t, holder.GetID())
			next := start(t, file, contract.TaskQueue, map[string]any{"service": name})
			queuedBehind(t, next.GetID(), holder.GetID())
			end(t, holder)
			require.Equal(t, "completed", finish(t, next).Status)
		})
	}
	t.Run("timed-out", func(t *testing.T) {
		file := limited(t, "release-timed-out", `{key: "{{ workload.service }}", limit: 1}`)
		b, err := submit.LoadBundle(file, os.ReadFile)
		require.NoError(t, err)
		in := contract.Input{File: file, BaseDir: filepath.Dir(b.RootPath), Source: b.Files[b.RootPath], Files: b.Files,
			Workload: map[string]any{"service": "timed-out", "hold": filepath.Join(t.TempDir(), "never")}}
		// The holder's timeout must leave the next run time to queue
		// behind it: 5 s did not in CI, and the next run found the slot free.
		holder, err := tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: contract.TaskQueue, WorkflowExecutionTimeout: 20 * time.Second}, contract.WorkflowName, in)
		require.NoError(t, err)
		stepRuns(t, holder.GetID())
		next := start(t, file, contract.TaskQueue, map[string]any{"service": "timed-out"})
		queuedBehind(t, next.GetID(), holder.GetID())
		require.Equal(t, "completed", finish(t, next).Status)
		d, err := tc.DescribeWorkflowExecution(context.Background(), holder.GetID(), holder.GetRunID())
		require.NoError(t, err)
		require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, d.GetWorkflowExecutionInfo().GetStatus())
	})
	t.Run("worker-killed", func(t *testing.T) {
		queue := fmt.Sprintf("concurrency-kill-%d", time.Now().UnixNano())
		first, _ := workerProcess(t, queue)
		file := limited(t, "release-killed", `{key: "{{ workload.service }}", limit: 1}`)
		holder, flag := holdOn(t, file, queue, "killed")
		stepRuns(t, holder.GetID())
		next := startOn(t, tc, file, "", queue, map[string]any{"service": "killed"})
		queuedBehind(t, next.GetID(), holder.GetID())
		require.NoError(t, first.Process.Signal(syscall.SIGKILL))
		_ = first.Wait()
		require.NoError(t, os.WriteFile(flag, nil, 0o644))
		workerProcess(t, queue)
		a, b := intervalOf(t, finish(t, holder)), intervalOf(t, finish(t, next))
		require.Less(t, a.end, b.start, "the next run's step started after the holder, back on a worker, ended")
	})
}

// on_limit: fail refuses a run while the key's slots are taken, saying
// which run holds them; on_limit: cancel_running cancels the holder and
// takes its slot.
func TestConcurrencyOnLimit(t *testing.T) {
	parallel(t)
	t.Run("fail", func(t *testing.T) {
		dir := t.TempDir()
		holding := limited(t, "on-limit-fail", `{key: "{{ workload.service }}", limit: 1}`)
		holder, flag := holdOn(t, holding, contract.TaskQueue, "x")
		stepRuns(t, holder.GetID())
		src, err := os.ReadFile(holding)
		require.NoError(t, err)
		refused := writePlaybook(t, dir, "refused.yaml", strings.Replace(string(src), "limit: 1}", "limit: 1, on_limit: fail}", 1))
		code, out, errOut := cli(t, "run", "--address", server.Address, "--set", "service=x", refused)
		require.Equal(t, 1, code, out+errOut)
		want := fmt.Sprintf(`concurrency: key "x" allows 1 run at once, and %s holds it (on_limit: fail)`, holder.GetID())
		require.Contains(t, out+errOut, want)
		require.NoError(t, os.WriteFile(flag, nil, 0o644))
		require.Equal(t, "completed", finish(t, holder).Status)
	})
	t.Run("cancel_running", func(t *testing.T) {
		dir := t.TempDir()
		holding := limited(t, "on-limit-cancel", `{key: "{{ workload.service }}", limit: 1}`)
		holder, _ := holdOn(t, holding, contract.TaskQueue, "y")
		stepRuns(t, holder.GetID())
		src, err := os.ReadFile(holding)
		require.NoError(t, err)
		taker := writePlaybook(t, dir, "taker.yaml", strings.Replace(string(src), "limit: 1}", "limit: 1, on_limit: cancel_running}", 1))
		run := start(t, taker, contract.TaskQueue, map[string]any{"service": "y"})
		require.Equal(t, "completed", finish(t, run).Status)
		agg := finish(t, holder)
		require.Equal(t, "cancelled", agg.Status)
		require.Contains(t, agg.CancelReason, "run "+run.GetID()+` of key "y" took its slot (on_limit: cancel_running)`)
	})
}

// A queued run keeps its timeout (the time queued counts) and hears a
// drain: either ends its wait at once, without a slot and with no step
// run, while the holder still runs.
func TestConcurrencyQueuedRunKeepsItsTimeoutAndHearsADrain(t *testing.T) {
	parallel(t)
	holding := limited(t, "queued-gives-up", `{key: "{{ workload.service }}", limit: 1}`)
	holder, flag := holdOn(t, holding, contract.TaskQueue, "q")
	stepRuns(t, holder.GetID())
	src, err := os.ReadFile(holding)
	require.NoError(t, err)
	timed := writePlaybook(t, t.TempDir(), "timed.yaml", strings.Replace(string(src), "concurrency:", "timeout: 3s\nconcurrency:", 1))

	run := start(t, timed, contract.TaskQueue, map[string]any{"service": "q"})
	agg := finish(t, run)
	require.NotNil(t, agg.Timeout, "the deadline passed while the run was queued")
	require.Equal(t, contract.StatusSkipped, agg.Steps["work"].Status)

	run = start(t, holding, contract.TaskQueue, map[string]any{"service": "q"})
	queuedBehind(t, run.GetID(), holder.GetID())
	require.NoError(t, tc.SignalWorkflow(context.Background(), run.GetID(), "", contract.SignalDrain, "maintenance"))
	agg = finish(t, run)
	require.Equal(t, contract.RunCancelled, agg.Status)
	require.Equal(t, contract.StatusSkipped, agg.Steps["work"].Status)
	require.Equal(t, "maintenance", agg.CancelReason)

	require.Equal(t, contract.StatusRunning, mustState(t, holder.GetID()).Steps["work"].Status, "the holder held its slot throughout")
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	require.Equal(t, "completed", finish(t, holder).Status)
}

// A run cancelled while queued for its slot starts no step, its
// cleanup steps included (they would release what another run holds);
// so does one whose deadline passes while it is queued. `end` runs.
func TestConcurrencyQueuedRunCancelledStartsNoStep(t *testing.T) {
	parallel(t)
	holding := limited(t, "queued-cancelled", `{key: "{{ workload.service }}", limit: 1}`)
	src, err := os.ReadFile(holding)
	require.NoError(t, err)
	cleanup := string(src) + `  - step: release
    depends_on: [work]
    always: true
    tool: {kind: shell, command: "true"}
`
	withCleanup := writePlaybook(t, t.TempDir(), "limited.yaml", cleanup)
	withDeadline := writePlaybook(t, t.TempDir(), "limited.yaml", strings.Replace(cleanup, "workflow:\n", "timeout: 2s\nworkflow:\n", 1))
	holder, flag := holdOn(t, holding, contract.TaskQueue, "qc")
	stepRuns(t, holder.GetID())
	run := start(t, withCleanup, contract.TaskQueue, map[string]any{"service": "qc"})
	late := start(t, withDeadline, contract.TaskQueue, map[string]any{"service": "qc"})
	queuedBehind(t, run.GetID(), holder.GetID())
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	for _, r := range []struct {
		run    client.WorkflowRun
		status string
	}{{run, contract.RunCancelled}, {late, contract.RunFailed}} {
		agg := finish(t, r.run)
		require.Equal(t, r.status, agg.Status)
		for _, step := range []string{"work", "release"} {
			require.Equal(t, contract.StatusSkipped, agg.Steps[step].Status, step)
			require.Equal(t, "the run never had its concurrency slot: no step started", agg.Steps[step].SkipReason, step)
		}
		code, out, errOut := cli(t, "events", "--address", server.Address, r.run.GetID())
		require.Equal(t, 0, code, errOut)
		require.NotRegexp(t, `step_started\s+(work|release)`, out, "no step but end started")
		require.True(t, hasMarker(t, r.run.GetID(), "queued-cancel"))
	}
	replay(t, "change_queued_cancel", run.GetID(), run.GetRunID())
	replay(t, "change_queued_cancel_deadline", late.GetID(), late.GetRunID())

	require.Equal(t, contract.StatusRunning, mustState(t, holder.GetID()).Steps["work"].Status, "the holder held its slot throughout")
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	require.Equal(t, "completed", finish(t, holder).Status)
}

// listedStatuses is `list --json` of playbook's runs (with --status
// status, unless ""), each run's ID to its status.
func listedStatuses(t *testing.T, playbook, status string) map[string]string {
	t.Helper()
	args := []string{"list", "--address", server.Address, "--playbook", playbook, "--json"}
	if status != "" {
		args = append(args, "--status", status)
	}
	code, out, errOut := cli(t, args...)
	require.Equal(t, 0, code, out+errOut)
	var listed []struct {
		WorkflowID string `json:"workflow_id"`
		Status     string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	statuses := map[string]string{}
	for _, r := range listed {
		statuses[r.WorkflowID] = r.Status
	}
	return statuses
}

// With limit 1, a run queued behind another is `queued` in `list`, `list
// --status queued` finds it (and `--status running` does not) and
// `status` says so, while the other holds the slot; once it has the slot
// it is running, then completed.
func TestConcurrencyListShowsQueuedRuns(t *testing.T) {
	parallel(t)
	file := limited(t, "list-queued", `{key: "{{ workload.service }}", limit: 1}`)
	dir := t.TempDir()
	runHeld := func(name string) (id, flag string) {
		id, flag = fmt.Sprintf("list-queued-%s-%d", name, time.Now().UnixNano()), filepath.Join(dir, name)
		code, out, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, "--set", "hold="+flag, file)
		require.Equal(t, 0, code, out+errOut)
		return id, flag
	}
	holder, holderFlag := runHeld("holder")
	stepRuns(t, holder)
	queued, queuedFlag := runHeld("queued")
	queuedBehind(t, queued, holder)

	waitFor(t, "list to show the run queued", func() bool {
		all := listedStatuses(t, "list-queued", "")
		return all[queued] == contract.RunQueued && all[holder] == contract.RunRunning
	})
	require.Equal(t, map[string]string{queued: contract.RunQueued}, listedStatuses(t, "list-queued", "queued"))
	require.Equal(t, map[string]string{holder: contract.RunRunning}, listedStatuses(t, "list-queued", "running"), "a queued run is not listed as running")
	code, out, errOut := cli(t, "status", "--address", server.Address, queued)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("Run %s (playbook list-queued): queued,", queued))

	require.NoError(t, os.WriteFile(holderFlag, nil, 0o644))
	stepRuns(t, queued)
	waitFor(t, "list to show the run running once it has its slot", func() bool {
		return listedStatuses(t, "list-queued", "running")[queued] == contract.RunRunning
	})
	require.Empty(t, listedStatuses(t, "list-queued", "queued"))

	require.NoError(t, os.WriteFile(queuedFlag, nil, 0o644))
	agg := finishID(t, queued)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.True(t, hasMarker(t, queued, "queued-status"), "the run took the new side of queued-status")
	replay(t, "change_queued_status", queued, agg.RunID)
	waitFor(t, "list to show the run completed", func() bool {
		return listedStatuses(t, "list-queued", "completed")[queued] == contract.RunCompleted
	})
}
