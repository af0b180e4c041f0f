package testsuite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/cmd/playbook/commands"
	"playbook/internal/codec"
	"playbook/internal/quietlog"
	"playbook/runs"
	"playbook/worker"
)

// With a codec key, the history holds ciphertext only: the exported history
// has no workload value in it, the run still completes and replays (with
// the key), and the codec server decodes it for the Web UI.
func TestCodecKeepsPayloadsEncrypted(t *testing.T) {
	// Serial: t.Setenv (the codec key) (see parallel).
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "codec.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))
	keys, err := codec.Load(keyFile)
	require.NoError(t, err)
	cl, err := client.Dial(client.Options{HostPort: server.Address, Logger: quietlog.New(),
		DataConverter: keys.DataConverter(), FailureConverter: keys.FailureConverter()})
	require.NoError(t, err)
	defer cl.Close()
	w := worker.New(cl, worker.Options{TaskQueue: "codec-q", LogDir: logDir})
	require.NoError(t, w.Start())
	defer w.Stop()

	t.Setenv(codec.KeyFileEnv, keyFile)
	const secret = "plaintext-workload-7731"
	code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", "codec-q", "--json", "--id", "codec-1",
		"--set", "who="+secret, "../playbooks/hello.yaml")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"result": "HELLO PLAINTEXT-WORKLOAD-7731"`)

	file := filepath.Join(t.TempDir(), "h.json")
	code, _, errOut = cli(t, "history", "--address", server.Address, "-o", file, "codec-1")
	require.Equal(t, 0, code, errOut)
	exported, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, plain := range []string{secret, strings.ToUpper(secret), "hello " + secret, "greeting"} {
		require.NotContains(t, string(exported), plain)
		require.NotContains(t, string(exported), base64.StdEncoding.EncodeToString([]byte(plain))[:12])
	}
	code, out, errOut = cli(t, "replay", file)
	require.Equal(t, 0, code, out+errOut)
	t.Setenv(codec.KeyFileEnv, "")
	code, _, _ = cli(t, "replay", file)
	require.NotEqual(t, 0, code, "without the key the history cannot be read")

	// The codec server, as the Web UI calls it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- commandsMain(ctx, "codec-server", "--codec-key-file", keyFile, "--listen", addr)
	}()
	defer func() { stop(); <-done }()
	h := history(t, "codec-1", "")
	input := &commonpb.Payloads{Payloads: h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()}
	body, err := protojson.Marshal(input)
	require.NoError(t, err)
	var resp *http.Response
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/decode", strings.NewReader(string(body)))
		req.Header.Set("Origin", "http://127.0.0.1:8233")
		req.Header.Set("Content-Type", "application/json")
		resp, err = http.DefaultClient.Do(req)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	decoded, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(decoded))
	require.Equal(t, "http://127.0.0.1:8233", resp.Header.Get("Access-Control-Allow-Origin"))
	var out2 commonpb.Payloads
	require.NoError(t, json.Unmarshal(decoded, &out2))
	require.Contains(t, string(out2.GetPayloads()[0].GetData()), secret)

	req, _ := http.NewRequest(http.MethodOptions, "http://"+addr+"/decode", nil)
	req.Header.Set("Origin", "http://127.0.0.1:8233")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace")

	req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/decode", strings.NewReader(string(body)))
	req.Header.Set("Origin", "http://evil.example")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a page elsewhere cannot decrypt")
}

// commandsMain runs a long-running CLI command in-process until ctx ends.
func commandsMain(ctx context.Context, args ...string) int {
	return commands.Main(ctx, append([]string{"playbook"}, args...), io.Discard, io.Discard)
}

// Under a codec key, `schedule apply` keeps what it marks in the
// schedules it makes encrypted like every other payload, and still reads
// it back: a second apply changes nothing, describe says which file made
// the schedule, and --prune deletes the schedule whose file is gone.
func TestScheduleApplyUnderACodec(t *testing.T) {
	// Serial: t.Setenv (the codec key) (see parallel).
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "codec.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))
	t.Setenv(codec.KeyFileEnv, keyFile)
	dir := t.TempDir()
	a := writePlaybook(t, dir, "a.yaml", "metadata: {name: codec-apply-a}\nschedule: {every: 1h}\nworkflow:\n  - step: x\n")
	b := writePlaybook(t, dir, "b.yaml", "metadata: {name: codec-apply-b}\nschedule: {every: 2h}\nworkflow:\n  - step: x\n")
	defer scheduleCLI(t, "delete", "codec-apply-a")
	defer scheduleCLI(t, "delete", "codec-apply-b")

	code, out, errOut := scheduleCLI(t, "apply", "--prune", dir)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, a+": schedule codec-apply-a created (every 1h0m0s)\n"+b+": schedule codec-apply-b created (every 2h0m0s)\n", out)
	mark := storedSchedule(t, "codec-apply-a").GetMemo().GetFields()[runs.MemoApplied]
	require.Equal(t, "binary/encrypted", string(mark.GetMetadata()["encoding"]))
	require.NotContains(t, string(mark.GetData()), a, "the mark is encrypted")
	v := describeSchedule(t, "codec-apply-a")
	require.Equal(t, a, v.AppliedFrom)
	require.Equal(t, "codec-apply-a", v.Playbook)

	code, out, errOut = scheduleCLI(t, "apply", a, b)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, a+": schedule codec-apply-a unchanged\n"+b+": schedule codec-apply-b unchanged\n", out)

	pruneGone(t, dir, a, "codec-apply-a", b, "codec-apply-b")

	// Without the key, apply cannot tell what the schedule holds: it
	// leaves it alone rather than write it over in plain text.
	t.Setenv(codec.KeyFileEnv, "")
	code, _, errOut = scheduleCLI(t, "apply", a)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "schedule codec-apply-a is encrypted, and this client cannot read it (")
	require.Contains(t, errOut, "give it the workers' key ($PLAYBOOK_CODEC_KEY_FILE or $PLAYBOOK_CODEC_KEY)\n")
	code, _, errOut = scheduleCLI(t, "describe", "codec-apply-a")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "schedule codec-apply-a is encrypted, and this client cannot read it (")
	input := storedSchedule(t, "codec-apply-a").GetSchedule().GetAction().GetStartWorkflow().GetInput().GetPayloads()[0]
	require.Equal(t, "binary/encrypted", string(input.GetMetadata()["encoding"]), "still encrypted")
}

// storedSchedule is a schedule as the server keeps it, its payloads not
// decoded.
func storedSchedule(t *testing.T, id string) *workflowservice.DescribeScheduleResponse {
	d, err := tc.WorkflowService().DescribeSchedule(context.Background(), &workflowservice.DescribeScheduleRequest{Namespace: "default", ScheduleId: id})
	require.NoError(t, err)
	return d
}
