package interpreter

import (
	"fmt"
	"strings"
)

// DetailsMarkdown renders the step table the Web UI shows as the workflow's
// current details: one row per step, in file order.
func (r *Run) DetailsMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**playbook %s**", r.pb.Name)
	if r.pb.Description != "" {
		fmt.Fprintf(&b, ": %s", r.pb.Description)
	}
	b.WriteString("\n\n| step | status | attempts | note |\n| --- | --- | --- | --- |\n")
	for _, s := range r.pb.Steps {
		st := r.states[s.Name]
		note := strings.ReplaceAll(st.Note(), "|", "\\|")
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", s.Name, st.Status, st.Attempts, note)
	}
	return b.String()
}
