package interpreter

import (
	"fmt"
	"strings"
)

// DetailsMarkdown renders the step table the Web UI shows as the workflow's
// current details: one row per step, in file order.
func (r *Run) DetailsMarkdown() string {
	var b strings.Builder
	b.Grow(r.detailsSize)
	fmt.Fprintf(&b, "**playbook %s**", r.pb.Name)
	if r.pb.Description != "" {
		fmt.Fprintf(&b, ": %s", r.pb.Description)
	}
	b.WriteString("\n\n| step | status | attempts | note |\n| --- | --- | --- | --- |\n")
	if r.rows == nil {
		r.rows = make([]renderedRow, len(r.pb.Steps))
	}
	for i, s := range r.pb.Steps {
		b.WriteString(r.detailsRow(i, s.Name))
	}
	r.detailsSize = b.Len()
	return b.String()
}

// detailsRow renders a step's row, again only when what it shows changed:
// the table is rendered after every step that moves.
func (r *Run) detailsRow(i int, name string) string {
	st := r.ordered[i]
	seen := rowSeen{stepSeen{st.Status, st.Attempts, st.Error}, st.SkipReason, st.Recovery, st.RoutedToEnd}
	if row := &r.rows[i]; row.text != "" && row.seen == seen {
		return row.text
	}
	note := strings.ReplaceAll(st.Note(), "|", "\\|")
	text := fmt.Sprintf("| %s | %s | %d | %s |\n", name, st.Status, st.Attempts, note)
	r.rows[i] = renderedRow{seen, text}
	return text
}

// rowSeen is what a step's row shows.
type rowSeen struct {
	stepSeen
	skipReason, recovery string
	routedToEnd          bool
}

type renderedRow struct {
	seen rowSeen
	text string
}
