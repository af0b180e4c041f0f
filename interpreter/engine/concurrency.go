package engine

import (
	"fmt"
	"strings"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Queue records that the run waits for a slot of its concurrency key (q),
// or, with nil, that it holds one now.
func (r *Run) Queue(q *contract.QueuedRun) {
	switch {
	case q != nil:
		r.emit(Event{Type: "concurrency_queued", Message: QueuedNote(q),
			Data: map[string]any{"key": q.Key, "holders": q.Holders, "position": q.Position}})
	case r.queued != nil:
		r.emit(Event{Type: "concurrency_granted", Message: fmt.Sprintf("holds a slot of concurrency key %q", r.queued.Key)})
	}
	r.queued = q
}

// LeaveQueue records that the run, cancelled while it waited for a slot,
// waits no more.
func (r *Run) LeaveQueue() {
	if r.queued != nil {
		r.emit(Event{Type: "concurrency_left", Message: fmt.Sprintf("left the queue of concurrency key %q", r.queued.Key)})
		r.queued = nil
	}
}

// QueuedNote says in one line what a queued run waits behind.
func QueuedNote(q *contract.QueuedRun) string {
	behind := "runs of its key"
	if len(q.Holders) > 0 {
		behind = strings.Join(q.Holders, ", ")
	}
	return fmt.Sprintf("queued behind %s (concurrency key %q, limit %d; %s in the queue)", behind, q.Key, q.Limit, Ordinal(q.Position))
}

// Ordinal is 1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, 21st.
func Ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// Refuse ends the run before any step: its concurrency key's limit was
// reached and its playbook says on_limit: fail. Every step but `end` is
// skipped, and `end` decides the run failed, saying why.
func (r *Run) Refuse(why string) {
	r.queued = nil
	r.refused = "concurrency: " + why
	r.emit(Event{Type: "concurrency_refused", Message: why})
	for i, s := range r.pb.Steps {
		if s.Name != spec.EndStep && r.ordered[i].Status == contract.StatusPending {
			r.resolve(s, r.ordered[i], false, "the run was refused by its concurrency limit", "")
		}
	}
}

// NeverStarted skips every step that has not started, cleanup steps
// included: the run gave up waiting for its concurrency slot (cancelled,
// drained, or past its deadline while queued), so nothing it would clean
// up was done, and a cleanup step (releasing a lock) would undo what
// another run holds. `end` runs.
func (r *Run) NeverStarted() {
	for i, s := range r.pb.Steps {
		if s.Name != spec.EndStep && r.ordered[i].Status == contract.StatusPending {
			r.resolve(s, r.ordered[i], false, "the run never had its concurrency slot: no step started", "")
		}
	}
}

// Refused tells whether the run was refused by its concurrency limit.
func (r *Run) Refused() bool { return r.refused != "" }
