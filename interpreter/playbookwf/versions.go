package playbookwf

import (
	"sync/atomic"

	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// A Change is a behaviour change that alters the commands a run issues
// (docs/VERSIONING.md): runs started before it keep the old behaviour on
// replay, because the workflow asks the change's version (version) where
// the two behaviours part, and a history recorded before the change has no
// marker there. Each is asked only where it can make a difference, so runs
// it cannot affect record no marker. This registry is the one place a
// change ID is declared; TestChangesAreDocumented holds docs/VERSIONING.md
// to it, and the replay corpus (testsuite/testdata/histories) must take
// both sides of every one.
type Change struct {
	// ID names the behaviour, once and for all.
	ID string
	// Max is the newest version; it only goes up.
	Max workflow.Version
	// Where is where the version is asked.
	Where string
	// What is the new behaviour, and the old behaviour runs started
	// before the change keep.
	What string
	// NoOldSide says why no run can take the old side, when none can (a
	// key that workers from before cannot parse): the replay corpus then
	// holds only the new side. "": runs before the change took the old.
	NoOldSide string
}

// changes are the registered changes, in the order they were made.
var changes []*Change

func register(c Change) *Change {
	changes = append(changes, &c)
	return &c
}

// Changes lists every registered change, in the order they were made.
func Changes() []Change {
	out := make([]Change, len(changes))
	for i, c := range changes {
		out[i] = *c
	}
	return out
}

var (
	changeWorkloadDeepMerge = register(Change{ID: "workload-deep-merge", Max: 1,
		Where: "the start of a run whose overrides give a map for a map",
		What:  "overrides deep-merge into the workload defaults (before: a map given for a map replaced it whole; engine.WithShallowWorkload)"})
	changeArcsPerKind = register(Change{ID: "arcs-per-kind", Max: 1,
		Where: "the start of a run whose playbook joins two steps both by next and depends_on",
		What:  "both arcs count (before: the one first in the file; engine.WithFirstArcOnly)"})
	changeEndDisconnected = register(Change{ID: "end-disconnected", Max: 1,
		Where: "before end's tool starts, and before the webhook",
		What:  "both run in a disconnected context, and a cancel arriving while they run ends the run cancelled (before: the cancel cancelled end's tool, failing the run)"})
	changeChildIDDot = register(Change{ID: "child-id-dot", Max: 1,
		Where: "where a sub-playbook's child or a loop batch starts",
		What:  "child IDs join run and step with a dot, which step names cannot hold: <run>.<step>, <run>.<step>.batch-<n> (before: a dash, so x + a-b and x-a + b collided)"})
	changeNoopInWorkflow = register(Change{ID: "noop-in-workflow", Max: 1,
		Where: "where the run's first noop step starts",
		What:  "noop steps (and loops of them) are decided in the workflow, without an activity (before: a noop activity)"})
	changeLoopSizeBound = register(Change{ID: "loop-size-bound", Max: 1,
		Where: "where a loop's list is longer than the bound on a loop's length",
		What:  "the loop fails with an expression error instead of running"})
	// The replayer does not compare activity options, so of the policy's
	// change only the reading of the last attempt's number needs the
	// version: it is asked there.
	changeLostAttempts = register(Change{ID: "lost-attempts-retried", Max: 1,
		Where: "where a step's activity ran out of attempts on the server",
		What: "attempts lost with their worker are retried apart from the retry block's; the activity's policy leaves room for them " +
			"(before: the policy had none, and the last attempt's number was read without them)"})
	changeWaitInOrder = register(Change{ID: "wait-in-order", Max: 1,
		Where: "the first time the run waits with two or more steps or timers pending",
		What: "when several become ready together the loop takes them in the order they were started, channels first, " +
			"without a callback on every running step (before: the SDK's Selector, the first ready first; see waitSet)"})
	changePayloadBudget = register(Change{ID: "payload-budget", Max: 1,
		Where: "where a step's activity or child input cannot be encoded as JSON or is over contract.PayloadBudget",
		What: "the step fails (template_error, input_too_large) instead of being scheduled " +
			"(before: the workflow task failed on every attempt when the input was over Temporal's limit, and the run hung)"})
	changeLoopDriver = register(Change{ID: "loop-driver", Max: 1,
		Where: "where a loop longer than contract.LoopBatchSize elements starts",
		What: "the loop runs in one driver child (PlaybookLoop, <run>.<step>.loop) that keeps max_in_flight elements running " +
			"across the whole loop and continues as new as its history grows (before: batches of contract.LoopBatchSize elements, " +
			"one child after another, each waiting for its slowest element)"})
	changePaceYields = register(Change{ID: "pace-yields", Max: 1,
		Where: "the paceEvery-th step (or loop element) the run decides or settles",
		What: "every paceEvery of them the workflow yields to the SDK's dispatcher, where its other coroutines may issue commands, " +
			"so that a long run of steps decided in the workflow does not trip the deadlock detector (before: no yield)"})
	changeRunningCap = register(Change{ID: "running-cap", Max: 1,
		Where: "where a run first has maxRunning steps running and another ready",
		What: "the next ready steps wait for a slot, in the order they became ready (before: all started, and past " +
			"Temporal's 2,000 pending activities the workflow task failed on every attempt)"})
	changeNullSafeCompare = register(Change{ID: "null-safe-compare", Max: 1,
		Where: "where a condition the workflow evaluates (a next rule's when, end's success_when) first orders a null with <, <=, > or >=",
		What:  "the ordering is false (before: the condition failed with expression_error; engine.WithNullSafeComparisons)"})
	changeNullSafeMember = register(Change{ID: "null-safe-member", Max: 1,
		Where: "where a condition the workflow evaluates (a next rule's when, end's success_when) first takes a field or an index of null",
		What:  "it is null, as with ?. (before: the condition failed with expression_error; engine.WithNullSafeMembers)"})
	changeEmbeddedZones = register(Change{ID: "embedded-zones", Max: 1,
		Where: "where the workflow first evaluates an expression or template that calls date, timezone or .Local()",
		What: "zones come from the tz database embedded in playbook, \"Local\", \"\" and .Local() are errors, and a date without a zone is read in UTC " +
			"(before: expr-lang's own, which read the worker's $ZONEINFO or /usr/share/zoneinfo and its local zone; spec.Playbook.LookUpZonesOnHost)"})
	changeWaitUntilBound = register(Change{ID: "wait-until-bound", Max: 1,
		Where: "where a wait step's until, from a template, is past spec.LastTimerTime",
		What:  "the step fails with tool_error, saying so (before: a timer of 292 years, the most a duration holds, and a result that said so)"})
	// Input.ReuseElements is set by a `playbook retry` of a build that
	// reuses elements; a worker from before ignored it and ran every
	// element, so a newer worker replaying that run must too.
	changeReuseElements = register(Change{ID: "reuse-elements", Max: 1,
		Where: "where a loop step that a retry reuses elements of (Input.ReuseElements) starts its elements or its driver",
		What: "the elements the retry reuses are not started: their earlier results stand in the loop's result " +
			"(before: the input's reused elements were ignored and every element ran)"})
	changeConcurrency = register(Change{ID: "concurrency-limit", Max: 1,
		Where: "the start of a run whose playbook declares concurrency",
		What: "the run asks its key's coordinator for a slot (activity AcquireSlot) and waits for one before its first step " +
			"(before: workers did not know the key; a run started at once)",
		NoOldSide: "a worker from before the change cannot parse a playbook with concurrency: its workflow task fails until a newer worker replays the run from its start"})
	changeWaitEventNotice = register(Change{ID: "wait-event-notice", Max: 1,
		Where: "where a wait_event step starts waiting in a playbook with notify.on_waiting",
		What:  "the on_waiting webhook is posted for an event wait as for an approval (before: only approvals posted it)"})
	changeQueuedStatus = register(Change{ID: "queued-status", Max: 1,
		Where: "where an indexed run (Input.Index) is queued behind its concurrency key's limit",
		What: "the run's PlaybookStatus search attribute says queued while it waits for its slot, and running again once granted " +
			"(before: it stayed running, and `list` showed a queued run as running)"})
	changeReportsDelivered = register(Change{ID: "loop-reports-delivered", Max: 1,
		Where: "where a loop's driver (PlaybookLoop) is to report its progress, or has run its elements, while a progress signal it sent is not yet delivered",
		What: "a workflow task of the driver's sends no other, and the driver waits for the deliveries before it completes or continues as new, so that none arrives while the task closing it runs " +
			"(before: it closed at once, and the server refused that task when one arrived: the local elements the task had run ran again)"})
	changeLocalTaskCap = register(Change{ID: "local-task-cap", Max: 1,
		Where: "where a loop's driver (PlaybookLoop) of local elements would start one past its workflow task's share (LocalTaskElements, LocalTaskBytes)",
		What: "it starts no more in that task, lets the task end with the running ones, and starts the next ones in the task a 1ms timer brings " +
			"(before: one task ran elements until the SDK renewed it, 8 s later, and its completion carried them all: on a starved worker it timed out, " +
			"and with large results it was over the 4 MiB a request may hold)"})
	changeLocalElements = register(Change{ID: "local-elements-direct", Max: 1,
		Where: "where a loop (in the run, or its driver) starts its first local element",
		What: "each local element's first local activity is scheduled from the loop's coroutine, and a coroutine of its own starts only when an attempt leaves its retry to a timer " +
			"(before: every local element ran in a coroutine of its own, which the SDK's dispatcher woke each time a local activity ended, " +
			"and the elements' local activities were numbered in the order those coroutines ran)"})
	changeLoopOwnCount = register(Change{ID: "loop-own-count", Max: 1,
		Where: "where the server first suggests that a loop's driver (PlaybookLoop) continue as new for its event count alone, before loopHistoryEvents",
		What: "the driver goes on starting elements until its history holds loopHistoryEvents events, and heeds the suggestion for any other reason (the history's size) " +
			"(before: it started no more at the server's suggestion, 4 Ki events by default, and each run's end, which lets the loop's window run dry, came twice as often)"})
	changeCancelledFailsAtOnce = register(Change{ID: "cancelled-fails-at-once", Max: 1,
		Where: "where a step fails, with no rule to handle it and use_pending_failed, after the run was cancelled",
		What: "the step fails at once, and the run ends cancelled (before: it waited in pending_failed for a classification, " +
			"and the cancelled run stayed open until a person classified it or its pending_timeout passed)"})
	changeQueuedCancel = register(Change{ID: "queued-cancel", Max: 2,
		Where: "where a run asking for its concurrency slot, or waiting for it, is cancelled (version 1), or leaves the queue without its slot: cancelled, drained, or past its deadline (version 2)",
		What: "the run leaves the queue cancelled: no step starts, its steps are skipped and `end` runs " +
			"(before: its first steps started in the cancelled run, a noop completed, and an approval posted its on_waiting webhook); " +
			"version 2: its cleanup steps (always, on_cancel) are skipped too (before: they ran, and released a lock the run never took while another run held it)"})
	changeTruncatedReads = register(Change{ID: "truncated-reads", Max: 1,
		Where: "where an expression or a template first reads past a stub (a value over its budget: a field it has not, an index, its length), or inputs.from names a step whose files list went with its truncated result, " +
			"or a loop's driver starts with a stub in what its elements read (the run hands its side to the driver, and a driver to the run it continues as new)",
		What: "the read is an error that says the value was cut (template_error, expression_error) " +
			"(before: a field of the stub was null, its length 4, and inputs.from took no file: the run went on without the value, and nothing said so)"})
)

// version asks which side of c this run takes: c.Max for a run that reached
// this point after the change, workflow.DefaultVersion for one recorded
// before it. An observer (ObserveVersions) hears the answer.
func version(ctx workflow.Context, c *Change) workflow.Version {
	v := workflow.GetVersion(ctx, c.ID, workflow.DefaultVersion, c.Max)
	if observe := observer.Load(); observe != nil {
		(*observe)(workflow.GetInfo(ctx).WorkflowExecution, c.ID, v)
	}
	return v
}

// observer is what ObserveVersions was given, nil when nothing observes.
var observer atomic.Pointer[func(run workflow.Execution, change string, v workflow.Version)]

// ObserveVersions calls f with every change's version a workflow in this
// process asks (replays included), with the run that asked, until stop is
// called: the replay corpus's test tells from it which side of each change
// a history takes. f must not block; it decides nothing in the workflow.
func ObserveVersions(f func(run workflow.Execution, change string, v workflow.Version)) (stop func()) {
	observer.Store(&f)
	return func() { observer.Store(nil) }
}

// maxRunning is how many steps a run keeps running at once: Temporal fails
// a workflow task that would leave more than 2,000 activities (or child
// workflows) pending, and a run's loops run their elements beside its
// steps.
const maxRunning = 1000

// capsRunning tells whether this run caps its running steps; engine.Slots
// asks it once, when the cap is first reached, so runs below it record no
// marker.
func (x *executor) capsRunning() bool { return version(x.ctx, changeRunningCap) >= 1 }

// runOptions asks the versions the core's decisions depend on, for the
// playbook and workload a run starts with.
func runOptions(ctx workflow.Context, pb *spec.Playbook, workload map[string]any) []engine.RunOption {
	var opts []engine.RunOption
	if spec.MergesDeep(pb.Workload, workload) &&
		version(ctx, changeWorkloadDeepMerge) == workflow.DefaultVersion {
		opts = append(opts, engine.WithShallowWorkload())
	}
	if pb.HasArcsOfBothKinds() &&
		version(ctx, changeArcsPerKind) == workflow.DefaultVersion {
		opts = append(opts, engine.WithFirstArcOnly())
	}
	opts = append(opts, engine.WithNullSafeComparisons(func() bool {
		return version(ctx, changeNullSafeCompare) != workflow.DefaultVersion
	}), engine.WithNullSafeMembers(func() bool {
		return version(ctx, changeNullSafeMember) != workflow.DefaultVersion
	}), engine.WithCancelledFailsAtOnce(func() bool {
		return version(ctx, changeCancelledFailsAtOnce) != workflow.DefaultVersion
	}), engine.WithTruncatedReads(func() bool {
		return version(ctx, changeTruncatedReads) != workflow.DefaultVersion
	}))
	return opts
}

// readsStubs is engine.RenderElement's for a loop's driver: whether,
// after err, the driver reads past a stub as drivers from before
// "truncated-reads" did. The side the run that started it, or the run it
// continued, took (in.StubsAsWritten) stands; else the driver asks, and
// keeps the answer in in for the run it continues as new.
func readsStubs(ctx workflow.Context, in *contract.LoopInput) func(error) bool {
	return func(err error) bool {
		if !expr.IsTruncatedRead(err) {
			return false
		}
		if in.StubsAsWritten == nil {
			old := version(ctx, changeTruncatedReads) == workflow.DefaultVersion
			in.StubsAsWritten = &old
		}
		return *in.StubsAsWritten
	}
}

// childID is the workflow ID of a child the run starts: the run's own ID,
// a `.`, then suffix (a step name, or a step's loop batch); legacy is the
// suffix, after a `-`, of runs from before.
func (x *executor) childID(ctx workflow.Context, suffix, legacy string) string {
	if version(ctx, changeChildIDDot) == workflow.DefaultVersion {
		return x.info.WorkflowExecution.ID + "-" + legacy
	}
	return x.info.WorkflowExecution.ID + "." + suffix
}

// detachEnd tells whether `end`'s tool and the webhook run in a disconnected
// context whatever happens to the run; when so, it makes x.ctx one.
func (x *executor) detachEnd() bool {
	if x.endDetached == nil {
		detached := version(x.ctx, changeEndDisconnected) >= 1
		x.endDetached = &detached
		if detached && x.ctx.Err() == nil {
			x.ctx, _ = workflow.NewDisconnectedContext(x.ctx)
		}
	}
	return *x.endDetached
}

// tooLarge says why v, about to be written to history as one payload,
// cannot be (contract.CheckPayload). The version is asked only then, so
// runs whose payloads fit record no marker, and a run that wrote such a
// payload before the change (it fit Temporal's limit, not the budget)
// replays as it ran.
func (x *executor) tooLarge(what string, v any) *contract.StepError {
	err := contract.BudgetsFor(x.in.LargeValues).Check(what, v)
	if err == nil || version(x.ctx, changePayloadBudget) == workflow.DefaultVersion {
		return nil
	}
	return err
}
