package worker

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// unreachableAddress is a local address nothing listens on.
func unreachableAddress(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestEndpointNotReadyWhileServerUnreachable(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: unreachableAddress(t),
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	require.NoError(t, err)
	defer c.Close()
	e, err := StartEndpoint(EndpointOptions{Address: "127.0.0.1:0", LogDir: t.TempDir(), Client: c})
	require.NoError(t, err)
	defer e.Close()

	code, _ := get(t, e.URL+"/healthz", "")
	require.Equal(t, http.StatusOK, code, "live whatever the server")
	code, body := get(t, e.URL+"/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "not polling")
	e.Polling(true)
	code, body = get(t, e.URL+"/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "the Temporal server does not answer")
	code, _ = get(t, e.URL+"/metrics", "")
	require.Equal(t, http.StatusNotFound, code, "no metrics unless given")
}

func TestEndpointServesLogsWithItsToken(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "run-1", "s[0]"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run-1", "s[0]", "attempt-2.stdout"), []byte("secret output\n"), 0o600))
	e, err := StartEndpoint(EndpointOptions{Address: "127.0.0.1:0", LogDir: dir, LogsToken: "t0k"})
	require.NoError(t, err)
	defer e.Close()

	url := e.URL + "/logs/run-1/s%5B0%5D/2/stdout"
	code, _ := get(t, url, "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(t, url, "wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body := get(t, url, "t0k")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "secret output\n", body)
	code, _ = get(t, e.URL+"/logs/run-1/s%5B0%5D/3/stdout", "t0k")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, e.URL+"/logs/..%2F..%2Fetc/s/1/stdout", "t0k")
	require.NotEqual(t, http.StatusOK, code, "names stay inside the log directory")
	code, _ = get(t, e.URL+"/logs/run-1/s%5B0%5D/2/error.json", "t0k")
	require.Equal(t, http.StatusBadRequest, code, "only stdout and stderr")
}
