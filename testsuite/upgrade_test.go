package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/internal/claims"
	"playbook/internal/quietlog"
	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
	"playbook/worker"
)

// otherGraph is an incompatible interpreter: it runs the playbook with its
// step `greet` renamed, as a build whose parser read the file differently
// would. Its runs' histories cannot replay on this binary.
func otherGraph(ctx workflow.Context, in contract.Input) (*contract.Aggregate, error) {
	in.Source = strings.ReplaceAll(in.Source, "greet", "salute")
	return playbookwf.Playbook(ctx, in)
}

// `playbook upgrade-check` replays a namespace's open runs against this
// binary: two runs of this interpreter replay (exit 0), and one whose
// history an incompatible interpreter wrote is named, with the event it
// diverges at (exit 1). --closed adds ended runs; --json is the report.
func TestUpgradeCheck(t *testing.T) {
	// Serial: `setup` changes a namespace (see parallel).
	ns := fmt.Sprintf("upgrade-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "setup", "--address", server.Address, "--namespace", ns)
	require.Equal(t, 0, code, errOut)
	c, err := client.Dial(client.Options{HostPort: server.Address, Namespace: ns, Logger: quietlog.New()})
	require.NoError(t, err)
	defer c.Close()

	w := worker.New(c, worker.Options{LogDir: t.TempDir()})
	require.NoError(t, w.Start())
	defer w.Stop()
	ow := sdkworker.New(c, "other-graph", sdkworker.Options{})
	ow.RegisterWorkflowWithOptions(otherGraph, workflow.RegisterOptions{Name: contract.WorkflowName})
	ow.RegisterActivityWithOptions((&activities.Activities{LogDir: t.TempDir()}).RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	require.NoError(t, ow.Start())
	defer ow.Stop()

	file := writePlaybook(t, t.TempDir(), "greet.yaml", `metadata: {name: greet}
workflow:
  - step: greet
    tool: {kind: shell, command: "sleep 60"}
`)
	var runs []client.WorkflowRun
	for i, queue := range []string{"playbook", "playbook", "other-graph"} {
		run := startOn(t, c, file, fmt.Sprintf("upgrade-%d", i), queue, nil)
		runs = append(runs, run)
		defer func() { _ = c.TerminateWorkflow(context.Background(), run.GetID(), "", "test over") }()
	}
	for _, run := range runs {
		waitFor(t, run.GetID()+"'s step to run", func() bool { return startedSteps(c, run.GetID()) == 1 })
	}
	check := func(args ...string) (int, string, string) {
		return cli(t, append([]string{"upgrade-check", "--address", server.Address, "--namespace", ns}, args...)...)
	}
	waitFor(t, "the three runs to be listed", func() bool {
		_, out, _ := check()
		return strings.Count(out, "(Playbook, running)") == 3
	})

	code, out, errOut := check()
	require.Equal(t, 1, code, errOut)
	require.Regexp(t, `(?m)^upgrade-0 \(Playbook, running\): ok \(\d+ events\)$`, out)
	require.Regexp(t, `(?m)^upgrade-1 \(Playbook, running\): ok \(\d+ events\)$`, out)
	require.Regexp(t, `(?m)^upgrade-2 \(Playbook, running\): diverges at event 5 ActivityTaskScheduled \(salute\): `, out)
	require.Contains(t, out, "3 runs of namespace "+ns+" replayed: 2 ok, 1 do not replay")

	require.NoError(t, c.TerminateWorkflow(context.Background(), "upgrade-2", "", "incompatible"))
	waitFor(t, "the terminated run to leave the open ones", func() bool {
		_, out, _ := check()
		return strings.Count(out, "(Playbook, running)") == 2
	})
	code, out, errOut = check()
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2 runs of namespace "+ns+" replayed: all ok")

	code, out, errOut = check("--closed", "5", "--json")
	require.Equal(t, 1, code, errOut)
	var report struct {
		Runs []struct {
			WorkflowID string `json:"workflow_id"`
			Status     string `json:"status"`
			OK         bool   `json:"ok"`
			DivergesAt string `json:"diverges_at"`
		} `json:"runs"`
		Replayed  int `json:"replayed"`
		Diverging int `json:"diverging"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &report), out)
	require.Equal(t, 3, report.Replayed)
	require.Equal(t, 1, report.Diverging)
	last := report.Runs[2]
	require.Equal(t, "upgrade-2", last.WorkflowID)
	require.Equal(t, "terminated", last.Status)
	require.False(t, last.OK)
	require.Equal(t, "event 5 ActivityTaskScheduled (salute)", last.DivergesAt)

	code, _, errOut = check("--closed", "-1")
	require.Equal(t, 2, code)
	require.Equal(t, "upgrade-check: --closed must be 0 or more\n", errOut)
}

// upgrade-check reads the large values a run kept in its store from the
// workers' store (--store, $PLAYBOOK_STORE): without one it says it could
// not check the run (exit 2), never that the run would not replay.
func TestUpgradeCheckReadsLargeValuesFromTheStore(t *testing.T) {
	// Serial: `setup` changes a namespace (see parallel).
	ns := fmt.Sprintf("upgrade-store-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "setup", "--address", server.Address, "--namespace", ns)
	require.Equal(t, 0, code, errOut)
	url := "file://" + t.TempDir()
	st, err := store.Open(context.Background(), url)
	require.NoError(t, err)
	opts := client.Options{HostPort: server.Address, Namespace: ns, Logger: quietlog.New()}
	claims.Use(&opts, claims.Open(st), true)
	c, err := client.Dial(opts)
	require.NoError(t, err)
	defer c.Close()
	w := worker.New(c, worker.Options{LogDir: t.TempDir(), Store: st, LargeValues: true})
	require.NoError(t, w.Start())
	defer w.Stop()

	// A run whose input is kept in the store, a claim in its history.
	file := writePlaybook(t, t.TempDir(), "big-in.yaml", "metadata: {name: big-in}\nworkload: {s: \"\"}\nworkflow:\n  - step: a\n    tool: {kind: noop, result: \"{{ len(workload.s) }}\"}\n")
	run := startOn(t, c, file, "big-in-1", contract.TaskQueue, map[string]any{"s": strings.Repeat("x", 600_000)})
	require.NoError(t, run.Get(context.Background(), nil))
	withStore := []string{"PLAYBOOK_STORE=" + url}

	check := func(env []string) (int, string, string) {
		return cliEnv(t, env, "upgrade-check", "--address", server.Address, "--namespace", ns, "--closed", "5")
	}
	waitFor(t, "the run to be listed", func() bool {
		_, out, _ := check(withStore)
		return strings.Contains(out, "big-in-1 (Playbook, completed)")
	})
	code, out, errOut := check([]string{"PLAYBOOK_STORE="})
	require.Equal(t, 2, code, out+errOut)
	require.Contains(t, out, "big-in-1 (Playbook, completed): not checked: the run kept large values in its store, and its history holds claims to them: check it with --store URL, the store its workers used")
	require.Contains(t, out, "1 could not be checked (they keep large values in a store): give --store URL, the workers' store")
	require.NotContains(t, out, "do not replay")
	code, out, errOut = check(withStore)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "1 runs of namespace "+ns+" replayed: all ok")
}
