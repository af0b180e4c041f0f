package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/submit"
)

// RetryRequest is what a retry is asked to do.
type RetryRequest struct {
	// Run is the earlier run's workflow ID.
	Run string
	// Playbook and Input are the new playbook (retry --file), loaded and
	// checked as a submission; nil: the earlier run's frozen playbook.
	Playbook *spec.Playbook
	Input    *contract.Input
	// File is the new playbook's path as given, for the origin.
	File string
	// Overrides are the workload values set on top of the earlier run's
	// (--input, then --set), as read (submit.ReadOverrides).
	Overrides map[string]any
	// From runs again, with everything downstream of it.
	From string
	// ID is the new run's workflow ID ("": NAME-RANDOM).
	ID, TaskQueue, By, Reason string
	// LogicalTime replaces the earlier run's; nil keeps it.
	LogicalTime *time.Time
	// DryRun plans and starts nothing.
	DryRun bool
	// OtherName lets Playbook have another metadata.name than the earlier run's.
	OtherName bool
	// LargeValues: the client keeps large values in the workers' store
	// (Start.LargeValues).
	LargeValues bool
	// Store is the workers' store, where the retry looks for the files the
	// steps it would reuse handed on: a step whose files are gone runs
	// again. nil: the front end does not know it, and the retry does not
	// look.
	Store store.Store
	// Check, when not nil, is the front end's last word before the new
	// run starts (the CLI's: that the workers can read what it sends); its
	// error is an InvalidError, and nothing starts.
	Check Check
}

// Retried is a new run of an earlier run's playbook, or, on a dry run,
// what it would reuse.
type Retried struct {
	Playbook *spec.Playbook
	Run      client.WorkflowRun // nil on a dry run
	Plan     *engine.ReusePlan
	// Reused are the steps reused, in file order.
	Reused []string
	// Dropped are workload keys the earlier run set that the new playbook
	// no longer declares.
	Dropped []string
}

// PlanData is the retry's plan as data (retry --dry-run --json, the MCP
// server's retry_run): one decision per step, and the warnings.
func (r *Retried) PlanData(earlier string) map[string]any {
	reused, warnings := r.Reused, r.Plan.Warnings
	if reused == nil {
		reused = []string{}
	}
	if warnings == nil {
		warnings = []string{}
	}
	return map[string]any{"retry_of": earlier, "steps": r.Plan.Decisions, "reused": reused, "warnings": warnings}
}

// notRetried refuses id for a retry of run (whose input is in): it names
// run, or a run run retried, in turn. Those runs' files are stored under
// their workflow ID, and a run whose elements and steps are reused from
// them would write its own over them; the runs a retry reads to find what
// completed are found by their ID, and would lead to the new run itself.
func notRetried(ctx context.Context, c Client, run string, in contract.Input, id string) error {
	for hops := 0; hops < 100; hops++ {
		if run == id {
			return &InvalidError{Err: fmt.Errorf("--id %s is the ID of a run whose work this retry reuses (the run retried, or one it retried in turn): its files are kept under that ID, and the new run would write its own over them; give the new run another ID", id)}
		}
		if in.Origin == nil {
			return nil
		}
		run = in.Origin.RetryOf
		var err error
		if in, err = FrozenInput(ctx, c, run); err != nil {
			return nil // what is left of the chain is gone: nothing of it is reused
		}
	}
	return nil
}

// retryChain is run, the run it retried, the run that one retried, and
// so on, as far as their histories are known (at most 100): the runs whose
// files a retry of run may read, where their steps put them.
func retryChain(ctx context.Context, c Client, run string, in contract.Input) []string {
	chain := []string{run}
	for len(chain) < 100 && in.Origin != nil && !slices.Contains(chain, in.Origin.RetryOf) {
		run = in.Origin.RetryOf
		chain = append(chain, run)
		var err error
		if in, err = FrozenInput(ctx, c, run); err != nil {
			break
		}
	}
	return chain
}

