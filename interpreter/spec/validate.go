package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"playbook/interpreter/spec/expr"
)

// validate injects a missing `end`, builds the graph and checks everything
// that can be checked before a run: targets, cycles, expressions, templates.
// It reports every error it finds, in file order.
func validate(pb *Playbook) error {
	var errs Errors
	errAt := func(s *Step, line int, format string, args ...any) error {
		return &Error{File: pb.File, Line: line, Step: s.Name, Msg: fmt.Sprintf(format, args...)}
	}
	if end := pb.byName[EndStep]; end == nil {
		end = &Step{Name: EndStep, Injected: true}
		pb.byName[EndStep] = end
		pb.Steps = append(pb.Steps, end)
	} else {
		// `end` goes last so that file order is also a valid evaluation order for it.
		for i, s := range pb.Steps {
			if s == end {
				pb.Steps = append(append(pb.Steps[:i:i], pb.Steps[i+1:]...), end)
				break
			}
		}
	}

	pb.incoming, pb.outgoing = map[string][]Arc{}, map[string][]Arc{}
	// Arcs are kept per kind: a step reached both by a `next` and by a
	// `depends_on` from the same step has both, whatever the file order.
	arcs := map[Arc]bool{}
	addArc := func(a Arc) {
		if arcs[a] {
			return
		}
		arcs[a] = true
		pb.incoming[a.To] = append(pb.incoming[a.To], a)
		pb.outgoing[a.From] = append(pb.outgoing[a.From], a)
	}
	for _, s := range pb.Steps {
		for _, r := range s.Next {
			for i, to := range r.Then {
				if err := checkTarget(pb, s, to, r.thenLine(i), "next"); err != nil {
					errs = errs.Add(pb.File, err)
					continue
				}
				addArc(Arc{From: s.Name, To: to, Kind: ArcNext})
			}
		}
		for i, from := range s.DependsOn {
			line := s.Line
			if i < len(s.dependsOnLines) {
				line = s.dependsOnLines[i]
			}
			if err := checkTarget(pb, s, from, line, "depends_on"); err != nil {
				errs = errs.Add(pb.File, err)
				continue
			}
			if from == EndStep {
				errs = errs.Add(pb.File, errAt(s, line, "depends_on names end, which runs last of all"))
				continue
			}
			addArc(Arc{From: from, To: s.Name, Kind: ArcDependsOn})
		}
	}
	if cycle := findCycle(pb); cycle != nil {
		first := pb.byName[cycle[0]]
		errs = errs.Add(pb.File, errAt(first, first.Line, "the graph has a cycle: %s (iterate with loop, poll with retry_when)", strings.Join(cycle, " -> ")))
	}

	for _, s := range pb.Steps {
		if s.failureHandlerRef == "" {
			continue
		}
		h := pb.Handlers[s.failureHandlerRef]
		switch {
		case h == nil && pb.brokenHandlers:
			continue // the section's own errors are told
		case h == nil:
			if len(pb.Handlers) == 0 {
				errs = errs.Add(pb.File, errAt(s, s.failureHandlerRefLine, "failure_handler names unknown handler %q (the playbook declares no failure_handlers)", s.failureHandlerRef))
				continue
			}
			errs = errs.Add(pb.File, errAt(s, s.failureHandlerRefLine, "failure_handler names unknown handler %q (known: %s)", s.failureHandlerRef, strings.Join(slices.Sorted(maps.Keys(pb.Handlers)), ", ")))
			continue
		case s.Tool == nil || !RunsProcess(s.Tool.Kind):
			errs = errs.Add(pb.File, errAt(s, s.failureHandlerRefLine, "failure_handler needs a shell or python tool: exit-code rules match a process's exit code"))
			continue
		}
		s.FailureHandler = h
	}

	pb.templates = map[string]*expr.Template{}
	for _, s := range pb.Steps {
		for _, e := range exprsOf(s) {
			for _, ref := range e.StepRefs {
				if pb.byName[ref] == nil {
					errs = errs.Add(pb.File, &Error{File: pb.File, Line: e.Line, Step: s.Name, standalone: true,
						Msg: fmt.Sprintf("expression %q reads steps.%s, but there is no step %q%s", e.Source, ref, ref, didYouMean(pb, ref, s.Name))})
				}
			}
		}
		if s.Tool == nil {
			continue
		}
		if s.Files != nil {
			for i, name := range s.Files.From {
				if err := checkTarget(pb, s, name, s.Files.fromLines[i], "inputs.from"); err != nil {
					errs = errs.Add(pb.File, err)
				}
			}
		}
		scope, extra := ToolScope(s)
		for _, part := range []struct {
			what string
			spec map[string]any
		}{{"tool", s.Tool.Spec}, {"inputs", s.Files.Spec()}} {
			_ = expr.TemplatesIn(part.spec, func(src string) error {
				t, err := expr.CompileTemplate(src, scope, extra...)
				if err != nil {
					errs = errs.Add(pb.File, errAt(s, s.Tool.Line, "%s: %v", part.what, err))
					return nil
				}
				for _, e := range t.Exprs() {
					for _, ref := range e.StepRefs {
						if pb.byName[ref] == nil {
							errs = errs.Add(pb.File, errAt(s, s.Tool.Line, "%s: template %q reads steps.%s, but there is no step %q%s", part.what, src, ref, ref, didYouMean(pb, ref, s.Name)))
							return nil
						}
					}
				}
				pb.templates[src] = t
				return nil
			})
		}
	}
	return errs.Err()
}

