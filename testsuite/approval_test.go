package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// gatePlaybook is an approval gate whose next step reads the inputs the
// person gave.
const gatePlaybook = `
metadata: {name: gate}
workload: {version: "1.2"}
workflow:
  - step: sign_off
    tool:
      kind: approval
      message: "Deploy {{ workload.version }}? Ticket number required."
      inputs: {ticket: "", replicas: 3}
      approvers: [alice, bob]
%s
    next: show
  - step: show
    tool:
      kind: shell
      command: 'echo "ticket $T replicas $R"'
      env: {T: "{{ steps.sign_off.result.inputs.ticket }}", R: "{{ steps.sign_off.result.inputs.replicas }}"}
`

// startGate submits a gate playbook through the CLI, detached, and waits
// until its approval step waits.
func startGate(t *testing.T, timeout string) (id string) {
	t.Helper()
	return startGatePlaybook(t, fmt.Sprintf(gatePlaybook, timeout), timeout == "")
}

// startGatePlaybook submits text, detached, and when waits is set waits
// until its one approval step waits.
func startGatePlaybook(t *testing.T, text string, waits bool) (id string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "gate.yaml")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	id = fmt.Sprintf("gate-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, file)
	require.Equal(t, 0, code, errOut)
	if waits {
		waitFor(t, "sign_off to wait for approval", func() bool { return len(approvalsOf(t, id)) == 1 })
	}
	return id
}

func approvalsOf(t *testing.T, id string) []engine.WaitingApproval {
	v, err := tc.QueryWorkflow(context.Background(), id, "", contract.QueryApprovals)
	if err != nil {
		return nil
	}
	var out []engine.WaitingApproval
	require.NoError(t, v.Get(&out))
	return out
}

// countEvents counts a run's history events of one type.
func countEvents(t *testing.T, id, runID string, typ enums.EventType) int {
	n := 0
	for _, e := range history(t, id, runID).Events {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

func finishID(t *testing.T, id string) *contract.Aggregate {
	t.Helper()
	return finish(t, tc.GetWorkflow(context.Background(), id, ""))
}

func TestApprovalApprovedWithInputs(t *testing.T) {
	parallel(t)
	id := startGate(t, "")

	// Refused before anything is sent, exit 2, one line; the run still waits.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "replicas=many", "--by", "alice"}, `approve: input replicas must be a whole number (its default is 3), not "many"`},
		{[]string{"--set", "tickets=OPS-1", "--by", "alice"}, `approve: input "tickets" is not declared (declared: replicas, ticket)`},
		{[]string{"--set", "ticket=OPS-1", "--by", "carol"}, `approve: carol is not an approver of step "sign_off" (approvers: alice, bob); give --by NAME`},
	} {
		code, out, errOut := cli(t, append([]string{"approve", "--address", server.Address, id, "sign_off"}, c.args...)...)
		require.Equal(t, 2, code, out)
		require.Equal(t, c.want+"\n", errOut)
		require.Len(t, approvalsOf(t, id), 1, "nothing changed")
	}
	code, _, errOut := cli(t, "approve", "--address", server.Address, id, "show")
	require.Equal(t, 2, code)
	require.Equal(t, fmt.Sprintf("approve: step \"show\" of run %s is not waiting for approval\n", id), errOut)

	// Waiting is visible: status, list --status waiting, pending.
	code, out, errOut := cli(t, "status", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("Run %s (playbook gate): waiting,", id))
	require.Contains(t, out, "Waiting for approval: step sign_off since ")
	waitFor(t, "list --status waiting to find the run", func() bool {
		_, out, _ := cli(t, "list", "--address", server.Address, "--status", "waiting")
		return strings.Contains(out, id)
	})
	_, out, _ = cli(t, "list", "--address", server.Address, "--status", "running")
	require.NotContains(t, out, id, "a waiting run is not listed as running")
	code, out, errOut = cli(t, "pending", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "sign_off waits for approval since ")
	require.Contains(t, out, ": Deploy 1.2? Ticket number required.\n")
	require.Contains(t, out, "  approvers: alice, bob\n")
	require.Contains(t, out, "  input replicas: a whole number, default 3\n")
	// The lines to type reach the server this command reached.
	require.Contains(t, out, fmt.Sprintf("  approve: playbook approve %s sign_off --set replicas=3 --set ticket='' --by alice --address %s\n", id, server.Address))
	require.Contains(t, out, fmt.Sprintf("  reject:  playbook reject %s sign_off --reason '...' --by alice --address %s\n", id, server.Address))

	code, out, errOut = cli(t, "approve", "--address", server.Address, id, "sign_off", "--set", "ticket=OPS-1", "--by", "alice", "--reason", "change approved")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "step sign_off approved\n", out)
	// A decided step is decided once: refused while the run goes on,
	// or, once it has ended (it has one step left), as an ended run.
	code, _, errOut = cli(t, "approve", "--address", server.Address, id, "sign_off", "--by", "bob")
	if code == 5 {
		require.Contains(t, errOut, id+" already ended: completed")
	} else {
		require.Equal(t, 2, code, errOut)
		require.Contains(t, errOut, `step "sign_off"`)
	}

	agg := finishID(t, id)
	replay(t, "approval_approved", id, agg.RunID)
	require.Equal(t, contract.RunCompleted, agg.Status)
	res := agg.Steps["sign_off"].Result.(map[string]any)
	require.Equal(t, "approved", res["decision"])
	require.Equal(t, "alice", res["by"])
	require.Equal(t, "change approved", res["reason"])
	require.Equal(t, map[string]any{"ticket": "OPS-1", "replicas": float64(3)}, res["inputs"], "given inputs merge over the defaults")
	require.Equal(t, "ticket OPS-1 replicas 3\n", agg.Steps["show"].Result.(map[string]any)["stdout"])
	_, out, _ = cli(t, "list", "--address", server.Address, "--status", "completed")
	require.Contains(t, out, id, "the search attribute moved on from waiting")
}

