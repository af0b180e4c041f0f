package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// VersityVar names the VersityGW binary (an S3-compatible server) that
// make test-cluster builds from the module proxy (go install
// github.com/versity/versitygw/cmd/versitygw).
const VersityVar = "PLAYBOOK_VERSITYGW"

// VersityCredentials are the ones Versity's server takes, as a store's
// client reads them from its environment.
var VersityCredentials = []string{"AWS_ACCESS_KEY_ID=playbook-test", "AWS_SECRET_ACCESS_KEY=playbook-test-secret", "AWS_REGION=us-east-1"}

// Versity runs VersityGW (bin) with its posix backend over a directory
// with one bucket, "playbook", until the test ends; it returns the store
// URL of a prefix in it and the bucket's directory.
func Versity(t testing.TB, bin string) (url, bucketDir string) {
	t.Helper()
	root := t.TempDir()
	bucketDir = filepath.Join(root, "playbook")
	if err := os.Mkdir(bucketDir, 0o755); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	cmd := exec.Command(bin, "--access", "playbook-test", "--secret", "playbook-test-secret", "--port", fmt.Sprintf("127.0.0.1:%d", port), "posix", root)
	logFile, err := os.Create(filepath.Join(root, "..", "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
	WaitFor(t, "VersityGW to listen", 30*time.Second, func() bool { return Listening(fmt.Sprintf("127.0.0.1:%d", port)) })
	return fmt.Sprintf("s3://playbook/runs?endpoint=http://127.0.0.1:%d&region=us-east-1", port), bucketDir
}
