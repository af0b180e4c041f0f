package spec

import (
	"go.yaml.in/yaml/v3"

	"playbook/interpreter/spec/expr"
)

// NextRule is one item of `next`: unconditional (When nil, Else false), a
// `when` branch, or the closing `else`.
type NextRule struct {
	When *expr.Expr
	Else bool
	Then []string
	Line int
	// thenLines are the lines of Then's names, for errors about them.
	thenLines []int
}

// thenLine is the line of the rule's i-th target.
func (r NextRule) thenLine(i int) int {
	if i < len(r.thenLines) && r.thenLines[i] > 0 {
		return r.thenLines[i]
	}
	return r.Line
}

// names reads a step name, a list of names, or NoETL's {step: NAME} forms.
func (d *decoder) names(n *yaml.Node, what string, lines *[]int) ([]string, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []string
	for _, it := range items {
		name, err := d.stepRef(it, what)
		if err != nil {
			return nil, err
		}
		out = append(out, name)
		*lines = append(*lines, it.Line)
	}
	return out, nil
}

func (d *decoder) stepRef(n *yaml.Node, what string) (string, error) {
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		return n.Value, nil
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "step" && n.Content[1].Kind == yaml.ScalarNode {
		return n.Content[1].Value, nil
	}
	return "", d.errf(n, "%s: expected a step name or {step: NAME}", what)
}

// next reads `next`: a name, a list of names, or when/then items closed by
// an optional else.
func (d *decoder) next(n *yaml.Node) ([]NextRule, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var rules []NextRule
	conditional := false
	for i, it := range items {
		isRule := it.Kind == yaml.MappingNode && !(len(it.Content) == 2 && it.Content[0].Value == "step")
		if !isRule {
			if conditional {
				return nil, d.errf(it, "next: a plain step name cannot follow when/else items")
			}
			name, err := d.stepRef(it, "next")
			if err != nil {
				return nil, err
			}
			rules = append(rules, NextRule{Then: []string{name}, Line: it.Line})
			continue
		}
		if len(rules) > 0 && !conditional {
			return nil, d.errf(it, "next: when/else items cannot follow plain step names")
		}
		conditional = true
		r := NextRule{Line: it.Line}
		var thenNode *yaml.Node
		err := d.fields(it, "a next item", d.nextItemKeys(&r, &thenNode))

		if err != nil {
			return nil, err
		}
		switch {
		case r.Else && (r.When != nil || thenNode != nil):
			return nil, d.errf(it, "next: an else item has no when or then")
		case r.Else && i != len(items)-1:
			return nil, d.errf(it, "next: else must be the last item")
		case !r.Else && r.When == nil:
			return nil, d.errf(it, "next: item needs when (or else)")
		case !r.Else && thenNode == nil:
			return nil, d.errf(it, "next: when item needs then")
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// nextItemKeys are the keys of a when/then or else item of `next`.
func (d *decoder) nextItemKeys(r *NextRule, thenNode **yaml.Node) keys {
	return keys{
		"when": {sString("The expression that takes this branch."), func(v *yaml.Node) error {
			return d.expression(v, "when", expr.ScopeStep, true, &r.When)
		}},
		"then": {sStepRefs("The steps the branch starts."), func(v *yaml.Node) (err error) {
			*thenNode = v
			r.Then, err = d.names(v, "then", &r.thenLines)
			return err
		}},
		"else": {sStepRefs("The steps started when no when holds."), func(v *yaml.Node) (err error) {
			r.Else = true
			r.Then, err = d.names(v, "else", &r.thenLines)
			return err
		}},
	}
}
