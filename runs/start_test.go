package runs

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"playbook/interpreter/contract"
)

// A run starts with the ID asked for, else NAME-RANDOM; its summary names
// the playbook; in a namespace with playbook's search attributes it starts
// with them and its input says to keep them current, in one without it
// starts with none. An ID in use is the server's error, never an attach.
func TestStartRunNamesItAndIndexesIt(t *testing.T) {
	ctx := context.Background()
	pb, in, err := Load(writePlaybook(t, "three.yaml", threeSteps))
	require.NoError(t, err)
	require.Equal(t, threeSteps, in.Source)

	f := &fakeClient{runs: map[string]*fakeRun{}}
	wr, err := StartRun(ctx, f, "ns", Start{Playbook: pb, Input: in, ID: "mine", TaskQueue: "q", Details: "retry of r0"})
	require.NoError(t, err)
	require.Equal(t, "mine", wr.GetID())
	got := f.started[0]
	require.Equal(t, "mine", got.opts.ID)
	require.Equal(t, "q", got.opts.TaskQueue)
	require.Equal(t, "playbook three", got.opts.StaticSummary)
	require.Equal(t, "retry of r0", got.opts.StaticDetails)
	require.False(t, got.input.Index, "no search attributes: the run keeps none")
	require.Zero(t, got.opts.TypedSearchAttributes.Size())

	f.attrs = SearchAttributes()
	_, err = StartRun(ctx, f, "ns", Start{Playbook: pb, Input: in, TaskQueue: "q"})
	require.NoError(t, err)
	got = f.started[1]
	require.Regexp(t, regexp.MustCompile(`^three-[a-z0-9]{5}$`), got.opts.ID)
	require.True(t, got.input.Index)
	name, _ := got.opts.TypedSearchAttributes.GetKeyword(AttrPlaybookName)
	status, _ := got.opts.TypedSearchAttributes.GetKeyword(AttrPlaybookStatus)
	require.Equal(t, []string{"three", contract.RunRunning}, []string{name, status})
	require.True(t, got.opts.WorkflowExecutionErrorWhenAlreadyStarted)

	f.runs["taken"] = &fakeRun{}
	_, err = StartRun(ctx, f, "ns", Start{Playbook: pb, Input: in, ID: "taken", TaskQueue: "q"})
	var inUse *serviceerror.WorkflowExecutionAlreadyStarted
	require.ErrorAs(t, err, &inUse)
}
