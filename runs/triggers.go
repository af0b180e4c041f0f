package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Triggers are registered by `schedule apply` as workflows of their own
// (contract.TriggerWorkflowName), one per trigger: a webhook's holds the
// frozen playbook its deliveries start, which a worker's /hooks/NAME asks
// it for; an after trigger's also watches the upstream playbook's ended
// runs from a durable cursor, in an activity (WatchAfter).

// TriggersFromFile loads and freezes a playbook as `run` does and makes a
// registration of each of its triggers.
func TriggersFromFile(path, taskQueue string) (*spec.Playbook, []contract.TriggerRegistration, error) {
	pb, in, err := Load(path)
	if err != nil {
		return nil, nil, err
	}
	abs, _ := filepath.Abs(path)
	var regs []contract.TriggerRegistration
	for _, t := range pb.Triggers {
		r := contract.TriggerRegistration{Playbook: pb.Name, Run: in, TaskQueue: taskQueue, File: abs}
		if t.Webhook != nil {
			r.Hook, r.Secret = t.Webhook.Name, t.Webhook.Secret
		} else {
			r.Upstream, r.Statuses = t.After.Playbook, t.After.Status
		}
		regs = append(regs, r)
	}
	return pb, regs, nil
}

// TriggerID is the workflow ID of a trigger's registration: a hook's
// name is unique in the namespace, an after trigger is one per pair of
// playbooks.
func TriggerID(r contract.TriggerRegistration) string {
	if r.Hook != "" {
		return HookID(r.Hook)
	}
	return "playbook-after-" + r.Upstream + "-" + r.Playbook
}

// HookID is the workflow ID of hook name's registration.
func HookID(name string) string { return "playbook-hook-" + name }

// TriggerWhat says what a registration starts a run on, for messages.
func TriggerWhat(r contract.TriggerRegistration) string {
	if r.Hook != "" {
		return "webhook /hooks/" + r.Hook
	}
	return fmt.Sprintf("after %s %v", r.Upstream, r.Statuses)
}

// ApplyTrigger makes the trigger r describes registered as described:
// "created", "updated" or "unchanged". A new after trigger answers the
// upstream runs that end from now on, not those that ended before.
func ApplyTrigger(ctx context.Context, c Client, r contract.TriggerRegistration) (string, error) {
	id := TriggerID(r)
	if have, err := registered(ctx, c, id); err == nil {
		if r.Hook != "" && have.Playbook != r.Playbook {
			return "", &InvalidError{Err: fmt.Errorf("webhook %q is playbook %s's (%s): give this one another name", r.Hook, have.Playbook, have.File)}
		}
		if r.Hook == "" && (have.Playbook != r.Playbook || have.Upstream != r.Upstream) {
			// Names with dashes can give two pairs one ID: c after a-b,
			// b-c after a.
			return "", &InvalidError{Err: fmt.Errorf("playbook %s's trigger after %s has the registration %s, which playbook %s's trigger after %s (%s) holds: rename one of these playbooks",
				r.Playbook, r.Upstream, id, have.Playbook, have.Upstream, have.File)}
		}
		if reflect.DeepEqual(comparable(have), comparable(r)) {
			return "unchanged", nil
		}
		if err := c.SignalWorkflow(ctx, id, "", contract.SignalTriggerApply, r); err != nil {
			return "", err
		}
		return "updated", nil
	}
	in := contract.TriggerInput{Registration: r}
	if r.Upstream != "" {
		in.Cursor = &contract.TriggerCursor{CloseTime: time.Now().UTC()}
	}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: r.TaskQueue,
		StaticSummary:            "trigger of playbook " + r.Playbook + ": " + TriggerWhat(r),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		Memo:                     map[string]any{contract.MemoTriggerFile: r.File},
	}, contract.TriggerWorkflowName, in)
	if err != nil {
		return "", err
	}
	return "created", nil
}

// UpstreamUnknown tells whether no run of an after trigger's upstream
// playbook is known to the namespace (a misspelt metadata.name, whose
// trigger would wait for ever); false for a webhook, or when it cannot
// tell (the namespace lacks playbook's search attributes).
func UpstreamUnknown(ctx context.Context, c Client, namespace string, r contract.TriggerRegistration) bool {
	if r.Upstream == "" {
		return false
	}
	known, err := List(ctx, c, namespace, Filter{Playbook: r.Upstream}, 1)
	return err == nil && len(known) == 0
}

