package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"playbook/internal/codec"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// The safe defaults for batch work: a slow run is never doubled, and after
// an outage only runs at most an hour late still start.
const (
	DefaultOverlap       = "skip"
	DefaultCatchupWindow = time.Hour
)

// MemoApplied marks a schedule `schedule apply` created; its value is the
// playbook file's absolute path, which `apply --prune` checks.
const MemoApplied = "playbook-apply-file"

// Schedule is one schedule as playbook sees it: the frozen playbook
// its runs start with, and when and how they start. It is built from a
// playbook file and flags (create, apply), or from a described schedule
// (update, and apply's comparison).
type Schedule struct {
	ID             string
	Playbook       *spec.Playbook
	Input          contract.Input
	TaskQueue      string
	Cron           string
	Every          time.Duration
	Timezone       string
	Jitter         time.Duration
	Overlap        string
	CatchupWindow  time.Duration
	PauseOnFailure bool
	// ActionID is the described action's workflow ID, the schedule's ID
	// when playbook made it.
	ActionID string
}

// ScheduleFromFile loads and freezes a playbook as `run` does and takes its
// `schedule:` key, if any, with the safe defaults for what it leaves out.
func ScheduleFromFile(path, taskQueue string) (*Schedule, error) {
	pb, in, err := Load(path)
	if err != nil {
		return nil, err
	}
	w := &Schedule{ID: pb.Name, Playbook: pb, Input: in, TaskQueue: taskQueue, Overlap: DefaultOverlap, CatchupWindow: DefaultCatchupWindow}
	if s := pb.Schedule; s != nil {
		if s.ID != "" {
			w.ID = s.ID
		}
		w.Cron, w.Every, w.Timezone, w.Jitter, w.PauseOnFailure = s.Cron, s.Every, s.Timezone, s.Jitter, s.PauseOnFailure
		if s.Overlap != "" {
			w.Overlap = s.Overlap
		}
		if s.CatchupWindow != 0 {
			w.CatchupWindow = s.CatchupWindow
		}
		w.Input.Workload = s.Workload
	}
	return w, nil
}

// ErrNotOurs is a described schedule playbook cannot read back.
var ErrNotOurs = errors.New("was not made by playbook (its action does not start a playbook run)")

// ErrEncrypted is a described schedule whose action a codec key encrypted
// and this client has no key, or another, to read.
var ErrEncrypted = errors.New("has an encrypted action this client cannot read")

// ErrForeignCalendar is a schedule whose times playbook cannot read back:
// ScheduleFromDescription's result holds all but them.
var ErrForeignCalendar = errors.New("has a calendar playbook did not write; give --cron or --every")

// ScheduleFromDescription reads a described schedule back. The cron
// expression comes back from the calendar's comment, where spec() put it,
// since the server keeps only its parsed form.
func ScheduleFromDescription(id string, d *client.ScheduleDescription) (*Schedule, error) {
	a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || fmt.Sprint(a.Workflow) != contract.WorkflowName || len(a.Args) != 1 {
		return nil, ErrNotOurs
	}
	w := &Schedule{ID: id, TaskQueue: a.TaskQueue, ActionID: a.ID}
	p, ok := a.Args[0].(*commonpb.Payload)
	if !ok {
		return nil, ErrNotOurs
	}
	// The action's input was encoded by the client that made the schedule:
	// with the codec key, when one is set.
	dc, err := PayloadConverter()
	if err != nil {
		return nil, err
	}
	if err := dc.FromPayload(p, &w.Input); err != nil {
		if codec.Encrypted(p) {
			return nil, fmt.Errorf("%w (%v): %s", ErrEncrypted, err, codec.KeyHint)
		}
		return nil, ErrNotOurs
	}
	w.Playbook, _ = spec.Parse(w.Input.File, []byte(w.Input.Source))
	if pol := d.Schedule.Policy; pol != nil {
		w.Overlap, w.CatchupWindow, w.PauseOnFailure = OverlapName(pol.Overlap), pol.CatchupWindow, pol.PauseOnFailure
	}
	schedSpec := d.Schedule.Spec
	if schedSpec == nil {
		return w, nil
	}
	w.Timezone, w.Jitter = schedSpec.TimeZoneName, schedSpec.Jitter
	if len(schedSpec.Calendars)+len(schedSpec.Intervals) > 1 {
		return w, ErrForeignCalendar
	}
	for _, cal := range schedSpec.Calendars {
		if cal.Comment == "" {
			return w, ErrForeignCalendar
		}
		w.Cron = cal.Comment
	}
	for _, iv := range schedSpec.Intervals {
		if iv.Offset != 0 {
			return w, ErrForeignCalendar
		}
		w.Every = iv.Every
	}
	return w, nil
}