func TestApprovalRejectedFailsTheRun(t *testing.T) {
	parallel(t)
	id := startGate(t, "")
	code, out, errOut := cli(t, "reject", "--address", server.Address, id, "sign_off", "--by", "bob", "--reason", "not on a Friday")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "step sign_off rejected\n", out)
	agg := finishID(t, id)
	replay(t, "approval_rejected", id, agg.RunID)
	require.Equal(t, contract.RunFailed, agg.Status)
	require.Equal(t, []string{"sign_off"}, agg.FailedSteps)
	e := agg.Steps["sign_off"].Error
	require.Equal(t, contract.ErrRejected, e.Type)
	require.Equal(t, "rejected by bob: not on a Friday", e.Message)
	require.Equal(t, contract.StatusSkipped, agg.Steps["show"].Status)
}

func TestApprovalTimeouts(t *testing.T) {
	parallel(t)
	for _, c := range []struct {
		onTimeout, status, errType string
	}{
		{"approve", contract.RunCompleted, ""},
		{"reject", contract.RunFailed, contract.ErrRejected},
		{"fail", contract.RunFailed, contract.ErrTimeout},
	} {
		t.Run(c.onTimeout, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			id := startGate(t, "      timeout: 2s\n      on_timeout: "+c.onTimeout)
			agg := finishID(t, id)
			require.GreaterOrEqual(t, time.Since(began), 2*time.Second)
			replay(t, "approval_timeout_"+c.onTimeout, id, agg.RunID)
			require.Equal(t, c.status, agg.Status)
			st := agg.Steps["sign_off"]
			if c.errType == "" {
				res := st.Result.(map[string]any)
				require.Equal(t, "timeout", res["by"])
				require.Equal(t, map[string]any{"ticket": "", "replicas": float64(3)}, res["inputs"], "the defaults")
				require.Equal(t, "ticket  replicas 3\n", agg.Steps["show"].Result.(map[string]any)["stdout"])
				return
			}
			require.Equal(t, c.errType, st.Error.Type)
			require.Contains(t, st.Error.Message, "no decision within 2s")
		})
	}
}

