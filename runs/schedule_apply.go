package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"playbook/internal/codec"
	"playbook/interpreter/contract"
)

// ScheduleCreate is how a schedule is created beyond what it runs and when.
type ScheduleCreate struct {
	Note   string
	Paused bool
	Memo   map[string]any
}

// CreateSchedule creates the schedule w describes, after check (nil:
// none) has had its word on w's task queue: its error is an InvalidError,
// and nothing is created.
func CreateSchedule(ctx context.Context, c Client, namespace string, w *Schedule, o ScheduleCreate, check Check) error {
	if err := runCheck(ctx, check, w.TaskQueue); err != nil {
		return err
	}
	indexed := Indexed(ctx, c, namespace)
	pol := w.Policies()
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:                    w.ID,
		Spec:                  w.Spec(),
		Action:                w.Action(indexed),
		Overlap:               pol.Overlap,
		CatchupWindow:         pol.CatchupWindow,
		PauseOnFailure:        pol.PauseOnFailure,
		Note:                  o.Note,
		Paused:                o.Paused,
		Memo:                  o.Memo,
		TypedSearchAttributes: w.Attributes(indexed),
	})
	return err
}

// ScheduleEntry is one schedule that starts playbook runs, as a list
// shows it (`schedule list`).
type ScheduleEntry struct {
	ID          string      `json:"id"`
	Playbook    string      `json:"playbook,omitempty"`
	When        []string    `json:"when"`
	Paused      bool        `json:"paused"`
	Note        string      `json:"note,omitempty"`
	NextRuns    []time.Time `json:"next_runs"`
	AppliedFrom string      `json:"applied_from,omitempty"`
}

// ListSchedules lists, through visibility (so a schedule created a moment
// ago may be missing), the schedules whose action starts playbook runs.
func ListSchedules(ctx context.Context, c Client) ([]ScheduleEntry, error) {
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, err
	}
	entries := []ScheduleEntry{}
	// Search attributes are never encrypted; the memo is, under a codec key.
	dc := converter.GetDefaultDataConverter()
	memo, err := PayloadConverter()
	if err != nil {
		return nil, err
	}
	for it.HasNext() {
		s, err := it.Next()
		if err != nil {
			return nil, err
		}
		if s.WorkflowType.Name != contract.WorkflowName {
			continue
		}
		e := ScheduleEntry{ID: s.ID, Paused: s.Paused, Note: s.Note, NextRuns: s.NextActionTimes, When: SpecWhen(s.Spec)}
		if s.Paused {
			e.NextRuns = []time.Time{} // none runs while it is paused
		}
		if p := s.SearchAttributes.GetIndexedFields()[contract.AttrPlaybookName]; p != nil {
			_ = dc.FromPayload(p, &e.Playbook)
		}
		if p := s.Memo.GetFields()[MemoApplied]; p != nil {
			_ = memo.FromPayload(p, &e.AppliedFrom)
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
	return entries, nil
}

// SpecWhen says when a spec starts runs: the cron expressions playbook
// kept in the calendars' comments, and the intervals.
func SpecWhen(schedSpec *client.ScheduleSpec) []string {
	when := []string{}
	if schedSpec == nil {
		return when
	}
	tz := ""
	if schedSpec.TimeZoneName != "" {
		tz = " (" + schedSpec.TimeZoneName + ")"
	}
	for _, cal := range schedSpec.Calendars {
		if cal.Comment != "" {
			when = append(when, "cron "+cal.Comment+tz)
		} else {
			when = append(when, "a calendar"+tz)
		}
	}
	for _, iv := range schedSpec.Intervals {
		when = append(when, "every "+iv.Every.String())
	}
	return when
}

// ScheduleError is err as a front end says it about schedule id: "no
// schedule" when the server has none of that ID.
func ScheduleError(id string, err error) error {
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("no schedule %q", id)
	case codec.Unreadable(err):
		return fmt.Errorf("schedule %s is encrypted, and this client cannot read it (%v): %s", id, err, codec.KeyHint)
	}
	return err
}