// Retry starts a new run of an ended run: of its frozen playbook, or
// of the new one the request carries, with its workload and the request's
// overrides on top. The steps it reuses are those engine.PlanReuse
// decides: completed before, and unchanged in definition, upstream, and in
// the workload values, files and logical time they read. The new run
// records where it came from, who asked and why (its events, aggregate,
// the Web UI's details).
//
// Its errors: InvalidError when the retry cannot be made as asked (the
// run still runs, an unknown step, a workload value of the wrong type),
// NotFoundError when no run has that ID, NotStartedError when the server
// did not start the new run.
func Retry(ctx context.Context, c Client, namespace string, r RetryRequest) (*Retried, error) {
	// Who asked and why are printed on operators' terminals, as an
	// approval's are: one line of printable text each.
	if err := contract.CheckName("by", r.By); err != nil {
		return nil, &InvalidError{Err: err}
	}
	if err := contract.CheckLine("reason", r.Reason); err != nil {
		return nil, &InvalidError{Err: err}
	}
	before, err := FrozenInput(ctx, c, r.Run)
	if err != nil {
		return nil, err
	}
	d, err := c.DescribeWorkflowExecution(ctx, r.Run, "")
	if err != nil {
		return nil, notFound(r.Run, err)
	}
	info := d.GetWorkflowExecutionInfo()
	oldPb, err := spec.Parse(before.File, []byte(before.Source))
	if err != nil {
		return nil, fmt.Errorf("the frozen playbook no longer parses: %w", err)
	}
	var earlier *contract.Aggregate
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return nil, &InvalidError{Err: fmt.Errorf("%s is still running; retry a finished run", r.Run)}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		if earlier, err = Result(ctx, c.GetWorkflow(ctx, r.Run, "")); err != nil {
			return nil, err
		}
	default:
		// Terminated or timed out: the steps as they stood, when a worker
		// replays them; else none, and every step runs.
		earlier = EndedByTemporal(ctx, c, r.Run, info, oldPb)
	}

	pb, in := r.Playbook, r.Input
	if pb != nil && pb.Name != oldPb.Name && !r.OtherName {
		return nil, &InvalidError{Err: fmt.Errorf("%s is playbook %q, and %s ran %q: a retry runs the same playbook, fixed; give --other-name to retry it with another one", r.File, pb.Name, r.Run, oldPb.Name)}
	}
	if pb == nil {
		// A retry is a submission: today's checks apply to the frozen
		// playbook (its sub-playbooks are not read again).
		if _, err := submit.ParseStrict(before.File, []byte(before.Source), ""); err != nil {
			return nil, &InvalidError{Err: err}
		}
		pb, in = oldPb, &contract.Input{File: before.File, BaseDir: before.BaseDir, Source: before.Source, Files: before.Files}
	}
	out := &Retried{Playbook: pb}
	// The earlier run's overrides, but those of keys the playbook no longer
	// declares, then the new ones on top.
	kept := map[string]any{}
	for k, v := range before.Workload {
		if _, ok := pb.Workload[k]; ok || pb.WorkloadBroken() {
			kept[k] = v
		} else {
			out.Dropped = append(out.Dropped, k)
		}
	}
	sort.Strings(out.Dropped)
	if in.Workload, err = submit.CheckOverrides(pb, spec.MergeWorkload(kept, r.Overrides)); err != nil {
		return nil, &InvalidError{Err: err}
	}
	earlierTime := earlierLogicalTime(earlier, before, info)
	lt := earlierTime
	if r.LogicalTime != nil {
		lt = r.LogicalTime.UTC()
	}
	in.LogicalTime = &lt
	if r.Playbook == nil {
		// The frozen playbook: its scripts as they are now.
		in.FileDigests = submit.FileDigests(pb, in.BaseDir, in.Files)
	}

	oldSide := engine.RetrySide{Playbook: oldPb, Definitions: spec.StepDefinitions([]byte(before.Source)),
		Workload: spec.MergeWorkload(oldPb.Workload, before.Workload), BaseDir: before.BaseDir, Texts: before.Files,
		Files: maps.Clone(before.FileDigests), LogicalTime: earlierTime.Format(time.RFC3339), RunID: r.Run}
	if oldSide.Files == nil {
		oldSide.Files = map[string]string{}
	}
	// Sub-playbooks are frozen into every run: their digests are known.
	for path, text := range before.Files {
		oldSide.Files[path] = submit.Digest(text)
	}
	id := r.ID
	if id == "" {
		id = NewRunID(pb.Name)
	} else if err := notRetried(ctx, c, r.Run, before, id); err != nil {
		return nil, err
	}
	newSide := engine.RetrySide{Playbook: pb, Definitions: spec.StepDefinitions([]byte(in.Source)),
		Workload: spec.MergeWorkload(pb.Workload, in.Workload), BaseDir: in.BaseDir, Texts: in.Files,
		Files: in.FileDigests, LogicalTime: lt.Format(time.RFC3339), RunID: id}
	var reuse *contract.ChildReuse
	if out.Plan, reuse, err = planRetry(ctx, c, lookIn(r.Store), r.Run, before, oldSide, newSide, contract.Reusable(earlier), r.From); err != nil {
		return nil, err
	}
	for _, dcs := range out.Plan.Decisions {
		if dcs.Reused {
			out.Reused = append(out.Reused, dcs.Step)
		}
	}
	if r.DryRun {
		return out, nil
	}
	in.Reuse, in.ReuseElements, in.ReuseChildren = reuse.Reuse, reuse.ReuseElements, reuse.ReuseChildren
	in.Origin = &contract.Origin{RetryOf: r.Run, From: r.From, By: r.By, Reason: r.Reason, File: r.File,
		FileChanged: r.Playbook != nil && (in.Source != before.Source || !maps.Equal(in.Files, before.Files)),
		Overrides:   submit.PlainOverrides(r.Overrides)}
	if len(in.Origin.Overrides) == 0 {
		in.Origin.Overrides = nil
	}
	if err := runCheck(ctx, r.Check, r.TaskQueue); err != nil {
		return nil, err
	}
	start := Start{Playbook: pb, Input: *in, ID: id, TaskQueue: r.TaskQueue, Details: in.Origin.String(), LargeValues: r.LargeValues}
	if len(in.Reuse) > 0 || len(in.ReuseElements) > 0 || len(in.ReuseChildren) > 0 {
		start.Memo = map[string]any{contract.MemoRetryChain: retryChain(ctx, c, r.Run, before)}
	}
	wr, err := StartRun(ctx, c, namespace, start)
	if err != nil {
		return nil, &NotStartedError{ID: id, Err: err}
	}
	out.Run = wr
	return out, nil
}

// earlierLogicalTime is the logical time of an earlier run: what its
// aggregate says, else its input's, else (a run from before runs had one)
// when it started.
func earlierLogicalTime(agg *contract.Aggregate, in contract.Input, info *workflowpb.WorkflowExecutionInfo) time.Time {
	if agg != nil && agg.LogicalTime != "" {
		if t, err := time.Parse(time.RFC3339, agg.LogicalTime); err == nil {
			return t.UTC()
		}
	}
	if in.LogicalTime != nil {
		return in.LogicalTime.UTC()
	}
	// A run a schedule started and that left no aggregate (terminated,
	// timed out) stood for its scheduled time, as the workflow read it.
	if p := info.GetSearchAttributes().GetIndexedFields()[contract.AttrScheduledStartTime]; p != nil {
		var t time.Time
		if json.Unmarshal(p.GetData(), &t) == nil && !t.IsZero() {
			return t.UTC()
		}
	}
	return info.GetStartTime().AsTime().UTC().Truncate(time.Second)
}
