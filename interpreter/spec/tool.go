package spec

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Tool is what a step runs. Spec holds its fields as written (templates
// unrendered); Render turns it into the values an activity receives.
type Tool struct {
	Kind string
	Line int
	Spec map[string]any
}

// SecretFields are the fields of the tool that name a secret as the
// playbook is written, "env.TOKEN" (or "headers.Authorization") to the
// secret's name; nil when none does. Only these are read as secrets: a
// value a template renders into the shape {secret: NAME} is not one.
func (t *Tool) SecretFields() map[string]string {
	var out map[string]string
	for _, key := range []string{"env", "headers"} {
		fields, _ := t.Spec[key].(map[string]any)
		//workflowcheck:ignore order-free: fills a map
		for name, v := range fields {
			if secret, ok := SecretRef(v); ok {
				if out == nil {
					out = map[string]string{}
				}
				out[key+"."+name] = secret
			}
		}
	}
	return out
}

func (d *decoder) tool(n *yaml.Node) (*Tool, error) {
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, "tool must be a mapping with a kind")
	}
	t := &Tool{Line: n.Line, Spec: map[string]any{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "kind" {
			t.Kind = n.Content[i+1].Value
		}
	}
	if t.Kind == "" {
		return nil, d.errf(n, "tool has no kind (one of: %s)", strings.Join(ToolKinds(), ", "))
	}
	kind, ok := toolKinds[t.Kind]
	if !ok {
		return nil, d.errf(n, "unknown tool kind %q (one of: %s)", t.Kind, strings.Join(ToolKinds(), ", "))
	}
	handlers := keys{"kind": {decode: func(*yaml.Node) error { return nil }}}
	nodes := map[string]*yaml.Node{}
	for _, f := range kind.fields {
		handlers[f.key] = key{decode: func(v *yaml.Node) error {
			nodes[f.key] = v
			refused := len(d.submitErrs)
			val, err := d.value(v, f.key)
			if err != nil {
				return err
			}
			if err := f.check(val); err != nil {
				// YAML reads an unquoted 2026-01-02T06:00:00Z as a
				// timestamp; where text is wanted (a wait's until) it
				// is the text as written.
				if v.ShortTag() != "!!timestamp" || f.check(v.Value) != nil {
					// The field's own error tells what is wrong with
					// its value (a duration of .nan): what value
					// refused in it would be a second line.
					d.submitErrs = d.submitErrs[:refused]
					return d.errf(v, "tool %s: %v", f.key, err)
				}
				// Text is what is wanted: the timestamp is not refused.
				d.submitErrs = d.submitErrs[:refused]
				val = v.Value
			}
			t.Spec[f.key] = val
			return nil
		}}
	}
	if err := d.fields(n, t.Kind+" tool", handlers); err != nil {
		return nil, err
	}
	// A problem of one field is reported at its line.
	at := func(field string) *yaml.Node {
		if v := nodes[field]; v != nil {
			return v
		}
		return n
	}
	if field, problem := kind.spec.check(t.Spec); problem != "" {
		return nil, d.errf(at(field), "%s", problem)
	}
	// Names of variables and headers are used as written.
	for _, field := range []string{"env", "headers"} {
		if v := nodes[field]; v != nil && v.Kind == yaml.MappingNode {
			for i := 0; i < len(v.Content); i += 2 {
				d.refuseTemplates(v.Content[i], "a name in "+field, "put the template in the value")
			}
		}
	}
	if strict, ok := kind.spec.(strictTool); ok {
		if field, problem := strict.strictCheck(t.Spec); problem != "" {
			d.refuse(at(field), "%s", problem)
		}
	}
	return t, nil
}
