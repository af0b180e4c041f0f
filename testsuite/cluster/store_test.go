package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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
	require.True(t, strings.HasPrefix(raw.URI, "s3://playbook/runs/"+agg.WorkflowID+"/extract@"), raw.URI)
	require.Equal(t, raw.SHA256, strings.TrimSpace(agg.Steps["load"].Result.(map[string]any)["stdout"].(string)))
	// The objects are in the bucket's directory, whole.
	st, err := os.Stat(filepath.Join(bucketDir, filepath.FromSlash(strings.TrimPrefix(raw.URI, "s3://playbook/"))))
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

	t.Run("a worker killed during an upload", func(t *testing.T) {
		killedUpload(t, bin, address, url, bucketDir, work)
	})
}

// killedUpload is issue 43's acceptance 2, its last part: a worker killed
// while it uploads a step's file leaves no object, whole or partial, at
// the file's key, and the step completes on the next worker of its queue
// (the lost attempt retried), its file whole for the step after it.
func killedUpload(t *testing.T, bin, address, url, bucketDir, work string) {
	const size = 300 << 20
	data := filepath.Join(work, "killed")
	for _, s := range []string{"make", "check"} {
		require.NoError(t, os.MkdirAll(filepath.Join(data, s), 0o755))
	}
	startUploader := func(name string) *exec.Cmd {
		w := exec.Command(bin, "worker", "--address", address, "--task-queue", "upload-q", "--store", url, "--log-dir", filepath.Join(work, "upload-q-logs"))
		startLogged(t, w, filepath.Join(work, name+".out"), data)
		return w
	}
	first := startUploader("upload-q-1")
	playbook, err := filepath.Abs("testdata/killed_upload.yaml")
	require.NoError(t, err)
	id := fmt.Sprintf("killed-upload-%d", time.Now().UnixNano())
	run := exec.Command(bin, "run", "--address", address, "--json", "--id", id, "--set", "dir="+data, "--set", fmt.Sprintf("bytes=%d", size), playbook)
	var runOut strings.Builder
	run.Stdout, run.Stderr = &runOut, os.Stderr
	require.NoError(t, run.Start())
	var runErr error
	ended := make(chan struct{})
	go func() { runErr = run.Wait(); close(ended) }()
	t.Cleanup(func() {
		_ = run.Process.Kill()
		<-ended
	})

	// The upload is in flight when VersityGW has written part of the
	// object (a MiB at least) to its temporary file (under the bucket's
	// .sgwtmp), with more to come than the sockets between them can hold.
	// The worker is stopped right then, so that it sends no more while the
	// bucket is looked at.
	versity := proctest.Matching("\x00posix\x00" + filepath.Dir(bucketDir))
	require.Len(t, versity, 1, "VersityGW's process")
	tmpDir := filepath.Join(bucketDir, ".sgwtmp")
	// It is looked for every millisecond: at the speed of a loopback
	// connection, the window is a few hundred milliseconds.
	var written int64
	deadline := time.Now().Add(3 * time.Minute)
	for {
		written = uploadWritten(versity[0], tmpDir)
		if written >= 1<<20 && written < size-64<<20 {
			require.NoError(t, first.Process.Signal(syscall.SIGSTOP))
			break
		}
		if written >= size-64<<20 {
			t.Fatalf("the upload of big.bin was first seen with %d of %d bytes written, too late to stop it before its end", written, size)
		}
		select {
		case <-ended:
			t.Fatalf("the run ended (%v) before its upload was seen in flight: %s", runErr, runOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the upload of big.bin to be in flight")
		}
		time.Sleep(time.Millisecond)
	}
	s, err := store.Open(t.Context(), url)
	require.NoError(t, err)
	// The attempt's key (RUN/make@ATTEMPT/big.bin) is its own: nothing of
	// the run is in the bucket, as the store lists it or as files.
	noObject := func(when string) {
		t.Helper()
		var files []string
		_ = filepath.Walk(filepath.Join(bucketDir, "runs", id), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		require.Empty(t, files, "%s: the run's objects' files", when)
		listed, err := s.List(t.Context(), id)
		require.NoError(t, err)
		require.Empty(t, listed, "%s: the run's objects", when)
	}
	noObject(fmt.Sprintf("with %d of %d bytes uploaded", written, size))

	// Killed: the server gives the upload up and keeps nothing of it.
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	proctest.WaitFor(t, "VersityGW to drop the killed upload", time.Minute, func() bool {
		return uploadWritten(versity[0], tmpDir) < 0
	})
	noObject("after the worker was killed")
	left, _ := filepath.Glob(filepath.Join(tmpDir, "*"))
	for _, f := range left {
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() {
			t.Errorf("VersityGW kept a temporary file of the killed upload: %s", f)
		}
	}
	multipart, _ := os.ReadDir(filepath.Join(tmpDir, "multipart"))
	require.Empty(t, multipart, "multipart uploads left in the bucket")

	// A new worker of the queue runs the lost attempt again.
	startUploader("upload-q-2")
	select {
	case <-ended:
		require.NoError(t, runErr, "%s", runOut.String())
	case <-time.After(5 * time.Minute):
		t.Fatalf("the run did not end after its worker was replaced")
	}
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(runOut.String()), &agg), runOut.String())
	require.Equal(t, contract.RunCompleted, agg.Status, "%s", failures(&agg))
	made := agg.Steps["make"]
	require.Equal(t, 2, made.Attempts, "%v", made.AttemptErrors)
	require.Len(t, made.AttemptErrors, 1)
	require.True(t, made.AttemptErrors[0].Lost, "%v", made.AttemptErrors)
	ref := made.Files["big.bin"]
	require.EqualValues(t, size, ref.Bytes)
	key, err := store.KeyOf(s, ref.URI)
	require.NoError(t, err)
	require.Regexp(t, "^"+regexp.QuoteMeta(id+"/make@")+"[0-9a-f]{12}/big\\.bin$", key)
	// The object is whole, the file the retried attempt made, and check
	// read it.
	f, err := os.Open(filepath.Join(bucketDir, "runs", filepath.FromSlash(key)))
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	require.NoError(t, err)
	require.EqualValues(t, size, n)
	require.Equal(t, ref.SHA256, hex.EncodeToString(h.Sum(nil)))
	require.Equal(t, ref.SHA256, strings.TrimSpace(agg.Steps["check"].Result.(map[string]any)["stdout"].(string)))
	fmt.Printf("killed upload: stopped and killed at %d of %d bytes; nothing at %s; the retried attempt uploaded it whole\n", written, size, key)
}

// uploadWritten says how far VersityGW (process pid) has written the
// upload it is receiving into a temporary file under tmpDir (the bucket's
// .sgwtmp: a file of its own, or one with no name, O_TMPFILE), as that
// file descriptor's offset; -1 when it has no such file open.
func uploadWritten(pid, tmpDir string) int64 {
	fds, _ := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	written := int64(-1)
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name()))
		if err != nil || !strings.HasPrefix(target, tmpDir+"/") {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc", pid, "fdinfo", fd.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "pos:"); ok {
				if pos, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					written = max(written, pos)
				}
			}
		}
	}
	return written
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
