package runs

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"

	"playbook/interpreter/contract"
)

// fakeRun is one run as the fake server holds it.
type fakeRun struct {
	status enumspb.WorkflowExecutionStatus
	input  *contract.Input
	// queries answers each query type; a missing one fails.
	queries map[string]func(args ...any) (any, error)
	// result is what waiting on the run returns: a value, or an error.
	result    any
	resultErr error
	pending   []*workflowpb.PendingActivityInfo
	// updates answer each Update; a missing one fails.
	updates map[string]func(args ...any) (string, error)
	// events follow the first event (the start, with input) in its history.
	events []*historypb.HistoryEvent
	// indexed is its PlaybookName search attribute ("": none).
	indexed string
	// workflowType is its type ("": a playbook run's, Playbook).
	workflowType string
}

// fakeClient is a Temporal server as runs/ sees it: runs by ID, a task
// queue's pollers, the search attributes, pages of executions.
type fakeClient struct {
	runs    map[string]*fakeRun
	pollers int
	// attrs are the namespace's custom search attributes.
	attrs map[string]enumspb.IndexedValueType
	// list answers ListWorkflow: the queries asked, and the executions
	// every query gets (page by page, pageSize at a time); listErr fails it.
	queries  []string
	listed   []*workflowpb.WorkflowExecutionInfo
	listErr  error
	queried  []string
	pageAsks []int32
	sent     []sent
	// started are the runs ExecuteWorkflow started; schedules, the
	// schedule client's.
	started   []started
	schedules *fakeSchedules
	// updated are the Updates sent, in order.
	updated []client.UpdateWorkflowOptions
}

var _ Client = (*fakeClient)(nil)

func (f *fakeClient) run(id string) (*fakeRun, error) {
	r, ok := f.runs[id]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	return r, nil
}

func (f *fakeClient) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	r, err := f.run(id)
	if err != nil {
		return nil, err
	}
	wt := contract.WorkflowName
	if r.workflowType != "" {
		wt = r.workflowType
	}
	info := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: id + "-run"}, Status: r.status, TaskQueue: "q",
		Type: &commonpb.WorkflowType{Name: wt}}
	if r.indexed != "" {
		p, err := converter.GetDefaultDataConverter().ToPayload(r.indexed)
		if err != nil {
			return nil, err
		}
		info.SearchAttributes = &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{contract.AttrPlaybookName: p}}
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info, PendingActivities: r.pending}, nil
}

// jsonValue is an answer as the SDK's EncodedValue gives it.
type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return j.v != nil }
func (j jsonValue) Get(ptr any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

func (f *fakeClient) QueryWorkflow(_ context.Context, id, _ string, query string, args ...any) (converter.EncodedValue, error) {
	f.queried = append(f.queried, query)
	r, err := f.run(id)
	if err != nil {
		return nil, err
	}
	answer, ok := r.queries[query]
	if !ok {
		return nil, errors.New("unknown queryType " + query)
	}
	v, err := answer(args...)
	if err != nil {
		return nil, err
	}
	return jsonValue{v}, nil
}

// QueryWorkflowWithOptions answers as QueryWorkflow does: the fake's runs
// are all open.
func (f *fakeClient) QueryWorkflowWithOptions(ctx context.Context, req *client.QueryWorkflowWithOptionsRequest) (*client.QueryWorkflowWithOptionsResponse, error) {
	v, err := f.QueryWorkflow(ctx, req.WorkflowID, req.RunID, req.QueryType, req.Args...)
	if err != nil {
		return nil, err
	}
	return &client.QueryWorkflowWithOptionsResponse{QueryResult: v}, nil
}

type fakeWorkflowRun struct {
	id string
	r  *fakeRun
}

func (w fakeWorkflowRun) GetID() string                  { return w.id }
func (w fakeWorkflowRun) GetRunID() string               { return w.id + "-run" }
func (w fakeWorkflowRun) GetFirstExecutionRunID() string { return w.id + "-run" }
func (w fakeWorkflowRun) Get(_ context.Context, ptr any) error {
	if w.r.resultErr != nil {
		return w.r.resultErr
	}
	return jsonValue{w.r.result}.Get(ptr)
}
func (w fakeWorkflowRun) GetWithOptions(ctx context.Context, ptr any, _ client.WorkflowRunGetOptions) error {
	return w.Get(ctx, ptr)
}

func (f *fakeClient) GetWorkflow(_ context.Context, id, _ string) client.WorkflowRun {
	return fakeWorkflowRun{id, f.runs[id]}
}

// fakeHistory holds a run's first event, or the error reading it gives.
type fakeHistory struct {
	events []*historypb.HistoryEvent
	err    error
}

func (h *fakeHistory) HasNext() bool { return h.err != nil || len(h.events) > 0 }
func (h *fakeHistory) Next() (*historypb.HistoryEvent, error) {
	if h.err != nil {
		return nil, h.err
	}
	e := h.events[0]
	h.events = h.events[1:]
	return e, nil
}

func (f *fakeClient) GetWorkflowHistory(_ context.Context, id, _ string, _ bool, _ enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	r, err := f.run(id)
	if err != nil {
		return &fakeHistory{err: err}
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(r.input)
	if err != nil {
		return &fakeHistory{err: err}
	}
	return &fakeHistory{events: append([]*historypb.HistoryEvent{{
		EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			Input: &commonpb.Payloads{Payloads: []*commonpb.Payload{p}},
		}},
	}}, r.events...)}
}

