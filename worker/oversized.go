package worker

import (
	"context"

	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"playbook/interpreter/contract"
)

// oversizedArgs is the size of an Update's arguments past which the
// worker does not hand them to the run: twice what the run's validator
// takes (contract.MaxDecisionBytes), so that everything in between is
// measured and refused by the validator itself.
const oversizedArgs = 2 * contract.MaxDecisionBytes

// RefuseOversizedUpdates has the worker's connection put a small marker in
// place of the arguments of a run's Update (an approval, a
// classification) over oversizedArgs, as the worker receives it, so that
// the run's validator refuses it by its size at once. Without it, the
// refusal repeats the whole request, and one over Temporal's 2 MB limit
// fails the run's workflow tasks until the server gives the Update up
// (the server would end the run if the worker sent it).
func RefuseOversizedUpdates(opts *client.Options) {
	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpc.WithChainUnaryInterceptor(shrinkOversizedUpdates))
}

func shrinkOversizedUpdates(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	// A workflow task comes from a poll, or with the answer to the task
	// the worker completed (the server hands the next one back at once
	// when an Update came in meanwhile).
	var task *workflowservice.PollWorkflowTaskQueueResponse
	switch r := reply.(type) {
	case *workflowservice.PollWorkflowTaskQueueResponse:
		task = r
	case *workflowservice.RespondWorkflowTaskCompletedResponse:
		task = r.GetWorkflowTask()
	}
	if task != nil && err == nil {
		for _, m := range task.GetMessages() {
			var u updatepb.Request
			if m.GetBody().UnmarshalTo(&u) != nil {
				continue
			}
			size := proto.Size(u.GetInput().GetArgs())
			if size <= oversizedArgs {
				continue
			}
			marker := any(contract.ApprovalDecision{OversizedBytes: size})
			if u.GetInput().GetName() != contract.UpdateApproval {
				marker = contract.OversizedMarker(size)
			}
			p, perr := converter.GetDefaultDataConverter().ToPayloads(marker)
			if perr != nil {
				continue
			}
			u.Input.Args = p
			if body, perr := anypb.New(&u); perr == nil {
				m.Body = body
			}
		}
	}
	return err
}
