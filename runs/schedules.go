package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/submit"
)

// The safe defaults for batch work: a slow run is never doubled, and after
// an outage only runs at most an hour late still start.
const (
	defaultOverlap       = "skip"
	defaultCatchupWindow = time.Hour
	defaultBackfill      = "buffer-all"
)

// memoApplied marks a schedule `schedule apply` created; its value is the
// playbook file's absolute path, which `apply --prune` checks.
const memoApplied = "playbook-apply-file"

// scheduleWanted is one schedule as playbook sees it: the frozen playbook
// its runs start with, and when and how they start. It is built from a
// playbook file and flags (create, apply), or from a described schedule
// (update, and apply's comparison).
type scheduleWanted struct {
	ID             string
	pb             *spec.Playbook
	in             contract.Input
	TaskQueue      string
	Cron           string
	Every          time.Duration
	Timezone       string
	Jitter         time.Duration
	Overlap        string
	CatchupWindow  time.Duration
	PauseOnFailure bool
	// actionID is the described action's workflow ID, the schedule's ID
	// when playbook made it.
	actionID string
}

// wantedFromFile loads and freezes a playbook as `run` does and takes its
// `schedule:` key, if any, with the safe defaults for what it leaves out.
func wantedFromFile(path, taskQueue string) (*scheduleWanted, error) {
	pb, in, err := load(path)
	if err != nil {
		return nil, err
	}
	w := &scheduleWanted{ID: pb.Name, pb: pb, in: in, TaskQueue: taskQueue, Overlap: defaultOverlap, CatchupWindow: defaultCatchupWindow}
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
		w.in.Workload = s.Workload
	}
	return w, nil
}

// errNotOurs is a described schedule playbook cannot read back.
var errNotOurs = errors.New("was not made by playbook (its action does not start a playbook run)")

// errForeignCalendar is a schedule whose times playbook cannot read back:
// wantedFromDescription's result holds all but them.
var errForeignCalendar = errors.New("has a calendar playbook did not write; give --cron or --every")

// wantedFromDescription reads a described schedule back. The cron
// expression comes back from the calendar's comment, where spec() put it,
// since the server keeps only its parsed form.
func wantedFromDescription(id string, d *client.ScheduleDescription) (*scheduleWanted, error) {
	a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || fmt.Sprint(a.Workflow) != contract.WorkflowName || len(a.Args) != 1 {
		return nil, errNotOurs
	}
	w := &scheduleWanted{ID: id, TaskQueue: a.TaskQueue, actionID: a.ID}
	p, ok := a.Args[0].(*commonpb.Payload)
	if !ok || converter.GetDefaultDataConverter().FromPayload(p, &w.in) != nil {
		return nil, errNotOurs
	}
	w.pb, _ = spec.Parse(w.in.File, []byte(w.in.Source))
	if pol := d.Schedule.Policy; pol != nil {
		w.Overlap, w.CatchupWindow, w.PauseOnFailure = overlapName(pol.Overlap), pol.CatchupWindow, pol.PauseOnFailure
	}
	schedSpec := d.Schedule.Spec
	if schedSpec == nil {
		return w, nil
	}
	w.Timezone, w.Jitter = schedSpec.TimeZoneName, schedSpec.Jitter
	if len(schedSpec.Calendars)+len(schedSpec.Intervals) > 1 {
		return w, errForeignCalendar
	}
	for _, cal := range schedSpec.Calendars {
		if cal.Comment == "" {
			return w, errForeignCalendar
		}
		w.Cron = cal.Comment
	}
	for _, iv := range schedSpec.Intervals {
		if iv.Offset != 0 {
			return w, errForeignCalendar
		}
		w.Every = iv.Every
	}
	return w, nil
}

// scheduleFlags are the flags that say when and how runs start, shared by
// create and update. Only those given change a schedule.
type scheduleFlags struct {
	cron, timezone, overlap, input string
	every, catchupWindow, jitter   time.Duration
	pauseOnFailure                 bool
	sets                           []string
	set                            *pflag.FlagSet
}

