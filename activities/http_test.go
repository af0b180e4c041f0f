package activities

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter"
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

	o := a.runTool(context.Background(), interpreter.StepInput{Kind: "http", Spec: map[string]any{
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

	o = a.runTool(context.Background(), interpreter.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL + "/missing"}}, 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "http_status", o.Err.Type)
	require.Equal(t, 404, *o.StatusCode)

	o = a.runTool(context.Background(), interpreter.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL + "/missing", "expect_status": []any{404.0}}}, 1)
	require.Nil(t, o.Err, "expect_status accepts 404")

	o = a.runTool(context.Background(), interpreter.StepInput{Kind: "http", Spec: map[string]any{"url": "http://127.0.0.1:1/"}}, 1)
	require.Equal(t, "http_error", o.Err.Type)
}
