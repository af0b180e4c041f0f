package submit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDuplicateKey(t *testing.T) {
	for src, want := range map[string]string{
		`{"a": 1, "b": 2}`:                      "",
		`{"a": 1, "a": 2}`:                      "a",
		`{"db": {"host": "x", "host": "y"}}`:    "db.host",
		`{"a": ["x", "x"], "b": {"c": 1}}`:      "",
		`{"a": [{"k": 1}, {"k": 2}], "a2": []}`: "",
		`{"a": [{"k": 1, "k": 2}]}`:             "a.k",
		`{"a": {"b": 1}, "c": {"b": 2}}`:        "",
	} {
		require.Equal(t, want, duplicateKey([]byte(src)), src)
	}
}

// --input and --set refuse what they would read wrong, with one line each.
func TestWorkloadOverridesRefuse(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		f := filepath.Join(dir, "in.json")
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return f
	}
	in := write(`[1, 2]`)
	_, err := ReadOverrides(in, nil)
	require.EqualError(t, err, "--input "+in+": not a JSON object: it holds an array")
	in = write(`{"rows": 1, "rows": 2}`)
	_, err = ReadOverrides(in, nil)
	require.EqualError(t, err, "--input "+in+": key rows is given twice: give it once")
	_, err = ReadOverrides("", []string{"db..host=x"})
	require.EqualError(t, err, `--set "db..host=x": the key "db..host" has an empty part: write KEY=VALUE or KEY.SUBKEY=VALUE`)
}
