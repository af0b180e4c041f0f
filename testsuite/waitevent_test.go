package testsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
)

// startDetached submits a playbook file, detached, under a fresh ID.
func startDetached(t *testing.T, prefix, file string, args ...string) string {
	t.Helper()
	id := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	code, _, errOut := cli(t, append([]string{"run", "--address", server.Address, "--detach", "--id", id}, append(args, file)...)...)
	require.Equal(t, 0, code, errOut)
	return id
}

// stepWaiting is what a run's step waits for, as its state says ("" when
// it does not wait).
func stepWaiting(t *testing.T, id, step string) string {
	v, err := tc.QueryWorkflow(context.Background(), id, "", contract.QueryState)
	if err != nil {
		return ""
	}
	var agg contract.Aggregate
	require.NoError(t, v.Get(&agg))
	if st := agg.Steps[step]; st != nil && st.Waiting != nil {
		return st.Waiting.For
	}
	return ""
}

// sendEvent sends an event as any Temporal client does: the arguments
// `temporal workflow update execute --name event --input '"EVENT"' --input
// 'DATA'` sends (docs/LANGUAGE.md).
func sendEvent(t *testing.T, id string, args ...any) (string, error) {
	ctx := context.Background()
	h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateEvent, Args: args, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return "", err
	}
	var answer string
	err = h.Get(ctx, &answer)
	return answer, err
}

// floodEvent sends event file_landed to run id as Update flood-N, again
// while the client's wait for it times out (a loaded machine): the same
// Update ID gets the outcome the first send came to.
func floodEvent(id string, n int) error {
	for {
		h, err := tc.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: fmt.Sprintf("flood-%d", n),
			UpdateName: contract.UpdateEvent, Args: []any{"file_landed", map[string]any{"n": n}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(context.Background(), nil)
		}
		var timedOut *client.WorkflowUpdateServiceTimeoutOrCanceledError
		if !errors.As(err, &timedOut) {
			return err
		}
	}
}

// The example waits for its event, shows `waiting` and for what, and
// completes with the data `playbook send` gave; an event to the run once
// it has ended is refused as such (acceptance 3 of #44).
func TestWaitEventExample(t *testing.T) {
	parallel(t)
	id := startDetached(t, "partner", "../playbooks/partner_file.yaml")
	waitFor(t, "landed to wait for its event", func() bool { return stepWaiting(t, id, "landed") == "event file_landed" })
	code, out, errOut := cli(t, "status", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "waiting")
	require.Contains(t, out, "waiting for event file_landed")
	require.Contains(t, out, "playbook send "+id+" file_landed")
	require.Regexp(t, "Waiting for event file_landed: step landed since \\d\\d:\\d\\d:\\d\\d \\(`playbook send "+id+" file_landed --data '\\{...\\}' --address "+regexp.QuoteMeta(server.Address)+"` sends it\\)\n", out)
	require.NotContains(t, out, "playbook pending", "no person decides an event")

	code, out, errOut = cli(t, "send", "--address", server.Address, id, "file_landed", "--data", `{"path": "/drop/orders.csv", "rows": 12345678901}`, "--by", "partner")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "event file_landed received by step landed\n", out)
	agg := finishID(t, id)
	replay(t, "wait_event_cli", id, agg.RunID)
	require.Equal(t, contract.RunCompleted, agg.Status)
	res := agg.Steps["landed"].Result.(map[string]any)
	require.Equal(t, "partner", res["by"])
	require.Equal(t, false, res["timed_out"])
	require.Equal(t, map[string]any{"path": "/drop/orders.csv", "rows": float64(12345678901)}, res["data"])
	require.Equal(t, "loading /drop/orders.csv into orders\n", agg.Steps["load"].Result.(map[string]any)["stdout"])

	code, _, errOut = cli(t, "send", "--address", server.Address, id, "file_landed", "--data", `{}`)
	require.Equal(t, 5, code, errOut)
	require.Contains(t, errOut, id+" already ended: completed")
	require.Contains(t, errOut, "no step waits for event file_landed")
}