// The approval Update is Temporal's: a plain SDK client, with the JSON
// object docs/OPERATIONS.md shows for `temporal workflow update execute`,
// decides the gate. A decision the validator refuses leaves no trace in
// the history.
func TestApprovalUpdateFromAnySDKClient(t *testing.T) {
	parallel(t)
	id := startGate(t, "")
	ctx := context.Background()
	send := func(arg string) (string, error) {
		var decision map[string]any
		require.NoError(t, json.Unmarshal([]byte(arg), &decision))
		h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "approval", Args: []any{decision}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return "", err
		}
		var answer string
		err = h.Get(ctx, &answer)
		return answer, err
	}
	_, err := send(`{"step": "sign_off", "decision": "approve", "inputs": {"replicas": 2.5}, "by": "alice"}`)
	require.ErrorContains(t, err, "input replicas must be a whole number (its default is 3), not 2.5")
	_, err = send(`{"step": "sign_off", "decision": "approve"}`)
	require.ErrorContains(t, err, `no one named is not an approver of step "sign_off" (approvers: alice, bob)`)
	_, err = send(`{"step": "sign_off", "decision": "maybe", "by": "alice"}`)
	require.ErrorContains(t, err, `decision "maybe": approve or reject`)
	answer, err := send(`{"step": "sign_off", "decision": "approve", "inputs": {"ticket": "SDK-7", "replicas": 5}, "by": "bob", "reason": "from a script"}`)
	require.NoError(t, err)
	require.Equal(t, "step sign_off approved", answer)
	agg := finishID(t, id)
	replay(t, "approval_update_sdk", id, agg.RunID)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "ticket SDK-7 replicas 5\n", agg.Steps["show"].Result.(map[string]any)["stdout"])
	require.Equal(t, 1, countEvents(t, id, agg.RunID, enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED), "the refused decisions left nothing in the history")
}

func TestWaitStepIsADurableTimer(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "wait.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
metadata: {name: waits}
workflow:
  - step: nap
    tool: {kind: wait, duration: 2s}
    next: past
  - step: past
    tool: {kind: wait, until: "{{ run.logical_time }}"}
    next: long_past
  - step: long_past
    tool: {kind: wait, until: "2000-01-01T00:00:00Z"}
`), 0o644))
	began := time.Now()
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", file)
	took := time.Since(began)
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	replay(t, "wait", agg.WorkflowID, agg.RunID)
	require.GreaterOrEqual(t, took, 2*time.Second)
	nap := agg.Steps["nap"]
	require.GreaterOrEqual(t, nap.EndedAt.Sub(*nap.StartedAt), 2*time.Second)
	require.Equal(t, "2s", nap.Result.(map[string]any)["waited"])
	for _, name := range []string{"past", "long_past"} {
		st := agg.Steps[name]
		require.Equal(t, "0s", st.Result.(map[string]any)["waited"], "%s: a time past completes at once", name)
		require.Equal(t, *st.StartedAt, *st.EndedAt, "%s: no timer", name)
	}
	require.Equal(t, "2000-01-01T00:00:00Z", agg.Steps["long_past"].Result.(map[string]any)["until"])
	require.Zero(t, countEvents(t, agg.WorkflowID, agg.RunID, enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), "a wait schedules no activity")
	require.Equal(t, 1, countEvents(t, agg.WorkflowID, agg.RunID, enums.EVENT_TYPE_TIMER_STARTED), "one timer, for nap; none for a time past")
	// The run says until when nap waits.
	var told []string
	for _, e := range runEvents(t, agg.WorkflowID, agg.RunID) {
		if e.Type == "step_waiting_until" {
			told = append(told, e.Step+": "+strings.SplitN(e.Message, " (", 2)[1])
		}
	}
	require.Equal(t, []string{"nap: 2s)"}, told)
}

// After its approval, a run is running again (its search attribute too);
// a wait step's timer does not make it waiting; a cancel ends the wait.
func TestWaitIsCancelled(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "wait.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
metadata: {name: long-wait}
workflow:
  - step: go
    tool: {kind: approval}
    next: nap
  - step: nap
    tool: {kind: wait, duration: 1h}
`), 0o644))
	id := fmt.Sprintf("long-wait-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, file)
	require.Equal(t, 0, code, errOut)
	listed := func(status string) bool {
		_, out, _ := cli(t, "list", "--address", server.Address, "--status", status, "--playbook", "long-wait")
		return strings.Contains(out, id)
	}
	waitFor(t, "list --status waiting to find the run", func() bool { return listed("waiting") })
	code, _, errOut = cli(t, "approve", "--address", server.Address, id, "go")
	require.Equal(t, 0, code, errOut)
	waitFor(t, "the timer to start", func() bool { return countEvents(t, id, "", enums.EVENT_TYPE_TIMER_STARTED) == 1 })
	waitFor(t, "list --status running to find the run again", func() bool { return listed("running") })
	require.False(t, listed("waiting"), "a timer is not a person")
	code, out, errOut := cli(t, "status", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("Run %s (playbook long-wait): running,", id))
	code, _, errOut = cli(t, "cancel", "--address", server.Address, id, "--reason", "no need")
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	replay(t, "wait_cancelled", id, agg.RunID)
	require.Equal(t, contract.RunCancelled, agg.Status)
	require.Equal(t, contract.StatusCancelled, agg.Steps["nap"].Status)
}

