package runs

import (
	"context"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/contract"
)

// loggedAt is what a step's activity records say about where its attempts
// logged: its output, failure details and heartbeat details (the attempt
// log) share these fields.
type loggedAt struct {
	Attempts      int         `json:"attempts"`
	LogsAt        string      `json:"logs_at"`
	Current       int         `json:"current"`
	Failed        []attemptAt `json:"failed"`
	AttemptErrors []attemptAt `json:"attempt_errors"`
}

type attemptAt struct {
	Attempt int    `json:"attempt"`
	LogsAt  string `json:"logs_at"`
}

// add records where the attempts in v logged; prior is the step's
// attempts before the activity (a completed activity's Attempts count
// within it).
func (v loggedAt) add(where map[int]string, prior int, completed bool) {
	for _, r := range append(v.Failed, v.AttemptErrors...) {
		if r.LogsAt != "" {
			where[r.Attempt] = r.LogsAt
		}
	}
	switch {
	case v.LogsAt == "":
	case completed:
		where[prior+v.Attempts] = v.LogsAt
	case v.Current > 0:
		where[v.Current] = v.LogsAt
	}
}

// AttemptLocations reads, from a run's history (and its loop batches')
// and its running activities, where each attempt of step logged: the URL
// of the worker that serves its logs, by attempt number.
func AttemptLocations(ctx context.Context, c Client, run, runID, step string) (map[int]string, error) {
	dc, err := PayloadConverter()
	if err != nil {
		return nil, err
	}
	where := map[int]string{}
	return where, locateIn(ctx, c, dc, run, runID, step, where)
}

// locateIn reads one run of a workflow (runID "": its latest), the runs it
// continued (a loop's driver), and its loop drivers or batches.
func locateIn(ctx context.Context, c Client, dc converter.DataConverter, workflowID, runID, step string, where map[int]string) error {
	decode := func(p *commonpb.Payloads, v any) bool {
		return p != nil && len(p.GetPayloads()) > 0 && dc.FromPayloads(p, v) == nil
	}
	prior := map[int64]int{} // scheduled event -> the step's attempts before it
	var batches []string
	var continued string
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return err
		}
		var v loggedAt
		switch {
		case e.GetActivityTaskScheduledEventAttributes().GetActivityId() == step:
			var in struct {
				PriorAttempts int `json:"prior_attempts"`
			}
			decode(e.GetActivityTaskScheduledEventAttributes().GetInput(), &in)
			prior[e.GetEventId()] = in.PriorAttempts
		case e.GetActivityTaskCompletedEventAttributes() != nil:
			a := e.GetActivityTaskCompletedEventAttributes()
			if p, ok := prior[a.GetScheduledEventId()]; ok && decode(a.GetResult(), &v) {
				v.add(where, p, true)
			}
		case e.GetActivityTaskFailedEventAttributes() != nil:
			a := e.GetActivityTaskFailedEventAttributes()
			if p, ok := prior[a.GetScheduledEventId()]; ok && decode(a.GetFailure().GetApplicationFailureInfo().GetDetails(), &v) {
				v.add(where, p, false)
			}
		case e.GetActivityTaskTimedOutEventAttributes() != nil:
			a := e.GetActivityTaskTimedOutEventAttributes()
			if p, ok := prior[a.GetScheduledEventId()]; ok && decode(a.GetFailure().GetTimeoutFailureInfo().GetLastHeartbeatDetails(), &v) {
				v.add(where, p, false)
			}
		case e.GetWorkflowExecutionStartedEventAttributes() != nil:
			continued = e.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		case isLoopChild(e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowType().GetName()):
			batches = append(batches, e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId())
		}
	}
	if runID == "" {
		d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
		if err != nil {
			return err
		}
		for _, pa := range d.GetPendingActivities() {
			var v loggedAt
			if pa.GetActivityId() == step && decode(pa.GetHeartbeatDetails(), &v) {
				v.add(where, 0, false)
			}
		}
	}
	if continued != "" {
		if err := locateIn(ctx, c, dc, workflowID, continued, step, where); err != nil {
			return err
		}
	}
	for _, b := range batches {
		if err := locateIn(ctx, c, dc, b, "", step, where); err != nil {
			return err
		}
	}
	return nil
}

func isLoopChild(workflowType string) bool {
	return workflowType == contract.LoopWorkflowName || workflowType == contract.LoopBatchWorkflowName
}

// attemptLog names an attempt's log file in a step's log directory.
var attemptLog = regexp.MustCompile(`^attempt-(\d+)\.stdout$`)

// LoggedAttempts lists the attempts that have logs in dir, in order.
func LoggedAttempts(dir string) []int {
	entries, _ := os.ReadDir(dir)
	var out []int
	for _, e := range entries {
		if m := attemptLog.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// ReusedFrom says where a step of run (or, index >= 0, one element of a
// loop step) ran when run did not run it: the runs up its retry chain,
// nearest first, that reused it in turn, ending with the one that ran it;
// nil when run ran it itself, or its input cannot be read. sameIndex is
// false when an element was reused apart from its step: a retry matches
// elements by their item, and the run that ran it may have held it at
// another index (the chain stops there).
func ReusedFrom(ctx context.Context, c Client, run, step string, index int) (chain []string, sameIndex bool) {
	for len(chain) < 100 {
		in, err := FrozenInput(ctx, c, run)
		if err != nil || in.Origin == nil || slices.Contains(chain, in.Origin.RetryOf) {
			return chain, true
		}
		switch {
		case in.Reuse[step] != nil:
		case index >= 0 && in.ReuseElements[step] != nil && in.ReuseElements[step].Has(index):
			return append(chain, in.Origin.RetryOf), false
		default:
			return chain, true
		}
		run = in.Origin.RetryOf
		chain = append(chain, run)
	}
	return chain, true
}
