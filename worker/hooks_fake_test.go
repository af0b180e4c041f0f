package worker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"playbook/interpreter/contract"
)

// jsonAnswer is a query answer as the SDK gives it.
type jsonAnswer struct{ v any }

func (j jsonAnswer) HasValue() bool { return j.v != nil }
func (j jsonAnswer) Get(p any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, p)
}

// noOps is an operator service that cannot be reached.
type noOps struct {
	operatorservice.OperatorServiceClient
}

func (noOps) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return nil, serviceerror.NewUnavailable("no")
}

// blockRun is a run that never ends.
type blockRun struct{ id string }

func (b blockRun) GetID() string                  { return b.id }
func (b blockRun) GetRunID() string               { return b.id + "-r" }
func (b blockRun) GetFirstExecutionRunID() string { return b.id + "-r" }
func (b blockRun) Get(ctx context.Context, _ any) error {
	<-ctx.Done()
	return ctx.Err()
}
func (b blockRun) GetWithOptions(ctx context.Context, p any, _ client.WorkflowRunGetOptions) error {
	return b.Get(ctx, p)
}

// hookFake is a Temporal client that knows one hook and starts runs.
type hookFake struct {
	client.Client
	reg     contract.TriggerRegistration
	mu      sync.Mutex
	started []string
}

func (f *hookFake) QueryWorkflowWithOptions(_ context.Context, r *client.QueryWorkflowWithOptionsRequest) (*client.QueryWorkflowWithOptionsResponse, error) {
	if r.WorkflowID != "playbook-hook-"+f.reg.Hook {
		return nil, serviceerror.NewNotFound("no")
	}
	return &client.QueryWorkflowWithOptionsResponse{QueryResult: jsonAnswer{f.reg}}, nil
}
func (f *hookFake) OperatorService() operatorservice.OperatorServiceClient { return noOps{} }
func (f *hookFake) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, o.ID)
	return blockRun{o.ID}, nil
}

const hookPlaybook = "metadata: {name: deployer}\nworkload: {service: api}\nworkflow:\n  - step: s\n    tool: {kind: noop}\n"

// fakeHookServer serves the hooks of a worker whose secrets are in
// secretsDir, against hookFake.
func fakeHookServer(t *testing.T, secretsDir string) (*httptest.Server, *hookFake) {
	f := &hookFake{reg: contract.TriggerRegistration{Playbook: "deployer", Hook: "deploy", Secret: "deploy_hook", TaskQueue: "q",
		Run: contract.Input{File: "d.yaml", Source: hookPlaybook}}}
	mux := http.NewServeMux()
	hooks{HookOptions: HookOptions{Namespace: "default", SecretsDir: secretsDir}, client: f}.routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, f
}

// postHook posts body, signed with sig when given.
func postHook(t *testing.T, url, body, sig string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if sig != "" {
		req.Header.Set(HookSignatureHeader, sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// signHook is the signature of body with secret.
func signHook(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// A ?wait= under a second is refused, as its message says (1s to 10m).
func TestHookWaitUnderASecondIsRefused(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy_hook"), []byte("s3cret\n"), 0o600))
	srv, f := fakeHookServer(t, dir)
	body := `{"service": "web"}`
	code, out := postHook(t, srv.URL+"/hooks/deploy?wait=1ns", body, signHook("s3cret", body))
	require.Equal(t, http.StatusBadRequest, code, out)
	require.Contains(t, out, "?wait=1ns: give a duration from 1s to 10m0s")
	require.Empty(t, f.started)
}

// A worker that cannot read a hook's secret answers 503 without saying
// where its secrets are (its log does), to a caller not yet known.
func TestHookWithoutItsSecretTellsTheCallerNothing(t *testing.T) {
	secrets := filepath.Join(t.TempDir(), "private", "secrets")
	srv, f := fakeHookServer(t, secrets)
	code, out := postHook(t, srv.URL+"/hooks/deploy", `{}`, "")
	require.Equal(t, http.StatusServiceUnavailable, code, out)
	require.NotContains(t, out, "private")
	require.NotContains(t, out, "deploy_hook")
	require.Contains(t, out, "cannot check signatures on this worker")
	require.Empty(t, f.started)
}