// An event sent as the temporal CLI sends it reaches the step, even
// before the step started (the run keeps it); one the run would not take
// is refused and leaves nothing in the history.
func TestWaitEventUpdateFromAnySDKClient(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "pb.yaml", `
metadata: {name: early-event}
workflow:
  - step: first
    tool: {kind: wait, duration: 3s}
    next: go
  - step: go
    tool: {kind: wait_event, event: go_ahead}
    next: show
  - step: show
    tool: {kind: noop, result: "{{ steps.go.result.data.who }}"}
`)
	id := startDetached(t, "early", file)
	_, err := sendEvent(t, id, "no_such")
	require.ErrorContains(t, err, "no step of playbook early-event waits for event no_such (its wait_event steps wait for: go_ahead)")
	_, err = sendEvent(t, id, "Bad Name", nil)
	require.ErrorContains(t, err, `event "Bad Name": an event's name matches`)
	var data map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"who": "a script"}`), &data))
	answer, err := sendEvent(t, id, "go_ahead", data)
	require.NoError(t, err)
	require.Equal(t, "event go_ahead received by step go", answer)
	_, err = sendEvent(t, id, "go_ahead", data)
	require.ErrorContains(t, err, "event go_ahead was already received by step go: a wait_event step takes one event")
	agg := finishID(t, id)
	replay(t, "wait_event_early", id, agg.RunID)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "a script", agg.Steps["show"].Result)
	require.Equal(t, "anonymous", agg.Steps["go"].Result.(map[string]any)["by"])
	require.Equal(t, 1, countEvents(t, id, agg.RunID, enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED), "the refused events left nothing in the history")
}

// A wait_event step's timeout decides by its on_timeout: fail fails it
// (error type timeout), complete completes it with no data.
func TestWaitEventTimesOut(t *testing.T) {
	parallel(t)
	for _, on := range []string{"fail", "complete"} {
		t.Run(on, func(t *testing.T) {
			file := writePlaybook(t, t.TempDir(), "pb.yaml", fmt.Sprintf(`
metadata: {name: event-timeout}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed, timeout: 2s, on_timeout: %s}
`, on))
			id := startDetached(t, "event-timeout", file)
			agg := finishID(t, id)
			replay(t, "wait_event_timeout_"+on, id, agg.RunID)
			st := agg.Steps["landed"]
			if on == "fail" {
				require.Equal(t, contract.RunFailed, agg.Status)
				require.Equal(t, contract.ErrTimeout, st.Error.Type)
				require.Contains(t, st.Error.Message, "no event file_landed within 2s")
				return
			}
			require.Equal(t, contract.RunCompleted, agg.Status)
			res := st.Result.(map[string]any)
			require.Equal(t, true, res["timed_out"])
			require.Nil(t, res["data"])
		})
	}
}

// Hostile senders: a 10 MB payload is refused before anything is sent;
// 1,000 events sent at once to one run are refused but the one its step
// takes, and its history holds that one; data over the run's bound sent
// past the CLI is refused by the run (acceptance 3 and 6 of #44).
func TestWaitEventRefusals(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "pb.yaml", `
metadata: {name: flooded}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed}
    next: hold
  - step: hold
    tool: {kind: wait, duration: 1h}
`)
	id := startDetached(t, "flooded", file)
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), id, "", "test over") })

	big := `{"blob": "` + strings.Repeat("x", 10<<20) + `"}`
	code, _, errOut := cli(t, "send", "--address", server.Address, id, "file_landed", "--data", big)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "over the limit of 262144 (256 KiB) on what is sent to a run: nothing was sent")
	code, _, errOut = cli(t, "send", "--address", server.Address, id, "file_landed", "--data", `{"x": NaN}`)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--data: not JSON")

	_, err := sendEvent(t, id, "file_landed", strings.Repeat("y", 600<<10))
	require.ErrorContains(t, err, "over the limit of 262144")

	var (
		mu       sync.Mutex
		accepted int
		refusals = map[string]int{}
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	for range 20 {
		wg.Go(func() {
			for i := range next {
				err := floodEvent(id, i)
				mu.Lock()
				if err == nil {
					accepted++
				} else {
					refusals[err.Error()]++
				}
				mu.Unlock()
			}
		})
	}
	for i := range 1000 {
		next <- i
	}
	close(next)
	wg.Wait()
	require.Equal(t, 1, accepted, "refusals: %v", refusals)
	require.Len(t, refusals, 1, "one refusal, the same for each: %v", refusals)
	for msg := range refusals {
		require.Contains(t, msg, "event file_landed was already received by step landed")
	}
	waitFor(t, "hold to start", func() bool {
		v, err := tc.QueryWorkflow(context.Background(), id, "", contract.QueryState)
		var agg contract.Aggregate
		return err == nil && v.Get(&agg) == nil && agg.Steps["hold"].Status == contract.StatusRunning
	})
	desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	require.Less(t, desc.WorkflowExecutionInfo.HistoryLength, int64(40), "the refused events left nothing in the history")
	require.Equal(t, 1, countEvents(t, id, desc.WorkflowExecutionInfo.Execution.RunId, enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED))
}

// The MCP server sends events when it may write: the step completes with
// the data, by mcp; what the run refuses is the tool's error.
func TestMCPSendsEvents(t *testing.T) {
	parallel(t)
	id := startDetached(t, "partner-mcp", "../playbooks/partner_file.yaml")
	text, isErr := callTool(t, mcpSession(t), "send_event", map[string]any{"run": id, "event": "file_landed"})
	require.True(t, isErr)
	require.Contains(t, text, "read-only: start it with `playbook mcp --allow-write`")

	s := mcpSession(t, "--allow-write")
	text, isErr = callTool(t, s, "send_event", map[string]any{"run": id, "event": "file_gone"})
	require.True(t, isErr)
	require.Contains(t, text, "no step of playbook partner-file waits for event file_gone (its wait_event steps wait for: file_landed)")
	text, isErr = callTool(t, s, "send_event", map[string]any{"run": id, "event": "file_landed", "data": map[string]any{"path": "/drop/mcp.csv"}})
	require.False(t, isErr, text)
	require.Contains(t, text, "event file_landed received by step landed")
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "mcp", agg.Steps["landed"].Result.(map[string]any)["by"])
	require.Equal(t, "loading /drop/mcp.csv into orders\n", agg.Steps["load"].Result.(map[string]any)["stdout"])
}

// An event can start the run that waits for it: `send --start FILE`
// starts a run of FILE with the ID given, which receives the event in the
// same request; a playbook none of whose steps waits for the event is
// refused before anything starts (acceptance 3 of #44).
func TestRunStartedByAnEvent(t *testing.T) {
	parallel(t)
	id := fmt.Sprintf("partner-started-%d", time.Now().UnixNano())
	code, out, errOut := cli(t, "send", "--address", server.Address, id, "file_landed", "--start", "../playbooks/partner_file.yaml",
		"--set", "table=events", "--data", `{"path": "/drop/first.csv"}`, "--by", "partner")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^event file_landed received by step landed \(run \S+\)\n$`, out)
	agg := finishID(t, id)
	replay(t, "wait_event_started", id, agg.RunID)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "partner", agg.Steps["landed"].Result.(map[string]any)["by"])
	require.Equal(t, "loading /drop/first.csv into events\n", agg.Steps["load"].Result.(map[string]any)["stdout"])

	other := id + "-none"
	code, _, errOut = cli(t, "send", "--address", server.Address, other, "file_gone", "--start", "../playbooks/partner_file.yaml")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "no wait_event step waits for event file_gone: a run of it would refuse the event, so none is started")
	_, err := tc.DescribeWorkflowExecution(context.Background(), other, "")
	require.Error(t, err, "nothing started")
}

