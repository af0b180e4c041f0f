package runs

import (
	"context"
	"errors"
	"sort"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
)

// started is a run the fake was asked to start.
type started struct {
	opts  client.StartWorkflowOptions
	input contract.Input
}

func (f *fakeClient) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	if workflow != contract.WorkflowName || len(args) != 1 {
		return nil, errors.New("not a playbook run")
	}
	if _, taken := f.runs[o.ID]; taken {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("already started", "", o.ID+"-run")
	}
	f.started = append(f.started, started{o, args[0].(contract.Input)})
	return fakeWorkflowRun{id: o.ID, r: &fakeRun{}}, nil
}

// fakeSchedule is one schedule as the fake server holds it.
type fakeSchedule struct {
	schedule client.Schedule
	memo     map[string]any
}

// fakeSchedules is the fake server's schedules, by ID, and what was done
// to them.
type fakeSchedules struct {
	client.ScheduleClient
	byID map[string]*fakeSchedule
	done []string
}

func (f *fakeClient) ScheduleClient() client.ScheduleClient {
	if f.schedules == nil {
		f.schedules = &fakeSchedules{byID: map[string]*fakeSchedule{}}
	}
	return f.schedules
}

func (s *fakeSchedules) Create(_ context.Context, o client.ScheduleOptions) (client.ScheduleHandle, error) {
	if _, ok := s.byID[o.ID]; ok {
		return nil, errors.New("schedule already exists")
	}
	spec := o.Spec
	s.byID[o.ID] = &fakeSchedule{memo: o.Memo, schedule: client.Schedule{Action: o.Action, Spec: &spec,
		Policy: &client.SchedulePolicies{Overlap: o.Overlap, CatchupWindow: o.CatchupWindow, PauseOnFailure: o.PauseOnFailure},
		State:  &client.ScheduleState{Paused: o.Paused, Note: o.Note}}}
	s.done = append(s.done, "create "+o.ID)
	return s.GetHandle(context.Background(), o.ID), nil
}

func (s *fakeSchedules) GetHandle(_ context.Context, id string) client.ScheduleHandle {
	return &fakeScheduleHandle{s: s, id: id}
}

func (s *fakeSchedules) List(context.Context, client.ScheduleListOptions) (client.ScheduleListIterator, error) {
	var ids []string
	for id := range s.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	it := &fakeScheduleList{}
	for _, id := range ids {
		fs := s.byID[id]
		memo := &commonpb.Memo{Fields: map[string]*commonpb.Payload{}}
		for k, v := range fs.memo {
			p, err := converter.GetDefaultDataConverter().ToPayload(v)
			if err != nil {
				return nil, err
			}
			memo.Fields[k] = p
		}
		it.entries = append(it.entries, &client.ScheduleListEntry{ID: id, Spec: fs.schedule.Spec, Memo: memo,
			WorkflowType: workflow.Type{Name: contract.WorkflowName}, Paused: fs.schedule.State.Paused})
	}
	return it, nil
}

type fakeScheduleList struct{ entries []*client.ScheduleListEntry }

func (l *fakeScheduleList) HasNext() bool { return len(l.entries) > 0 }
func (l *fakeScheduleList) Next() (*client.ScheduleListEntry, error) {
	e := l.entries[0]
	l.entries = l.entries[1:]
	return e, nil
}

type fakeScheduleHandle struct {
	client.ScheduleHandle
	s  *fakeSchedules
	id string
}

func (h *fakeScheduleHandle) GetID() string { return h.id }

func (h *fakeScheduleHandle) get() (*fakeSchedule, error) {
	fs, ok := h.s.byID[h.id]
	if !ok {
		return nil, serviceerror.NewNotFound("schedule not found")
	}
	return fs, nil
}

// Describe answers as the server does: the action's arguments as payloads.
func (h *fakeScheduleHandle) Describe(context.Context) (*client.ScheduleDescription, error) {
	fs, err := h.get()
	if err != nil {
		return nil, err
	}
	sched := fs.schedule
	if a, ok := sched.Action.(*client.ScheduleWorkflowAction); ok {
		described := *a
		described.Args = nil
		for _, arg := range a.Args {
			p, err := converter.GetDefaultDataConverter().ToPayload(arg)
			if err != nil {
				return nil, err
			}
			described.Args = append(described.Args, p)
		}
		sched.Action = &described
	}
	return &client.ScheduleDescription{Schedule: sched}, nil
}

func (h *fakeScheduleHandle) Update(ctx context.Context, o client.ScheduleUpdateOptions) error {
	d, err := h.Describe(ctx)
	if err != nil {
		return err
	}
	u, err := o.DoUpdate(client.ScheduleUpdateInput{Description: *d})
	if err != nil {
		return err
	}
	h.s.byID[h.id].schedule = *u.Schedule
	h.s.done = append(h.s.done, "update "+h.id)
	return nil
}

func (h *fakeScheduleHandle) Delete(context.Context) error {
	if _, err := h.get(); err != nil {
		return err
	}
	delete(h.s.byID, h.id)
	h.s.done = append(h.s.done, "delete "+h.id)
	return nil
}

var errFakeCheck = errors.New("the workers encrypt payloads and this CLI has no key")
