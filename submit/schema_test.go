package submit

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"playbook/interpreter/spec"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const schemaFile = "../docs/playbook.schema.json"

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/playbook.schema.json from Schema()")

// TestSchemaFileIsUpToDate: the checked-in schema is what Schema() makes
// (`playbook schema` prints the same bytes). Refresh it with
// `make schema`, or go test ./submit -run TestSchemaFileIsUpToDate -update-schema.
func TestSchemaFileIsUpToDate(t *testing.T) {
	if *updateSchema {
		require.NoError(t, os.WriteFile(schemaFile, spec.SchemaJSON(), 0o644))
	}
	got, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	require.Equal(t, string(spec.SchemaJSON()), string(got), "docs/playbook.schema.json is stale: run make schema")
}

// compileSchema compiles the checked-in schema with a real draft 2020-12
// validator (which also resolves every $ref and checks the schema against
// the metaschema).
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	s, err := c.Compile(schemaFile)
	require.NoError(t, err)
	return s
}

// yamlInstance reads a YAML file as the JSON value editors validate: the
// data the YAML holds, as JSON would have it.
func yamlInstance(src []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec.Normalize(v))
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// schemaErr validates a YAML file against the schema; noInstance is the
// YAML error of a file that holds no data to validate.
func schemaErr(t *testing.T, s *jsonschema.Schema, src []byte) (err, noInstance error) {
	t.Helper()
	inst, noInstance := yamlInstance(src)
	if noInstance != nil {
		return nil, noInstance
	}
	return s.Validate(inst), nil
}

// checkBothWays checks one malformed case: when the schema can express
// what is wrong (beyond says nothing), the schema rejects it; otherwise it
// does not.
func checkBothWays(t *testing.T, s *jsonschema.Schema, name string, src []byte, beyond string) {
	t.Helper()
	err, noInstance := schemaErr(t, s, src)
	if beyond != "" {
		require.NoError(t, err, "%s is listed as beyond the schema (%s) but fails it: take it off the list", name, beyond)
		return
	}
	require.NoError(t, noInstance, "%s holds no YAML data: list it as beyond the schema", name)
	require.Error(t, err, "%s is malformed and the schema can say why, but it passes", name)
}

// TestSchemaAcceptsEveryExample: every example playbook, sub-playbooks
// included, is valid for the schema, and for ParseStrict, and its first
// line points editors at the schema.
func TestSchemaAcceptsEveryExample(t *testing.T) {
	s := compileSchema(t)
	var files []string
	require.NoError(t, filepath.WalkDir("../playbooks", func(path string, e os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".test.yaml") { // test files have a schema of their own
			files = append(files, path)
		}
		return err
	}))
	require.GreaterOrEqual(t, len(files), 20)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		first, _, _ := strings.Cut(string(src), "\n")
		rel, ok := strings.CutPrefix(first, "# yaml-language-server: $schema=")
		require.True(t, ok, "%s: the first line is not the schema line", f)
		require.Equal(t, filepath.Clean(schemaFile), filepath.Join(filepath.Dir(f), rel), f)
		_, err = ParseStrict(f, src, filepath.Dir(f))
		require.NoError(t, err, f)
		err, noInstance := schemaErr(t, s, src)
		require.NoError(t, noInstance, f)
		require.NoError(t, err, f)
	}
}

// TestSchemaAcceptsLanguageExamples: the whole playbooks docs/LANGUAGE.md
// shows (docs/language_test.go validates them) fit the schema too.
func TestSchemaAcceptsLanguageExamples(t *testing.T) {
	s := compileSchema(t)
	b, err := os.ReadFile("../docs/LANGUAGE.md")
	require.NoError(t, err)
	n := 0
	for _, m := range regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllStringSubmatch(string(b), -1) {
		if !strings.HasPrefix(m[1], "metadata:") && !strings.HasPrefix(m[1], "apiVersion:") {
			continue
		}
		n++
		err, noInstance := schemaErr(t, s, []byte(m[1]))
		require.NoError(t, noInstance, m[1])
		require.NoError(t, err, m[1])
	}
	require.GreaterOrEqual(t, n, 3)
}