func (f *scheduleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.cron, "cron", "", "start runs at the times of a cron `EXPR` (5 fields: minute hour day-of-month month day-of-week; or @daily, @hourly, ...)")
	fs.DurationVar(&f.every, "every", 0, "start a run every `DURATION` (at least 1s), instead of --cron")
	fs.StringVar(&f.timezone, "timezone", "", "read --cron in this IANA time `ZONE` (default UTC)")
	fs.StringVar(&f.overlap, "overlap", defaultOverlap, "`POLICY` when a run is due while one still runs: skip, buffer-one, buffer-all, cancel-other, terminate-other, allow-all")
	fs.DurationVar(&f.catchupWindow, "catchup-window", defaultCatchupWindow, "after an outage, start missed runs at most this `LATE`")
	fs.BoolVar(&f.pauseOnFailure, "pause-on-failure", false, "pause the schedule when a run fails")
	fs.DurationVar(&f.jitter, "jitter", 0, "delay each run by a random amount up to `DURATION`")
	fs.StringArrayVar(&f.sets, "set", nil, "override a workload value for every run: `KEY=VALUE` (as in run; repeatable)")
	fs.StringVar(&f.input, "input", "", "read workload overrides for every run from a JSON object `FILE`")
	f.set = fs
}

// given says whether the flag name was on the command line.
func (f *scheduleFlags) given(name string) bool { return f.set.Changed(name) }

// setsWhen says whether the flags say when runs start.
func (f *scheduleFlags) setsWhen() bool { return f.given("cron") || f.given("every") }

// applyFlags puts the flags the user gave over w and checks the result.
// Its errors are invalid input (exit 2).
func (w *scheduleWanted) applyFlags(f *scheduleFlags) error {
	if f.given("cron") && f.given("every") {
		return errors.New("give --cron or --every, not both")
	}
	if f.given("cron") {
		w.Cron, w.Every = f.cron, 0
		if err := submit.CheckCron(w.Cron); err != nil {
			return fmt.Errorf("--cron %q: %v", w.Cron, err)
		}
	}
	if f.given("every") {
		w.Every, w.Cron = f.every, ""
	}
	if f.given("timezone") {
		w.Timezone = f.timezone
		if err := submit.CheckTimezone(w.Timezone); err != nil {
			return fmt.Errorf("--timezone: %v", err)
		}
	}
	if f.given("overlap") {
		w.Overlap = f.overlap
		if _, err := overlapPolicy(w.Overlap); err != nil {
			return fmt.Errorf("--overlap: %v", err)
		}
	}
	if f.given("catchup-window") {
		w.CatchupWindow = f.catchupWindow
	}
	if f.given("pause-on-failure") {
		w.PauseOnFailure = f.pauseOnFailure
	}
	if f.given("jitter") {
		if f.jitter < 0 {
			return fmt.Errorf("--jitter %s: give a duration of 0 or more", f.jitter)
		}
		w.Jitter = f.jitter
	}
	if f.given("set") || f.given("input") {
		overrides, err := workloadOverrides(f.input, f.sets)
		if err != nil {
			return err
		}
		// What this command sets is checked; keys the schedule already has
		// stay as they are (nil: a frozen playbook this version cannot parse).
		if w.pb == nil {
			overrides = submit.PlainOverrides(overrides)
		} else if overrides, err = submit.CheckOverrides(w.pb, overrides); err != nil {
			return err
		}
		// On top of the overrides the schedule has (its playbook's
		// schedule.workload, or an earlier --set).
		merged := map[string]any{}
		for k, v := range w.in.Workload {
			merged[k] = v
		}
		for k, v := range overrides {
			merged[k] = v
		}
		w.in.Workload = merged
	}
	switch {
	case w.Cron == "" && w.Every == 0:
		return errors.New("say when runs start: --cron EXPR or --every DURATION (or a schedule: key in the playbook)")
	case w.Every != 0 && w.Every < time.Second:
		return fmt.Errorf("--every %s is under Temporal's minimum of 1s", w.Every)
	case w.CatchupWindow < 10*time.Second:
		return fmt.Errorf("--catchup-window %s is under Temporal's minimum of 10s", w.CatchupWindow)
	}
	return nil
}