// LoadApplied loads every file's schedule before anything changes. A file
// named explicitly must carry a schedule; one found under a directory
// without one (a sub-playbook, say) is passed over. Its error lists every
// file's problem, one a line.
func LoadApplied(files []string, explicit bool, taskQueue string) ([]*Schedule, error) {
	var wanted []*Schedule
	var problems []string
	byID := map[string]string{}
	for _, f := range files {
		w, err := ScheduleFromFile(f, taskQueue)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
			continue
		case w.Playbook.Schedule == nil && explicit && len(w.Playbook.Triggers) == 0:
			problems = append(problems, f+": has neither a schedule: nor a triggers: key: nothing to apply")
			continue
		case w.Playbook.Schedule == nil:
			continue
		}
		if other, ok := byID[w.ID]; ok {
			problems = append(problems, fmt.Sprintf("%s: schedule %s is also %s's", f, w.ID, other))
			continue
		}
		byID[w.ID] = f
		wanted = append(wanted, w)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return wanted, nil
}

// ApplySchedule makes the schedule w describes exist as described:
// "created", "updated (what changed)" or "unchanged". A schedule it
// creates carries its file's absolute path (MemoApplied), for prune.
func ApplySchedule(ctx context.Context, c Client, namespace string, w *Schedule, check Check) (string, error) {
	h := c.ScheduleClient().GetHandle(ctx, w.ID)
	indexed := Indexed(ctx, c, namespace)
	d, err := h.Describe(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		abs, _ := filepath.Abs(w.Input.File)
		if err := CreateSchedule(ctx, c, namespace, w, ScheduleCreate{Memo: map[string]any{MemoApplied: abs}}, check); err != nil {
			return "", err
		}
		return "created (" + w.When() + ")", nil
	}
	if err != nil {
		return "", ScheduleError(w.ID, err)
	}
	have, err := ScheduleFromDescription(w.ID, d)
	if errors.Is(err, ErrNotOurs) || errors.Is(err, ErrEncrypted) {
		return "", fmt.Errorf("schedule %s exists and %v: left alone", w.ID, err)
	}
	if err == nil && len(w.Differences(have, indexed)) == 0 {
		return "unchanged", nil
	}
	if err := runCheck(ctx, check, w.TaskQueue); err != nil {
		return "", err
	}
	var changed []string
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		changed = []string{"all"}
		if have, err := ScheduleFromDescription(w.ID, &u.Description); err == nil {
			changed = w.Differences(have, indexed)
		}
		return w.Update(indexed, u.Description.Schedule.State), nil
	}})
	if err != nil {
		return "", err
	}
	return "updated (" + strings.Join(changed, ", ") + "); it takes effect from the next run", nil
}

// Pruned is a schedule PruneSchedules deleted, or a trigger registration
// PruneTriggers removed: its ID, what it is ("schedule ID", "trigger
// webhook /hooks/NAME"), from which file, and why.
type Pruned struct {
	ID, What, File, Why string
}

// appliedFileSays says why what apply made from file goes: "gone", or "no
// longer carries it" when declares (asked only of a file that is there)
// says file no longer declares it; still when it does, or when the file
// does not load (it is left be).
func appliedFileSays(file string, declares func() (bool, error)) (why string, still bool) {
	if _, err := os.Stat(file); err != nil {
		return "gone", false
	}
	ok, err := declares()
	if err != nil || ok {
		return "", true
	}
	return "no longer carries it", false
}

// PruneSchedules deletes the schedules apply made from files under dir
// that are gone or no longer carry that schedule, except those just
// applied. It returns those it deleted, also when it stops at an error.
func PruneSchedules(ctx context.Context, c Client, dir, taskQueue string, applied []*Schedule) ([]Pruned, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, w := range applied {
		keep[w.ID] = true
	}
	entries, err := ListSchedules(ctx, c)
	if err != nil {
		return nil, err
	}
	var pruned []Pruned
	for _, e := range entries {
		rel, err := filepath.Rel(absDir, e.AppliedFrom)
		if e.AppliedFrom == "" || keep[e.ID] || err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		why, still := appliedFileSays(e.AppliedFrom, func() (bool, error) {
			w, err := ScheduleFromFile(e.AppliedFrom, taskQueue)
			return err == nil && w.Playbook.Schedule != nil && w.ID == e.ID, err
		})
		if still {
			continue
		}
		if err := c.ScheduleClient().GetHandle(ctx, e.ID).Delete(ctx); err != nil {
			return pruned, ScheduleError(e.ID, err)
		}
		pruned = append(pruned, Pruned{ID: e.ID, What: "schedule " + e.ID, File: e.AppliedFrom, Why: why})
	}
	return pruned, nil
}
