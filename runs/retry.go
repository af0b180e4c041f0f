package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/submit"
)

// retryRequest is what a retry is asked to do.
type retryRequest struct {
	earlierID string
	// pb and in are the new playbook (retry --file), loaded and checked as a
	// submission; nil: the earlier run's frozen playbook.
	pb *spec.Playbook
	in *contract.Input
	// file is the new playbook's path as given, for the origin.
	file string
	// overrides are the workload values set on top of the earlier run's
	// (--input, then --set), as read (workloadOverrides).
	overrides map[string]any
	// from runs again, with everything downstream of it.
	from string
	// id is the new run's workflow ID ("": NAME-RANDOM).
	id, taskQueue, by, reason string
	// logicalTime replaces the earlier run's; nil keeps it.
	logicalTime *time.Time
	// dryRun decides and starts nothing.
	dryRun bool
	// otherName lets pb have another metadata.name than the earlier run's.
	otherName bool
}

// retried is a new run of an earlier run's playbook, or, on a dry run,
// what it would reuse.
type retried struct {
	pb   *spec.Playbook
	run  client.WorkflowRun // nil on a dry run
	plan *engine.ReusePlan
	// reused are the steps reused, in file order.
	reused []string
	// dropped are workload keys the earlier run set that the new playbook
	// no longer declares.
	dropped []string
}

// retryError is a retry that cannot be made as asked (a running run, an
// unknown step): the caller's mistake, not the server's.
type retryError struct{ msg string }

func (e *retryError) Error() string { return e.msg }

// submitError is a retry the server did not start (an ID in use, no server).
type submitError struct {
	id  string
	err error
}

func (e *submitError) Error() string { return fmt.Sprintf("cannot start %s: %v", e.id, e.err) }

func (e *submitError) Unwrap() error { return e.err }

