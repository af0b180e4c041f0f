package engine

import (
	"container/heap"
	"fmt"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Ready resolves every pending step whose predecessors have all resolved:
// each is either skipped (and skipping propagates) or marked running and
// returned, for the caller to start. `end` is never returned; see EndReady.
//
// Steps resolve in passes over the file, each in file order, until a pass
// resolves none: a step after the one just resolved in the file is taken
// in the same pass, one before it in the next. The order is the order the
// workflow starts steps in, which histories record.
func (r *Run) Ready() []*spec.Step {
	var ready []*spec.Step
	var this, next positions // what this pass still reaches, what it passed
	at := -1
	for {
		r.lookAgain()
		if r.windingDown() && r.cleanupMayStart() {
			// The other steps have settled: the cleanup steps waiting
			// for that are looked at again.
			for _, i := range r.rd.cleanup {
				if r.ordered[i].Status == contract.StatusPending && r.rd.waiting[i] == 0 {
					r.rd.candidate(i)
				}
			}
		}
		for _, i := range r.rd.candidates {
			if i > at {
				heap.Push(&this, i)
			} else {
				heap.Push(&next, i)
			}
		}
		r.rd.candidates = r.rd.candidates[:0]
		if this.Len() == 0 {
			if next.Len() == 0 {
				return ready
			}
			this, next, at = next, this, -1
		}
		i := heap.Pop(&this).(int)
		r.rd.queued[i] = false
		at = i
		s, st := r.pb.Steps[i], r.ordered[i]
		if s.Name == spec.EndStep || st.Status != contract.StatusPending || r.rd.waiting[i] > 0 {
			continue
		}
		run, resolved, reason, origin := r.decide(s)
		if !resolved {
			continue
		}
		if r.resolve(s, st, run, reason, origin) {
			ready = append(ready, s)
		}
	}
}

// resolve records what decide said of a pending step: it starts (true),
// or it is skipped for reason, a failure at origin behind it if any.
func (r *Run) resolve(s *spec.Step, st *contract.StepState, run bool, reason, origin string) bool {
	if run {
		st.Status = contract.StatusRunning
		r.started(st)
		r.emit(Event{Type: "step_started", Step: s.Name})
		return true
	}
	st.Status = contract.StatusSkipped
	st.SkipReason = reason
	r.ended(st)
	if origin != "" {
		st.OriginalFailedStep = &origin
	}
	r.emit(Event{Type: "step_skipped", Step: s.Name, Message: reason, Data: map[string]any{"reason": reason}})
	return false
}

// readiness is what Ready and EndReady keep between calls. They run after
// every step that settles, and looking at every step each time made a long
// chain quadratic; instead the run counts, for each step, its predecessors
// that have not ended, and looks again only at the steps named by an event
// since it last looked: a step's status never changes without an event
// about it (emit notes the step).
type readiness struct {
	pos   map[string]int // a step's place in pb.Steps
	succs [][]int        // each step's successors, each once
	// ended is whether each step had ended when last looked at; waiting
	// counts each step's predecessors that had not, left the steps but
	// `end` that had not.
	ended   []bool
	waiting []int
	left    int
	// noted lists the steps events named since the last look, candidates
	// the pending steps that may be ready now; inNoted and queued mark them.
	noted, candidates []int
	inNoted, queued   []bool
	// unsettled is whether each step was running or waiting for a
	// classification when last looked at; othersUnsettled counts those
	// that are not cleanup steps (on_cancel: run), which are listed in
	// cleanup.
	unsettled       []bool
	othersUnsettled int
	cleanup         []int
}

func newReadiness(pb *spec.Playbook) readiness {
	n := len(pb.Steps)
	rd := readiness{pos: make(map[string]int, n), succs: make([][]int, n), ended: make([]bool, n), waiting: make([]int, n),
		inNoted: make([]bool, n), queued: make([]bool, n), unsettled: make([]bool, n)}
	for i, s := range pb.Steps {
		rd.pos[s.Name] = i
	}
	for i, s := range pb.Steps {
		for _, a := range pb.Incoming(s.Name) {
			p := rd.pos[a.From]
			if k := len(rd.succs[p]); k == 0 || rd.succs[p][k-1] != i {
				// A predecessor by both next and depends_on counts once.
				rd.succs[p] = append(rd.succs[p], i)
				rd.waiting[i]++
			}
		}
	}
	for i, s := range pb.Steps {
		if s.Name != spec.EndStep {
			rd.left++
		}
		if s.OnCancelRun {
			rd.cleanup = append(rd.cleanup, i)
		}
		if rd.waiting[i] == 0 {
			rd.candidates = append(rd.candidates, i)
			rd.queued[i] = true
		}
	}
	return rd
}

// note is called with every event about a step.
func (rd *readiness) note(step string) {
	if i, ok := rd.pos[step]; ok && !rd.inNoted[i] {
		rd.inNoted[i] = true
		rd.noted = append(rd.noted, i)
	}
}

func (rd *readiness) candidate(i int) {
	if !rd.queued[i] {
		rd.queued[i] = true
		rd.candidates = append(rd.candidates, i)
	}
}

// lookAgain brings the counts up to date with the steps events named.
func (r *Run) lookAgain() {
	rd := &r.rd
	for _, i := range rd.noted {
		rd.inNoted[i] = false
		st := r.ordered[i]
		if unsettled := st.Status == contract.StatusRunning || st.Status == contract.StatusPendingFailed; unsettled != rd.unsettled[i] {
			rd.unsettled[i] = unsettled
			if s := r.pb.Steps[i]; !s.OnCancelRun && s.Name != spec.EndStep {
				if unsettled {
					rd.othersUnsettled++
				} else {
					rd.othersUnsettled--
				}
			}
		}
		if ended := st.Status.Terminal(); ended != rd.ended[i] {
			rd.ended[i] = ended
			d := 1
			if ended {
				d = -1
			}
			if r.pb.Steps[i].Name != spec.EndStep {
				rd.left += d
			}
			for _, j := range rd.succs[i] {
				if rd.waiting[j] += d; rd.waiting[j] == 0 {
					rd.candidate(j)
				}
			}
		}
		if st.Status == contract.StatusPending && rd.waiting[i] == 0 {
			rd.candidate(i) // pending again: a classification retries it
		}
	}
	rd.noted = rd.noted[:0]
}

// positions is a heap of places in pb.Steps, the first first.
type positions []int

func (p positions) Len() int           { return len(p) }
func (p positions) Less(i, j int) bool { return p[i] < p[j] }
func (p positions) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *positions) Push(x any)        { *p = append(*p, x.(int)) }
func (p *positions) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}

