package activities

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
)

// An attempt's span says how the attempt ended, as its error says.
func TestAttemptSpanReadsTheAttemptsEnd(t *testing.T) {
	exit3 := contract.FailureDetails{Error: contract.StepError{Type: "exit_code", Message: "exit status 3", Details: map[string]any{"exit_code": 3}}}
	cases := []struct {
		name     string
		index    int
		err      error
		wantName string
		failed   bool
		attrs    map[string]any
	}{
		{"success", contract.NoElement, nil, "attempt 2 build", false,
			map[string]any{"playbook.step": "build", "playbook.attempt": 2, "playbook.kind": "shell", "playbook.status": "completed"}},
		{"retried", contract.NoElement, temporal.NewApplicationErrorWithOptions("exit status 3", "exit_code", temporal.ApplicationErrorOptions{Details: []any{exit3}}), "attempt 2 build", true,
			map[string]any{"playbook.step": "build", "playbook.attempt": 2, "playbook.kind": "shell", "playbook.status": "retried", "playbook.error.type": "exit_code", "playbook.exit_code": 3}},
		{"retried after a local step's longer delay", contract.NoElement, temporal.NewApplicationErrorWithOptions("exit status 3", "exit_code", temporal.ApplicationErrorOptions{NonRetryable: true,
			Details: []any{contract.FailureDetails{Error: exit3.Error, RetryAfter: 3 * time.Second}}}), "attempt 2 build", true,
			map[string]any{"playbook.step": "build", "playbook.attempt": 2, "playbook.kind": "shell", "playbook.status": "retried", "playbook.error.type": "exit_code", "playbook.exit_code": 3}},
		{"failed element", 7, temporal.NewApplicationErrorWithOptions("exit status 3", "exit_code", temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{exit3}}), "attempt 2 build[7]", true,
			map[string]any{"playbook.step": "build", "playbook.attempt": 2, "playbook.kind": "shell", "playbook.status": "failed", "playbook.error.type": "exit_code", "playbook.exit_code": 3, "playbook.loop.index": 7}},
		{"cancelled", contract.NoElement, temporal.NewCanceledError("step build cancelled"), "attempt 2 build", true,
			map[string]any{"playbook.step": "build", "playbook.attempt": 2, "playbook.kind": "shell", "playbook.status": "cancelled"}},
		{"other", contract.NoElement, errors.New("boom"), "attempt 2 build", true,
			map[string]any{"playbook.step": "build", "playbook.attempt": 2, "playbook.kind": "shell", "playbook.status": "failed"}},
	}
	for _, c := range cases {
		s := attemptSpan(contract.Span{}, "build", c.index, 2, "shell", c.err)
		require.Equal(t, c.wantName, s.Name, c.name)
		require.Equal(t, c.failed, s.Failed, c.name)
		require.Equal(t, c.attrs, s.Attrs, c.name)
	}
}

// Without tracing an attempt carries no trace context; with it, its
// process gets TRACEPARENT and an empty TRACESTATE.
func TestTraceEnvOnlyWhenTracing(t *testing.T) {
	require.Nil(t, traceEnv(context.Background()))
	ctx := context.WithValue(context.Background(), traceKey{}, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	require.Equal(t, []string{"TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "TRACESTATE="}, traceEnv(ctx))
}

// The exporter's settings (OTEL_*: its headers carry a collector's
// credentials) and the worker's own trace context never reach a step, even
// when the worker names them in StepEnv.
func TestStepsNeverSeeTheExportersVariables(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=secret")
	t.Setenv("TRACEPARENT", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	t.Setenv("KEPT", "yes")
	env := stepEnvironment([]string{"OTEL_EXPORTER_OTLP_HEADERS", "TRACEPARENT", "KEPT"}, nil, nil)
	require.Contains(t, env, "KEPT=yes")
	for _, kv := range env {
		require.NotContains(t, kv, "secret")
		require.NotContains(t, kv, "TRACEPARENT")
	}
}

type noSpans struct{}

func (noSpans) Attempt(contract.Span) {}

// An http step sends its attempt's traceparent (a header of its own with
// that name wins); a webhook sends the run's span's, when tracing is on.
func TestHTTPAndWebhooksCarryTheTrace(t *testing.T) {
	got := make(chan string, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
	}))
	defer srv.Close()
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := context.WithValue(context.Background(), traceKey{}, tp)
	a := &Activities{Trace: noSpans{}}
	o := a.runTool(ctx, contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL}}, 1)
	require.Nil(t, o.Err)
	require.Equal(t, tp, <-got)
	o = a.runTool(ctx, contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL, "headers": map[string]any{"traceparent": "mine"}}}, 1)
	require.Nil(t, o.Err)
	require.Equal(t, "mine", <-got)

	require.NoError(t, a.Notify(context.Background(), contract.NotifyInput{Event: "on_success", Webhook: srv.URL, Aggregate: map[string]any{"workflow_id": "w", "run_id": "r"}}))
	tr := contract.RunTrace("w", "r")
	require.Equal(t, contract.Traceparent(tr, contract.RootSpan(tr)), <-got)
	require.NoError(t, (&Activities{}).Notify(context.Background(), contract.NotifyInput{Event: "on_success", Webhook: srv.URL, Aggregate: map[string]any{"workflow_id": "w", "run_id": "r"}}))
	require.Empty(t, <-got, "no trace context when tracing is off")
}
