package playbookwf

import (
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter"
)

// The versions of behaviour changes that alter the commands a run issues
// (docs/VERSIONING.md). Each is asked only where the change can make a
// difference, so runs it cannot affect record no marker.
const (
	// versionWorkloadDeepMerge: overrides deep-merge into workload defaults
	// (before: a map given for a map replaced it whole).
	versionWorkloadDeepMerge = "workload-deep-merge"
	// versionArcsPerKind: a step reached both by a `next` and a `depends_on`
	// from one step has both arcs (before: the one first in the file).
	versionArcsPerKind = "arcs-per-kind"
	// versionEndDisconnected: `end`'s tool and the webhook run in a
	// disconnected context, and a cancel arriving while they run ends the
	// run cancelled (before: the cancel cancelled end's tool, failing the run).
	versionEndDisconnected = "end-disconnected"
	// versionChildIDDot: child workflow IDs join parent and step with a `.`,
	// which step names cannot hold (before: `-`, so `x` + `a-b` and `x-a` +
	// `b` collided).
	versionChildIDDot = "child-id-dot"
	// versionWaitInOrder: when the loop waits with two or more steps or
	// timers pending and several become ready together, it takes them in
	// the order they were started (before: the one whose event came first,
	// then the rest in that order). See waitSet.
	versionWaitInOrder = "wait-in-order"
	// versionPayloadBudget: a step whose activity or child input JSON cannot
	// carry, or that is over interpreter.PayloadBudget, fails with a
	// too_large error instead of being scheduled (before: the workflow
	// task failed on every attempt when the input was over Temporal's
	// limit, and the run hung).
	versionPayloadBudget = "payload-budget"
	// versionPaceYields: the workflow yields to the SDK's dispatcher every
	// paceEvery steps it decides or settles (see pace), so that a long run
	// of steps decided in the workflow does not trip the deadlock detector
	// (before: no yield; a chain of 1,500 noop steps failed its task).
	versionPaceYields = "pace-yields"
	// versionRunningCap: at most maxRunning steps run at once; the next
	// ready ones wait for a slot, in the order they became ready (before:
	// all started, and past Temporal's 2,000 pending activities the
	// workflow task failed on every attempt).
	versionRunningCap = "running-cap"
)

// maxRunning is how many steps a run keeps running at once: Temporal fails
// a workflow task that would leave more than 2,000 activities (or child
// workflows) pending, and a run's loops run their elements beside its
// steps.
const maxRunning = 1000

// capsRunning tells whether this run caps its running steps; asked when
// the cap is first reached, so runs below it record no marker.
func (x *executor) capsRunning() bool {
	if x.runningCap == nil {
		v := workflow.GetVersion(x.ctx, versionRunningCap, workflow.DefaultVersion, 1) >= 1
		x.runningCap = &v
	}
	return *x.runningCap
}

// runOptions asks the versions the core's decisions depend on, for the
// playbook and workload a run starts with.
func runOptions(ctx workflow.Context, pb *interpreter.Playbook, workload map[string]any) []interpreter.RunOption {
	var opts []interpreter.RunOption
	if interpreter.MergesDeep(pb.Workload, workload) &&
		workflow.GetVersion(ctx, versionWorkloadDeepMerge, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		opts = append(opts, interpreter.WithShallowWorkload())
	}
	if pb.HasArcsOfBothKinds() &&
		workflow.GetVersion(ctx, versionArcsPerKind, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		opts = append(opts, interpreter.WithFirstArcOnly())
	}
	return opts
}

// childID is the workflow ID of a child the run starts: the run's own ID,
// a `.`, then suffix (a step name, or a step's loop batch); legacy is the
// suffix, after a `-`, of runs from before.
func (x *executor) childID(ctx workflow.Context, suffix, legacy string) string {
	if workflow.GetVersion(ctx, versionChildIDDot, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return x.info.WorkflowExecution.ID + "-" + legacy
	}
	return x.info.WorkflowExecution.ID + "." + suffix
}

// detachEnd tells whether `end`'s tool and the webhook run in a disconnected
// context whatever happens to the run; when so, it makes x.ctx one.
func (x *executor) detachEnd() bool {
	if x.endDetached == nil {
		detached := workflow.GetVersion(x.ctx, versionEndDisconnected, workflow.DefaultVersion, 1) >= 1
		x.endDetached = &detached
		if detached && x.ctx.Err() == nil {
			x.ctx, _ = workflow.NewDisconnectedContext(x.ctx)
		}
	}
	return *x.endDetached
}

// tooLarge says why v, about to be written to history as one payload,
// cannot be (interpreter.CheckPayload). The version is asked only then, so
// runs whose payloads fit record no marker, and a run that wrote such a
// payload before the change (it fit Temporal's limit, not the budget)
// replays as it ran.
func (x *executor) tooLarge(what string, v any) *interpreter.StepError {
	err := interpreter.CheckPayload(what, v)
	if err == nil || workflow.GetVersion(x.ctx, versionPayloadBudget, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	return err
}
