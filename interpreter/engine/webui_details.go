package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
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
	if r.origin != nil {
		fmt.Fprintf(&b, "\n\nstarted as a %s", r.origin)
	}
	if r.logicalTime != "" {
		fmt.Fprintf(&b, "\n\nlogical time: %s", r.logicalTime)
	}
	if r.queued != nil {
		fmt.Fprintf(&b, "\n\n**%s**", QueuedNote(r.queued))
	}
	if r.final != nil && r.final.Status == contract.RunFailed {
		if why := r.FirstFailure(); why != "" {
			fmt.Fprintf(&b, "\n\n**failed**: %s", why)
		}
	}
	if r.final != nil && r.final.Status == contract.RunCompletedWithWarnings {
		fmt.Fprintf(&b, "\n\n**completed_with_warnings**: allowed to fail: %s", contract.Cut(strings.Join(r.final.WarningSteps, ", "), 300))
	}
	r.waitingMarkdown(&b)
	b.WriteString("\n\n| step | status | attempts | note |\n| --- | --- | --- | --- |\n")
	if r.rows == nil {
		r.rows = make([]renderedRow, len(r.pb.Steps))
	}
	if len(r.pb.Steps) <= detailsRows {
		for i, s := range r.pb.Steps {
			b.WriteString(r.detailsRow(i, s.Name))
		}
		r.filesAndQueuesMarkdown(&b)
		r.detailsSize = b.Len()
		return b.String()
	}
	// A long playbook shows the steps that need a look, and counts the rest.
	counts := map[contract.Status]int{}
	shown := 0
	for i, s := range r.pb.Steps {
		switch st := r.ordered[i].Status; {
		case st == contract.StatusPending || st == contract.StatusCompleted || st == contract.StatusReused || st == contract.StatusSkipped || shown == detailsRows:
			counts[st]++
		default:
			b.WriteString(r.detailsRow(i, s.Name))
			shown++
		}
	}
	var rest []string
	hidden := 0
	for _, st := range []contract.Status{contract.StatusCompleted, contract.StatusReused, contract.StatusSkipped, contract.StatusPending, contract.StatusRunning, contract.StatusFailed, contract.StatusPendingFailed, contract.StatusCancelled} {
		if counts[st] > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", counts[st], st))
			hidden += counts[st]
		}
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "\n%d of %d steps not shown: %s.\n", hidden, len(r.pb.Steps), strings.Join(rest, ", "))
	}
	r.filesAndQueuesMarkdown(&b)
	r.detailsSize = b.Len()
	return b.String()
}

// detailsRows is the most rows the step table shows: a longer playbook's
// table shows the running, failed and cancelled steps only.
const detailsRows = 200

// detailsRow renders a step's row, again only when what it shows changed:
// the table is rendered after every step that moves.
func (r *Run) detailsRow(i int, name string) string {
	st := r.ordered[i]
	seen := rowSeen{stepSeen{st.Status, st.Attempts, st.Error}, st.SkipReason, st.Recovery, st.RoutedToEnd, contract.LoopProgress{}}
	if st.Loop != nil {
		seen.loop = *st.Loop
	}
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
	// loop is a running loop's progress, which its row's note shows.
	loop contract.LoopProgress
}

type renderedRow struct {
	seen rowSeen
	text string
}

// waitingMarkdown says which steps wait for a person, since when, and the
// exact commands that decide them: what an operator looking at the run in
// the Web UI has to type.
func (r *Run) waitingMarkdown(b *strings.Builder) {
	if r.final != nil {
		return
	}
	for i, s := range r.pb.Steps {
		st := r.ordered[i]
		switch {
		case st.Waiting != nil && s.Tool.Kind == spec.WaitEventKind:
			fmt.Fprintf(b, "\n\n**waiting for %s**: step %s since %s\n\n`%s`", st.Waiting.For, s.Name, st.Waiting.Since.UTC().Format(time.RFC3339), st.Waiting.Message)
		case st.Waiting != nil:
			fmt.Fprintf(b, "\n\n**waiting for approval**: step %s since %s: %s", s.Name, st.Waiting.Since.UTC().Format(time.RFC3339), expr.FirstLine(st.Waiting.Message))
			for _, c := range ApprovalCommands(r.executionID, s.Name, s.Tool.Approval()) {
				fmt.Fprintf(b, "\n\n`%s`", c)
			}
		case st.Status == contract.StatusPendingFailed:
			fmt.Fprintf(b, "\n\n**waiting for a classification**: step %s since %s\n\n`%s`", s.Name, st.PendingSince.UTC().Format(time.RFC3339), ClassifyCommand(r.executionID, s.Name))
		}
	}
}

// detailsFiles is the most files the details list; `playbook files RUN`
// lists them all.
const detailsFiles = 50

// filesAndQueuesMarkdown lists under the step table the files the steps
// handed on (path, bytes, the start of the sha256), at most detailsFiles,
// and the task queue of each step that names one: what `status` lists
// under its table. Nothing when there are none.
func (r *Run) filesAndQueuesMarkdown(b *strings.Builder) {
	shown, more := 0, 0
	for i, s := range r.pb.Steps {
		files := r.ordered[i].Files
		if len(files) == 0 {
			continue
		}
		paths := slices.Sorted(maps.Keys(files))
		for _, p := range paths {
			if shown == detailsFiles {
				more++
				continue
			}
			if shown == 0 {
				b.WriteString("\n**files**\n\n| step | file | bytes | sha256 |\n| --- | --- | --- | --- |\n")
			}
			f := files[p]
			fmt.Fprintf(b, "| %s | %s | %d | %s |\n", s.Name, strings.ReplaceAll(p, "|", "\\|"), f.Bytes, f.SHA256[:min(12, len(f.SHA256))])
			shown++
		}
	}
	if more > 0 {
		fmt.Fprintf(b, "\n%d more files: `playbook files %s`\n", more, r.executionID)
	}
	var queues []string
	steps := map[string][]string{}
	for _, s := range r.pb.Steps {
		if s.Queue == "" {
			continue
		}
		if steps[s.Queue] == nil {
			queues = append(queues, s.Queue)
		}
		steps[s.Queue] = append(steps[s.Queue], s.Name)
	}
	if len(queues) == 0 {
		return
	}
	b.WriteString("\n**queues**\n\n| queue | steps |\n| --- | --- |\n")
	for _, q := range queues {
		fmt.Fprintf(b, "| %s | %s |\n", q, contract.Cut(strings.Join(steps[q], ", "), 300))
	}
}
