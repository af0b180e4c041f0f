// Package docs_test checks that the documentation matches the project:
// docs/LANGUAGE.md names every key the parser accepts, its whole-playbook
// examples validate, GETTING_STARTED's mistakes are told as it shows them,
// and no Markdown file links outside the repository.
package docs_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"playbook/interpreter/spec"
	"playbook/submit"

	"go.yaml.in/yaml/v3"
)

// probe is the key no mapping of the language accepts: the parser answers
// it with `unknown key "zz_probe" in WHAT (known: a, b, c)`.
const probe = "zz_probe"

var (
	unknownKey = regexp.MustCompile(`unknown key "` + probe + `" in (.+?) \(known: ([^)]*)\)`)
	toolKinds  = regexp.MustCompile(`unknown tool kind "` + probe + `" \(one of: ([^)]*)\)`)
)

// seed is a small valid playbook. Each mapping the parser decodes is
// found from it: a known key's value is replaced by a mapping (or a list
// of one mapping) that holds the probe, merged into what the seed has there
// so that whatever the parser reads first (a step's name, a handler's
// name) is still there.
const seed = `
metadata: {name: probe}
failure_handlers:
  - name: h
    rules: [{match_all_exit_codes: true}]
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
`

// level is a mapping of the language: what the parser calls it, and where
// it sits in doc.
type level struct {
	what string
	path []any // map keys (string) and list indexes (int)
	doc  any
	// where is path as text, with the tool kind for a tool: "workflow.0.tool(shell)".
	where string
	keys  []string
}

