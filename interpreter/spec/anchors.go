package spec

import (
	"go.yaml.in/yaml/v3"
)

// maxExpandedNodes bounds what a file's aliases may expand to: a 1 MiB
// file of aliases of aliases could otherwise expand to more nodes than a
// machine holds (the "billion laughs").
const maxExpandedNodes = 50_000

// expandAliases resolves a document's YAML anchors, aliases and merge keys
// (`<<: *defaults`) before it is decoded, so that every key sees the value
// it stands for, as people who write YAML expect. Each copy an alias
// stands for takes the alias's line: a problem in it is reported where the
// alias is used. In a mapping, its own keys win over merged ones, and of
// several merged mappings the first wins (YAML's merge key type).
//
// Before, only free values (workload defaults, a tool's fields, loop.in
// lists) resolved aliases, through YAML's own decoder, which this matches;
// an alias where a key of the language was expected was refused. So a run
// in flight decodes as it did. Past maxExpandedNodes copies the file is
// refused at submission, and the aliases left are not expanded: free
// values still resolve them as YAML's decoder did before.
func (d *decoder) expandAliases(n *yaml.Node) error {
	budget := maxExpandedNodes
	_, err := d.expand(n, 0, &budget, nil)
	return err
}

// expand returns n with its aliases and merge keys resolved; line, when
// not 0, is the line the copy takes. within are the anchors being
// expanded, to refuse an alias that names its own ancestor.
func (d *decoder) expand(n *yaml.Node, line int, budget *int, within []*yaml.Node) (*yaml.Node, error) {
	if line != 0 {
		*budget--
	}
	if n.Kind == yaml.AliasNode && *budget <= 0 {
		if *budget > -1<<30 {
			d.aliasBomb = d.errf(n, "the file's aliases expand to more than %d values: use fewer aliases of aliases", maxExpandedNodes)
			d.submitErrs = append(d.submitErrs, d.aliasBomb)
			*budget = -1 << 30 // refused once; no alias is expanded any more
		}
		return n, nil
	}
	if n.Kind == yaml.AliasNode {
		for _, a := range within {
			if a == n.Alias {
				return nil, d.errf(n, "alias *%s is inside the value it names", n.Value)
			}
		}
		if line == 0 {
			line = n.Line
		}
		return d.expand(n.Alias, line, budget, append(within, n.Alias))
	}
	c := n
	if line != 0 {
		copied := *n
		copied.Line, copied.Anchor = line, ""
		c = &copied
	}
	if len(n.Content) == 0 {
		return c, nil
	}
	content := make([]*yaml.Node, 0, len(n.Content))
	for _, child := range n.Content {
		e, err := d.expand(child, line, budget, within)
		if err != nil {
			return nil, err
		}
		content = append(content, e)
	}
	if n.Kind == yaml.MappingNode {
		var err error
		if content, err = d.merge(content); err != nil {
			return nil, err
		}
	}
	if line == 0 {
		n.Content = content
		return n, nil
	}
	c.Content = content
	return c, nil
}

// merge replaces a mapping's merge keys (`<<`) by the keys of the mappings
// they name that the mapping does not have already.
func (d *decoder) merge(content []*yaml.Node) ([]*yaml.Node, error) {
	has := map[string]bool{}
	merges := false
	for i := 0; i+1 < len(content); i += 2 {
		if isMergeKey(content[i]) {
			merges = true
		} else {
			has[content[i].Value] = true
		}
	}
	if !merges {
		return content, nil
	}
	out := make([]*yaml.Node, 0, len(content))
	for i := 0; i+1 < len(content); i += 2 {
		k, v := content[i], content[i+1]
		if !isMergeKey(k) {
			out = append(out, k, v)
			continue
		}
		from := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			from = v.Content
		}
		for _, m := range from {
			if m.Kind != yaml.MappingNode {
				return nil, d.errf(m, "<< (a merge key) takes a mapping, an alias of one, or a list of them")
			}
			for j := 0; j+1 < len(m.Content); j += 2 {
				if key := m.Content[j].Value; !has[key] {
					has[key] = true
					out = append(out, m.Content[j], m.Content[j+1])
				}
			}
		}
	}
	return out, nil
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.ShortTag() == "!!merge" || k.Value == "<<" && k.Style == 0)
}

// isExtension tells whether a key of a mapping the language defines is an
// extension key, `x-...`: accepted and ignored, the place for anchors (as
// in compose files).
func isExtension(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && len(k.Value) > 2 && k.Value[:2] == "x-"
}
