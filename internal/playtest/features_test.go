package playtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// copyFeatures copies the feature playbooks to a fresh directory, where a
// test may change one.
func copyFeatures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir("testdata/features", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/features", path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(filepath.Join(dir, rel), b, info.Mode())
	})
	require.NoError(t, err)
	return dir
}

// runNamed runs one case of a test file and returns its result.
func runNamed(t *testing.T, testFile, name string) Result {
	t.Helper()
	s, err := Load(testFile)
	require.NoError(t, err)
	for _, c := range s.File.Cases {
		if c.Name == name {
			return s.RunCase(c, Options{})
		}
	}
	t.Fatalf("%s has no case %q", testFile, name)
	return Result{}
}

// Each failure feature has a case that passes on the right playbook and,
// once the playbook is changed to be wrong, fails naming the mismatch.
func TestFailureFeaturesPassRightAndFailWrong(t *testing.T) {
	for _, c := range []struct {
		feature, file, name string
		old, new            string
		want                string
	}{
		{"retry with backoff on a 503 sequence", "retry", "503, 503, then 200",
			`retry_when: "status_code == 503"`, `retry_when: "status_code == 502"`,
			`step "fetch": expected status completed, got failed`},
		{"stop_when", "retry", "a 404 stops at once",
			`retry_when: "status_code == 503", stop_when: "status_code == 404"`, `retry_when: "status_code != 200", stop_when: "status_code == 410"`,
			`step "fetch": expected attempts 1, got 5`},
		{"exit-code rule and recovery script", "exit_rule", "exit 75 runs the recovery script, then the retry succeeds",
			"exit_codes: [75]", "exit_codes: [74]",
			"run status: expected completed, got failed"},
		{"on_failure: run", "on_failure", "a failed transform routes to end while cleanup still runs",
			"    on_failure: run\n", "",
			`step "cleanup": expected status completed, got skipped`},
		{"failure_mode: cancel", "cancel_mode", "a failure cancels the running sibling",
			"failure_mode: cancel", "failure_mode: continue",
			`step "slow": expected status cancelled, got completed`},
		{"pending_failed and classify", "pending", "an unmatched failure waits, and a retry classification runs it again",
			"use_pending_failed: true", "use_pending_failed: false",
			`event at line 9 (classify) never happened: step "check" never waited as pending_failed`},
		{"approval approved", "approval", "approved with a ticket, deploy runs",
			"timeout: 1h", "timeout: 5m",
			"run status: expected completed, got failed"},
		{"approval rejected", "approval", "rejected, deploy is skipped",
			"  - step: deploy\n", "  - step: deploy\n    on_failure: run\n",
			`step "deploy": expected status skipped, got failed`},
		{"approval timeout", "approval", "nobody decides within the hour",
			"on_timeout: reject", "on_timeout: approve",
			`step "sign_off": expected status failed, got completed`},
		{"run deadline with cleanup", "deadline", "the deadline cancels the work and the lock is still released",
			"    always: true\n", "",
			`step "unlock": expected status completed, got`},
		{"allow_failure", "warnings", "an allowed failure is a warning",
			"    allow_failure: true\n", "",
			"run status: expected completed_with_warnings, got failed"},
		{"a fail step's type routed on", "raise", "a spent quota is routed on its type",
			"type: quota,", "type: quota_spent,",
			`step "out_of_quota": expected error type quota, got quota_spent`},
		{"a lost attempt retried", "lost", "a lost attempt is retried",
			"  - step: copy\n", "  - step: copy\n    on_lost: fail\n",
			"run status: expected completed, got failed"},
		{"a loop with one failing element", "loop", "one failing element fails the step",
			"    next: summary\n", "    next: summary\n    allow_failure: true\n",
			`step "summary": expected status skipped, got failed`},
		{"a sub-playbook failing", "sub_fail", "a sub-playbook mocked as failed fails its step",
			"    on_failure: run\n", "",
			`step "cleanup": expected status completed, got skipped`},
		{"a sub-playbook failing in its own mocked step", "sub_fail", "a sub-playbook runs with its own steps mocked",
			"    on_failure: run\n", "",
			`step "cleanup": expected status completed, got skipped`},
	} {
		t.Run(c.feature, func(t *testing.T) {
			dir := copyFeatures(t)
			testFile := filepath.Join(dir, c.file+Suffix)
			right := runNamed(t, testFile, c.name)
			require.True(t, right.Passed, "the right playbook: %v\n%s", right.Problems, right.Steps)

			pbFile := filepath.Join(dir, c.file+".yaml")
			b, err := os.ReadFile(pbFile)
			require.NoError(t, err)
			require.Contains(t, string(b), c.old)
			require.NoError(t, os.WriteFile(pbFile, []byte(strings.Replace(string(b), c.old, c.new, 1)), 0o644))
			wrong := runNamed(t, testFile, c.name)
			require.False(t, wrong.Passed, "the wrong playbook passed")
			require.NotEmpty(t, wrong.Steps, "a failing case shows the steps' table")
			found := false
			for _, p := range wrong.Problems {
				found = found || strings.Contains(p, c.want)
			}
			require.True(t, found, "want a problem containing %q, got %q", c.want, wrong.Problems)
		})
	}
}

// A mocked attempt's files reach the steps after it: their templates
// read the files' size and sha256, and load takes transform's files; a
// mock with no files leaves the taking step failing, as a run would.
func TestMockedFilesReachLaterSteps(t *testing.T) {
	const file = "testdata/features/files.test.yaml"
	with := runNamed(t, file, "a mocked step's files reach the steps that take them")
	require.True(t, with.Passed, "%v\n%s", with.Problems, with.Steps)
	ref := with.Aggregate.Steps["extract"].Files["raw.json"]
	require.EqualValues(t, 11, ref.Bytes)
	require.True(t, strings.HasPrefix(ref.URI, "mock://"), ref.URI)
	require.True(t, strings.HasSuffix(ref.URI, "/extract/raw.json"), ref.URI)
	without := runNamed(t, file, "without the mock's files, the step that takes one fails")
	require.True(t, without.Passed, "%v\n%s", without.Problems, without.Steps)
	require.Contains(t, without.Aggregate.Steps["transform"].Error.Message, "steps.extract.files['raw.json']")
}
