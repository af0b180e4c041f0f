package playtest

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"playbook/interpreter/spec"
)

// docs/playbook-test.schema.json, which editors read, accepts every test
// file of the examples and refuses what playbook test refuses for shape.
func TestTestFileSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	s, err := c.Compile("../../docs/playbook-test.schema.json")
	require.NoError(t, err)
	instance := func(src []byte) any {
		var v any
		require.NoError(t, yaml.Unmarshal(src, &v))
		b, err := json.Marshal(spec.Normalize(v))
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err)
		return inst
	}
	files, err := Find([]string{"../../playbooks", "testdata/features"})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, s.Validate(instance(b)), f)
	}
	for _, bad := range []string{
		"cases: [{name: x, expect: {}, mocks: {a: {reslut: 1}}}]",
		"cases: [{name: x, expect: {status: done}}]",
		"cases: [{name: x}]",
		"cases: [{name: x, expect: {}, events: [{approve: a, reject: a}]}]",
		"cases: [{name: x, expect: {}, mocks: {a: {attempts: [{result: 1, error: {exit_code: 1}}]}}}]",
		"cases: [{name: x, expect: {}, mocks: {a: {elements: {eu: {result: 1}}}}}]",
		"cases: [{name: x, expect: {}, events: [{deadline: true}]}]",
		"cases: [{name: x, expect: {}, events: [{deadline: true, after: 1m, on_start: a}]}]",
	} {
		require.Error(t, s.Validate(instance([]byte(bad))), bad)
		_, err := ParseFile("bad.test.yaml", []byte(bad))
		require.Error(t, err, bad)
	}
}