func (w *scheduleWanted) spec() client.ScheduleSpec {
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

func (w *scheduleWanted) policies() *client.SchedulePolicies {
	overlap, _ := overlapPolicy(w.Overlap)
	return &client.SchedulePolicies{Overlap: overlap, CatchupWindow: w.CatchupWindow, PauseOnFailure: w.PauseOnFailure}
}

// action starts the generic workflow on the frozen playbook as `run` does,
// with the search attributes `list` reads when the namespace has them. Its
// workflow ID is the schedule's: Temporal appends the scheduled time.
func (w *scheduleWanted) action(indexed bool) *client.ScheduleWorkflowAction {
	in := w.in
	in.Index = indexed
	a := &client.ScheduleWorkflowAction{ID: w.ID, Workflow: contract.WorkflowName, Args: []any{in}, TaskQueue: w.TaskQueue}
	if w.pb != nil {
		a.StaticSummary = runSummary(w.pb)
		if indexed {
			a.TypedSearchAttributes = runs.StartAttributes(w.pb.Name)
		}
	}
	return a
}

// attributes are the schedule's own search attributes: its playbook's name,
// which `schedule list` shows.
func (w *scheduleWanted) attributes(indexed bool) temporal.SearchAttributes {
	if !indexed || w.pb == nil {
		return temporal.SearchAttributes{}
	}
	return temporal.NewSearchAttributes(runs.AttrPlaybookName.ValueSet(w.pb.Name))
}

// schedule is the whole schedule for an update, keeping state (paused or
// not, and why) as it is.
func (w *scheduleWanted) schedule(indexed bool, state *client.ScheduleState) *client.ScheduleUpdate {
	schedSpec := w.spec()
	sa := w.attributes(indexed)
	return &client.ScheduleUpdate{
		Schedule:              &client.Schedule{Action: w.action(indexed), Spec: &schedSpec, Policy: w.policies(), State: state},
		TypedSearchAttributes: &sa,
	}
}

// differences names what differs between w and what the server has.
func (w *scheduleWanted) differences(have *scheduleWanted, indexed bool) []string {
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
	add(!same([]any{w.in.File, w.in.BaseDir, w.in.Source, w.in.Files}, []any{have.in.File, have.in.BaseDir, have.in.Source, have.in.Files}), "playbook")
	add(!same(w.in.Workload, have.in.Workload), "workload")
	add(indexed != have.in.Index || w.ID != have.actionID, "run options")
	return diff
}

// when says when the runs start, in one phrase.
func (w *scheduleWanted) when() string {
	s := "every " + w.Every.String()
	if w.Cron != "" {
		s = "cron " + w.Cron
	}
	if w.Timezone != "" {
		s += " (" + w.Timezone + ")"
	}
	return s
}

// overlapPolicy turns a name such as buffer-one into Temporal's policy.
func overlapPolicy(name string) (enumspb.ScheduleOverlapPolicy, error) {
	if v, ok := enumspb.ScheduleOverlapPolicy_value["SCHEDULE_OVERLAP_POLICY_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))]; ok && name != "unspecified" {
		return enumspb.ScheduleOverlapPolicy(v), nil
	}
	return 0, fmt.Errorf("%q is not one of %s", name, strings.Join(spec.OverlapPolicies, ", "))
}

func overlapName(p enumspb.ScheduleOverlapPolicy) string {
	if p == enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED {
		return defaultOverlap // the server's default
	}
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(enumspb.ScheduleOverlapPolicy_name[int32(p)], "SCHEDULE_OVERLAP_POLICY_"), "_", "-"))
}
