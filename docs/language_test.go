// Package docs_test checks that the documentation matches the project:
// docs/LANGUAGE.md names every key the parser accepts, its whole-playbook
// examples validate, and no Markdown file links outside the repository.
package docs_test

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"playbook/interpreter"
)

// probe is the key no mapping of the language accepts: the parser answers
// it with `unknown key "zz_probe" in WHAT (known: a, b, c)`.
const probe = "zz_probe"

var (
	unknownKey = regexp.MustCompile(`unknown key "` + probe + `" in (.+?) \(known: ([^)]*)\)`)
	toolKinds  = regexp.MustCompile(`tool has no kind \(one of: ([^)]*)\)`)
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
}

// parserKeys walks every mapping the parser decodes, starting from the
// top level, and returns each one's known keys by the parser's name for it.
func parserKeys(t *testing.T) map[string][]string {
	var doc any
	if err := yaml.Unmarshal([]byte(seed), &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := interpreter.ParseStrict("seed.yaml", []byte(seed), ""); err != nil {
		t.Fatalf("the seed playbook must be valid: %v", err)
	}
	known := map[string][]string{}
	queue := []level{{what: "the playbook", path: nil, doc: doc}}
	// visit records a level the probe found, once.
	visit := func(l level, keys []string) {
		if _, ok := known[l.what]; ok {
			return
		}
		known[l.what] = keys
		queue = append(queue, l)
	}
	// found parses doc and returns the levels whose unknown-key error
	// names the probe, with their known keys.
	found := func(doc any) (map[string][]string, []string) {
		src, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, perr := interpreter.ParseStrict("probe.yaml", src, "")
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

	top, _ := found(merged(doc))
	if top["the playbook"] == nil {
		t.Fatalf("a top-level key %q is not reported as unknown with the known keys: the probe cannot work", probe)
	}
	known["the playbook"] = top["the playbook"]
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		for _, key := range known[l.what] {
			path := append(append([]any{}, l.path...), key)
			have := get(l.doc, path)
			asMap := merged(have)
			asList := []any{merged(first(have))}
			for _, try := range []struct {
				value any
				at    []any
			}{
				{asMap, path},
				{asList, append(append([]any{}, path...), 0)},
			} {
				doc := set(l.doc, path, try.value)
				levels, kinds := found(doc)
				for what, keys := range levels {
					if what != l.what {
						visit(level{what: what, path: try.at, doc: without(doc, try.at)}, keys)
					}
				}
				// A tool's kind picks its fields: each kind is a level.
				for _, kind := range kinds {
					tool := l.path
					if key != "kind" {
						tool = try.at
					}
					doc := set(l.doc, tool, map[string]any{"kind": kind, probe: 1})
					levels, _ := found(doc)
					for what, keys := range levels {
						visit(level{what: what, path: tool, doc: without(doc, tool)}, keys)
					}
				}
			}
		}
	}
	return known
}

// The levels the parser must keep reporting known keys for: if one of
// them stops, the probe lost its way and the test would check nothing.
var mustFind = []string{
	"the playbook", "metadata", "a step", "retry", "a next item", "loop",
	"notify", "notify.on_failure", "notify.on_success",
	"a failure handler", "an exit-code rule", "schedule",
	"shell tool", "http tool", "python tool", "noop tool", "playbook tool",
}

func TestLanguageDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("LANGUAGE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	known := parserKeys(t)
	for _, what := range mustFind {
		if known[what] == nil {
			t.Errorf("the parser no longer reports the known keys of %s (found: %s)", what, strings.Join(sortedKeys(known), "; "))
		}
	}
	for _, what := range sortedKeys(known) {
		for _, key := range known[what] {
			if !strings.Contains(doc, "`"+key+"`") {
				t.Errorf("docs/LANGUAGE.md does not document `%s` (a key of %s)", key, what)
			}
		}
	}
	t.Logf("%d mappings checked: %s", len(known), strings.Join(sortedKeys(known), "; "))
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
		if _, err := interpreter.ParseStrict(fmt.Sprintf("LANGUAGE.md:%d", line), []byte(src), ""); err != nil {
			t.Errorf("the example at docs/LANGUAGE.md:%d does not validate:\n%v", line, err)
		}
	}
	if n < 3 {
		t.Fatalf("found %d whole-playbook examples in docs/LANGUAGE.md; expected several", n)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
