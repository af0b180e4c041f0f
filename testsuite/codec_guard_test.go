package testsuite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"playbook/internal/codec"
)

// newKeyFile writes a fresh codec key and returns its file and its ID.
func newKeyFile(t *testing.T) (file, id string) {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	file = filepath.Join(t.TempDir(), "codec.key")
	require.NoError(t, os.WriteFile(file, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))
	keys, err := codec.Load(file)
	require.NoError(t, err)
	return file, keys.KeyID()
}

// A CLI that would submit a workload in plain text to workers that
// encrypt (or that could not read what they write) refuses, exit 2,
// saying why and how to share the key; with the workers' key it runs.
func TestCLIWithoutTheWorkersKeyRefusesToSubmit(t *testing.T) {
	parallel(t)
	const queue = "codec-guard"
	keyFile, keyID := newKeyFile(t)
	otherKey, otherID := newKeyFile(t)
	w := exec.Command(playbookBinary(t), "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", t.TempDir())
	w.Env = append(os.Environ(), codec.KeyFileEnv+"="+keyFile, codec.KeyEnv+"=")
	w.Stderr = &lockedBuffer{}
	require.NoError(t, w.Start())
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = w.Process.Kill()
		}
	})
	waitFor(t, "the worker to poll with its key in its identity", func() bool {
		resp, err := tc.DescribeTaskQueue(context.Background(), queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			return false
		}
		for _, p := range resp.GetPollers() {
			if strings.HasSuffix(p.GetIdentity(), " codec:"+keyID) {
				return true
			}
		}
		return false
	})

	// The CLI's key, as its environment gives it.
	var env []string
	refused := func(id, want string, args ...string) {
		t.Helper()
		code, out, errOut := cliEnv(t, env, args...)
		require.Equal(t, 2, code, out+errOut)
		require.Empty(t, out)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		require.Contains(t, errOut, want)
		require.Contains(t, errOut, "PLAYBOOK_CODEC_KEY_FILE")
		if id != "" {
			_, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
			var notFound *serviceerror.NotFound
			require.ErrorAs(t, err, &notFound, "%s started nothing", id)
		}
	}
	env = []string{codec.KeyEnv + "=", codec.KeyFileEnv + "="}
	noKey := `the workers polling task queue "codec-guard" encrypt payloads (codec key ` + keyID + `) and this CLI has no key`
	refused("codec-guard-1", "run: "+noKey,
		"run", "--address", server.Address, "--task-queue", queue, "--id", "codec-guard-1", "../playbooks/hello.yaml")
	refused("codec-guard-2", "run: "+noKey,
		"run", "--address", server.Address, "--task-queue", queue, "--id", "codec-guard-2", "--detach", "../playbooks/hello.yaml")
	refused("", noKey,
		"schedule", "create", "--address", server.Address, "--task-queue", queue, "--id", "codec-guard-s", "--every", "1h", "../playbooks/hello.yaml")
	_, err := tc.ScheduleClient().GetHandle(context.Background(), "codec-guard-s").Describe(context.Background())
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no schedule created")

	env = []string{codec.KeyEnv + "=", codec.KeyFileEnv + "=" + otherKey}
	refused("codec-guard-3", "run: the workers polling task queue \"codec-guard\" encrypt payloads with codec key "+keyID+", and this CLI's key is "+otherID,
		"run", "--address", server.Address, "--task-queue", queue, "--id", "codec-guard-3", "../playbooks/hello.yaml")

	env = []string{codec.KeyEnv + "=", codec.KeyFileEnv + "=" + keyFile}
	code, out, errOut := cliEnv(t, env, "run", "--address", server.Address, "--task-queue", queue, "--id", "codec-guard-4", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, out+errOut)

	// A profile that names a codec says the namespace's payloads are
	// encoded, whether or not a worker polls yet.
	env = []string{codec.KeyEnv + "=", codec.KeyFileEnv + "=", "TEMPORAL_CODEC_ENDPOINT=http://127.0.0.1:8081"}
	refused("codec-guard-5", "run: the Temporal profile names a codec (http://127.0.0.1:8081), so this namespace's payloads are encoded, and this CLI has no key",
		"run", "--address", server.Address, "--task-queue", "codec-guard-nobody", "--id", "codec-guard-5", "../playbooks/hello.yaml")
}
