package submit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/engine"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// malformedDir holds playbooks that must be rejected; errors.golden pins
// each one's exact one-line error, $DIR standing for the directory.
const malformedDir = "testdata/malformed"

// MalformedCases reads errors.golden: file name -> expected error line.
func malformedCases(t testing.TB) map[string]string {
	b, err := os.ReadFile(filepath.Join(malformedDir, "errors.golden"))
	require.NoError(t, err)
	cases := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, want, ok := strings.Cut(line, "\t")
		require.True(t, ok, "errors.golden: %q", line)
		cases[name] = want
	}
	return cases
}

func readPlaybookFile(abs string) ([]byte, error) {
	b, err := os.ReadFile(abs)
	var pe *os.PathError
	if errors.As(err, &pe) {
		return nil, pe.Err
	}
	return b, err
}

func TestMalformedPlaybooks(t *testing.T) {
	cases := malformedCases(t)
	files, err := filepath.Glob(filepath.Join(malformedDir, "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 30)
	require.Len(t, cases, len(files), "every malformed playbook has its line in errors.golden")
	for _, file := range files {
		want, ok := cases[filepath.Base(file)]
		require.True(t, ok, "%s has no line in errors.golden", file)
		_, err := LoadBundle(file, readPlaybookFile)
		require.Error(t, err, file)
		require.Equal(t, strings.ReplaceAll(want, "$DIR", malformedDir), err.Error())
		require.NotContains(t, err.Error(), "\n")
	}
}

// submitOnly are the malformed cases refused at submission only: runs may
// have started with such files before the check existed, so the
// workflow's re-parse (engine.Parse) must keep accepting them
// (docs/VERSIONING.md).
var submitOnly = []string{
	"approval_approvers_empty.yaml", "approval_cleanup.yaml", "approval_input_typo.yaml", "approval_timeout_zero.yaml", "wait_duration_zero.yaml", "bool_quoted.yaml", "bool_yes.yaml", "fail_builtin_type.yaml", "fail_in_loop.yaml", "fail_lost.yaml", "fail_next_when.yaml",
	"fail_retries.yaml", "fail_retry.yaml", "fail_timeout.yaml", "catchup_zero.yaml", "desc_template.yaml", "env_key_template.yaml",
	"exit_codes_empty.yaml", "exit_codes_out_of_range.yaml", "heartbeat_on_playbook_step.yaml", "heartbeat_without_tool.yaml",
	"heartbeat_zero.yaml", "http_method_space.yaml", "http_url_no_scheme.yaml", "http_url_ftp.yaml", "http_header_name.yaml", "loop_in_list_template.yaml", "loop_over_int.yaml",
	"loop_over_string.yaml", "loop_range_over_limit.yaml", "recovery_script_template.yaml", "retry_when_not_bool.yaml",
	"retry_without_tool.yaml", "schedule_workload_template.yaml", "timeout_on_noop.yaml", "timeout_without_tool.yaml",
	"webhook_no_host.yaml", "workload_default_template.yaml", "wait_until_unreachable.yaml", "yaml_tag.yaml",
}

// Every check made at submission only leaves the file acceptable to the
// workflow's re-parse: a run started before the check still replays.
func TestSubmitOnlyChecksLeaveReplayAlone(t *testing.T) {
	cases := malformedCases(t)
	for _, name := range submitOnly {
		require.Contains(t, cases, name)
		src, err := os.ReadFile(filepath.Join(malformedDir, name))
		require.NoError(t, err)
		_, err = spec.Parse(name, src)
		require.NoError(t, err, "%s: the workflow's re-parse must still accept it", name)
		_, err = ParseStrict(name, src, malformedDir)
		require.Error(t, err, "%s is refused at submission", name)
	}
}

// FuzzParse feeds the parser and validator arbitrary bytes: they may
// reject, never panic. Plain `go test` runs the seeds (every example and
// every malformed case); `make fuzz` searches further.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"../playbooks/*.yaml", "../playbooks/*/*.yaml", malformedDir + "/*.yaml", malformedDir + "/*/*.yaml"} {
		files, err := filepath.Glob(pattern)
		require.NoError(f, err)
		for _, file := range files {
			b, err := os.ReadFile(file)
			require.NoError(f, err)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// Nor do the submission's own checks panic.
		_, _ = ParseStrict("fuzz.yaml", src, "")
		pb, err := spec.Parse("fuzz.yaml", src)
		if err != nil {
			// One line per error, each naming the file.
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml") {
					t.Fatalf("an error line that does not name the file: %q", line)
				}
			}
			return
		}
		_ = engine.Mermaid(pb, nil)
		_ = engine.NewRun(pb, nil, "fuzz-1", time.Now).Ready()
	})
}
