package worker

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	protocolpb "go.temporal.io/api/protocol/v1"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"playbook/interpreter/contract"
)

// updateTask is a workflow task carrying one Update of name with a reason
// of size bytes.
func updateTask(t *testing.T, name string, size int) *workflowservice.PollWorkflowTaskQueueResponse {
	t.Helper()
	args, err := converter.GetDefaultDataConverter().ToPayloads(contract.ApprovalDecision{Step: "gate", Decision: "approve", Reason: strings.Repeat("x", size)})
	require.NoError(t, err)
	body, err := anypb.New(&updatepb.Request{Meta: &updatepb.Meta{UpdateId: "u"}, Input: &updatepb.Input{Name: name, Args: args}})
	require.NoError(t, err)
	return &workflowservice.PollWorkflowTaskQueueResponse{TaskToken: []byte("t"), Messages: []*protocolpb.Message{{Id: "m", Body: body}}}
}

// argsOf is the size of the task's Update's arguments and, in place of
// them, what they hold: a decision, or a marker's text.
func argsOf(t *testing.T, task *workflowservice.PollWorkflowTaskQueueResponse) (int, any) {
	t.Helper()
	var u updatepb.Request
	require.NoError(t, task.GetMessages()[0].GetBody().UnmarshalTo(&u))
	var held any = &contract.ApprovalDecision{}
	if s := new(string); converter.GetDefaultDataConverter().FromPayloads(u.GetInput().GetArgs(), s) == nil {
		held = *s
	} else {
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(u.GetInput().GetArgs(), held))
		held = *held.(*contract.ApprovalDecision)
	}
	return proto.Size(u.GetInput().GetArgs()), held
}

// An Update over the bound reaches the run as a marker of its size,
// however the worker gets its workflow task: from a poll, or handed back
// at once with the answer to the task it completed (the server does so
// when an Update came in while the worker ran the previous task: #39's
// 3 MB decision then failed the run's workflow tasks for ~20 s). One
// under the bound reaches the run whole.
func TestOversizedUpdatesShrunkOnEveryPath(t *testing.T) {
	const huge = 3 << 20
	for _, path := range []struct {
		name  string
		reply func(task *workflowservice.PollWorkflowTaskQueueResponse) (any, func() *workflowservice.PollWorkflowTaskQueueResponse)
	}{
		{"poll", func(task *workflowservice.PollWorkflowTaskQueueResponse) (any, func() *workflowservice.PollWorkflowTaskQueueResponse) {
			r := &workflowservice.PollWorkflowTaskQueueResponse{}
			return r, func() *workflowservice.PollWorkflowTaskQueueResponse { return r }
		}},
		{"completed", func(task *workflowservice.PollWorkflowTaskQueueResponse) (any, func() *workflowservice.PollWorkflowTaskQueueResponse) {
			r := &workflowservice.RespondWorkflowTaskCompletedResponse{}
			return r, func() *workflowservice.PollWorkflowTaskQueueResponse { return r.GetWorkflowTask() }
		}},
	} {
		for _, c := range []struct {
			name   string
			size   int
			shrunk bool
		}{{contract.UpdateApproval, huge, true}, {contract.UpdateClassify, huge, true}, {contract.UpdateApproval, 1 << 10, false}} {
			sent := updateTask(t, c.name, c.size)
			reply, got := path.reply(sent)
			invoke := func(_ context.Context, _ string, _, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				switch r := reply.(type) {
				case *workflowservice.PollWorkflowTaskQueueResponse:
					proto.Merge(r, sent)
				case *workflowservice.RespondWorkflowTaskCompletedResponse:
					r.WorkflowTask = sent
				}
				return nil
			}
			require.NoError(t, shrinkOversizedUpdates(context.Background(), "m", nil, reply, nil, invoke))
			size, held := argsOf(t, got())
			if !c.shrunk {
				require.Len(t, held.(contract.ApprovalDecision).Reason, c.size, "%s %s: whole", path.name, c.name)
				continue
			}
			require.Less(t, size, 1<<10, "%s %s: a marker in place of %d bytes", path.name, c.name, c.size)
			if c.name == contract.UpdateApproval {
				require.Greater(t, held.(contract.ApprovalDecision).OversizedBytes, huge, path.name)
			} else {
				n, ok := contract.Oversized(held.(string))
				require.True(t, ok, "%s %s: %q", path.name, c.name, held)
				require.Greater(t, n, huge)
			}
		}
	}
}