// An agent decides approvals over MCP, in write mode only: the pending
// listing shows what waits, approve_step gives inputs, a refusal of the
// run's validator is the tool's error.
func TestMCPApprovesAndRejects(t *testing.T) {
	parallel(t)
	ro := mcpSession(t)
	id := startGate(t, "")
	text, isErr := callTool(t, ro, "approve_step", map[string]any{"run": id, "step": "sign_off", "reason": "r", "by": "alice"})
	require.True(t, isErr)
	require.Contains(t, text, "read-only: start it with `playbook mcp --allow-write`")
	require.Len(t, approvalsOf(t, id), 1, "nothing changed")

	// Writing, an agent decides as mcp, not as a person it names (#39).
	w := mcpSession(t, "--allow-write")
	text, isErr = callTool(t, w, "approve_step", map[string]any{"run": id, "step": "sign_off", "reason": "r", "by": "alice"})
	require.True(t, isErr)
	require.Equal(t, `this MCP server decides as mcp: it may decide for "alice" only when started with --act-for alice; nothing was sent`, text)
	require.Len(t, approvalsOf(t, id), 1, "nothing changed")

	s := mcpSession(t, "--allow-write", "--act-for", "alice,bob")
	text, isErr = callTool(t, s, "list_pending_failed", map[string]any{"run": id})
	require.False(t, isErr, text)
	var pending struct {
		Approvals []engine.WaitingApproval `json:"approvals"`
		Next      string                   `json:"next"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &pending))
	require.Len(t, pending.Approvals, 1)
	require.Equal(t, "Deploy 1.2? Ticket number required.", pending.Approvals[0].Message)
	require.Equal(t, map[string]string{"ticket": "string", "replicas": "int"}, pending.Approvals[0].Types)
	require.Contains(t, pending.Next, "approve_step")

	text, isErr = callTool(t, s, "approve_step", map[string]any{"run": id, "step": "sign_off", "reason": "r", "inputs": map[string]any{"ticket": "T"}})
	require.True(t, isErr)
	require.Equal(t, `mcp is not an approver of step "sign_off" (approvers: alice, bob)`, text)
	text, isErr = callTool(t, s, "approve_step", map[string]any{"run": id, "step": "sign_off", "reason": "r", "by": "alice", "inputs": map[string]any{"replicas": "two"}})
	require.True(t, isErr)
	require.Equal(t, `input replicas must be a whole number (its default is 3), not "two"`, text)
	text, isErr = callTool(t, s, "approve_step", map[string]any{"run": id, "step": "sign_off", "reason": "the ticket is open", "by": "alice", "inputs": map[string]any{"ticket": "MCP-1", "replicas": 2}})
	require.False(t, isErr, text)
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "ticket MCP-1 replicas 2\n", agg.Steps["show"].Result.(map[string]any)["stdout"])

	id = startGate(t, "")
	text, isErr = callTool(t, s, "reject_step", map[string]any{"run": id, "step": "sign_off", "reason": "no ticket", "by": "bob"})
	require.False(t, isErr, text)
	agg = finishID(t, id)
	require.Equal(t, contract.RunFailed, agg.Status)
	require.Equal(t, "rejected by bob: no ticket", agg.Steps["sign_off"].Error.Message)
}

// notify.on_waiting tells a webhook when an approval starts waiting: the
// run, the step, its message and the commands that decide it.
func TestOnWaitingWebhook(t *testing.T) {
	parallel(t)
	hook, got := noticeReceiver(t)
	file := filepath.Join(t.TempDir(), "told.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
metadata: {name: told}
notify: {on_waiting: {webhook: "`+hook.URL+`/waiting"}}
workflow:
  - step: sign_off
    tool: {kind: approval, message: "Go?"}
`), 0o644))
	id := fmt.Sprintf("told-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, file)
	require.Equal(t, 0, code, errOut)
	var body map[string]any
	select {
	case body = <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("the on_waiting webhook was not called within 60s")
	}
	require.Equal(t, "on_waiting", body["header"])
	require.Equal(t, id, body["workflow_id"])
	require.Equal(t, "sign_off", body["step"])
	require.Equal(t, "Go?", body["message"])
	require.Equal(t, []any{"playbook approve " + id + " sign_off", "playbook reject " + id + " sign_off --reason '...'"}, body["commands"])
	code, _, errOut = cli(t, "approve", "--address", server.Address, id, "sign_off")
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	replay(t, "approval_on_waiting", id, agg.RunID)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.NotEmpty(t, agg.Steps["sign_off"].Result.(map[string]any)["by"], "by: the user's name")
}

