package submit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"playbook/interpreter"

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
		pb, err := interpreter.Parse("fuzz.yaml", src)
		if err != nil {
			// One line per error, each naming the file.
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml") {
					t.Fatalf("an error line that does not name the file: %q", line)
				}
			}
			return
		}
		_ = pb.Mermaid(nil)
		_ = interpreter.NewRun(pb, nil, "fuzz-1", time.Now).Ready()
	})
}
