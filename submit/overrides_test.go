package submit

import (
	"encoding/json"
	"testing"

	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// --set gives text and --input keeps a number's digits: what they mean
// depends on the declared default, so a string key gets them as written.
func TestOverridesAsWritten(t *testing.T) {
	pb := &spec.Playbook{File: "x.yaml", Workload: map[string]any{
		"version": "1.0", "n": 1, "ratio": 0.5, "on": false, "tags": []any{}, "any": nil,
		"db": map[string]any{"host": "h", "port": 5432},
	}}
	cases := []struct {
		name string
		in   any
		want any
	}{
		{"version", SetText("1.10"), "1.10"},
		{"version", SetText("0x10"), "0x10"},
		{"version", SetText("2001-12-14"), "2001-12-14"},
		{"version", SetText(".inf"), ".inf"},
		{"version", json.Number("12345678901234567890"), "12345678901234567890"},
		{"n", SetText("0x10"), 16},
		{"n", SetText("3.0"), 3},
		{"n", json.Number("9007199254740993"), 9007199254740993},
		{"n", json.Number("3.0"), 3},
		{"ratio", SetText("1.5"), 1.5},
		{"ratio", json.Number("2"), 2.0},
		{"on", SetText("true"), true},
		{"tags", SetText("[a, 1]"), []any{"a", 1}},
		{"any", SetText("5"), 5},
		{"any", SetText("2001-12-14"), "2001-12-14"},
		{"any", SetText(""), nil},
		{"any", map[string]any{"k": json.Number("7"), "l": []any{json.Number("1.5")}}, map[string]any{"k": 7, "l": []any{1.5}}},
		{"db", map[string]any{"host": SetText("10.0"), "port": SetText("6543"), "extra": SetText("yes")}, map[string]any{"host": "10.0", "port": 6543, "extra": "yes"}},
	}
	for _, c := range cases {
		got, err := CheckOverrides(pb, map[string]any{c.name: c.in})
		require.NoError(t, err, "%s=%v", c.name, c.in)
		require.Equal(t, c.want, got[c.name], "%s=%v", c.name, c.in)
	}

	refused := []struct {
		name string
		in   any
		want string
	}{
		{"n", SetText("1.5"), `x.yaml: workload.n must be a whole number (its default is 1), not 1.5`},
		{"n", SetText("2001-12-14"), `x.yaml: workload.n must be a whole number (its default is 1), not "2001-12-14"`},
		{"n", json.Number("9007199254740993.5"), `x.yaml: workload.n must be a whole number (its default is 1), not 9007199254740993.5`},
		{"on", SetText("yes"), `x.yaml: workload.on must be true or false (its default is false), not "yes"`},
	}
	for _, c := range refused {
		_, err := CheckOverrides(pb, map[string]any{c.name: c.in})
		require.EqualError(t, err, c.want)
	}
}

// Text YAML cannot read is refused for a key that takes a value (a string
// key takes it as written): before, it became a string without a word.
func TestOverrideYAMLMustRead(t *testing.T) {
	pb := &spec.Playbook{File: "x.yaml", Workload: map[string]any{"name": "", "tags": []any{}, "any": nil}}
	_, err := CheckOverrides(pb, map[string]any{"tags": SetText("[a, b")})
	require.ErrorContains(t, err, `x.yaml: workload.tags: "[a, b" is not a value YAML can read (`)
	require.ErrorContains(t, err, `): quote it to give a string`)
	_, err = CheckOverrides(pb, map[string]any{"any": SetText("{a: 1")})
	require.ErrorContains(t, err, `workload.any: "{a: 1" is not a value YAML can read`)
	got, err := CheckOverrides(pb, map[string]any{"name": SetText("[a, b")})
	require.NoError(t, err)
	require.Equal(t, "[a, b", got["name"], "a string key takes the text as written")
}

// A --set value read as YAML may not carry a tag a file may not: !!binary
// would decode base64, !!python/object names a constructor. A string key
// takes the text as it is, so its tags are only text.
func TestOverrideTagsAreRefused(t *testing.T) {
	pb := &spec.Playbook{File: "x.yaml", Workload: map[string]any{"any": nil, "list": []any{1}, "name": ""}}
	for in, want := range map[string]string{
		"!!binary aGk=":                `x.yaml: workload.any: "!!binary aGk=": the YAML tag !!binary is not read by playbooks: write the value plainly`,
		"!!python/object:os.system ls": `x.yaml: workload.any: "!!python/object:os.system ls": the YAML tag !!python/object:os.system is not read by playbooks: write the value plainly`,
		"[1, !custom 3]":               `x.yaml: workload.any: "[1, !custom 3]": the YAML tag !custom is not read by playbooks: write the value plainly`,
	} {
		_, err := CheckOverrides(pb, map[string]any{"any": SetText(in)})
		require.EqualError(t, err, want, in)
	}
	got, err := CheckOverrides(pb, map[string]any{"any": SetText("!!str 3"), "name": SetText("!!binary aGk=")})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"any": "3", "name": "!!binary aGk="}, got)
}
