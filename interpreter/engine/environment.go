package engine

import (
	"fmt"
	"maps"
	"slices"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// Env is what step expressions and templates see.
func (r *Run) Env() map[string]any {
	return r.envWith(r.stepsEnv())
}

// envWith is the scope with steps as its `steps`.
func (r *Run) envWith(steps map[string]any) map[string]any {
	env := map[string]any{
		"workload":     r.workload,
		"steps":        steps,
		"execution_id": r.executionID,
		"playbook":     map[string]any{"name": r.pb.Name, "description": r.pb.Description},
		"run":          map[string]any{"logical_time": r.logicalTime, "timed_out": r.timedOut},
	}
	// Only a playbook with triggers reads trigger (submit refuses it in
	// others), so a run of any other sees the scope it always saw.
	if len(r.pb.Triggers) > 0 {
		trigger := map[string]any{"kind": "none"}
		maps.Copy(trigger, r.trigger)
		env["trigger"] = trigger
	}
	return env
}

// EndEnv is what `end`'s success_when and tool see.
func (r *Run) EndEnv() map[string]any {
	env := r.Env()
	failed := r.failedSteps()
	env["failed_steps"] = failed
	env["failed_steps_count"] = len(failed)
	env["total_steps"] = len(r.pb.Steps) - 1
	warnings := r.warningSteps()
	env["warning_steps"] = warnings
	env["warning_steps_count"] = len(warnings)
	return env
}

// failedSteps lists, in file order, the failed steps that count against
// the run: all but those with allow_failure (warningSteps).
func (r *Run) failedSteps() []string {
	failed := []string{}
	for i, s := range r.pb.Steps {
		if s.Name != spec.EndStep && !s.AllowFailure && r.ordered[i].Status == contract.StatusFailed {
			failed = append(failed, s.Name)
		}
	}
	return failed
}

// warningSteps lists, in file order, the steps with allow_failure that failed.
func (r *Run) warningSteps() []string {
	warnings := []string{}
	for i, s := range r.pb.Steps {
		if s.AllowFailure && r.ordered[i].Status == contract.StatusFailed {
			warnings = append(warnings, s.Name)
		}
	}
	return warnings
}

// RenderTool renders a step's tool fields against the run's current state:
// the steps its templates read (every step, for end).
func (r *Run) RenderTool(s *spec.Step) (map[string]any, error) {
	var env map[string]any
	if s.Name == spec.EndStep {
		env = r.EndEnv()
	} else {
		env = r.envReading(r.toolReads(s))
	}
	out, err := r.render(s.Tool.Spec, env, r.toolReads(s))
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// RenderFiles is what an attempt of s does with the run's store: the
// files it hands on, and the files it takes, its inputs.files rendered
// against the run's state and every file of the steps inputs.from names
// (inputs.files wins where both give a path). nil: none.
func (r *Run) RenderFiles(s *spec.Step) (*contract.StepFiles, error) {
	if s.Files == nil {
		return nil, nil
	}
	out := &contract.StepFiles{Outputs: s.Files.Outputs}
	add := func(p string, f contract.FileRef) {
		if out.Inputs == nil {
			out.Inputs = map[string]contract.FileRef{}
		}
		out.Inputs[p] = f
	}
	for _, name := range s.Files.From {
		if st := r.states[name]; st != nil {
			if err := r.filesKept(name, st); err != nil {
				return nil, err
			}
			//workflowcheck:ignore order-free: fills a map by path
			for p, f := range st.Files {
				add(p, f)
			}
		}
	}
	if len(s.Files.Inputs) == 0 {
		return out, nil
	}
	env := r.envReading(r.toolReads(s))
	rendered, err := r.render(s.Files.Spec(), env, r.toolReads(s))
	if err != nil {
		return nil, err
	}
	files, _ := rendered.(map[string]any)["files"].(map[string]any)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f, err := contract.FileRefOf(files[p])
		if err != nil {
			return nil, fmt.Errorf("inputs.files.%s: %q gives %v", p, s.Files.Inputs[p], err)
		}
		add(p, f)
	}
	return out, nil
}

// filesKept is the error of inputs.from naming a step whose files list
// went with its result, cut to a stub (a loop over its result budget):
// its files are in the store, but the run no longer lists them, and the
// step would take none. nil when its files are kept, or when the run
// reads it as runs from before "truncated-reads" did (no files).
func (r *Run) filesKept(name string, st *contract.StepState) error {
	if len(st.Files) > 0 {
		return nil
	}
	if s := r.pb.Step(name); s == nil || s.Files == nil || len(s.Files.Outputs) == 0 {
		return nil // it hands no file on
	}
	n, stub := expr.TruncatedSize(st.Result)
	if !stub {
		return nil
	}
	budget := ""
	switch b := st.Result.(map[string]any)["budget"].(type) {
	case int:
		budget = " of " + expr.FormatBytes(b)
	case float64:
		budget = " of " + expr.FormatBytes(int(b))
	}
	err := expr.TruncatedRead(fmt.Sprintf("inputs.from: steps.%s's files were not kept: its result was truncated (%s, over its budget%s), and its files list with it; "+
		"they are in the store (playbook files RUN %s): keep its results within the budget (smaller results of each element)",
		name, expr.FormatBytes(n), budget, name))
	if r.readsStubs(err) {
		return nil
	}
	return err
}

// ScopeFor is the part of the run's scope that the given expressions read:
// the steps and workload keys they name (all of `steps` or `workload` when
// one reads it as a whole), execution_id and playbook. A step's retry_when
// and stop_when travel with every attempt, and so does this scope; the
// rest of the run's state stays out of its activity input.
func (r *Run) ScopeFor(exprs ...*expr.Expr) map[string]any {
	env := r.envReading(exprs)
	env["workload"] = readPart(r.workload, "workload", exprs, func(e *expr.Expr) []string { return e.WorkloadRefs })
	return env
}

// envReading is Env with `steps` holding only the steps exprs read, unless
// one reads it as a whole: a step's render then costs what it reads, not
// the size of the run (a chain of thousands of steps renders each of them).
func (r *Run) envReading(exprs []*expr.Expr) map[string]any {
	steps := map[string]any{}
	for _, e := range exprs {
		if e != nil && e.ReadsAll["steps"] {
			return r.Env()
		}
	}
	for _, e := range exprs {
		if e == nil {
			continue
		}
		for _, name := range e.StepRefs {
			if st := r.states[name]; st != nil {
				steps[name] = stepEntry(st)
			}
		}
	}
	return r.envWith(steps)
}

// toolReads lists the expressions of a step's tool templates.
func (r *Run) toolReads(s *spec.Step) []*expr.Expr {
	var exprs []*expr.Expr
	add := func(src string) error {
		if t := r.pb.Templates()[src]; t != nil {
			exprs = append(exprs, t.Exprs()...)
		}
		return nil
	}
	_ = expr.TemplatesIn(s.Tool.Spec, add)
	_ = expr.TemplatesIn(s.Files.Spec(), add)
	return exprs
}

// readPart is the part of src (the map named name) that exprs read.
func readPart(src map[string]any, name string, exprs []*expr.Expr, keys func(*expr.Expr) []string) map[string]any {
	part := map[string]any{}
	for _, e := range exprs {
		if e == nil {
			continue
		}
		if e.ReadsAll[name] {
			return src
		}
		for _, k := range keys(e) {
			if v, ok := src[k]; ok {
				part[k] = v
			}
		}
	}
	return part
}