// startRetry starts a new run of an ended run: of its frozen playbook, or
// of the new one the request carries, with its workload and the request's
// overrides on top. The steps it reuses are those engine.PlanReuse
// decides: completed before, and unchanged in definition, upstream, and in
// the workload values, files and logical time they read. The new run
// records where it came from, who asked and why (its events, aggregate,
// the Web UI's details).
func startRetry(ctx context.Context, conn *connection, r retryRequest) (*retried, error) {
	// Who asked and why are printed on operators' terminals, as an
	// approval's are: one line of printable text each.
	if err := contract.CheckName("by", r.by); err != nil {
		return nil, invalid(err)
	}
	if err := contract.CheckLine("reason", r.reason); err != nil {
		return nil, invalid(err)
	}
	before, err := runs.FrozenInput(ctx, conn.client, r.earlierID)
	if err != nil {
		return nil, err
	}
	d, err := conn.client.DescribeWorkflowExecution(ctx, r.earlierID, "")
	if err != nil {
		return nil, err
	}
	info := d.GetWorkflowExecutionInfo()
	oldPb, err := spec.Parse(before.File, []byte(before.Source))
	if err != nil {
		return nil, fmt.Errorf("the frozen playbook no longer parses: %w", err)
	}
	var earlier *contract.Aggregate
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return nil, &retryError{fmt.Sprintf("%s is still running; retry a finished run", r.earlierID)}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		if earlier, err = runs.Result(ctx, conn.client.GetWorkflow(ctx, r.earlierID, "")); err != nil {
			return nil, err
		}
	default:
		// Terminated or timed out: the steps as they stood, when a worker
		// replays them; else none, and every step runs.
		earlier = runs.EndedByTemporal(ctx, conn.client, r.earlierID, info, oldPb)
	}

	pb, in := r.pb, r.in
	if pb != nil && pb.Name != oldPb.Name && !r.otherName {
		return nil, &retryError{fmt.Sprintf("%s is playbook %q, and %s ran %q: a retry runs the same playbook, fixed; give --other-name to retry it with another one", r.file, pb.Name, r.earlierID, oldPb.Name)}
	}
	if pb == nil {
		// A retry is a submission: today's checks apply to the frozen
		// playbook (its sub-playbooks are not read again).
		if _, err := submit.ParseStrict(before.File, []byte(before.Source), ""); err != nil {
			return nil, &retryError{err.Error()}
		}
		pb, in = oldPb, &contract.Input{File: before.File, BaseDir: before.BaseDir, Source: before.Source, Files: before.Files}
	}
	out := &retried{pb: pb}
	// The earlier run's overrides, but those of keys the playbook no longer
	// declares, then the new ones on top.
	kept := map[string]any{}
	for k, v := range before.Workload {
		if _, ok := pb.Workload[k]; ok || pb.WorkloadBroken() {
			kept[k] = v
		} else {
			out.dropped = append(out.dropped, k)
		}
	}
	sort.Strings(out.dropped)
	if in.Workload, err = submit.CheckOverrides(pb, spec.MergeWorkload(kept, r.overrides)); err != nil {
		return nil, &retryError{err.Error()}
	}
	earlierTime := earlierLogicalTime(earlier, before, info)
	lt := earlierTime
	if r.logicalTime != nil {
		lt = r.logicalTime.UTC()
	}
	in.LogicalTime = &lt
	if r.pb == nil {
		// The frozen playbook: its scripts as they are now.
		in.FileDigests = submit.FileDigests(pb, in.BaseDir, in.Files)
	}

	oldSide := engine.RetrySide{Playbook: oldPb, Definitions: spec.StepDefinitions([]byte(before.Source)),
		Workload: spec.MergeWorkload(oldPb.Workload, before.Workload), BaseDir: before.BaseDir, Texts: before.Files,
		Files: maps.Clone(before.FileDigests), LogicalTime: earlierTime.Format(time.RFC3339), RunID: r.earlierID}
	if oldSide.Files == nil {
		oldSide.Files = map[string]string{}
	}
	// Sub-playbooks are frozen into every run: their digests are known.
	for path, text := range before.Files {
		oldSide.Files[path] = submit.Digest(text)
	}
	id := r.id
	if id == "" {
		id = pb.Name + "-" + randomSuffix()
	}
	newSide := engine.RetrySide{Playbook: pb, Definitions: spec.StepDefinitions([]byte(in.Source)),
		Workload: spec.MergeWorkload(pb.Workload, in.Workload), BaseDir: in.BaseDir, Texts: in.Files,
		Files: in.FileDigests, LogicalTime: lt.Format(time.RFC3339), RunID: id}
	var reuse *contract.ChildReuse
	if out.plan, reuse, err = planRetry(ctx, conn.client, r.earlierID, before, oldSide, newSide, contract.Reusable(earlier), r.from); err != nil {
		return nil, err
	}
	for _, dcs := range out.plan.Decisions {
		if dcs.Reused {
			out.reused = append(out.reused, dcs.Step)
		}
	}
	if r.dryRun {
		return out, nil
	}
	in.Reuse, in.ReuseElements, in.ReuseChildren = reuse.Reuse, reuse.ReuseElements, reuse.ReuseChildren
	in.Origin = &contract.Origin{RetryOf: r.earlierID, From: r.from, By: r.by, Reason: r.reason, File: r.file,
		FileChanged: r.pb != nil && (in.Source != before.Source || !maps.Equal(in.Files, before.Files)),
		Overrides:   submit.PlainOverrides(r.overrides)}
	if len(in.Origin.Overrides) == 0 {
		in.Origin.Overrides = nil
	}
	if err := conn.checkCodec(ctx, r.taskQueue); err != nil {
		return nil, &retryError{err.(*exitError).err.Error()}
	}
	wr, err := conn.submitWith(ctx, pb, *in, id, r.taskQueue, in.Origin.String())
	if err != nil {
		return nil, &submitError{id: id, err: err}
	}
	out.run = wr
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

// decisionLines are a retry's decisions, one line per step: "reused", or
// "runs: why", with the step names in one column; a loop's counts its
// elements, and a sub-playbook step's child plan follows it, indented.
func decisionLines(plan *engine.ReusePlan) []string {
	return decisionLinesOf(plan.Decisions, "  ")
}

func decisionLinesOf(decisions []engine.ReuseDecision, indent string) []string {
	width := 0
	for _, d := range decisions {
		width = max(width, len(d.Step))
	}
	var out []string
	for _, d := range decisions {
		what := "reused"
		switch {
		case d.Elements != nil:
			what = fmt.Sprintf("%s of %s elements run (%s), %s reused", thousands(d.Elements.Run), thousands(d.Elements.Total), d.Why, thousands(d.Elements.Reused))
		case d.Why == engine.NotLedTo:
			what = "not reused: " + d.Why
		case d.Child != nil:
			what = "runs: " + d.Why + "; a retry of its sub-playbook:"
		case !d.Reused:
			what = "runs: " + d.Why
		}
		out = append(out, fmt.Sprintf("%s%-*s  %s", indent, width, d.Step, what))
		out = append(out, decisionLinesOf(d.Child, indent+"    ")...)
	}
	return out
}