// TriggerEntry is one registered trigger, as `schedule triggers` lists it.
type TriggerEntry struct {
	ID        string `json:"id"`
	Playbook  string `json:"playbook"`
	What      string `json:"what"`
	File      string `json:"file,omitempty"`
	TaskQueue string `json:"task_queue"`
}

// ListTriggers lists the namespace's registered triggers (the open
// PlaybookTrigger workflows), by ID; one whose registration cannot be
// read (its worker is down, its payloads encrypted) is listed by what its
// ID and memo say.
func ListTriggers(ctx context.Context, c Client, namespace string) ([]TriggerEntry, error) {
	open, err := Executions(ctx, c, namespace, fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.TriggerWorkflowName), -1)
	if err != nil {
		return nil, err
	}
	out := []TriggerEntry{}
	for _, e := range open {
		id := e.GetExecution().GetWorkflowId()
		entry := TriggerEntry{ID: id, What: triggerWhatOfID(id), File: triggerFile(ctx, c, e), TaskQueue: e.GetTaskQueue()}
		if r, err := registered(ctx, c, id); err == nil {
			entry.Playbook, entry.What, entry.TaskQueue = r.Playbook, TriggerWhat(r), r.TaskQueue
		}
		out = append(out, entry)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// comparable is a registration as compared for a re-apply: its JSON form
// (the frozen input's maps compare by content).
func comparable(r contract.TriggerRegistration) any {
	b, _ := json.Marshal(r)
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// registered is the registration of the open trigger workflow id: a
// NotFound error when none is open (a registration pruned, or ended
// otherwise, is still there to be queried, but registers nothing).
func registered(ctx context.Context, c Client, id string) (contract.TriggerRegistration, error) {
	var r contract.TriggerRegistration
	resp, err := c.QueryWorkflowWithOptions(ctx, &client.QueryWorkflowWithOptionsRequest{WorkflowID: id, QueryType: contract.QueryTrigger,
		QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NOT_OPEN})
	switch {
	case err != nil:
		return r, err
	case resp.QueryRejected != nil:
		return r, serviceerror.NewNotFound("trigger " + id + " is not registered: its workflow has ended")
	}
	return r, resp.QueryResult.Get(&r)
}

// ErrUnknownHook is a delivery to a hook no applied playbook declares.
var ErrUnknownHook = errors.New("no playbook declares this webhook (is it applied with `playbook schedule apply`?)")

// Hook is hook name's registration; ErrUnknownHook when none is open.
func Hook(ctx context.Context, c Client, name string) (contract.TriggerRegistration, error) {
	r, err := registered(ctx, c, HookID(name))
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return r, ErrUnknownHook
	}
	return r, err
}

// Delivery is one webhook delivery, its signature checked: its body as
// workload overrides and its delivery ID, if any.
type Delivery struct {
	Hook     string
	Workload map[string]any
	// ID makes the delivery idempotent: a second delivery of the same ID
	// answers the first one's run.
	ID string
}

// StartFromHook starts the run a delivery to r asks for, its workload
// converted to the types the playbook declares (an InvalidError says
// why not, and nothing starts). existing says that a delivery of the same
// ID started it before.
func StartFromHook(ctx context.Context, c Client, namespace string, r contract.TriggerRegistration, d Delivery, convert func(*spec.Playbook, map[string]any) (map[string]any, error)) (wr client.WorkflowRun, existing bool, err error) {
	pb, err := spec.Parse(r.Run.File, []byte(r.Run.Source))
	if err != nil {
		return nil, false, err
	}
	in := r.Run
	if in.Workload, err = convert(pb, d.Workload); err != nil {
		return nil, false, &InvalidError{Err: err}
	}
	in.Trigger = map[string]any{"kind": contract.TriggerKindWebhook, "hook": d.Hook, "delivery": d.ID}
	now := time.Now().UTC()
	in.LogicalTime = &now
	s := Start{Playbook: pb, Input: in, TaskQueue: r.TaskQueue, Details: "webhook /hooks/" + d.Hook}
	if d.ID != "" {
		s.ID = r.Playbook + "-hook-" + IDDigest(d.Hook+"\x00"+d.ID)
		s.Details += ", delivery " + d.ID
	}
	return StartOnce(ctx, c, namespace, s, d.ID != "", false)
}

// SendFromHook sends the event a delivery to r carries (its data, sent
// by "webhook NAME") to run, which must run r's playbook: a run of
// another is a NotFoundError as an unknown one is, and nothing is sent,
// so that a hook's secret reaches its own playbook's runs and tells
// nothing of the others'. A delivery ID makes the event idempotent: it is
// sent as the Update of an ID derived from the hook and the delivery, and
// the server applies one Update of an ID to a run once, answering a
// second with the first one's answer, even once the run has ended.
// Otherwise it answers and refuses as SendEvent.
func SendFromHook(ctx context.Context, c Client, r contract.TriggerRegistration, d Delivery, run, event string, data any) (string, error) {
	name, runID, err := PlaybookOf(ctx, c, run)
	if err != nil {
		return "", err
	}
	if name != r.Playbook {
		return "", &NotFoundError{Run: run, Err: fmt.Errorf("%s is not a run of playbook %s", run, r.Playbook)}
	}
	e := eventSend{Run: run, RunID: runID, Event: event, Data: data, By: "webhook " + d.Hook}
	if d.ID != "" {
		// The event and run are in the ID: a sender that gives one delivery
		// ID to two events (started, finished) has each delivered.
		e.UpdateID = "webhook-" + IDDigest(d.Hook+"\x00"+d.ID+"\x00"+run+"\x00"+event)
	}
	return sendEvent(ctx, c, e)
}

// AfterWindow is how far before its cursor an after trigger's watch looks
// again: visibility may show a run that ended a moment before another
// only after it.
const AfterWindow = time.Minute

// WatchAfter starts a run of r's playbook for each run of its upstream
// playbook that ended, in one of its statuses, after cursor (or within
// AfterWindow before it), and returns where it stands. A downstream run's
// ID is derived from its upstream run's, and the server refuses a second
// run of that ID: a run answered twice starts once. answered remembers,
// across calls, the upstream runs already answered, to spare the server
// the second asks.
func WatchAfter(ctx context.Context, c Client, namespace string, r contract.TriggerRegistration, cursor contract.TriggerCursor, answered map[string]bool) (contract.TriggerCursor, error) {
	infos, err := Executions(ctx, c, namespace, endedSinceQuery(r.Upstream, cursor.CloseTime.Add(-AfterWindow)), -1)
	if err != nil {
		return cursor, err
	}
	sort.Slice(infos, func(i, j int) bool {
		ti, tj := infos[i].GetCloseTime().AsTime(), infos[j].GetCloseTime().AsTime()
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return infos[i].GetExecution().GetWorkflowId() < infos[j].GetExecution().GetWorkflowId()
	})
	pb, err := spec.Parse(r.Run.File, []byte(r.Run.Source))
	if err != nil {
		return cursor, err
	}
	for _, e := range infos {
		up := RunOf(e)
		closed := e.GetCloseTime().AsTime()
		if answered[up.RunID] || !slices.Contains(r.Statuses, up.Status) {
			answered[up.RunID] = true
			cursor = later(cursor, closed, up.WorkflowID)
			continue
		}
		in := r.Run
		now := time.Now().UTC()
		in.LogicalTime = &now
		in.Trigger = map[string]any{"kind": contract.TriggerKindAfter, "playbook": r.Upstream, "run_id": up.WorkflowID, "status": up.Status, "result": upstreamResult(ctx, c, up)}
		s := Start{Playbook: pb, Input: in, TaskQueue: r.TaskQueue, ID: AfterRunID(r.Playbook, up.WorkflowID, up.RunID),
			Details: "after " + up.WorkflowID + " ended " + up.Status}
		if _, _, err := StartOnce(ctx, c, namespace, s, true, false); err != nil {
			return cursor, fmt.Errorf("starting %s after %s: %w", s.ID, up.WorkflowID, err)
		}
		answered[up.RunID] = true
		cursor = later(cursor, closed, up.WorkflowID)
	}
	return cursor, nil
}

// later is the later of cursor and (t, id).
func later(cursor contract.TriggerCursor, t time.Time, id string) contract.TriggerCursor {
	if t.After(cursor.CloseTime) || (t.Equal(cursor.CloseTime) && id > cursor.WorkflowID) {
		return contract.TriggerCursor{CloseTime: t, WorkflowID: id}
	}
	return cursor
}

// AfterRunID is the ID of the run of playbook that the upstream run
// (workflowID, runID) starts: one per upstream run, whoever asks.
func AfterRunID(playbook, workflowID, runID string) string {
	return playbook + "-after-" + IDDigest(workflowID+"\x00"+runID)
}

// maxTriggerResult bounds the upstream aggregate a downstream run gets as
// trigger.result: it travels in the downstream run's input.
const maxTriggerResult = 256 << 10

// upstreamResult is the upstream run's aggregate as trigger.result reads
// it (its status, steps and their results); nil when it has none, or one
// over maxTriggerResult.
func upstreamResult(ctx context.Context, c Client, up Run) any {
	agg, err := Result(ctx, c.GetWorkflow(ctx, up.WorkflowID, up.RunID))
	if err != nil {
		return nil
	}
	b, err := json.Marshal(agg)
	if err != nil || len(b) > maxTriggerResult {
		return nil
	}
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// IDDigest is 16 hex digits of key's SHA-256: what a run's ID derived
// from a key (an idempotency key, a delivery, an upstream run) ends with.
func IDDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// LoadTriggers loads the triggers of every file that has some, before
// anything changes; its error lists every file's problem, one a line (a
// hook's name is one in the namespace).
func LoadTriggers(files []string, taskQueue string) ([]contract.TriggerRegistration, error) {
	var regs []contract.TriggerRegistration
	var problems []string
	hooks := map[string]string{}
	afters := map[string]contract.TriggerRegistration{}
	for _, f := range files {
		_, rs, err := TriggersFromFile(f, taskQueue)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, r := range rs {
			if other, ok := hooks[r.Hook]; ok && r.Hook != "" {
				problems = append(problems, fmt.Sprintf("%s: webhook %s is also %s's", f, r.Hook, other))
				continue
			}
			if other, ok := afters[TriggerID(r)]; ok && r.Hook == "" && (other.Playbook != r.Playbook || other.Upstream != r.Upstream) {
				problems = append(problems, fmt.Sprintf("%s: playbook %s's trigger after %s and playbook %s's after %s (%s) would share the registration %s: rename one of these playbooks",
					f, r.Playbook, r.Upstream, other.Playbook, other.Upstream, other.File, TriggerID(r)))
				continue
			}
			hooks[r.Hook] = f
			if r.Hook == "" {
				afters[TriggerID(r)] = r
			}
			regs = append(regs, r)
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return regs, nil
}

// PruneTriggers removes the trigger registrations apply made from files
// under dir that are gone or no longer declare that trigger, except those
// just applied: it terminates their workflows, so that a pruned hook
// answers 404 and a pruned after trigger watches no more. A registration
// whose file does not load is left be. It returns those it removed, also
// when it stops at an error.
func PruneTriggers(ctx context.Context, c Client, namespace, dir, taskQueue string, applied []contract.TriggerRegistration) ([]Pruned, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, r := range applied {
		keep[TriggerID(r)] = true
	}
	open, err := Executions(ctx, c, namespace, fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.TriggerWorkflowName), -1)
	if err != nil {
		return nil, err
	}
	sort.Slice(open, func(i, j int) bool {
		return open[i].GetExecution().GetWorkflowId() < open[j].GetExecution().GetWorkflowId()
	})
	var pruned []Pruned
	for _, e := range open {
		id := e.GetExecution().GetWorkflowId()
		file := triggerFile(ctx, c, e)
		rel, err := filepath.Rel(absDir, file)
		if file == "" || keep[id] || err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		why, still := appliedFileSays(file, func() (bool, error) {
			_, regs, err := TriggersFromFile(file, taskQueue)
			return slices.ContainsFunc(regs, func(r contract.TriggerRegistration) bool { return TriggerID(r) == id }), err
		})
		if still {
			continue
		}
		err = c.TerminateWorkflow(ctx, id, "", "pruned by schedule apply: "+file+" "+why)
		var gone *serviceerror.NotFound
		switch {
		case errors.As(err, &gone):
			// Ended since visibility listed it (an apply a moment ago).
			continue
		case err != nil:
			return pruned, err
		}
		pruned = append(pruned, Pruned{ID: id, What: "trigger " + triggerWhatOfID(id), File: file, Why: why})
	}
	return pruned, nil
}

// triggerFile is the playbook file a registration was last applied from:
// the registration's own word (a re-apply from another file changes it,
// not the memo, which the start wrote), else its memo; "" when neither
// says.
func triggerFile(ctx context.Context, c Client, e *workflowpb.WorkflowExecutionInfo) string {
	r, err := registered(ctx, c, e.GetExecution().GetWorkflowId())
	if err != nil {
		var file string
		// The memo is encrypted under a codec key.
		dc, err := PayloadConverter()
		if p := e.GetMemo().GetFields()[contract.MemoTriggerFile]; p != nil && err == nil && dc.FromPayload(p, &file) == nil {
			return file
		}
		return ""
	}
	return r.File
}

// triggerWhatOfID is what a registration starts a run on, as its ID says.
func triggerWhatOfID(id string) string {
	if name, ok := strings.CutPrefix(id, HookID("")); ok {
		return "webhook /hooks/" + name
	}
	return id
}
