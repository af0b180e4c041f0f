package spec

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAML's own wording for two common mistakes says nothing a person can act
// on; these say what to do instead.

// unquotedTemplate finds, inside n, a template written without quotes
// (`URL: {{ workload.url }}`), which YAML reads as a mapping whose key is
// a mapping, and says to quote it.
func (d *decoder) unquotedTemplate(n *yaml.Node, what string) error {
	if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 && len(n.Content) == 2 &&
		n.Content[0].Kind == yaml.MappingNode && n.Content[0].Style&yaml.FlowStyle != 0 && n.Content[1].Tag == "!!null" {
		inner := "..."
		if c := n.Content[0].Content; len(c) == 2 && c[0].Kind == yaml.ScalarNode && c[1].Tag == "!!null" {
			inner = c[0].Value
		}
		return d.errf(n, `%s: a template must be quoted: write "{{ %s }}" (unquoted, YAML reads {{ }} as a mapping)`, what, inner)
	}
	for i, c := range n.Content {
		name := what
		if n.Kind == yaml.MappingNode {
			if i%2 == 0 {
				continue
			}
			name = what + "." + n.Content[i-1].Value
		}
		if err := d.unquotedTemplate(c, name); err != nil {
			return err
		}
	}
	return nil
}

// tabIndentedLine returns, when YAML's error is the one a tab causes, the
// line it names if a tab indents it, or else the first line a tab indents
// (YAML may name a line near it); 0 otherwise.
func tabIndentedLine(src []byte, msg string, at int) int {
	if !strings.Contains(msg, "cannot start any token") && !strings.Contains(msg, "tab") {
		return 0
	}
	lines := strings.Split(string(src), "\n")
	tabbed := func(line string) bool {
		return strings.Contains(line[:len(line)-len(strings.TrimLeft(line, " \t"))], "\t")
	}
	if at >= 1 && at <= len(lines) && tabbed(lines[at-1]) {
		return at
	}
	for i, line := range lines {
		if tabbed(line) {
			return i + 1
		}
	}
	return 0
}

// unquotedTemplateLine matches a line whose value starts with an unquoted
// `{{`, which YAML cannot read when text follows the `}}`.
var unquotedTemplateLine = regexp.MustCompile(`^[^"'#]*:\s+(\{\{.*\}\}\s*[^\s#].*)$`)

// unquotedTemplateError returns the first line holding an unquoted
// template and a message saying to quote it, or 0.
func unquotedTemplateError(src []byte) (int, string) {
	for i, line := range strings.Split(string(src), "\n") {
		if m := unquotedTemplateLine.FindStringSubmatch(line); m != nil {
			return i + 1, fmt.Sprintf("a template must be quoted: write %q (unquoted, YAML reads {{ }} as a mapping)", strings.TrimSpace(m[1]))
		}
	}
	return 0, ""
}