// TestSchemaAcceptsShortForms: the scalar and list forms the parser
// accepts besides mappings fit the schema.
func TestSchemaAcceptsShortForms(t *testing.T) {
	s := compileSchema(t)
	for _, src := range []string{`
metadata: {name: short}
pending_timeout: 90
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, retry: true, timeout: 1.5, next: b}
  - {step: b, tool: {kind: shell, command: "true"}, retry: 3, next: [c, {step: d}]}
  - {step: c, tool: {kind: http, url: "http://x", expect_status: 204}, retries: 2, retry_delay: 1m30s, next: {step: d}}
  - step: d
    tool: {kind: http, url: "{{ workload.u }}", expect_status: [200, 201], headers: {A: 1, B: null}}
    retry: false
    next:
      - {when: "true", then: e}
      - {else: [f]}
  - {step: e, depends_on: d}
  - {step: f, depends_on: [{step: d}], on_failure: run}
workload: {u: "http://x"}
`, `
apiVersion: playbook/v1
kind: Playbook
metadata: {name: short, description: 7}
notify: {on_failure: {webhook: "{{ workload.hook }}"}, on_success: {}}
workload: {hook: "http://x"}
schedule: {every: 10m, overlap: buffer-one}
workflow:
  - {step: a, tool: {kind: python, code: "def main(): pass", args: {x: "{{ workload.hook }}"}}, loop: {in: [1, 2], mode: parallel}}
`} {
		_, err := ParseStrict("short.yaml", []byte(src), t.TempDir())
		require.NoError(t, err, src)
		err, noInstance := schemaErr(t, s, []byte(src))
		require.NoError(t, noInstance)
		require.NoError(t, err, src)
	}
}

// schemaCannotExpress are the malformed cases that are valid JSON Schema
// instances: what makes them wrong is beyond a schema of one file's shape.
var schemaCannotExpress = map[string]string{
	"bad_indent.yaml":                 "not YAML at all: there is no instance to validate",
	"bad_yaml.yaml":                   "not YAML at all: there is no instance to validate",
	"bad_template.yaml":               "a template's expression does not compile",
	"bad_when_expression.yaml":        "an expression does not compile",
	"cycle.yaml":                      "the step graph has a cycle",
	"duplicate_key.yaml":              "a key given twice is lost when YAML becomes the instance",
	"duplicate_step.yaml":             "step names are values, and unique values of a property are beyond JSON Schema",
	"include_cycle.yaml":              "the error is in the sub-playbooks the file includes",
	"sub_missing.yaml":                "the sub-playbook file does not exist",
	"sub_not_playbook.yaml":           "the error is in the sub-playbook the file includes",
	"template_in_command.yaml":        "a template inside a string the schema allows",
	"two_documents.yaml":              "a schema validates one document; the second is another instance",
	"unknown_depends_on.yaml":         "a step name that no step has",
	"unknown_failure_handler.yaml":    "a failure handler name that no handler has",
	"unknown_then_target.yaml":        "a step name that no step has",
	"unknown_depends_on_block.yaml":   "a step name that no step has",
	"desc_template.yaml":              "a template inside a string the schema allows",
	"recovery_script_template.yaml":   "a template inside a string the schema allows",
	"env_key_template.yaml":           "a template inside a string the schema allows",
	"workload_default_template.yaml":  "a template inside a string the schema allows",
	"loop_in_list_template.yaml":      "a template inside a string the schema allows",
	"schedule_workload_template.yaml": "a template inside a string the schema allows",
	"dashed_step_read.yaml":           "an expression does not compile",
	"not_utf8.yaml":                   "not YAML at all: there is no instance to validate",
	"wait_until_unreachable.yaml":     "a time past a bound, in a string the schema allows",
	"yaml_tag.yaml":                   "a YAML tag is not in the instance a schema sees",
	"nul_byte.yaml":                   "not YAML at all: there is no instance to validate",
	"misspelt_step_read.yaml":         "a step name that no step has",
	"retry_when_not_bool.yaml":        "the type an expression gives",
	"unknown_next.yaml":               "a step name that no step has",
	"timeout_without_tool.yaml":       "a key that applies only when another key (tool) is there",
	"heartbeat_without_tool.yaml":     "a key that applies only when another key (tool) is there",
	"retry_without_tool.yaml":         "a key that applies only when another key (tool) is there",
	"timeout_on_noop.yaml":            "a key that applies only to some tool kinds",
	"heartbeat_on_playbook_step.yaml": "a key that applies only to some tool kinds",
	"heartbeat_zero.yaml":             "a duration's value, written as a number or a string",
	"loop_over_int.yaml":              "the type an expression gives",
	"loop_over_string.yaml":           "the type an expression gives",
	"loop_range_over_limit.yaml":      "the length of the list an expression gives",
	"http_method_space.yaml":          "a string's value (an HTTP token)",
	"http_url_no_scheme.yaml":         "a string's value (an absolute URL)",
	"http_url_ftp.yaml":               "a string's value (an absolute URL)",
	"http_header_name.yaml":           "a mapping's key (an HTTP token)",
	"webhook_no_host.yaml":            "a URL's parts",
	"catchup_zero.yaml":               "a duration's value, written as a number or a string",
	"template_in_command_block.yaml":  "a template inside a string the schema allows",
	"merge_not_mapping.yaml":          "a merge key of numbers does not become an instance: YAML refuses it",
	"fail_builtin_type.yaml":          "the engine's own error types are the engine's list (contract), beside the schema's pattern",
	"fail_retry.yaml":                 "a key that applies only to some tool kinds",
	"fail_retries.yaml":               "a key that applies only to some tool kinds",
	"fail_timeout.yaml":               "a key that applies only to some tool kinds",
	"fail_in_loop.yaml":               "a key that applies only to some tool kinds",
	"approval_input_typo.yaml":        "the type an expression gives",
	"approval_timeout_zero.yaml":      "a duration's value, written as a number or a string",
	"wait_duration_zero.yaml":         "a duration's value, written as a number or a string",
	"approval_approvers_empty.yaml":   "a list the schema lets be empty, since a playbook from before may have one",
	"approval_cleanup.yaml":           "a key that applies only to some tool kinds",
	"fail_lost.yaml":                  "a key that applies only to some tool kinds",
	"fail_next_when.yaml":             "a key that applies only to some tool kinds, unless another key says otherwise",
	"allow_failure_on_end.yaml":       "a key that applies to every step but the one named end",
	"approval_approver_control.yaml":  "a control character in a name is beyond the schema's string type",
}

