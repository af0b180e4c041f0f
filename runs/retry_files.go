package runs

import (
	"context"
	"maps"
	"slices"
	"strings"

	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// filesLeft looks, for a retry, in the workers' store for the files the
// steps it would reuse handed on: a step whose files are gone (`files
// gc` removed them) runs again rather than being reused when a step that
// runs takes them, as it would fail. A nil filesLeft looks nowhere:
// the front end does not know the workers' store.
type filesLeft struct {
	st store.Store
	// runs holds the sizes of the objects listed under each run's prefix
	// (the first segment of their keys), by key; nil: the listing failed,
	// and nothing of that run is judged gone.
	runs map[string]map[string]int64
	// steps, when not nil, are the loop steps whose elements present
	// judges; the others' are kept.
	steps map[string]bool
}

// lookIn looks in st; nil when st is.
func lookIn(st store.Store) *filesLeft {
	if st == nil {
		return nil
	}
	return &filesLeft{st: st, runs: map[string]map[string]int64{}}
}

// gone is the first path of files, in path order, whose object the store
// does not hold as recorded (its key, its size); "" when all are there,
// or when it cannot tell (a file of another store, a listing that failed).
func (s *filesLeft) gone(ctx context.Context, files map[string]contract.FileRef) string {
	if s == nil {
		return ""
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		ref := files[p]
		key, err := store.KeyOf(s.st, ref.URI)
		if err != nil {
			continue
		}
		run, _, _ := strings.Cut(key, "/")
		sizes, listed := s.runs[run]
		if !listed {
			var err error
			if sizes, err = s.st.Sizes(ctx, run); err != nil {
				sizes = nil // a listing cut short would call the rest gone
			}
			s.runs[run] = sizes
		}
		if sizes == nil {
			continue
		}
		if n, there := sizes[key]; !there || n != ref.Bytes {
			return p
		}
	}
	return ""
}

// goneSteps are the steps of earlier that completed (or were reused)
// whose files are gone, each with the first such path
// (engine.RetrySide.FilesGone).
func (s *filesLeft) goneSteps(ctx context.Context, earlier map[string]*contract.StepState) map[string]string {
	if s == nil {
		return nil
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(earlier)) {
		st := earlier[name]
		if st == nil || len(st.Files) == 0 || (st.Status != contract.StatusCompleted && st.Status != contract.StatusReused) {
			continue
		}
		if p := s.gone(ctx, st.Files); p != "" {
			out[name] = p
		}
	}
	return out
}

// present drops from done, the completed elements of loop step step, the
// elements whose files are gone: they run.
func (s *filesLeft) present(ctx context.Context, step string, done map[string][]doneElement) {
	if s == nil || (s.steps != nil && !s.steps[step]) {
		return
	}
	for k, elements := range done {
		done[k] = slices.DeleteFunc(elements, func(e doneElement) bool { return s.gone(ctx, e.files) != "" })
	}
}

// takenGone are the steps of gone whose files a step that runs in plan
// takes (takenBy): only those need running again.
func takenGone(pb *spec.Playbook, plan *engine.ReusePlan, gone map[string]string) map[string]string {
	out := map[string]string{}
	for from := range takenBy(pb, plan) {
		if path := gone[from]; path != "" {
			out[from] = path
		}
	}
	return out
}

// takenBy are the steps whose files a step that runs in plan takes
// (engine.FilesTakenFrom).
func takenBy(pb *spec.Playbook, plan *engine.ReusePlan) map[string]bool {
	out := map[string]bool{}
	for _, s := range pb.Steps {
		if plan.Reuse[s.Name] != nil {
			continue
		}
		for _, from := range engine.FilesTakenFrom(pb, s) {
			out[from] = true
		}
	}
	return out
}

// only is s for the loop steps taken alone, whatever their status (one
// that failed before runs for itself, and reuses its elements): the
// elements of another loop are reused whatever their files, which no
// step that runs takes.
func (s *filesLeft) only(taken map[string]bool) *filesLeft {
	if s == nil {
		return nil
	}
	return &filesLeft{st: s.st, runs: s.runs, steps: taken}
}
