package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"playbook/interpreter"
)

type httpSpec struct {
	Method       string         `json:"method"`
	URL          string         `json:"url"`
	Headers      map[string]any `json:"headers"`
	Body         any            `json:"body"`
	ExpectStatus any            `json:"expect_status"`
}

// runHTTP sends one request. A body that is not a string is sent as JSON.
// The attempt fails when the status is not expected (default: any 2xx).
func (a *Activities) runHTTP(ctx context.Context, in StepInput) Outcome {
	var spec httpSpec
	if err := decodeSpec(in.Spec, &spec); err != nil {
		return failure("tool_error", "http spec: "+err.Error(), nil)
	}
	method := strings.ToUpper(spec.Method)
	if method == "" {
		method = http.MethodGet
		if spec.Body != nil {
			method = http.MethodPost
		}
	}
	var body io.Reader
	isJSON := false
	switch b := spec.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return failure("tool_error", "http body: "+err.Error(), nil)
		}
		body, isJSON = bytes.NewReader(raw), true
	}
	req, err := http.NewRequestWithContext(ctx, method, spec.URL, body)
	if err != nil {
		return failure("tool_error", "http request: "+err.Error(), nil)
	}
	if isJSON {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range spec.Headers {
		req.Header.Set(k, interpreter.Text(v))
	}
	client := a.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return failure("http_error", fmt.Sprintf("%s %s: %v", method, spec.URL, err), nil)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, bodyLimit+1))
	if err != nil {
		return failure("http_error", fmt.Sprintf("%s %s: reading the response: %v", method, spec.URL, err), nil)
	}
	if len(raw) > bodyLimit {
		return failure("http_error", fmt.Sprintf("%s %s: the response body is larger than its limit of %s (a step's result must fit in Temporal's %s payload limit)",
			method, spec.URL, size(bodyLimit), size(PayloadLimit)), map[string]any{"status_code": resp.StatusCode})
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
	if !statusExpected(code, spec.ExpectStatus) {
		o := failure("http_status", fmt.Sprintf("%s %s answered %d", method, spec.URL, code),
			map[string]any{"status_code": code, "body": truncate(string(raw), tailBytes)})
		o.StatusCode = &code
		return o
	}
	return Outcome{Result: result, StatusCode: &code}
}

// statusExpected checks a status against expect_status: a code or a list of
// codes (numbers arrive as float64 after the trip through the workflow).
func statusExpected(code int, expect any) bool {
	if expect == nil {
		return code >= 200 && code < 300
	}
	list, ok := expect.([]any)
	if !ok {
		list = []any{expect}
	}
	for _, e := range list {
		if n, ok := e.(float64); ok && int(n) == code {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
