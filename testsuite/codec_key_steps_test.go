package testsuite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
)

// stepUser is the unprivileged user the codec-key test runs a worker as.
const stepUser = "playbook-keytest"

// workerUser returns the uid and gid of stepUser, made with useradd when
// it is not there; the test is skipped, saying why, where it cannot be
// (not root, no useradd).
func workerUser(t *testing.T) (uid, gid uint32, home string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("runs a worker as another user: needs root to make the user and start the worker as it")
	}
	u, err := user.Lookup(stepUser)
	if err != nil {
		out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", stepUser).CombinedOutput()
		if err != nil {
			t.Skipf("cannot make the user %s with useradd: %v: %s", stepUser, err, out)
		}
		u, err = user.Lookup(stepUser)
		require.NoError(t, err)
	}
	id, err := strconv.Atoi(u.Uid)
	require.NoError(t, err)
	group, err := strconv.Atoi(u.Gid)
	require.NoError(t, err)
	require.NotZero(t, id)
	return uint32(id), uint32(group), u.HomeDir
}

// Acceptance (#39, 2): a worker set up as docs/SECURITY.md says (Keeping
// the key from steps) — running as a user of its own, given the key on its
// standard input by root from a file only root may read — runs a step that
// tries to cat the key file and reads /proc/<worker>/cmdline, environ and
// its descriptor 0: nothing of the key is readable, and the run, encrypted
// with that key, completes.
func TestStepsCannotReadTheCodecKey(t *testing.T) {
	parallel(t)
	uid, gid, home := workerUser(t)
	bin := playbookBinary(t)
	require.NoError(t, os.Chmod(filepath.Dir(bin), 0o755), "the worker's user runs the binary")

	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	key := base64.StdEncoding.EncodeToString(raw)
	keys, err := os.MkdirTemp("", "playbook-keys")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(keys) })
	require.NoError(t, os.Chmod(keys, 0o755), "the directory is open, the file is not")
	keyFile := filepath.Join(keys, "codec.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(key+"\n"), 0o400))

	work := filepath.Join(home, fmt.Sprintf("keytest-%d", time.Now().UnixNano()))
	require.NoError(t, os.MkdirAll(filepath.Join(work, "logs"), 0o700))
	require.NoError(t, filepath.WalkDir(work, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, int(uid), int(gid))
	}))
	t.Cleanup(func() { os.RemoveAll(work) })

	queue := fmt.Sprintf("keytest-%d", time.Now().UnixNano())
	in, err := os.Open(keyFile)
	require.NoError(t, err)
	defer in.Close()
	cmd := exec.Command(bin, "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", filepath.Join(work, "logs"))
	cmd.Dir = work
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=" + stepUser,
		"TEMPORAL_CONFIG_FILE=" + filepath.Join(work, "none.toml"), "PLAYBOOK_CODEC_KEY_FILE=-"}
	cmd.Stdin = in
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	dir := t.TempDir()
	file := writePlaybook(t, dir, "peek.yaml", `metadata: {name: peek-key}
workload: {key_file: "", worker: 0}
workflow:
  - step: peek
    tool:
      kind: shell
      command: |
        id -un
        cat "$KEY_FILE" 2>&1
        echo "cmdline: $(tr '\0' ' ' < /proc/$WORKER/cmdline)"
        echo "environ: $(cat /proc/$WORKER/environ 2>&1 | tr '\0' ' ')"
        echo "fd 0: $(cat /proc/$WORKER/fd/0 2>&1)"
        echo "own fd 0: $(cat /proc/self/fd/0 2>&1)"
        true
      env: {KEY_FILE: "{{ workload.key_file }}", WORKER: "{{ workload.worker }}"}
`)
	waitFor(t, "the worker to poll with a key", func() bool {
		resp, err := tc.DescribeTaskQueue(context.Background(), queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		return err == nil && len(resp.GetPollers()) > 0 && strings.Contains(resp.GetPollers()[0].GetIdentity(), " codec:")
	})
	// The CLI has its own copy of the key.
	_, out, errOut := cliEnv(t, []string{"PLAYBOOK_CODEC_KEY=" + key}, "run", "--address", server.Address, "--task-queue", queue, "--json",
		"--set", "key_file="+keyFile, "--set", fmt.Sprintf("worker=%d", cmd.Process.Pid), file)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), "%s\nworker: %s", errOut, stderr.String())
	require.Equal(t, "completed", agg.Status, errOut)
	seen := agg.Steps["peek"].Result.(map[string]any)["stdout"].(string)
	t.Log(seen)
	require.True(t, strings.HasPrefix(seen, stepUser+"\n"), "the step runs as the worker's user")
	require.Contains(t, seen, "Permission denied", "the key file is root's")
	require.Contains(t, seen, "cmdline: "+bin+" worker", "the step did read the worker's command line")
	require.Contains(t, seen, fmt.Sprintf("environ: cat: /proc/%d/environ: Permission denied", cmd.Process.Pid), "the worker is not dumpable")
	for _, form := range append(contract.SecretForms(key), hex.EncodeToString(raw), string(raw)) {
		require.NotContains(t, seen, form)
	}
	require.NotContains(t, stderr.String(), key)
}
