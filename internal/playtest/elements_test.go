package playtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const regions = `metadata: { name: regions }
workload:
  sites: [{ name: paris, region: eu }, { name: ohio, region: us }, { name: berlin, region: eu }]
workflow:
  - step: list
    tool: { kind: shell, command: "list-more-sites" }
    next: [each, more]
  - step: each
    loop: { in: "workload.sites", iterator: site, mode: parallel }
    tool: { kind: shell, command: 'deploy "$N"', env: { N: "{{ site.name }}" } }
  - step: more
    loop: { in: "steps.list.result.json" }
    tool: { kind: shell, command: 'deploy "$N"', env: { N: "{{ item }}" } }
  - step: after
    depends_on: [each, more]
    tool: { kind: noop, result: done }
  - step: plain
    tool: { kind: noop, result: 1 }
`

// A loop's elements are mocked by a template over their item: the first
// template that holds gives the element's mock, an index comes first, the
// others take the step's own mock; the item is the element's, whether the
// loop's list is the workload's or an earlier step's result.
func TestElementMocksByTemplate(t *testing.T) {
	for _, c := range []struct {
		name, elements string
		want           []string
	}{
		{"by the item under the iterator's name", `"{{ site.region == 'eu' }}": { result: { stdout: EU } }`,
			[]string{`steps.each.result[0].stdout == "EU"`, `steps.each.result[1].stdout == "other"`, `steps.each.result[2].stdout == "EU"`}},
		{"by item", `"{{ item.name == 'ohio' }}": { result: { stdout: OH } }`,
			[]string{`steps.each.result[0].stdout == "other"`, `steps.each.result[1].stdout == "OH"`}},
		{"by loop.index", `"{{ loop.index >= 1 }}": { result: { stdout: later } }`,
			[]string{`steps.each.result[0].stdout == "other"`, `steps.each.result[2].stdout == "later"`}},
		{"the first that holds", `"{{ site.region == 'eu' }}": { result: { stdout: EU } }
          "{{ site.name == 'paris' }}": { result: { stdout: PARIS } }`,
			[]string{`steps.each.result[0].stdout == "EU"`}},
		{"an index before a template", `0: { result: { stdout: zero } }
          "{{ site.region == 'eu' }}": { result: { stdout: EU } }`,
			[]string{`steps.each.result[0].stdout == "zero"`, `steps.each.result[2].stdout == "EU"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeCase(t, regions, `cases:
  - name: c
    mocks:
      list: { result: { stdout: '["rome", "oslo"]' } }
      more:
        result: { stdout: other }
        elements:
          "{{ item == 'oslo' }}": { error: { exit_code: 1, stderr: "oslo is down" } }
      each:
        result: { stdout: other }
        elements:
          `+c.elements+`
    expect:
      steps:
        more: { status: failed, error_message: "oslo is down" }
      assert:
        - '`+strings.Join(c.want, "'\n        - '")+`'

`)
			r := runNamed(t, path, "c")
			require.True(t, r.Passed, "%v\n%s\n%s", r.Problems, r.Steps, strings.Join(r.Log, "\n"))
		})
	}
}

// A mock by template that cannot be one is a mistake of the test file,
// one line each; so is a mock of a step decided in the workflow (it
// would change nothing) and a result field a real result has not (a
// typo would leave the field it meant empty).
func TestElementMocksByTemplateMalformed(t *testing.T) {
	path := writeCase(t, regions, `cases:
  - name: c
    mocks:
      each:
        elements:
          "{{ site.region == }}": { result: 1 }
          eu: { result: 1 }
          "{{ nosuch.region == 'eu' }}": { result: 1 }
          "{{ site.region == 'eu' }}": { result: 1, takes: 1m }
      list:
        elements:
          "{{ item }}": { result: 1 }
      plain: { result: 2 }
      more: { result: { stdot: "x" } }
    expect: { status: completed }
`)
	_, err := Load(path)
	var bad *MalformedError
	require.ErrorAs(t, err, &bad)
	require.Equal(t, []string{
		path + `:6: case "c": mocks: step "each": elements "site.region ==": unexpected token EOF (1:14)`,
		path + `:7: case "c": elements: "eu" is neither an element index (0, 1, ...) nor a template over item ({{ item.region == 'eu' }})`,
		path + `:8: case "c": mocks: step "each": elements "nosuch.region == 'eu'": unknown name nosuch (1:1)`,
		path + `:9: case "c": mocks: step "each": elements "{{ site.region == 'eu' }}": takes: is given to an element by its index, not by a template`,
		path + `:11: case "c": mocks: step "list" has no loop: elements are a loop's`,
		path + `:13: case "c": mocks: step "plain" is decided in the workflow (kind noop) and runs as it is: a mock of it would change nothing; mock the steps it reads, or send its events`,
		path + `:14: case "c": mocks: step "more": result.stdot is not a field of a shell step's result (exit_code, json, stderr, stdout)`,
	}, bad.Lines)
}
