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

var _ = runs((*Activities).runHTTP)

// runHTTP sends one request. A body that is not a string is sent as JSON.
// The attempt fails when the status is not expected (default: any 2xx).
func (a *Activities) runHTTP(ctx context.Context, _ interpreter.StepInput, spec *interpreter.HTTPTool, _ int) ToolResult {
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
			return failure(interpreter.ErrTool, "http body: "+err.Error(), nil)
		}
		body, isJSON = bytes.NewReader(raw), true
	}
	req, err := http.NewRequestWithContext(ctx, method, spec.URL, body)
	if err != nil {
		return failure(interpreter.ErrTool, "http request: "+err.Error(), nil)
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
		return failure(interpreter.ErrHTTP, fmt.Sprintf("%s %s: %v", method, spec.URL, err), nil)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, bodyLimit+1))
	if err != nil {
		return failure(interpreter.ErrHTTP, fmt.Sprintf("%s %s: reading the response: %v", method, spec.URL, err), nil)
	}
	if len(raw) > bodyLimit {
		return failure(interpreter.ErrHTTP, fmt.Sprintf("%s %s: the response body is larger than its limit of %s (a step's result must fit in Temporal's %s payload limit)",
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
	if !spec.ExpectStatus.Has(code) {
		o := failure(interpreter.ErrHTTPStatus, fmt.Sprintf("%s %s answered %d", method, spec.URL, code),
			map[string]any{"status_code": code, "body": truncate(string(raw), tailBytes)})
		o.StatusCode = &code
		return o
	}
	return ToolResult{Result: result, StatusCode: &code}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