// parserKeys walks every mapping the parser decodes, starting from the
// top level, and returns each with its known keys, in the order found.
func parserKeys(t *testing.T) []level {
	var doc any
	if err := yaml.Unmarshal([]byte(seed), &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := submit.ParseStrict("seed.yaml", []byte(seed), ""); err != nil {
		t.Fatalf("the seed playbook must be valid: %v", err)
	}
	// found parses doc and returns the known keys of each mapping whose
	// unknown-key error names the probe, and the tool kinds when an error
	// lists them.
	found := func(doc any) (map[string][]string, []string) {
		src, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, perr := submit.ParseStrict("probe.yaml", src, "")
		if perr == nil {
			return nil, nil
		}
		out := map[string][]string{}
		for _, m := range unknownKey.FindAllStringSubmatch(perr.Error(), -1) {
			out[m[1]] = strings.Split(m[2], ", ")
		}
		var kinds []string
		if m := toolKinds.FindStringSubmatch(perr.Error()); m != nil {
			kinds = strings.Split(m[1], ", ")
		}
		return out, kinds
	}
	var levels []level
	seen := map[string]bool{}
	// visit records each mapping the probe reached, once, to walk it in turn.
	visit := func(doc any, path []any) {
		got, _ := found(doc)
		where := pathText(path)
		if m, ok := get(doc, path).(map[string]any); ok && m["kind"] != nil && len(path) > 0 {
			where += fmt.Sprintf("(%v)", m["kind"])
		}
		for _, what := range slices.Sorted(maps.Keys(got)) {
			if seen[what] {
				continue
			}
			seen[what] = true
			levels = append(levels, level{what: what, path: path, doc: without(doc, path), where: where, keys: got[what]})
		}
	}
	visit(merged(doc), nil)
	if len(levels) != 1 {
		t.Fatalf("a top-level key %q is not reported as unknown with the known keys: the probe cannot work", probe)
	}
	for i := 0; i < len(levels); i++ {
		l := levels[i]
		for _, key := range l.keys {
			path := append(append([]any{}, l.path...), key)
			have := get(l.doc, path)
			asList := append(append([]any{}, path...), 0)
			visit(set(l.doc, path, merged(have)), path)
			visit(set(l.doc, path, []any{merged(first(have))}), asList)
			// A tool's kind picks its fields: each kind is a mapping. The
			// kinds are listed when the probe is given as one: as a tool's
			// kind, or as the kind of the key's value.
			tool, kinds := l.path, []string(nil)
			if key == "kind" {
				_, kinds = found(set(l.doc, path, probe))
			} else {
				tool = path
				_, kinds = found(set(l.doc, path, map[string]any{"kind": probe}))
			}
			for _, kind := range kinds {
				visit(set(l.doc, tool, map[string]any{"kind": kind, probe: 1}), tool)
			}
		}
	}
	return levels
}

func pathText(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// mustFind are the places in a playbook where the parser must keep
// reporting the known keys of a mapping (whatever it calls them): if one
// stops, the probe lost its way and the test would check less than it says.
var mustFind = []string{
	"", "metadata", "notify", "notify.on_failure", "notify.on_success", "schedule",
	"failure_handlers.0", "failure_handlers.0.rules.0",
	"workflow.0", "workflow.0.retry", "workflow.0.next", "workflow.0.loop",
	"workflow.0.tool(shell)", "workflow.0.tool(http)", "workflow.0.tool(python)",
	"workflow.0.tool(noop)", "workflow.0.tool(playbook)",
}

func TestLanguageDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("LANGUAGE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	levels := parserKeys(t)
	where := map[string]bool{}
	var names []string
	for _, l := range levels {
		where[l.where] = true
		names = append(names, fmt.Sprintf("%s at %q", l.what, l.where))
		for _, key := range l.keys {
			if !strings.Contains(doc, "`"+key+"`") {
				t.Errorf("docs/LANGUAGE.md does not document `%s` (a key of %s)", key, l.what)
			}
		}
	}
	for _, w := range mustFind {
		if !where[w] {
			t.Errorf("the parser no longer reports the known keys of the mapping at %q (found: %s)", w, strings.Join(names, "; "))
		}
	}
	t.Logf("%d mappings checked: %s", len(levels), strings.Join(names, "; "))
}

var fence = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")

// TestLanguageExamplesValidate checks that every YAML example of the
// document that is a whole playbook (it starts with apiVersion: or
// metadata:) passes the checks `playbook validate` makes.
func TestLanguageExamplesValidate(t *testing.T) {
	b, err := os.ReadFile("LANGUAGE.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range fence.FindAllStringSubmatchIndex(string(b), -1) {
		src := string(b)[m[2]:m[3]]
		if !strings.HasPrefix(src, "metadata:") && !strings.HasPrefix(src, "apiVersion:") {
			continue
		}
		n++
		line := strings.Count(string(b)[:m[2]], "\n") + 1
		if _, err := submit.ParseStrict(fmt.Sprintf("LANGUAGE.md:%d", line), []byte(src), ""); err != nil {
			t.Errorf("the example at docs/LANGUAGE.md:%d does not validate:\n%v", line, err)
		}
	}
	if n < 3 {
		t.Fatalf("found %d whole-playbook examples in docs/LANGUAGE.md; expected several", n)
	}
}

// get returns the value at path, or nil.
func get(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// set returns a copy of v with the value at path replaced.
func set(v any, path []any, value any) any {
	if len(path) == 0 {
		return value
	}
	switch k := path[0].(type) {
	case string:
		m, _ := v.(map[string]any)
		out := map[string]any{}
		for mk, mv := range m {
			out[mk] = mv
		}
		out[k] = set(m[k], path[1:], value)
		return out
	case int:
		l, _ := v.([]any)
		out := append([]any{}, l...)
		for len(out) <= k {
			out = append(out, nil)
		}
		out[k] = set(out[k], path[1:], value)
		return out
	}
	return v
}

// merged is a copy of v, when it is a mapping, with the probe added.
func merged(v any) map[string]any {
	out := map[string]any{probe: 1}
	if m, ok := v.(map[string]any); ok {
		for k, e := range m {
			out[k] = e
		}
	}
	return out
}

// without returns a copy of doc without the probe in the mapping at path.
func without(doc any, path []any) any {
	m, _ := get(doc, path).(map[string]any)
	out := map[string]any{}
	for k, e := range m {
		if k != probe {
			out[k] = e
		}
	}
	return set(doc, path, out)
}

func first(v any) any {
	if l, ok := v.([]any); ok && len(l) > 0 {
		return l[0]
	}
	return nil
}

// GETTING_STARTED.md's page on the language names every tool kind, as
// `kind` in backquotes: a new kind is not left out of the first page a
// newcomer reads.
func TestGettingStartedNamesEveryKind(t *testing.T) {
	b, err := os.ReadFile("GETTING_STARTED.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range spec.ToolKinds() {
		if !strings.Contains(string(b), "`"+kind+"`") {
			t.Errorf("GETTING_STARTED.md does not name the tool kind %q", kind)
		}
	}
}

// ARCHITECTURE.md's tables of packages name every package `go list` finds
// (a row starts with the package's directory in backquotes), and no row
// names a package that is gone.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "playbook/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		if rel != "." {
			rel += "/"
		}
		listed[rel] = true
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)`")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	for dir := range listed {
		if !documented[dir] {
			t.Errorf("ARCHITECTURE.md has no row for the package in %s", dir)
		}
	}
	for dir := range documented {
		if (dir == "." || strings.HasSuffix(dir, "/")) && !listed[dir] {
			t.Errorf("ARCHITECTURE.md has a row for %s, which holds no package", dir)
		}
	}
}