// decide tells whether a pending step can be resolved now, and if so whether
// it runs; a skip comes with its reason and the failed step behind it.
func (r *Run) decide(s *spec.Step) (run, resolved bool, reason, origin string) {
	arcs := r.pb.Incoming(s.Name)
	taken := len(arcs) == 0
	stopped := false            // an upstream failed, was cancelled or skipped
	var counted map[string]bool // with firstArcOnly
	if r.firstArcOnly {
		counted = map[string]bool{}
	}
	for _, a := range arcs {
		if counted != nil {
			if counted[a.From] {
				continue
			}
			counted[a.From] = true
		}
		p := r.states[a.From]
		if !p.Status.Terminal() {
			return false, false, "", ""
		}
		if p.Status == contract.StatusFailed || p.Status == contract.StatusCancelled || p.Status == contract.StatusSkipped {
			stopped = true
		}
		switch {
		case p.Status == contract.StatusFailed && r.pb.Step(a.From).AllowFailure:
			// A failure allowed: its arcs are taken as a completed step's.
			taken = taken || r.taken[a]
		case p.Status == contract.StatusFailed || p.Status == contract.StatusCancelled:
			if origin == "" {
				origin = a.From
				reason = fmt.Sprintf("upstream %s %s", a.From, p.Status)
				if p.Status == contract.StatusCancelled && p.OriginalFailedStep != nil {
					// Cancelled because another step failed: say which.
					reason = fmt.Sprintf("upstream %s cancelled after %s failed", a.From, *p.OriginalFailedStep)
				}
			}
		case p.Status == contract.StatusSkipped && p.OriginalFailedStep != nil:
			if origin == "" {
				origin = *p.OriginalFailedStep
				reason = fmt.Sprintf("upstream %s skipped after %s failed", a.From, origin)
			}
		case r.taken[a]:
			taken = true
		}
	}
	switch {
	case s.OnCancelRun && r.windingDown():
		// A cleanup step waits for the other steps to settle, then runs
		// whatever happened upstream, unless the graph had already
		// chosen another way.
		if !r.cleanupMayStart() {
			return false, false, "", ""
		}
		if !taken && !stopped {
			return false, true, "no branch led here", ""
		}
		return true, true, "", ""
	case r.deadlineFirst:
		return false, true, r.timeoutRecord().String(), ""
	case r.cancelled:
		return false, true, "run cancelled", ""
	case r.drained:
		return false, true, "run drained: no new step starts", ""
	case origin != "" && s.OnFailureRun:
		return true, true, "", ""
	case origin != "":
		return false, true, reason, origin
	case !taken:
		return false, true, "no branch led here", ""
	case r.stoppedBy != "" && !s.OnFailureRun:
		return false, true, fmt.Sprintf("not started: %s failed and failure_mode is %s", r.stoppedBy, r.pb.FailureMode), r.stoppedBy
	}
	return true, true, "", ""
}

// EndReady tells whether every step but `end` has resolved.
func (r *Run) EndReady() bool {
	r.lookAgain()
	return r.rd.left == 0
}

// StartEnd marks `end` running once everything else has resolved.
func (r *Run) StartEnd() {
	r.states[spec.EndStep].Status = contract.StatusRunning
	r.started(r.states[spec.EndStep])
	r.emit(Event{Type: "step_started", Step: spec.EndStep})
}
