package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
)

// webhookTimeout bounds a webhook's request, its answer included: under
// the Notify activity's 30 s start-to-close timeout, so that an attempt
// whose webhook never answers fails with a message that says so, and is
// retried, rather than be timed out by the server. A variable so that
// tests can shorten it.
var webhookTimeout = 25 * time.Second

// Notify POSTs the aggregate as JSON; anything but a 2xx answer, or none
// within webhookTimeout, fails the attempt (Temporal retries it).
func (a *Activities) Notify(ctx context.Context, in contract.NotifyInput) error {
	ctx, cancel := context.WithTimeoutCause(ctx, webhookTimeout, errNoAnswer)
	defer cancel()
	body, err := json.Marshal(in.Aggregate)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("aggregate: "+err.Error(), "notify_error", nil)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.Webhook, bytes.NewReader(body))
	if err != nil {
		return temporal.NewNonRetryableApplicationError(contract.Redact(err.Error()), "notify_error", nil)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Playbook-Event", in.Event)
	if a.Trace != nil {
		// The webhook joins the run's trace, under the run's own span.
		agg, _ := in.Aggregate.(map[string]any)
		id, _ := agg["workflow_id"].(string)
		run, _ := agg["run_id"].(string)
		if id != "" {
			t := contract.RunTrace(id, run)
			req.Header.Set("traceparent", contract.Traceparent(t, contract.RootSpan(t)))
		}
	}
	client := a.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil && errors.Is(context.Cause(ctx), errNoAnswer) {
		return errors.New(contract.Redact(fmt.Sprintf("POST %s: no answer within %s", in.Webhook, durationText(webhookTimeout))))
	}
	if err != nil {
		return errors.New(contract.Redact(fmt.Sprintf("POST %s: %v", in.Webhook, err)))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errors.New(contract.Redact(fmt.Sprintf("POST %s answered %d", in.Webhook, resp.StatusCode)))
	}
	return nil
}
