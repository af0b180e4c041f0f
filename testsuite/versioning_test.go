package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/internal/proctest"
	"playbook/worker"
)

// versionedWorker starts an in-process worker of the Worker Deployment
// name's version build, on queue; autoUpgrade as --auto-upgrade.
func versionedWorker(t *testing.T, queue, name, build string, autoUpgrade bool) sdkworker.Worker {
	w := worker.New(tc, worker.Options{TaskQueue: queue, LogDir: t.TempDir(), Deployment: worker.Deployment{Name: name, BuildID: build, AutoUpgrade: autoUpgrade}})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return w
}

// makeCurrent makes build the deployment's current version, once its
// worker's polls have registered it, and returns once queue routes to it.
func makeCurrent(t *testing.T, name, build, queue string) {
	var out, errOut string
	start := time.Now()
	defer func() { t.Logf("set-current %s: %s after %s", build, strings.TrimSpace(out), time.Since(start)) }()
	waitFor(t, "version "+build+" to be made current", func() bool {
		var code int
		code, out, errOut = cli(t, "deployment", "set-current", "--address", server.Address, "--deployment-name", name, "--build-id", build)
		return code == 0
	})
	require.Contains(t, out, "Deployment "+name+": current version "+build+" (was ", errOut)
	routes := func() bool {
		resp, err := tc.WorkflowService().DescribeTaskQueue(context.Background(), &workflowservice.DescribeTaskQueueRequest{
			Namespace: "default", TaskQueue: &taskqueuepb.TaskQueue{Name: queue}, TaskQueueType: enums.TASK_QUEUE_TYPE_WORKFLOW})
		require.NoError(t, err)
		return resp.GetVersioningInfo().GetCurrentDeploymentVersion().GetBuildId() == build
	}
	if !strings.Contains(out, "not yet confirmed known to every task queue") {
		// set-current returned once the queues routed to build: a workflow
		// task dispatched from now on goes to it.
		require.True(t, routes(), out)
		return
	}
	// The server took over set-current's minute to tell the queues: the
	// test waits on.
	proctest.WaitFor(t, "version "+build+" to reach the task queues", 4*time.Minute, routes)
}

// taskBuilds lists the build ID of every workflow task a run completed,
// and whether each pinned the run.
func taskBuilds(t *testing.T, workflowID string) (builds []string, pinned bool) {
	pinned = true
	for _, e := range history(t, workflowID, "").GetEvents() {
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			builds = append(builds, a.GetDeploymentVersion().GetBuildId())
			pinned = pinned && a.GetVersioningBehavior() == enums.VERSIONING_BEHAVIOR_PINNED
		}
	}
	return builds, pinned
}

// Acceptance (Worker Versioning): a run started on build A stays on A when
// a worker of build B joins and B becomes current; the next run goes to B.
func TestWorkerVersioningPinsRunsToTheirBuild(t *testing.T) {
	parallel(t)
	name := fmt.Sprintf("pb-%d", time.Now().UnixNano())
	queue := "versioned-" + name
	file := writePlaybook(t, t.TempDir(), "pinned.yaml", `metadata: {name: pinned}
workflow:
  - step: work
    tool: {kind: shell, command: "sleep 3"}
    next: after
  - step: after
    tool: {kind: shell, command: "echo $PLAYBOOK_ATTEMPT"}
`)
	versionedWorker(t, queue, name, "A", false)
	makeCurrent(t, name, "A", queue)
	first := startOn(t, tc, file, name+"-first", queue, nil)
	waitFor(t, "the first run's step to run", func() bool { return startedSteps(tc, first.GetID()) == 1 })

	versionedWorker(t, queue, name, "B", false)
	makeCurrent(t, name, "B", queue)
	second := startOn(t, tc, file, name+"-second", queue, nil)

	for _, run := range []struct {
		id, build string
	}{{first.GetID(), "A"}, {second.GetID(), "B"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		require.NoError(t, tc.GetWorkflow(ctx, run.id, "").Get(ctx, nil))
		cancel()
		builds, pinned := taskBuilds(t, run.id)
		require.NotEmpty(t, builds)
		for _, b := range builds {
			require.Equal(t, run.build, b, "%s ran a workflow task on build %s: %v", run.id, b, builds)
		}
		require.True(t, pinned, "%s: every task pins the run", run.id)
		replay(t, "", run.id, "")
	}

	code, out, errOut := cli(t, "deployment", "describe", "--address", server.Address, "--deployment-name", name, "--json")
	require.Equal(t, 0, code, errOut)
	var d struct {
		Current  string   `json:"current"`
		Versions []string `json:"versions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Equal(t, "B", d.Current)
	require.ElementsMatch(t, []string{"A", "B"}, d.Versions)
}

// With --auto-upgrade, a run started on A moves to B at its next workflow
// task once B is current.
func TestWorkerVersioningAutoUpgrade(t *testing.T) {
	parallel(t)
	name := fmt.Sprintf("pb-auto-%d", time.Now().UnixNano())
	queue := "versioned-" + name
	// The step runs until B is current (the test makes the gate), however
	// long B takes to start.
	gate := filepath.Join(t.TempDir(), "b-is-current")
	file := writePlaybook(t, t.TempDir(), "moves.yaml", `metadata: {name: moves}
workflow:
  - step: work
    tool: {kind: shell, command: "until [ -e `+gate+` ]; do sleep 0.1; done"}
    next: after
  - step: after
    tool: {kind: shell, command: "true"}
`)
	versionedWorker(t, queue, name, "A", true)
	makeCurrent(t, name, "A", queue)
	run := startOn(t, tc, file, name+"-run", queue, nil)
	waitFor(t, "the run's step to run", func() bool { return startedSteps(tc, run.GetID()) == 1 })
	versionedWorker(t, queue, name, "B", true)
	makeCurrent(t, name, "B", queue)
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	builds, pinned := taskBuilds(t, run.GetID())
	require.False(t, pinned)
	require.Equal(t, "A", builds[0], "%v", builds)
	require.Equal(t, "B", builds[len(builds)-1], "the run moved to B: %v", builds)
	replay(t, "", run.GetID(), "")
}

// The deployment flags go together, and a name Temporal cannot take is
// refused before the worker starts.
func TestWorkerDeploymentFlags(t *testing.T) {
	parallel(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--deployment-name", "x"}, "worker: --deployment-name and --build-id go together (--auto-upgrade needs both)\n"},
		{[]string{"--build-id", "1"}, "worker: --deployment-name and --build-id go together (--auto-upgrade needs both)\n"},
		{[]string{"--auto-upgrade"}, "worker: --deployment-name and --build-id go together (--auto-upgrade needs both)\n"},
		{[]string{"--deployment-name", "a.b", "--build-id", "1"}, "worker: --deployment-name \"a.b\": a deployment's name cannot hold '.' or ':'\n"},
	} {
		code, _, errOut := cli(t, append([]string{"worker", "--address", server.Address}, c.args...)...)
		require.Equal(t, 2, code, c.args)
		require.Equal(t, c.want, errOut, c.args)
	}
}