// notify.on_waiting tells a webhook when a wait_event step starts
// waiting, as it does for an approval: what it waits for and the command
// that sends the event (#44, `notify.on_waiting` for wait_event waits).
func TestOnWaitingWebhookForAnEvent(t *testing.T) {
	parallel(t)
	hook, got := noticeReceiver(t)
	file := writePlaybook(t, t.TempDir(), "told.yaml", `
metadata: {name: told-event}
notify: {on_waiting: {webhook: "`+hook.URL+`/waiting"}}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed}
`)
	id := startDetached(t, "told-event", file)
	var body map[string]any
	select {
	case body = <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("the on_waiting webhook was not called within 60s")
	}
	require.Equal(t, "on_waiting", body["header"])
	require.Equal(t, id, body["workflow_id"])
	require.Equal(t, "landed", body["step"])
	require.Equal(t, "event file_landed", body["waiting_for"])
	require.Equal(t, []any{"playbook send " + id + " file_landed --data '{...}'"}, body["commands"])
	code, _, errOut := cli(t, "send", "--address", server.Address, id, "file_landed", "--data", `{"path": "x"}`)
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
}

// temporalCLI is the official `temporal` CLI to drive runs with: $TEMPORAL_CLI,
// else `temporal` on PATH; "" when there is none.
func temporalCLI() string {
	if p := os.Getenv("TEMPORAL_CLI"); p != "" {
		return p
	}
	p, _ := exec.LookPath("temporal")
	return p
}

// An event sent by the official temporal CLI, as docs/LANGUAGE.md prints
// the command, reaches the wait_event step (acceptance 3 of #44). It needs
// the CLI: `go build` of github.com/temporalio/cli/cmd/temporal (v1.5.1;
// docs/OPERATIONS.md says how), named by $TEMPORAL_CLI or on PATH; `make
// test-cluster` builds it and runs this test.
func TestWaitEventFromTheTemporalCLI(t *testing.T) {
	parallel(t)
	bin := temporalCLI()
	if bin == "" {
		t.Skip("no temporal CLI: set TEMPORAL_CLI or put temporal on PATH")
	}
	id := startDetached(t, "partner-tcli", "../playbooks/partner_file.yaml")
	waitFor(t, "landed to wait for its event", func() bool { return stepWaiting(t, id, "landed") == "event file_landed" })
	out, err := exec.Command(bin, "workflow", "update", "execute", "--address", server.Address, "--namespace", server.Namespace,
		"--workflow-id", id, "--name", "event", "--input", `"file_landed"`, "--input", `{"path": "/drop/t.csv"}`, "--input", `"temporal-cli"`).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "event file_landed received by step landed")
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
	res := agg.Steps["landed"].Result.(map[string]any)
	require.Equal(t, map[string]any{"path": "/drop/t.csv"}, res["data"])
	require.Equal(t, "temporal-cli", res["by"])
}
