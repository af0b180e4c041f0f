package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckPathName(t *testing.T) {
	for _, ok := range []string{"hello-jd0zf", "nightly-etl-7f3k2-load", "extract[3]", "run.2026-11-23", "Ünïcode_id"} {
		require.NoError(t, CheckPathName("run ID", ok), ok)
	}
	for name, want := range map[string]string{
		"":           `run ID is empty`,
		"..":         `run ID ".." would name a directory outside the log directory`,
		".":          `run ID "." would name a directory outside the log directory`,
		"../../x":    `run ID "../../x" contains '/': it names a directory, so it cannot hold a path separator`,
		"/etc":       `run ID "/etc" contains '/': it names a directory, so it cannot hold a path separator`,
		`a\b`:        `run ID "a\\b" contains '\\': it names a directory, so it cannot hold a path separator`,
		"a\x00b":     `run ID "a\x00b" contains a control character or invalid UTF-8`,
		"a\nb":       `run ID "a\nb" contains a control character or invalid UTF-8`,
		"bad\xffutf": `run ID "bad\xffutf" contains a control character or invalid UTF-8`,
		" x":         `run ID " x" starts or ends with a space`,
	} {
		err := CheckPathName("run ID", name)
		require.Error(t, err, "%q", name)
		require.Equal(t, want, err.Error())
	}
	long := make([]byte, 201)
	for i := range long {
		long[i] = 'a'
	}
	require.EqualError(t, CheckPathName("run ID", string(long)), "run ID is 201 bytes long (the limit is 200)")
}
