package engine

import (
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func gateRun(t *testing.T, onTimeout string) *Run {
	t.Helper()
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - step: gate
    tool: {kind: approval, message: "go?", inputs: {ticket: "", replicas: 3}, approvers: [alice], timeout: 1h, on_timeout: `+onTimeout+`}
    next: after
  - {step: after, tool: {kind: noop}}
`))
	require.NoError(t, err)
	at := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "t-1", func() time.Time { return at })
	require.Equal(t, []string{"gate"}, names(run.Ready()))
	require.Equal(t, contract.RunRunning, run.Snapshot().Status, "started, not yet waiting")
	run.AwaitApproval("gate", "go?")
	return run
}

func TestApprovalWaitsForADecision(t *testing.T) {
	run := gateRun(t, "fail")
	require.True(t, run.WaitsForPerson())
	require.Equal(t, contract.RunWaiting, run.Snapshot().Status)
	require.Contains(t, run.DetailsMarkdown(), "**waiting for approval**: step gate since 2026-03-01T06:00:00Z: go?")
	require.Contains(t, run.DetailsMarkdown(), "`playbook approve t-1 gate --set replicas=3 --set ticket='' --by alice`")
	w := run.Approvals()
	require.Len(t, w, 1)
	require.Equal(t, map[string]string{"ticket": spec.InputString, "replicas": spec.InputInt}, w[0].Types)
	require.Equal(t, time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC), *w[0].Deadline)

	for d, want := range map[*contract.ApprovalDecision]string{
		{Step: "after", Decision: "approve", By: "alice"}:                                          `step "after" is not an approval step`,
		{Step: "nosuch", Decision: "approve", By: "alice"}:                                         `no step "nosuch" in playbook t`,
		{Step: "gate", Decision: "ok", By: "alice"}:                                                `decision "ok": approve or reject`,
		{Step: "gate", Decision: "approve", By: "carol"}:                                           `carol is not an approver of step "gate" (approvers: alice)`,
		{Step: "gate", Decision: "approve", By: "alice", Inputs: map[string]any{"replicas": "x"}}:  `input replicas must be a whole number (its default is 3), not "x"`,
		{Step: "gate", Decision: "reject", By: "alice", Inputs: map[string]any{"ticket": "OPS-1"}}: `inputs go with approve, not reject`,
	} {
		require.EqualError(t, run.CheckApproval(*d), want)
	}
	require.True(t, run.WaitsForPerson(), "refusals change nothing")

	o, err := run.Decide(contract.ApprovalDecision{Step: "gate", Decision: "approve", By: "alice", Inputs: map[string]any{"ticket": "OPS-1", "replicas": 2.0}, Reason: "ok"})
	require.NoError(t, err)
	require.False(t, run.WaitsForPerson())
	require.EqualError(t, run.CheckApproval(contract.ApprovalDecision{Step: "gate", Decision: "approve", By: "alice"}), `step "gate" is running, not waiting for approval`, "decided once")
	require.Equal(t, map[string]any{"decision": "approved", "inputs": map[string]any{"ticket": "OPS-1", "replicas": 2}, "by": "alice", "reason": "ok", "at": "2026-03-01T06:00:00Z"}, o.Result)
	run.Settle("gate", o)
	require.Equal(t, contract.StatusCompleted, run.State("gate").Status)
	require.Equal(t, []string{"after"}, names(run.Ready()))
}

func TestApprovalRejectedAndTimedOut(t *testing.T) {
	run := gateRun(t, "fail")
	o, err := run.Decide(contract.ApprovalDecision{Step: "gate", Decision: "reject", By: "alice", Reason: "not now"})
	require.NoError(t, err)
	run.Settle("gate", o)
	require.Equal(t, contract.StatusFailed, run.State("gate").Status)
	require.Equal(t, contract.ErrRejected, run.State("gate").Error.Type)
	require.Equal(t, "rejected by alice: not now", run.State("gate").Error.Message)

	for onTimeout, want := range map[string]string{"fail": contract.ErrTimeout, "reject": contract.ErrRejected, "approve": ""} {
		run := gateRun(t, onTimeout)
		o := run.ApprovalTimedOut("gate")
		require.False(t, run.WaitsForPerson())
		if want == "" {
			require.Nil(t, o.Err)
			require.Equal(t, "timeout", o.Result.(map[string]any)["by"])
			require.Equal(t, map[string]any{"ticket": "", "replicas": 3}, o.Result.(map[string]any)["inputs"], "the defaults")
			continue
		}
		require.Equal(t, want, o.Err.Type, onTimeout)
		require.Contains(t, o.Err.Message, "no decision within 1h0m0s")
	}
}

func TestCancelledApprovalNoLongerWaits(t *testing.T) {
	run := gateRun(t, "fail")
	run.Settle("gate", contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "cancelled"}})
	require.False(t, run.WaitsForPerson())
	require.Equal(t, contract.RunRunning, run.Snapshot().Status)
}

// An input with no default is required (#38): the suggested approve line
// leaves a placeholder for it, an approve without it (or with it empty)
// is refused, a reject needs none, and Decide (what replays run) takes the
// decision as it came.
func TestApprovalRequiredInput(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - step: gate
    tool: {kind: approval, message: "go?", inputs: {ticket: null, replicas: 3}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", func() time.Time { return time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC) })
	run.Ready()
	run.AwaitApproval("gate", "go?")
	require.Equal(t, []string{"playbook approve t-1 gate --set replicas=3 --set ticket=<ticket>", "playbook reject t-1 gate --reason '...'"},
		ApprovalCommands("t-1", "gate", pb.Step("gate").Tool.Approval()))
	for _, inputs := range []map[string]any{nil, {"replicas": 2}, {"ticket": ""}, {"ticket": nil}} {
		require.EqualError(t, run.CheckApproval(contract.ApprovalDecision{Step: "gate", Decision: "approve", Inputs: inputs}),
			"input ticket is required (it has no default): give --set ticket=VALUE", "inputs %v", inputs)
	}
	require.NoError(t, run.CheckApproval(contract.ApprovalDecision{Step: "gate", Decision: "reject"}))
	require.NoError(t, run.CheckApproval(contract.ApprovalDecision{Step: "gate", Decision: "approve", Inputs: map[string]any{"ticket": "OPS-1"}}))
	o, err := run.Decide(contract.ApprovalDecision{Step: "gate", Decision: "approve"})
	require.NoError(t, err, "a replay of a run recorded before inputs could be required")
	require.Equal(t, map[string]any{"ticket": nil, "replicas": 3}, o.Result.(map[string]any)["inputs"])
}

// An approval's result over the aggregate's budget is a stub that names
// where the whole value is: the approval Update in the run's history, not
// an activity it never ran (#38).
func TestApprovalStubNamesTheUpdate(t *testing.T) {
	run := gateRun(t, "fail")
	o, err := run.Decide(contract.ApprovalDecision{Step: "gate", Decision: "approve", By: "alice", Inputs: map[string]any{"ticket": strings.Repeat("x", 2<<20)}})
	require.NoError(t, err)
	run.Settle("gate", o)
	agg := run.Bounded(run.Snapshot())
	stub, ok := agg.Steps["gate"].Result.(map[string]any)
	require.True(t, ok)
	require.Equal(t, "the approval Update in the run's history (playbook history RUN): the inputs the person gave, over the defaults the playbook declares", stub["full_in"])
}
