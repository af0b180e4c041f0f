package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

var _ = runs((*Activities).runHTTP)

// httpTimeout bounds the request of an http step without a timeout, its
// answer's body included: a server that never answers fails the attempt
// (retried as its retry block says) instead of holding it forever. A
// step's own timeout replaces it. A variable so that tests can shorten it.
var httpTimeout = 60 * time.Second

// errNoAnswer is why a request is stopped when it outlives its timeout.
var errNoAnswer = errors.New("no answer in time")

// runHTTP sends one request. A body that is not a string is sent as JSON.
// The attempt fails when the status is not expected (default: any 2xx).
func (a *Activities) runHTTP(ctx context.Context, in contract.StepInput, toolSpec *spec.HTTPTool, _ int) ToolResult {
	method := strings.ToUpper(toolSpec.Method)
	if method == "" {
		method = http.MethodGet
		if toolSpec.Body != nil {
			method = http.MethodPost
		}
	}
	var body io.Reader
	isJSON := false
	switch b := toolSpec.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return failure(contract.ErrTool, "http body: "+err.Error(), nil)
		}
		body, isJSON = bytes.NewReader(raw), true
	}
	if in.Timeout == 0 { // a step's timeout bounds ctx already
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, httpTimeout, errNoAnswer)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, toolSpec.URL, body)
	if err != nil {
		return failure(contract.ErrTool, "http request: "+err.Error(), nil)
	}
	// noAnswer is the error of a request stopped by httpTimeout.
	noAnswer := func(what string) ToolResult {
		return failure(contract.ErrHTTP, fmt.Sprintf("%s %s: %s within %s, as long as an http step without a timeout waits (give the step a timeout to wait longer)",
			method, toolSpec.URL, what, durationText(httpTimeout)), nil)
	}
	if isJSON {
		req.Header.Set("Content-Type", "application/json")
	}
	if tp := traceparentOf(ctx); tp != "" {
		req.Header.Set("traceparent", tp)
	}
	for k, v := range toolSpec.Headers {
		req.Header.Set(k, expr.Text(v))
	}
	client := a.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	if secrets := redactorOf(ctx); secrets != nil {
		client = secrets.keepOnRedirect(client)
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(context.Cause(ctx), errNoAnswer) {
			return noAnswer("no answer")
		}
		return failure(contract.ErrHTTP, fmt.Sprintf("%s %s: %v", method, toolSpec.URL, err), nil)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, bodyLimit+1))
	if err != nil {
		if errors.Is(context.Cause(ctx), errNoAnswer) {
			return noAnswer("the body of the answer did not end")
		}
		return failure(contract.ErrHTTP, fmt.Sprintf("%s %s: reading the response: %v", method, toolSpec.URL, err), nil)
	}
	if len(raw) > bodyLimit {
		return failure(contract.ErrHTTP, fmt.Sprintf("%s %s: the response body is larger than its limit of %s (a step's result must fit in Temporal's %s payload limit)",
			method, toolSpec.URL, size(bodyLimit), size(PayloadLimit)), map[string]any{"status_code": resp.StatusCode})
	}
	headers := map[string]any{}
	for k := range resp.Header {
		headers[k] = resp.Header.Get(k)
	}
	var parsed any
	if json.Unmarshal(raw, &parsed) != nil {
		parsed = nil
	}
	code := resp.StatusCode
	result := map[string]any{"status_code": code, "headers": headers, "body": string(raw), "json": parsed}
	if !toolSpec.ExpectStatus.Has(code) {
		// The secrets are hidden before the body is cut: a cut inside
		// one would leave its start whole, which hiding whole secrets
		// afterwards (the attempt's redactor) would not find.
		body := string(raw)
		if secrets := redactorOf(ctx); secrets != nil {
			body = secrets.text(body)
		}
		o := failure(contract.ErrHTTPStatus, fmt.Sprintf("%s %s answered %d", method, toolSpec.URL, code),
			map[string]any{"status_code": code, "body": truncate(body, tailBytes)})
		o.StatusCode = &code
		return o
	}
	return ToolResult{Result: result, StatusCode: &code}
}

// durationText writes whole seconds as "60s" rather than "1m0s".
func durationText(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
