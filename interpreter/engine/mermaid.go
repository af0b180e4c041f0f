package engine

import (
	"fmt"
	"sort"
	"strings"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// statusColours are the Mermaid class definitions of step statuses.
var statusColours = map[contract.Status]string{contract.StatusCompleted: "fill:#c8f7c5,stroke:#2e7d32", contract.StatusReused: "fill:#d5f0fa,stroke:#0277bd", contract.StatusFailed: "fill:#ffcdd2,stroke:#c62828", contract.StatusCancelled: "fill:#ffe0b2,stroke:#ef6c00", contract.StatusSkipped: "fill:#eeeeee,stroke:#9e9e9e,color:#757575", contract.StatusRunning: "fill:#bbdefb,stroke:#1565c0", contract.StatusPendingFailed: "fill:#fff59d,stroke:#f9a825", contract.StatusPending: "fill:#ffffff,stroke:#9e9e9e"}

// Mermaid draws the step graph as a Mermaid flowchart: `next` arcs as
// arrows (labelled with their condition), `depends_on` arcs dotted, and the
// implicit routes to `end` dotted. With statuses, steps are coloured by them.
func Mermaid(p *spec.Playbook, statuses map[string]contract.Status) string {
	id := map[string]string{}
	for i, s := range p.Steps {
		// Mermaid reserves words like `end`: nodes get plain IDs, names go in labels.
		id[s.Name] = fmt.Sprintf("s%d", i)
	}
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, s := range p.Steps {
		label := s.Name
		if s.Tool != nil {
			label += "<br/><small>" + s.Tool.Kind
			if s.Loop != nil {
				label += " loop"
			}
			label += "</small>"
		}
		if st, ok := statuses[s.Name]; ok {
			label += "<br/><i>" + string(st) + "</i>"
		}
		shape := `["%s"]`
		if s.Name == spec.EndStep {
			shape = `(["%s"])`
		}
		fmt.Fprintf(&b, "    %s"+shape+"\n", id[s.Name], mermaidText(label))
	}
	for _, s := range p.Steps {
		for _, r := range s.Next {
			for _, to := range r.Then {
				switch {
				case r.When != nil:
					fmt.Fprintf(&b, "    %s -->|\"%s\"| %s\n", id[s.Name], mermaidText(r.When.Source), id[to])
				case r.Else:
					fmt.Fprintf(&b, "    %s -->|else| %s\n", id[s.Name], id[to])
				default:
					fmt.Fprintf(&b, "    %s --> %s\n", id[s.Name], id[to])
				}
			}
		}
		for _, from := range s.DependsOn {
			fmt.Fprintf(&b, "    %s -.->|depends_on| %s\n", id[from], id[s.Name])
		}
		if s.Name != spec.EndStep && len(p.Outgoing(s.Name)) == 0 {
			fmt.Fprintf(&b, "    %s -.-> %s\n", id[s.Name], id[spec.EndStep])
		}
	}
	if len(statuses) > 0 {
		byStatus := map[contract.Status][]string{}
		for _, s := range p.Steps {
			if st, ok := statuses[s.Name]; ok {
				byStatus[st] = append(byStatus[st], id[s.Name])
			}
		}
		var used []string
		for st := range byStatus {
			used = append(used, string(st))
		}
		sort.Strings(used)
		for _, st := range used {
			fmt.Fprintf(&b, "    classDef %s %s\n", st, statusColours[contract.Status(st)])
			fmt.Fprintf(&b, "    class %s %s\n", strings.Join(byStatus[contract.Status(st)], ","), st)
		}
	}
	return b.String()
}

// mermaidText escapes text for a quoted Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "\n", " ").Replace(s)
}
