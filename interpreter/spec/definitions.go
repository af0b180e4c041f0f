package spec

import (
	"bytes"
	"encoding/json"
	"strings"

	"go.yaml.in/yaml/v3"
)

// StepDefinitions reads, for every step of a playbook's text, its
// definition in a canonical form: the step's mapping, anchors and merge
// keys resolved, as JSON with its keys sorted, so that key order, quoting
// and layout do not count. Left out is what changes nothing a step does:
// its `desc` and `x-` keys. In is the rule set the step's
// failure_handler names, which decides its retries. `playbook retry`
// compares the definitions of two texts to tell which steps changed; a
// text that does not decode has none.
func StepDefinitions(src []byte) map[string]string {
	d := &decoder{lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	if d.expandAliases(&doc) != nil {
		return nil
	}
	root := doc.Content[0]
	steps, handlers := mappingValue(root, "workflow"), map[string]any{}
	if hs := mappingValue(root, "failure_handlers"); hs != nil && hs.Kind == yaml.SequenceNode {
		for _, h := range hs.Content {
			var v map[string]any
			if h.Decode(&v) == nil {
				if name, ok := v["name"].(string); ok {
					delete(v, "name")
					handlers[name] = v
				}
			}
		}
	}
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return nil
	}
	out := map[string]string{}
	for _, sn := range steps.Content {
		var v map[string]any
		if sn.Kind != yaml.MappingNode || sn.Decode(&v) != nil {
			continue
		}
		name, _ := v["step"].(string)
		if name == "" {
			continue
		}
		delete(v, "desc")
		for k := range v {
			if strings.HasPrefix(k, "x-") {
				delete(v, k)
			}
		}
		if ref, ok := v["failure_handler"].(string); ok {
			// The name stands for its rules: renaming a handler changes
			// nothing, editing its rules changes every step that names it.
			v["failure_handler"] = handlers[ref]
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		out[name] = string(b)
	}
	return out
}

// mappingValue is the value of key in a mapping node, nil when absent.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// ScriptsNamed are the files a step's process is named by: each word of
// a shell command, and of the recovery scripts of its failure handler,
// that holds a slash and no template (`./extract.sh`, `python3
// scripts/t.py`). Whether such a word names a file is for the caller,
// which can look (submit.ReadFiles).
func (s *Step) ScriptsNamed() []string {
	var words []string
	if s.Tool != nil && s.Tool.Kind == "shell" {
		cmd, _ := s.Tool.Spec["command"].(string)
		words = append(words, strings.Fields(cmd)...)
	}
	if s.FailureHandler != nil {
		for _, r := range s.FailureHandler.Rules {
			words = append(words, strings.Fields(r.RecoveryScript)...)
		}
	}
	var out []string
	for _, w := range words {
		w = strings.Trim(w, `'"`)
		if strings.Contains(w, "/") && !strings.Contains(w, "{{") && !strings.Contains(w, "$") && !strings.Contains(w, "://") {
			out = append(out, w)
		}
	}
	return out
}