func (f *fakeClient) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	return &workflowservice.DescribeTaskQueueResponse{Pollers: make([]*taskqueuepb.PollerInfo, f.pollers)}, nil
}

func (f *fakeClient) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.queries = append(f.queries, req.GetQuery())
	f.pageAsks = append(f.pageAsks, req.GetPageSize())
	if f.listErr != nil {
		return nil, f.listErr
	}
	first := 0
	if t := string(req.GetNextPageToken()); t != "" {
		first = len(t)
	}
	last := min(first+int(req.GetPageSize()), len(f.listed))
	resp := &workflowservice.ListWorkflowExecutionsResponse{Executions: f.listed[first:last]}
	if last < len(f.listed) {
		resp.NextPageToken = []byte(strings.Repeat(".", last))
	}
	return resp, nil
}

// fakeOperator answers ListSearchAttributes only.
type fakeOperator struct {
	operatorservice.OperatorServiceClient
	attrs map[string]enumspb.IndexedValueType
}

func (o fakeOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: o.attrs}, nil
}

func (f *fakeClient) OperatorService() operatorservice.OperatorServiceClient {
	return fakeOperator{attrs: f.attrs}
}

// fakeUpdate is an Update's answer as the SDK's handle gives it.
type fakeUpdate struct {
	client.WorkflowUpdateHandle
	answer string
	err    error
}

func (u fakeUpdate) Get(_ context.Context, ptr any) error {
	if u.err != nil {
		return u.err
	}
	*ptr.(*string) = u.answer
	return nil
}

func (f *fakeClient) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	f.updated = append(f.updated, o)
	r, err := f.run(o.WorkflowID)
	if err != nil {
		return nil, err
	}
	answer, ok := r.updates[o.UpdateName]
	if !ok {
		return nil, errors.New("unknown update " + o.UpdateName)
	}
	a, err := answer(o.Args...)
	return fakeUpdate{answer: a, err: err}, nil
}

// sent records what a client sent a run: signals, cancels.
type sent struct {
	what, run, arg string
}

func (f *fakeClient) SignalWorkflow(_ context.Context, id, _ string, name string, arg any) error {
	if _, err := f.run(id); err != nil {
		return err
	}
	f.sent = append(f.sent, sent{"signal " + name, id, arg.(string)})
	return nil
}

func (f *fakeClient) CancelWorkflow(_ context.Context, id, _ string) error {
	if _, err := f.run(id); err != nil {
		return err
	}
	f.sent = append(f.sent, sent{"cancel", id, ""})
	return nil
}

func (f *fakeClient) TerminateWorkflow(_ context.Context, id, _ string, reason string, _ ...any) error {
	if _, err := f.run(id); err != nil {
		return err
	}
	f.sent = append(f.sent, sent{"terminate", id, reason})
	return nil
}

// fakeService answers RequestCancelWorkflowExecution only.
type fakeService struct {
	workflowservice.WorkflowServiceClient
	f *fakeClient
}

func (s fakeService) RequestCancelWorkflowExecution(_ context.Context, req *workflowservice.RequestCancelWorkflowExecutionRequest, _ ...grpc.CallOption) (*workflowservice.RequestCancelWorkflowExecutionResponse, error) {
	s.f.sent = append(s.f.sent, sent{"cancel in " + req.GetNamespace(), req.GetWorkflowExecution().GetWorkflowId(), req.GetReason()})
	return &workflowservice.RequestCancelWorkflowExecutionResponse{}, nil
}

func (f *fakeClient) WorkflowService() workflowservice.WorkflowServiceClient {
	return fakeService{f: f}
}
