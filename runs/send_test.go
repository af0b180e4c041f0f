package runs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// An event from a webhook reaches a run of the hook's playbook only,
// whether the namespace indexes the runs' playbook (read from the search
// attribute) or not (read from the frozen playbook); it is sent by
// "webhook NAME" to the Temporal run checked, and a delivery ID names its
// Update, so that the server applies a resent delivery once.
func TestSendFromHookReachesItsPlaybookOnly(t *testing.T) {
	events := map[string]func(args ...any) (string, error){contract.UpdateEvent: func(args ...any) (string, error) {
		return "event " + args[0].(string) + " received by step a", nil
	}}
	other := strings.Replace(threeSteps, "name: three", "name: other", 1)
	f := &fakeClient{runs: map[string]*fakeRun{
		"plain":   {input: &contract.Input{File: "three.yaml", Source: threeSteps}, updates: events},
		"indexed": {indexed: "three", updates: events},
		"foreign": {input: &contract.Input{File: "other.yaml", Source: other}, updates: events},
		"tagged":  {input: &contract.Input{File: "three.yaml", Source: threeSteps}, indexed: "other", updates: events},
	}}
	reg := contract.TriggerRegistration{Playbook: "three", Hook: "sensor"}
	ctx := context.Background()

	for _, run := range []string{"foreign", "tagged", "nope"} {
		_, err := SendFromHook(ctx, f, reg, Delivery{Hook: "sensor"}, run, "landed", nil)
		var nf *NotFoundError
		require.True(t, errors.As(err, &nf), "%s: %v", run, err)
	}
	require.Empty(t, f.updated, "nothing is sent to a run of another playbook")

	for _, run := range []string{"plain", "indexed", "plain"} {
		answer, err := SendFromHook(ctx, f, reg, Delivery{Hook: "sensor", ID: "d-1"}, run, "landed", map[string]any{"path": "/x"})
		require.NoError(t, err)
		require.Equal(t, "event landed received by step a", answer)
	}
	require.Len(t, f.updated, 3)
	for _, o := range f.updated {
		require.Equal(t, o.WorkflowID+"-run", o.RunID, "the run checked takes it")
		require.Equal(t, "webhook-"+IDDigest("sensor\x00d-1\x00"+o.WorkflowID+"\x00landed"), o.UpdateID, "one delivery ID, each run and event its own Update")
		require.Equal(t, []any{"landed", map[string]any{"path": "/x"}, "webhook sensor"}, o.Args)
	}
	_, err := SendFromHook(ctx, f, reg, Delivery{Hook: "sensor"}, "plain", "landed", nil)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(f.updated[3].UpdateID, "decide-"), "without a delivery ID, an Update of its own: %s", f.updated[3].UpdateID)
}