// The examples: approval.yaml waits until someone approves it, and the
// step after reads the inputs given; wait.yaml waits 2 s, then not at all.
func TestApprovalAndWaitExamples(t *testing.T) {
	parallel(t)
	id := fmt.Sprintf("approval-example-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, filepath.Join("..", "playbooks", "approval.yaml"))
	require.Equal(t, 0, code, errOut)
	waitFor(t, "sign_off to wait", func() bool { return len(approvalsOf(t, id)) == 1 })
	code, _, errOut = cli(t, "approve", "--address", server.Address, id, "sign_off", "--set", "ticket=OPS-1", "--set", "replicas=2")
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	replay(t, "approval.yaml", id, agg.RunID)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "deploying 1.2.0 on 2 replicas under OPS-1\n", agg.Steps["deploy"].Result.(map[string]any)["stdout"])

	r := runExample(t, "wait.yaml")
	require.Equal(t, contract.RunCompleted, r.agg.Status)
	require.Contains(t, r.agg.Steps["report"].Result, "waited 2s, then until ")
}

// Cancelling a run cancels the approval it waits for.
func TestApprovalCancelled(t *testing.T) {
	parallel(t)
	id := startGate(t, "")
	code, _, errOut := cli(t, "cancel", "--address", server.Address, id, "--reason", "release called off")
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	replay(t, "approval_cancelled", id, agg.RunID)
	require.Equal(t, contract.RunCancelled, agg.Status)
	require.Equal(t, contract.StatusCancelled, agg.Steps["sign_off"].Status)
	require.Nil(t, agg.Steps["sign_off"].Waiting)
	// An ended run takes no decision, as it takes no cancel: exit 5,
	// saying how it ended.
	code, _, errOut = cli(t, "approve", "--address", server.Address, id, "sign_off", "--by", "alice")
	require.Equal(t, 5, code, errOut)
	require.Equal(t, "approve: "+id+" already ended: cancelled, 0 of 2 steps failed; no step waits for approval\n", errOut)
	code, _, errOut = cli(t, "classify", "--address", server.Address, id, "sign_off", "retry")
	require.Equal(t, 5, code, errOut)
	require.Equal(t, "classify: "+id+" already ended: cancelled, 0 of 2 steps failed; no step waits for a classification\n", errOut)
}