func checkTarget(pb *Playbook, s *Step, name string, line int, field string) error {
	if pb.byName[name] != nil {
		if name == s.Name {
			return &Error{File: pb.File, Line: line, Step: s.Name, Msg: fmt.Sprintf("%s names the step itself", field)}
		}
		return nil
	}
	msg := fmt.Sprintf("%s names unknown step %q%s", field, name, didYouMean(pb, name, s.Name))
	return &Error{File: pb.File, Line: line, Step: s.Name, Msg: msg, standalone: true}
}

// didYouMean suggests the step a misspelt name stands for, if one is near.
func didYouMean(pb *Playbook, name, from string) string {
	if near := nearestName(pb, name, from); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

// nearestName suggests a step name at edit distance 1 or 2, other than the
// step that names it.
func nearestName(pb *Playbook, name, from string) string {
	best, bestDist := "", 3
	for _, s := range pb.Steps {
		if s.Name == from {
			continue
		}
		if d := editDistance(name, s.Name); d < bestDist {
			best, bestDist = s.Name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// findCycle returns one cycle as a path that starts and ends on the same
// step, or nil. Steps are visited in file order so the answer is stable.
func findCycle(pb *Playbook) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = onPath
		path = append(path, n)
		for _, a := range pb.outgoing[n] {
			m := a.To
			switch state[m] {
			case onPath:
				for i, p := range path {
					if p == m {
						return append(append([]string{}, path[i:]...), m)
					}
				}
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for _, s := range pb.Steps {
		if state[s.Name] == unseen {
			if c := visit(s.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

// exprsOf lists a step's compiled expressions (not its templates).
func exprsOf(s *Step) []*expr.Expr {
	var out []*expr.Expr
	for _, r := range s.Next {
		if r.When != nil {
			out = append(out, r.When)
		}
	}
	if s.Retry != nil {
		if s.Retry.RetryWhen != nil {
			out = append(out, s.Retry.RetryWhen)
		}
		if s.Retry.StopWhen != nil {
			out = append(out, s.Retry.StopWhen)
		}
	}
	if s.SuccessWhen != nil {
		out = append(out, s.SuccessWhen)
	}
	if s.Loop != nil && s.Loop.In != nil {
		out = append(out, s.Loop.In)
	}
	return out
}

// Downstream lists a step and every step reachable from it, in file order.
func (p *Playbook) Downstream(name string) []string {
	seen := map[string]bool{name: true}
	queue := []string{name}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, a := range p.outgoing[n] {
			if !seen[a.To] {
				seen[a.To] = true
				queue = append(queue, a.To)
			}
		}
	}
	var out []string
	for _, s := range p.Steps {
		if seen[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}

// LookUpZonesOnHost makes every expression and template of the playbook
// that reads time zones ask onHost whether it looks them up on the host,
// as runs did before embedded zones (expr.Expr.LookUpZonesOnHost); a
// template made later, a webhook's, asks through ZonesOnHost.
func (p *Playbook) LookUpZonesOnHost(onHost func() bool) {
	p.zonesOnHost = onHost
	for _, s := range p.Steps {
		for _, e := range exprsOf(s) {
			e.LookUpZonesOnHost(onHost)
		}
	}
	//workflowcheck:ignore order-free: sets each expression alike
	for _, t := range p.templates {
		for _, e := range t.Exprs() {
			e.LookUpZonesOnHost(onHost)
		}
	}
}

// ZonesOnHost is what LookUpZonesOnHost was given, nil when nothing was.
func (p *Playbook) ZonesOnHost() func() bool { return p.zonesOnHost }
