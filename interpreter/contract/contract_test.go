package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// The contract's JSON is what recorded histories hold: a step's retry
// block and failure handler travel under the names they always had (zero
// fields left out), and the activity gets the retry expressions compiled
// again from their source.
func TestStepInputKeepsItsWireFormat(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
failure_handlers:
  - name: flaky
    rules: [{exit_codes: [75], max_retries: 2}]
workflow:
  - step: s
    tool: {kind: shell, command: "exit 75"}
    failure_handler: flaky
    retry: {max_attempts: 4, initial_delay: 2s, retry_when: "{{ exit_code == 75 }}", stop_when: "attempt > 2"}
`))
	require.NoError(t, err)
	s := pb.Step("s")
	in := StepInput{Step: "s", Kind: "shell", Spec: map[string]any{"command": "exit 75"}, Timeout: time.Second,
		Retry: s.RetryBlock(), Handler: s.FailureHandler, Lost: &LostSpec{Attempts: 3}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.JSONEq(t, `{"workflow_id":"","run_id":"","step":"s","kind":"shell","spec":{"command":"exit 75"},"timeout":1000000000,
		"retry":{"max_attempts":4,"initial_delay":2000000000,"backoff_multiplier":2,"max_delay":60000000000,"jitter":true,"retry_when":"exit_code == 75","stop_when":"attempt > 2"},
		"handler":{"name":"flaky","rules":[{"exit_codes":[75],"max_retries":2}]},"lost":{"attempts":3}}`, string(b))

	var back StepInput
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "exit_code == 75", back.Retry.RetryWhen.Source)
	ok, err := back.Retry.RetryWhen.EvalBool(map[string]any{"exit_code": 75, "attempt": 1})
	require.NoError(t, err)
	require.True(t, ok, "the expression arrives compiled")
	require.Equal(t, s.FailureHandler.Rules, back.Handler.Rules)

	none, err := json.Marshal(pb.Step("end").RetryBlock())
	require.NoError(t, err)
	require.JSONEq(t, `{"max_attempts":1}`, string(none))

	// An input recorded with its zero fields written out reads the same.
	var recorded StepInput
	require.NoError(t, json.Unmarshal([]byte(`{"workflow_id":"w","run_id":"r","step":"s","kind":"shell","spec":{"command":"true"},"base_dir":"","timeout":0,
		"retry":{"max_attempts":1,"initial_delay":0,"backoff_multiplier":0,"max_delay":0,"jitter":false}}`), &recorded))
	require.Equal(t, StepInput{WorkflowID: "w", RunID: "r", Step: "s", Kind: "shell", Spec: map[string]any{"command": "true"}, Retry: spec.Retry{MaxAttempts: 1}}, recorded)
}

// A step's input counts against its budget as it was written before its
// zero fields were left out (leftOut is the old form's length over the
// new one's, for any mix of zero fields), so that an input just over the
// budget then is over it still: a run recorded then replays as it ran.
func TestBudgetsCountAStepInputAsItWasWritten(t *testing.T) {
	oldLength := func(in StepInput) int {
		b, err := json.Marshal(in)
		require.NoError(t, err)
		var top, retry map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &top))
		require.NoError(t, json.Unmarshal(top["retry"], &retry))
		for k, zero := range map[string]string{"max_attempts": "0", "initial_delay": "0", "backoff_multiplier": "0", "max_delay": "0", "jitter": "false"} {
			if _, ok := retry[k]; !ok {
				retry[k] = json.RawMessage(zero)
			}
		}
		for k, zero := range map[string]string{"base_dir": `""`, "timeout": "0"} {
			if _, ok := top[k]; !ok {
				top[k] = json.RawMessage(zero)
			}
		}
		if top["retry"], err = json.Marshal(retry); err != nil {
			t.Fatal(err)
		}
		old, err := json.Marshal(top)
		require.NoError(t, err)
		return len(old)
	}
	when, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: s, tool: {kind: noop}, retry: {retry_when: \"attempt < 2\"}}\n"))
	require.NoError(t, err)
	retries := []spec.Retry{{}, {MaxAttempts: 1}, spec.DefaultRetry(), {Jitter: true}, {MaxDuration: time.Minute}, {Multiplier: 1.5, MaxDelay: time.Second}, when.Step("s").RetryBlock()}
	for _, r := range retries {
		for _, in := range []StepInput{
			{Step: "s", Kind: "shell", Spec: map[string]any{"command": "true"}, Retry: r},
			{Step: "s", Kind: "shell", Spec: map[string]any{"command": "true"}, Retry: r, BaseDir: "/p", Timeout: time.Second},
			{Step: "s", Kind: "shell", Spec: map[string]any{"command": "true"}, Retry: r, Timeout: time.Second},
		} {
			n, err := EncodedSize(in)
			require.NoError(t, err)
			require.Equal(t, oldLength(in), n+leftOut(in), "%+v", in)
			require.Equal(t, leftOut(in), leftOut(&in))
			require.Equal(t, leftOut(in), leftOut(LoopInput{Common: in}))
		}
	}

	// An input the old form put just over the budget is over it still.
	in := StepInput{Step: "s", Kind: "shell", Retry: spec.Retry{MaxAttempts: 1}}
	in.Spec = map[string]any{"command": ""}
	n, _ := EncodedSize(in)
	in.Spec["command"] = strings.Repeat("x", PayloadBudget-n-leftOut(in)+1)
	n, _ = EncodedSize(in)
	require.LessOrEqual(t, n, PayloadBudget, "the new form fits")
	require.NotNil(t, CheckPayload("the input of step s", in), "the old form did not")
	in.Spec["command"] = in.Spec["command"].(string)[1:]
	require.Nil(t, CheckPayload("the input of step s", in))
}