// An approval in a sub-playbook waits in the child run, which is the one
// waiting and the one to approve.
func TestApprovalInASubPlaybook(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.yaml"), []byte(`
metadata: {name: child}
workflow:
  - step: gate
    tool: {kind: approval, message: "child asks"}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parent.yaml"), []byte(`
metadata: {name: parent}
workflow:
  - step: sub
    tool: {kind: playbook, path: child.yaml}
`), 0o644))
	id := fmt.Sprintf("parent-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, filepath.Join(dir, "parent.yaml"))
	require.Equal(t, 0, code, errOut)
	child := id + ".sub"
	waitFor(t, "the child's gate to wait", func() bool { return len(approvalsOf(t, child)) == 1 })
	_, out, _ := cli(t, "status", "--address", server.Address, child)
	require.Contains(t, out, "(playbook child): waiting,")
	// The parent's pending points at the child's run.
	_, out, _ = cli(t, "pending", "--address", server.Address, id)
	require.Equal(t, "No step is waiting for a person: no approval, no classification.\nStep sub runs a sub-playbook, whose steps may wait in its own run: playbook pending "+child+" --address "+server.Address+"\n", out)
	code, _, errOut = cli(t, "approve", "--address", server.Address, child, "gate")
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
}

// A run that ends while its on_waiting webhook is still being sent waits
// for it: the approval times out at once, the webhook answers a few
// seconds later, and the notify activity's completion is in the history
// before the run's.
func TestOnWaitingWebhookOutlivesAQuickDecision(t *testing.T) {
	parallel(t)
	called := make(chan struct{}, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called <- struct{}{}
		time.Sleep(3 * time.Second)
	}))
	defer hook.Close()
	file := filepath.Join(t.TempDir(), "quick.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
metadata: {name: quick}
notify: {on_waiting: {webhook: "`+hook.URL+`/waiting"}}
workflow:
  - step: sign_off
    tool: {kind: approval, message: "Go?", timeout: 1s, on_timeout: approve}
`), 0o644))
	id := fmt.Sprintf("quick-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, file)
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
	select {
	case <-called:
	default:
		t.Fatal("the on_waiting webhook was never called")
	}
	var notified, closed int
	for i, e := range history(t, id, agg.RunID).Events {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			notified = i
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			closed = i
		}
	}
	require.NotZero(t, notified, "the webhook's activity completed in the run")
	require.Less(t, notified, closed)
}

// A decision and a cancel sent together: whichever the run takes first
// decides, and the sender is told the truth. An approval the Update
// answered "approved" is completed in the aggregate; one the run no
// longer waited for is refused, and the step ends cancelled. The step
// after the gate waits an hour, so the run cannot complete before the
// cancel reaches it however late the cancel is sent (a quick step there
// let an approved run complete first on a loaded machine).
func TestApprovalAndCancelTogether(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	const gateThenWait = `
metadata: {name: gate}
workflow:
  - step: sign_off
    tool: {kind: approval, message: "Go?", inputs: {ticket: ""}, approvers: [alice]}
    next: hold
  - step: hold
    tool: {kind: wait, duration: 1h}
`
	for i := range 8 {
		id := startGatePlaybook(t, gateThenWait, true)
		decision := map[string]any{"step": "sign_off", "decision": "approve", "inputs": map[string]any{"ticket": fmt.Sprint("OPS-", i)}, "by": "alice"}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = tc.CancelWorkflow(ctx, id, "")
		}()
		var answer string
		h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "approval", Args: []any{decision}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, &answer)
		}
		wg.Wait()
		agg := finishID(t, id)
		require.Equal(t, contract.RunCancelled, agg.Status)
		gate := agg.Steps["sign_off"]
		if err == nil {
			require.Equal(t, "step sign_off approved", answer)
			require.Equal(t, contract.StatusCompleted, gate.Status, "round %d: the Update said approved", i)
		} else {
			require.Equal(t, contract.StatusCancelled, gate.Status, "round %d: the Update was refused: %v", i, err)
		}
	}
}

// noticeReceiver is a webhook that hands each notice it receives, its
// X-Playbook-Event header as "header", to got; it closes with the test.
func noticeReceiver(t *testing.T) (hook *httptest.Server, got chan map[string]any) {
	got = make(chan map[string]any, 4)
	hook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		body["header"] = r.Header.Get("X-Playbook-Event")
		got <- body
	}))
	t.Cleanup(hook.Close)
	return hook, got
}
