package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/internal/proctest"
	"playbook/internal/store"
	"playbook/internal/store/storetest"
	"playbook/interpreter/contract"
)

// startVersity runs VersityGW, the binary make test-cluster builds, over
// a directory with one bucket (proctest.Versity).
func startVersity(t *testing.T) (url, bucketDir string) {
	bin := os.Getenv(proctest.VersityVar)
	if bin == "" {
		t.Fatalf("%s is not set: make test-cluster builds VersityGW and sets it", proctest.VersityVar)
	}
	return proctest.Versity(t, bin)
}

var s3Credentials = proctest.VersityCredentials

// The store's contract on a real S3-compatible server, and issue 43's
// acceptance 2: two workers with their own working directories and task
// queues, extract on one and transform on the other (queue:), the files
// crossing through S3.
func TestFilesCrossWorkersThroughS3(t *testing.T) {
	if os.Getenv("PLAYBOOK_TEST_CLUSTER") == "" {
		t.Skip("the cluster test runs with `make test-cluster` (PLAYBOOK_TEST_CLUSTER=1)")
	}
	url, bucketDir := startVersity(t)
	for _, kv := range s3Credentials {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Run("the store's contract", func(t *testing.T) {
		storetest.Contract(t, func(t *testing.T) store.Store {
			base, query, _ := strings.Cut(url, "?")
			s, err := store.Open(t.Context(), fmt.Sprintf("%s/contract-%d?%s", base, time.Now().UnixNano(), query))
			require.NoError(t, err)
			return s
		})
	})

	work := t.TempDir()
	bin := filepath.Join(work, "playbook")
	build(t, "", bin, "playbook/cmd/playbook")
	port, uiPort := proctest.FreePort(t), proctest.FreePort(t)
	address := fmt.Sprintf("127.0.0.1:%d", port)
	// The server and the workflows' worker; every step of the playbook
	// names another queue, served by the two workers below.
	dev := exec.Command(bin, "dev", "--port", fmt.Sprint(port), "--ui-port", fmt.Sprint(uiPort), "--db", ":memory:", "--store", url)
	startLogged(t, dev, filepath.Join(work, "dev.out"), work)
	runPlaybook(t, bin, "list", "--address", address)
	logDirs := map[string]string{}
	for _, q := range []string{"extract-q", "transform-q"} {
		dir := filepath.Join(work, q)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		logDirs[q] = filepath.Join(work, q+"-logs")
		w := exec.Command(bin, "worker", "--address", address, "--task-queue", q, "--store", url, "--log-dir", logDirs[q])
		startLogged(t, w, filepath.Join(work, q+".out"), dir)
	}
	data := filepath.Join(work, "data")
	for _, s := range []string{"extract", "transform", "load"} {
		require.NoError(t, os.MkdirAll(filepath.Join(data, s), 0o755))
	}
	playbook, err := filepath.Abs("testdata/split.yaml")
	require.NoError(t, err)
	out, err := exec.Command(bin, "run", "--address", address, "--json", "--set", "dir="+data, playbook).Output()
	require.NoError(t, err, "%s", out)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal(out, &agg))
	require.Equal(t, contract.RunCompleted, agg.Status, "%s", out)

	raw := agg.Steps["extract"].Files["raw.json"]
	require.True(t, strings.HasPrefix(raw.URI, "s3://playbook/runs/"+agg.WorkflowID+"/extract/"), raw.URI)
	require.Equal(t, raw.SHA256, strings.TrimSpace(agg.Steps["load"].Result.(map[string]any)["stdout"].(string)))
	// The objects are in the bucket's directory, whole.
	st, err := os.Stat(filepath.Join(bucketDir, "runs", agg.WorkflowID, "extract", "raw.json"))
	require.NoError(t, err)
	require.EqualValues(t, 10<<20, st.Size())
	// Each step ran on the worker of its queue: its logs are there.
	for step, q := range map[string]string{"extract": "extract-q", "transform": "transform-q", "load": "extract-q"} {
		matches, _ := filepath.Glob(filepath.Join(logDirs[q], agg.WorkflowID, "*", step))
		require.Len(t, matches, 1, "%s ran on the worker of %s", step, q)
	}
	// playbook files reads the same bucket.
	listed := runPlaybook(t, bin, "files", "--store", url, agg.WorkflowID)
	require.Contains(t, listed, raw.SHA256)
	fmt.Printf("split pipeline through S3: extract on extract-q, transform on transform-q, %d bytes crossed\n", raw.Bytes)
}

// startLogged starts cmd in dir with its output in logFile, and kills it
// when the test ends.
func startLogged(t *testing.T, cmd *exec.Cmd, logFile, dir string) {
	f, err := os.Create(logFile)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr, cmd.Dir = f, f, dir
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
}
