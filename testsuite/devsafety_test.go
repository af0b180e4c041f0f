package testsuite

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/interpreter/contract"
)

// `playbook dev --codec-key-file K --step-env VAR`, as a user starts it:
// the run's history holds no plaintext workload value, the Web UI is told
// where the codec server is and that server decodes for it, and a step
// sees the variable passed on but not the worker's other secrets nor
// Temporal's settings.
func TestDevWiresCodecAndStepEnv(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	dir := t.TempDir()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(dir, "codec.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)), 0o600))
	port, uiPort := devPorts(t)
	dev, banner := launchDevWith(t, bin, filepath.Join(dir, "dev.db"), &port, &uiPort,
		[]string{"PASSED_ON=visible-4410", "WORKER_SECRET=hidden-5521", "TEMPORAL_API_KEY=hidden-6632"},
		"--codec-key-file", keyFile, "--step-env", "PASSED_ON")
	address := fmt.Sprintf("127.0.0.1:%d", port)
	t.Cleanup(func() { _ = dev.Process.Kill(); _ = dev.Wait() })
	endpoint := regexp.MustCompile(`codec server for the Web UI on (\S+)`).FindStringSubmatch(banner)
	require.NotNil(t, endpoint, "dev names its codec server:\n%s", banner)

	file := writePlaybook(t, dir, "env.yaml", `metadata: {name: env}
workload: {who: nobody}
workflow:
  - step: show
    tool:
      kind: shell
      command: 'echo "who=$WHO passed=${PASSED_ON:-unset} secret=${WORKER_SECRET:-unset} api=${TEMPORAL_API_KEY:-unset}"'
      env: {WHO: "{{ workload.who }}"}
`)
	const secret = "plaintext-workload-8843"
	run := exec.Command(bin, "run", "--address", address, "--json", "--id", "dev-codec", "--set", "who="+secret, file)
	run.Env = append(os.Environ(), "PLAYBOOK_CODEC_KEY_FILE="+keyFile)
	out, err := run.Output()
	require.NoError(t, err, "%s", out)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal(out, &agg), "%s", out)
	require.Equal(t, "completed", agg.Status)
	stdout := fmt.Sprint(agg.Steps["show"].Result)
	require.Contains(t, stdout, "who="+secret)
	require.Contains(t, stdout, "passed=visible-4410", "--step-env passes the variable on")
	require.Contains(t, stdout, "secret=unset", "other worker variables stay with the worker")
	require.Contains(t, stdout, "api=unset", "Temporal's settings never reach a step")

	exported := filepath.Join(dir, "h.json")
	hist := exec.Command(bin, "history", "--address", address, "-o", exported, "dev-codec")
	hist.Env = run.Env
	b, err := hist.CombinedOutput()
	require.NoError(t, err, "%s", b)
	h, err := os.ReadFile(exported)
	require.NoError(t, err)
	require.NotContains(t, string(h), secret)
	require.NotContains(t, string(h), base64.StdEncoding.EncodeToString([]byte(secret))[:12])

	// The Web UI knows the codec endpoint, and the endpoint decodes for it.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/settings", uiPort))
	require.NoError(t, err)
	settings, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(settings), endpoint[1], "the Web UI's codec endpoint setting")
	var exportedHistory historypb.History
	require.NoError(t, protojson.Unmarshal(h, &exportedHistory))
	input := exportedHistory.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: input.GetPayloads()})
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, endpoint[1]+"/decode", strings.NewReader(string(body)))
	req.Header.Set("Origin", fmt.Sprintf("http://127.0.0.1:%d", uiPort))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	decoded, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(decoded))
	var plain commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(decoded, &plain))
	require.Contains(t, string(plain.GetPayloads()[0].GetData()), secret)
}
