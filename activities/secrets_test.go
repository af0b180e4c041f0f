package activities

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
)

// A secret is hidden in a stream however the stream is cut into pieces;
// text that only begins like a secret comes through unchanged.
func TestStreamHidesSecretsAcrossPieces(t *testing.T) {
	r := newRedactor([]string{"hunter2", "abc", "hunter2"})
	for _, c := range []struct {
		name   string
		pieces []string
		want   string
	}{
		{"whole", []string{"pw=hunter2\n"}, "pw=***\n"},
		{"cut", []string{"pw=hun", "ter2\n"}, "pw=***\n"},
		{"byte by byte", strings.Split("a hunter2 b abc", ""), "a *** b ***"},
		{"longest first", []string{"hunter2abc"}, "******"},
		{"only a beginning", []string{"hunt", "ing\n"}, "hunting\n"},
		{"a beginning at the end", []string{"x hunte"}, "x ***"},
		{"short beginning at the end", []string{"x ab"}, "x ab"},
		{"none", []string{"nothing here"}, "nothing here"},
	} {
		s := &stream{r: r}
		var out []byte
		for _, p := range c.pieces {
			out = append(out, s.feed([]byte(p))...)
		}
		out = append(out, s.end()...)
		require.Equal(t, c.want, string(out), c.name)
	}
}

// Secrets are read from the secrets directory as an attempt starts; an
// error names the secret, never a value, and a spec without secrets is
// left as it is.
func TestWithSecrets(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("v4lue\r\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "adir"), 0o700))
	a := &Activities{SecretsDir: dir}

	plain := map[string]any{"command": "true", "env": map[string]any{"A": "1"}}
	got, r, err := a.withSecrets(plain, nil)
	require.Nil(t, err)
	require.Nil(t, r)
	require.Equal(t, plain, got)

	spec := map[string]any{"env": map[string]any{"A": "1", "T": map[string]any{"secret": "token"}}, "headers": map[string]any{"X": map[string]any{"secret": "token"}}}
	fields := map[string]string{"env.T": "token", "headers.X": "token", "env.Gone": "token"}
	got, r, err = a.withSecrets(spec, fields)
	require.Nil(t, err)
	require.Equal(t, map[string]any{"A": "1", "T": "v4lue"}, got["env"])
	require.Equal(t, map[string]any{"X": "v4lue"}, got["headers"])
	require.Equal(t, map[string]any{"secret": "token"}, spec["env"].(map[string]any)["T"], "the step's input is not changed")
	// A value a template rendered into the shape of a secret, where the
	// playbook's text named none, is not read.
	rendered := map[string]any{"env": map[string]any{"T": map[string]any{"secret": "token"}}}
	got, r2, err := a.withSecrets(rendered, map[string]string{"env.U": "token"})
	require.Nil(t, err)
	require.Nil(t, r2)
	require.Equal(t, rendered, got)
	res := r.result(ToolResult{Result: map[string]any{"stdout": "v4lue!", "list": []any{"x v4lue"}}})
	require.Equal(t, map[string]any{"stdout": "***!", "list": []any{"x ***"}}, res.Result)

	t.Setenv("PLAYBOOK_CODEC_KEY_FILE", filepath.Join(dir, "token"))
	_, _, err = a.withSecrets(spec, fields)
	require.NotNil(t, err)
	require.Contains(t, err.Message, "is the worker's codec key")
	t.Setenv("PLAYBOOK_CODEC_KEY_FILE", "")
	for name, want := range map[string]string{
		"missing": `env T: secret "missing" is not in this worker's secrets directory`,
		"adir":    `env T: secret "adir" in ` + dir + ` is not a regular file`,
		"../x":    `env T: secret "../x": a secret's name is`,
	} {
		_, _, err := a.withSecrets(map[string]any{"env": map[string]any{"T": map[string]any{"secret": name}}}, map[string]string{"env.T": name})
		require.NotNil(t, err, name)
		require.Equal(t, "tool_error", err.Type)
		require.Contains(t, err.Message, want)
	}
}

// A secret header goes to the host the playbook named, not to another
// host a redirect names; a redirect on the same host keeps it.
func TestSecretHeadersStayWithTheirHost(t *testing.T) {
	var other, same string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other = r.Header.Get("X-Api-Key") + "|" + r.Header.Get("X-Plain")
	}))
	defer elsewhere.Close()
	var named *httptest.Server
	named = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/x", http.StatusFound)
		case "/here":
			http.Redirect(w, r, named.URL+"/end", http.StatusFound)
		case "/end":
			same = r.Header.Get("X-Api-Key")
		}
	}))
	defer named.Close()
	client := newRedactor([]string{"k3y"}).keepOnRedirect(http.DefaultClient)
	for _, path := range []string{"/away", "/here"} {
		req, err := http.NewRequest("GET", named.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Api-Key", "k3y")
		req.Header.Set("X-Plain", "p")
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	require.Equal(t, "|p", other, "the secret header stayed behind, the plain one went on")
	require.Equal(t, "k3y", same)
}

// A secret printed JSON-escaped, percent-encoded or in base64 is hidden as
// the secret itself is, in a stream cut anywhere and in a whole text.
func TestSecretsHiddenInTheirPrintedForms(t *testing.T) {
	r := newRedactor([]string{"p\"w\\é\tx"})
	for _, printed := range []string{
		`{"t": "p\"w\\\u00e9\tx"}`, // json.dumps
		`{"t": "p\"w\\é\tx"}`,      // json.dumps(ensure_ascii=False)
		`t=p%22w%5C%C3%A9%09x`,     // urllib.parse.quote_plus
		`cCJ3XMOpCXg=`,             // base64
	} {
		s := &stream{r: r}
		var out []byte
		for _, p := range strings.Split(printed, "") {
			out = append(out, s.feed([]byte(p))...)
		}
		out = append(out, s.end()...)
		require.NotContains(t, string(out), "x", printed)
		require.Contains(t, string(out), "***", printed)
		require.Equal(t, string(out), r.text(printed), printed)
	}
}

// An http step whose answer has a status it does not expect keeps the
// start of the body in its failure's details: a secret the server echoes
// across the cut is hidden whole, not left half in the clear.
func TestAnEchoedSecretCutInAStatusFailureIsHidden(t *testing.T) {
	secret := "S3cr3tT0kenValue-abcdefghijklmnop"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		// An error page that echoes the request's header, the cut inside it.
		_, _ = w.Write([]byte(strings.Repeat("x", tailBytes-20) + "auth=" + r.Header.Get("X-Api-Key") + " end"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok"), []byte(secret+"\n"), 0o600))
	a := &Activities{LogDir: t.TempDir(), SecretsDir: dir}
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(a.RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	_, err := env.ExecuteActivity(contract.RunStepName, contract.StepInput{WorkflowID: "wf", RunID: "run", Step: "h", Kind: "http", BaseDir: t.TempDir(), Timeout: time.Minute,
		Spec:    map[string]any{"url": srv.URL + "/x", "headers": map[string]any{"X-Api-Key": map[string]any{"secret": "tok"}}},
		Secrets: map[string]string{"headers.X-Api-Key": "tok"}})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	var fd contract.FailureDetails
	require.NoError(t, appErr.Details(&fd))
	b, err := json.Marshal(fd)
	require.NoError(t, err)
	require.Equal(t, contract.ErrHTTPStatus, fd.Error.Type)
	require.Contains(t, string(b), "auth=***")
	require.NotContains(t, string(b), secret[:8], "no part of the secret is in the failure's details")
}
