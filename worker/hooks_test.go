package worker

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// An event's body is its data: one JSON value, whole numbers as written,
// an empty body null; anything else is refused with why.
func TestEventData(t *testing.T) {
	for _, c := range []struct {
		body string
		want any
		err  string
	}{
		{"", nil, ""},
		{" \n", nil, ""},
		{"null", nil, ""},
		{`"ok"`, "ok", ""},
		{`{"rows": 12345678901234567890}`, map[string]any{"rows": json.Number("12345678901234567890")}, ""},
		{`[1, true]`, []any{json.Number("1"), true}, ""},
		{`{"x": NaN}`, nil, "the body is not JSON (invalid character 'N' looking for beginning of value)"},
		{`1 2`, nil, "the body holds more than one JSON value"},
		{`{"x": 1`, nil, "the body is not JSON (unexpected EOF)"},
	} {
		got, err := eventData([]byte(c.body))
		if c.err != "" {
			require.EqualError(t, err, c.err, c.body)
			continue
		}
		require.NoError(t, err, c.body)
		require.Equal(t, c.want, got, c.body)
	}
}
