package activities

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

func TestHTTP(t *testing.T) {
	var got struct {
		method, ctype, header string
		body                  map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.method, got.ctype, got.header = r.Method, r.Header.Get("Content-Type"), r.Header.Get("X-Run")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"id": 42}`))
	}))
	defer srv.Close()
	a := &Activities{}

	o := a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{
		"url": srv.URL + "/orders", "headers": map[string]any{"X-Run": "r-1"}, "body": map[string]any{"n": 2.0},
	}}, 1)
	require.Nil(t, o.Err)
	r := o.Result.(map[string]any)
	require.Equal(t, 201, r["status_code"])
	require.Equal(t, map[string]any{"id": 42.0}, r["json"])
	require.Equal(t, "POST", got.method, "a body without a method is a POST")
	require.Equal(t, "application/json", got.ctype)
	require.Equal(t, "r-1", got.header)
	require.Equal(t, map[string]any{"n": 2.0}, got.body)

	o = a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL + "/missing"}}, 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "http_status", o.Err.Type)
	require.Equal(t, 404, *o.StatusCode)

	o = a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL + "/missing", "expect_status": []any{404.0}}}, 1)
	require.Nil(t, o.Err, "expect_status accepts 404")

	o = a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{"url": "http://127.0.0.1:1/"}}, 1)
	require.Equal(t, "http_error", o.Err.Type)
}

// An http step without a timeout gives up on a server that does not
// answer: an ordinary failed attempt (http_error, retried as its retry
// block says) whose message says why. A step's own timeout replaces that
// default.
func TestHTTPStepWithoutTimeoutGivesUp(t *testing.T) {
	defer func(d time.Duration) { httpTimeout = d }(httpTimeout)
	httpTimeout = 300 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("late"))
	}))
	defer srv.Close()
	a := &Activities{}

	started := time.Now()
	o := a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL + "/slow"}}, 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "http_error", o.Err.Type)
	require.Equal(t, "GET "+srv.URL+"/slow: no answer within 300ms, as long as an http step without a timeout waits (give the step a timeout to wait longer)", o.Err.Message)
	require.Less(t, time.Since(started), 900*time.Millisecond, "it gave up at its timeout, not when the server answered")
	d, err := DecideRetry(spec.Retry{MaxAttempts: 2}, nil, 1, o, nil, func() float64 { return 0 })
	require.NoError(t, err)
	require.True(t, d.Retry, "a request that timed out is retried like any failure")

	o = a.runTool(context.Background(), contract.StepInput{Kind: "http", Timeout: 5 * time.Second, Spec: map[string]any{"url": srv.URL + "/slow"}}, 1)
	require.Nil(t, o.Err, "the step's own timeout replaces the default")
	require.Equal(t, "late", o.Result.(map[string]any)["body"])
}

// A webhook that does not answer fails the Notify attempt, saying so.
func TestWebhookWithoutAnswerFails(t *testing.T) {
	defer func(d time.Duration) { webhookTimeout = d }(webhookTimeout)
	webhookTimeout = 300 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	err := (&Activities{}).Notify(context.Background(), contract.NotifyInput{Event: "on_success", Webhook: srv.URL + "/hook", Aggregate: map[string]any{"status": "completed"}})
	require.EqualError(t, err, "POST "+srv.URL+"/hook: no answer within 300ms")
}