func (w *Schedule) Spec() client.ScheduleSpec {
	schedSpec := client.ScheduleSpec{TimeZoneName: w.Timezone, Jitter: w.Jitter}
	if w.Cron != "" {
		// The server keeps a cron only in parsed form, and its comment as
		// given: the comment keeps the expression for describe and apply.
		schedSpec.CronExpressions = []string{w.Cron + " # " + w.Cron}
	}
	if w.Every != 0 {
		schedSpec.Intervals = []client.ScheduleIntervalSpec{{Every: w.Every}}
	}
	return schedSpec
}

func (w *Schedule) Policies() *client.SchedulePolicies {
	overlap, _ := OverlapPolicy(w.Overlap)
	return &client.SchedulePolicies{Overlap: overlap, CatchupWindow: w.CatchupWindow, PauseOnFailure: w.PauseOnFailure}
}

// action starts the generic workflow on the frozen playbook as `run` does,
// with the search attributes `list` reads when the namespace has them. Its
// workflow ID is the schedule's: Temporal appends the scheduled time.
func (w *Schedule) Action(indexed bool) *client.ScheduleWorkflowAction {
	in := w.Input
	in.Index = indexed
	a := &client.ScheduleWorkflowAction{ID: w.ID, Workflow: contract.WorkflowName, Args: []any{in}, TaskQueue: w.TaskQueue}
	if w.Playbook != nil {
		a.StaticSummary = Summary(w.Playbook)
		if indexed {
			a.TypedSearchAttributes = StartAttributes(w.Playbook.Name)
		}
	}
	return a
}

// attributes are the schedule's own search attributes: its playbook's name,
// which `schedule list` shows.
func (w *Schedule) Attributes(indexed bool) temporal.SearchAttributes {
	if !indexed || w.Playbook == nil {
		return temporal.SearchAttributes{}
	}
	return temporal.NewSearchAttributes(AttrPlaybookName.ValueSet(w.Playbook.Name))
}

// schedule is the whole schedule for an update, keeping state (paused or
// not, and why) as it is.
func (w *Schedule) Update(indexed bool, state *client.ScheduleState) *client.ScheduleUpdate {
	schedSpec := w.Spec()
	sa := w.Attributes(indexed)
	return &client.ScheduleUpdate{
		Schedule:              &client.Schedule{Action: w.Action(indexed), Spec: &schedSpec, Policy: w.Policies(), State: state},
		TypedSearchAttributes: &sa,
	}
}

// differences names what differs between w and what the server has.
func (w *Schedule) Differences(have *Schedule, indexed bool) []string {
	var diff []string
	add := func(differs bool, what string) {
		if differs {
			diff = append(diff, what)
		}
	}
	add(w.Cron != have.Cron || w.Every != have.Every, "when")
	add(w.Timezone != have.Timezone, "timezone")
	add(w.Jitter != have.Jitter, "jitter")
	add(w.Overlap != have.Overlap, "overlap")
	add(w.CatchupWindow != have.CatchupWindow, "catchup window")
	add(w.PauseOnFailure != have.PauseOnFailure, "pause on failure")
	add(w.TaskQueue != have.TaskQueue, "task queue")
	same := func(a, b any) bool {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return string(x) == string(y)
	}
	add(!same([]any{w.Input.File, w.Input.BaseDir, w.Input.Source, w.Input.Files}, []any{have.Input.File, have.Input.BaseDir, have.Input.Source, have.Input.Files}), "playbook")
	add(!same(w.Input.Workload, have.Input.Workload), "workload")
	add(indexed != have.Input.Index || w.ID != have.ActionID, "run options")
	return diff
}

// when says when the runs start, in one phrase.
func (w *Schedule) When() string {
	s := "every " + w.Every.String()
	if w.Cron != "" {
		s = "cron " + w.Cron
	}
	if w.Timezone != "" {
		s += " (" + w.Timezone + ")"
	}
	return s
}

// OverlapPolicy turns a name such as buffer-one into Temporal's policy.
func OverlapPolicy(name string) (enumspb.ScheduleOverlapPolicy, error) {
	if v, ok := enumspb.ScheduleOverlapPolicy_value["SCHEDULE_OVERLAP_POLICY_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))]; ok && name != "unspecified" {
		return enumspb.ScheduleOverlapPolicy(v), nil
	}
	return 0, fmt.Errorf("%q is not one of %s", name, strings.Join(spec.OverlapPolicies, ", "))
}

func OverlapName(p enumspb.ScheduleOverlapPolicy) string {
	if p == enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED {
		return DefaultOverlap // the server's default
	}
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(enumspb.ScheduleOverlapPolicy_name[int32(p)], "SCHEDULE_OVERLAP_POLICY_"), "_", "-"))
}
