package testsuite

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// thisHostsAddress is an address of this machine that is not loopback,
// "" when it has none.
func thisHostsAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// startWorkerOn starts a real `playbook worker` serving its endpoint on
// listen, advertised as advertise, with env added; it returns its stderr
// once the endpoint answers.
func startWorkerOn(t *testing.T, queue, listen, advertise string, env ...string) *lockedBuffer {
	t.Helper()
	flags := []string{"--task-queue", queue, "--log-dir", t.TempDir(), "--metrics-address", listen, "--drain-timeout", "1s"}
	if advertise != "" {
		flags = append(flags, "--advertise-address", advertise)
	}
	_, stderr := runWorker(t, flags, env...)
	_, port, _ := net.SplitHostPort(listen)
	require.Eventually(t, func() bool { code, _ := httpGet("http://127.0.0.1:" + port + "/readyz"); return code == http.StatusOK },
		60*time.Second, 100*time.Millisecond, "the worker gets ready; stderr:\n%s", stderr)
	return stderr
}

// `playbook logs` sends PLAYBOOK_LOGS_TOKEN only to workers it trusts
// (loopback, --trust-logs-host, PLAYBOOK_LOGS_HOSTS), not to whatever
// address a run's history names; a worker that serves its logs to anyone
// says so when it starts.
func TestLogsTokenGoesOnlyToTrustedWorkers(t *testing.T) {
	// Serial: t.Setenv (the logs token) (see parallel).
	ip := thisHostsAddress()
	if ip == "" {
		t.Skip("this machine has no address but loopback")
	}
	const queue = "logs-trust"
	port := freePort(t)
	url := fmt.Sprintf("http://%s:%d", ip, port)
	stderr := startWorkerOn(t, queue, fmt.Sprintf("0.0.0.0:%d", port), fmt.Sprintf("%s:%d", ip, port), "PLAYBOOK_LOGS_TOKEN=s3cret")
	require.NotContains(t, stderr.String(), "without a token", "a worker with a token does not warn")
	file := writePlaybook(t, t.TempDir(), "say.yaml", `metadata: {name: trust}
workflow:
  - step: say
    tool: { kind: shell, command: 'echo hello' }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--id", "logs-trust-1", file)
	require.Equal(t, 0, code, out+errOut)
	d, err := tc.DescribeWorkflowExecution(context.Background(), "logs-trust-1", "")
	require.NoError(t, err)
	runID := "?run_id=" + d.GetWorkflowExecutionInfo().GetExecution().GetRunId()

	t.Setenv("PLAYBOOK_LOGS_TOKEN", "s3cret")
	t.Setenv("PLAYBOOK_LOGS_HOSTS", "")
	code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", t.TempDir(), "logs-trust-1", "say")
	require.Equal(t, 1, code, out+errOut)
	require.Empty(t, out)
	require.Equal(t, "Not sending PLAYBOOK_LOGS_TOKEN to "+url+": that worker is not trusted (trust it with --trust-logs-host "+ip+" or PLAYBOOK_LOGS_HOSTS).\n"+
		"logs: attempt 1: "+url+"/logs/logs-trust-1/say/1/stdout"+runID+": 401 Unauthorized: this worker's logs need its token (PLAYBOOK_LOGS_TOKEN)\n", errOut)

	for _, trust := range []struct{ flag, env string }{{ip, ""}, {"", ip + fmt.Sprintf(":%d", port)}, {"", "elsewhere.example, " + ip}} {
		t.Setenv("PLAYBOOK_LOGS_HOSTS", trust.env)
		args := []string{"logs", "--address", server.Address, "--log-dir", t.TempDir(), "logs-trust-1", "say"}
		if trust.flag != "" {
			args = append(args, "--trust-logs-host", trust.flag)
		}
		code, out, errOut = cli(t, args...)
		require.Equal(t, 0, code, errOut)
		require.Empty(t, errOut)
		require.Contains(t, out, "== attempt 1 stdout ("+url+"/logs/logs-trust-1/say/1/stdout"+runID+") ==\nhello\n")
	}
	t.Setenv("PLAYBOOK_LOGS_HOSTS", ip+":1")
	code, _, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", t.TempDir(), "logs-trust-1", "say")
	require.Equal(t, 1, code, "another port of the host is not this worker")
	require.Contains(t, errOut, "Not sending PLAYBOOK_LOGS_TOKEN")

	// Without a token: a warning when it listens beyond loopback, none on loopback.
	open := startWorkerOn(t, "logs-trust-open", fmt.Sprintf("0.0.0.0:%d", freePort(t)), "", "PLAYBOOK_LOGS_TOKEN=")
	require.Equal(t, 1, strings.Count(open.String(), "served without a token"), open.String())
	require.Contains(t, open.String(), "level=WARN msg=\"the attempts' logs are served without a token to anyone who reaches 0.0.0.0:")
	local := startWorkerOn(t, "logs-trust-local", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "", "PLAYBOOK_LOGS_TOKEN=")
	require.NotContains(t, local.String(), "without a token")
}
