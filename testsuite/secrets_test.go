package testsuite

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// Acceptance (#29): a step that greps every /proc/*/environ and cmdline it
// can read finds none of its worker's secrets, while the worker itself
// still reads its whole environment (a --step-env variable reaches the
// step).
func TestStepsCannotReadTheWorkersSecrets(t *testing.T) {
	parallel(t)
	secret := fmt.Sprintf("s3cr3t-%d", time.Now().UnixNano())
	dir := t.TempDir()
	// The step reads the secret to look for from a file, so that its own
	// command line does not hold it.
	pattern := filepath.Join(dir, "pattern")
	require.NoError(t, os.WriteFile(pattern, []byte(secret+"\n"), 0o600))
	queue := fmt.Sprintf("secrets-%d", time.Now().UnixNano())
	_, stderr := runWorker(t, []string{"--task-queue", queue, "--log-dir", dir, "--step-env", "VISIBLE_TO_STEPS"},
		"TEMPORAL_CONFIG_FILE="+filepath.Join(dir, "none.toml"), "AWS_SECRET_ACCESS_KEY="+secret, "PLAYBOOK_LOGS_TOKEN="+secret, "VISIBLE_TO_STEPS=passed-on")
	file := writePlaybook(t, dir, "peek.yaml", `metadata: {name: peek}
workflow:
  - step: peek
    tool:
      kind: shell
      command: 'grep -l -a -F -f "`+pattern+`" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; echo "visible=$VISIBLE_TO_STEPS"'
`)
	run := start(t, file, queue, nil)
	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status, stderr.String())
	out := agg.Steps["peek"].Result.(map[string]any)["stdout"].(string)
	require.Equal(t, "visible=passed-on\n", out, "no process's environment or command line holds the secret, but the worker's own environment is whole")
}

// Acceptance (#29): a playbook's own secrets. A step names a secret with
// {secret: NAME} in env (shell) or headers (http); the worker reads it from
// its --secrets-dir as the attempt starts. The process and the server get
// the value; the run's history, its aggregate, its logs, its webhook and a
// failing step's error hold only the name or ***. A missing secret fails
// the attempt with a tool_error naming the secret.
func TestPlaybookSecrets(t *testing.T) {
	parallel(t)
	secret := fmt.Sprintf("s3cr3t-%d", time.Now().UnixNano())
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	logs := filepath.Join(dir, "logs")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "api_token"), []byte(secret+"\n"), 0o600))

	var gotHeader, webhookBody atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader.Store(r.Header.Get("Authorization"))
		fmt.Fprintf(w, `{"echo": %q}`, r.Header.Get("Authorization"))
	}))
	defer api.Close()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		webhookBody.Store(string(b))
	}))
	defer hook.Close()

	queue := fmt.Sprintf("playbook-secrets-%d", time.Now().UnixNano())
	_, stderr := runWorker(t, []string{"--task-queue", queue, "--log-dir", logs, "--secrets-dir", secrets}, "TEMPORAL_CONFIG_FILE="+filepath.Join(dir, "none.toml"))
	file := writePlaybook(t, dir, "secrets.yaml", `metadata: {name: secrets}
failure_mode: continue
notify: {on_failure: {webhook: "`+hook.URL+`"}}
workflow:
  - step: use
    tool:
      kind: shell
      # The value arrives (its digest is the secret's); printed in pieces
      # of the stream, it is hidden all the same.
      command: 'printf %s "$TOKEN" | sha256sum | cut -c1-64; printf "token=%s\n" "$TOKEN"; printf %s "$TOKEN" | cut -c1-7 | tr -d "\n" >&2; sleep 0.3; printf %s "$TOKEN" | cut -c8- >&2'
      env: {TOKEN: {secret: api_token}}
    next: [{step: call}]
  - step: call
    tool:
      kind: http
      url: "`+api.URL+`"
      headers: {Authorization: {secret: api_token}}
    next: [{step: leak}]
  - step: leak
    tool:
      kind: shell
      command: 'echo "failing with $TOKEN" >&2; exit 3'
      env: {TOKEN: {secret: api_token}}
  - step: missing
    tool:
      kind: shell
      command: 'true'
      env: {TOKEN: {secret: not_there}}
`)
	run := start(t, file, queue, nil)
	agg := finish(t, run)
	require.Equal(t, "failed", agg.Status, stderr.String())

	use := agg.Steps["use"].Result.(map[string]any)["stdout"].(string)
	require.Equal(t, fmt.Sprintf("%x\ntoken=***\n", sha256.Sum256([]byte(secret))), use, "the step got the value; its output hides it")
	require.Equal(t, secret, gotHeader.Load(), "the server got the value")
	require.Contains(t, fmt.Sprint(agg.Steps["call"].Result), `***`)
	require.Contains(t, agg.Steps["leak"].Error.Message+fmt.Sprint(agg.Steps["leak"].Error.Details), "failing with ***")
	require.Equal(t, "tool_error", agg.Steps["missing"].Error.Type)
	require.Contains(t, agg.Steps["missing"].Error.Message, `secret "not_there" is not in this worker's secrets directory`)

	require.Equal(t, "***\n", agg.Steps["use"].Result.(map[string]any)["stderr"], "a secret written in two pieces is hidden whole")

	// Nowhere the run wrote: its history (payloads decoded), its aggregate,
	// its webhook, its logs.
	events := historyText(t, history(t, run.GetID(), run.GetRunID()))
	require.NotContains(t, events, secret)
	require.Contains(t, events, `"secret":"api_token"`, "the history holds the secret's name")
	whole, err := json.Marshal(agg)
	require.NoError(t, err)
	require.NotContains(t, string(whole), secret)
	waitFor(t, "the webhook", func() bool { return webhookBody.Load() != nil })
	require.NotContains(t, webhookBody.Load().(string), secret)
	var logged int
	require.NoError(t, filepath.WalkDir(logs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(b), secret, path)
		if strings.Contains(string(b), "***") {
			logged++
		}
		return nil
	}))
	require.GreaterOrEqual(t, logged, 3, "the logs hold *** where the secret was (stdout, stderr cut in pieces, the failing step's stderr)")
}

// historyText is a history as JSON, with every payload's data decoded.
func historyText(t *testing.T, h *historypb.History) string {
	b, err := protojson.Marshal(h)
	require.NoError(t, err)
	return payloadsDecoded(t, string(b))
}

// payloadsDecoded is a history in JSON with every payload's data decoded.
func payloadsDecoded(t *testing.T, history string) string {
	data := regexp.MustCompile(`"data":\s*"([A-Za-z0-9+/=]*)"`)
	return data.ReplaceAllStringFunc(history, func(m string) string {
		raw, err := base64.StdEncoding.DecodeString(data.FindStringSubmatch(m)[1])
		require.NoError(t, err)
		return string(raw)
	})
}