// TestSchemaRejectsMalformedCases: every held-in malformed playbook that
// the schema can express fails it; the others are listed above with why.
func TestSchemaRejectsMalformedCases(t *testing.T) {
	s := compileSchema(t)
	const dir = "testdata/malformed"
	golden, err := os.ReadFile(filepath.Join(dir, "errors.golden"))
	require.NoError(t, err)
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
		name, _, _ := strings.Cut(line, "\t")
		names = append(names, name)
	}
	require.GreaterOrEqual(t, len(names), 30)
	for _, name := range names {
		src, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) { checkBothWays(t, s, name, src, schemaCannotExpress[name]) })
	}
	for name := range schemaCannotExpress {
		require.Contains(t, names, name, "schemaCannotExpress lists a case that does not exist")
	}
}

// TestSchemaRejectsParseStrictCases: the same, for TestParseStrictErrors'
// cases.
func TestSchemaRejectsParseStrictCases(t *testing.T) {
	s := compileSchema(t)
	var checked []string
	for _, c := range parseStrictCases(t.TempDir()) {
		t.Run(c.name, func(t *testing.T) { checkBothWays(t, s, c.name, []byte(c.src), parseStrictBeyondSchema[c.name]) })
		if parseStrictBeyondSchema[c.name] == "" {
			checked = append(checked, c.name)
		}
	}
	for name := range parseStrictBeyondSchema {
		require.Contains(t, caseNames(parseStrictCases("")), name, "parseStrictBeyondSchema lists a case that does not exist")
	}
	sort.Strings(checked)
	t.Logf("the schema rejects: %s", strings.Join(checked, "; "))
}

// parseStrictBeyondSchema are TestParseStrictErrors' cases the schema
// cannot express, and why.
var parseStrictBeyondSchema = map[string]string{
	"undeclared workload key":                     "a template reads a workload key the file does not declare",
	"no workload section":                         "a template reads a workload key the file does not declare",
	"type error":                                  "an expression's types do not fit",
	"when is not a bool":                          "an expression's type does not fit",
	"misspelt step field":                         "an expression reads a field a step does not have",
	"misspelt result field of a shell step":       "an expression reads a field a result does not have",
	"step not upstream":                           "an expression reads a step that does not run before",
	"downstream step":                             "an expression reads a step that does not run before",
	"a tool reading its own step":                 "an expression reads the step itself",
	"missing recovery script":                     "a file the playbook names does not exist",
	"unquoted template":                           "YAML reads {{ }} as a mapping with a mapping for key: no JSON instance",
	"unquoted template with text after it":        "not YAML at all: there is no instance to validate",
	"tab":                                         "not YAML at all: there is no instance to validate",
	"retry_when reads the attempt's result shape": "an expression reads a field a result does not have",
	"retry error has no details":                  "an expression reads a field an error does not have",
	"loop index is an int":                        "an expression's types do not fit",
}

func caseNames(cases []struct{ name, src, want string }) []string {
	var out []string
	for _, c := range cases {
		out = append(out, c.name)
	}
	return out
}
