package commands

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// remoteLogTimeout bounds a worker's silence while one log is fetched from it.
const remoteLogTimeout = 30 * time.Second

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

// attemptLocations reads, from a run's history (and its loop batches')
// and its running activities, where each attempt of step logged: the URL
// of the worker that serves its logs, by attempt number.
func attemptLocations(ctx context.Context, c client.Client, run, runID, step string) (map[int]string, error) {
	dc, err := runs.PayloadConverter()
	if err != nil {
		return nil, err
	}
	where := map[int]string{}
	return where, locateIn(ctx, c, dc, run, runID, step, where)
}

// locateIn reads one run of a workflow (runID "": its latest), the runs it
// continued (a loop's driver), and its loop drivers or batches.
func locateIn(ctx context.Context, c client.Client, dc converter.DataConverter, workflowID, runID, step string, where map[int]string) error {
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

// serverKnown says whether `playbook logs` has a server to ask: one is
// configured, or `playbook dev` listens on its usual address.
func (a *app) serverKnown() bool {
	s, err := a.loadClientSettings()
	return a.conn.given("address") || (err == nil && s.opts.HostPort != "") || listening(localDevAddress)
}

// printRemoteLogs prints attempt n's stdout and stderr, fetched from the
// worker that ran it, as the local logs are printed; the logs token goes
// only to a worker trust trusts.
func printRemoteLogs(c *call, trust logsTrust, logsAt, run, runID, step string, n int) error {
	token := trust.token(logsAt)
	for _, stream := range []string{"stdout", "stderr"} {
		u := fmt.Sprintf("%s/logs/%s/%s/%d/%s", logsAt, url.PathEscape(run), url.PathEscape(step), n, stream)
		if runID != "" {
			// An earlier run of the ID; without it the worker serves the latest.
			u += "?run_id=" + url.QueryEscape(runID)
		}
		if err := copyLog(c.ctx, c.stdout, fmt.Sprintf("== attempt %d %s (%s) ==\n", n, stream, u), u, token); err != nil {
			return err
		}
	}
	return nil
}

// copyLog writes header, then the log at u as it arrives, ending with a
// newline: a log may be larger than memory, and take longer than
// remoteLogTimeout to copy. The timeout bounds the worker's silence: until
// it answers, and between two reads. token, when not empty, is sent.
func copyLog(ctx context.Context, w io.Writer, header, u, token string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	silence := time.AfterFunc(remoteLogTimeout, cancel)
	defer silence.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return copyStream(w, header, u, resp.Body, func() { silence.Reset(remoteLogTimeout) })
}
