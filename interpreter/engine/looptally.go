package engine

import (
	"fmt"
	"maps"
	"reflect"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// LoopScope is the part of the run's scope that a loop step's list and
// tool templates read: what its driver needs to evaluate and render them.
func (r *Run) LoopScope(s *spec.Step) map[string]any {
	exprs := r.toolReads(s)
	if s.Loop.In != nil {
		exprs = append(exprs, s.Loop.In)
	}
	return r.ScopeFor(exprs...)
}

// DriverScope is, in a loop's driver, the scope as the run saw it: a scope
// that came through JSON (LoopScope, in the driver's input) has float
// numbers where the run had whole ones, so the workload is merged again
// from the playbook's defaults and the run's overrides (as NewRun does),
// and each step's attempts is a whole number again.
func DriverScope(pb *spec.Playbook, scope, overrides map[string]any) map[string]any {
	out := maps.Clone(scope)
	out["workload"] = spec.MergeWorkload(pb.Workload, overrides)
	steps := map[string]any{}
	//workflowcheck:ignore order-free: fills a map
	for name, v := range stepsOf(scope) {
		if entry, ok := v.(map[string]any); ok {
			if n, ok := entry["attempts"].(float64); ok {
				entry = maps.Clone(entry)
				entry["attempts"] = int(n)
			}
			v = entry
		}
		steps[name] = v
	}
	out["steps"] = steps
	return out
}

func stepsOf(scope map[string]any) map[string]any {
	steps, _ := scope["steps"].(map[string]any)
	return steps
}

// ElementItems evaluates a loop step's list against a scope (LoopScope),
// as Run.LoopItems does against the whole run, reading stubs as stubs
// says.
func ElementItems(s *spec.Step, scope map[string]any, stubs Stubs) ([]any, error) {
	return loopItems(s, scope, stubs)
}

// RenderElement renders a loop step's tool for element i of items against
// a scope (LoopScope), as Run.RenderLoop does for every element, reading
// stubs as stubs says.
func RenderElement(pb *spec.Playbook, s *spec.Step, scope map[string]any, items []any, i int, stubs Stubs) (map[string]any, error) {
	env := make(map[string]any, len(scope)+2)
	maps.Copy(env, scope)
	env[s.Loop.Iterator] = items[i]
	env["loop"] = map[string]any{"index": i, "length": len(items)}
	out, err := read(stubs, func(safety expr.Safety) (any, error) {
		return expr.RenderValueWith(s.Tool.Spec, pb.Templates(), env, safety)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", contract.ElementLabel(i, len(items)), err)
	}
	return out.(map[string]any), nil
}

// ScopeStubs is how a loop's driver reads stubs: guarded when its scope
// holds one; old tells, after a read past one, whether the driver reads
// it as drivers from before "truncated-reads" did.
func ScopeStubs(scope map[string]any, old func(error) bool) Stubs {
	// scope.steps.NAME.result: a result is 3 deep in the scope.
	return Stubs{Guard: expr.HoldsStub(scope, stubDepth+3), Old: old}
}

// loopItems evaluates a loop step's list against env.
func loopItems(s *spec.Step, env map[string]any, stubs Stubs) ([]any, error) {
	if s.Loop.In == nil {
		return s.Loop.Items, nil
	}
	v, err := read(stubs, func(safety expr.Safety) (any, error) { return s.Loop.In.EvalWith(env, safety) })
	if err != nil {
		return nil, fmt.Errorf("loop.in %w", err)
	}
	if items, ok := v.([]any); ok {
		return items, nil
	}
	rv := reflect.ValueOf(v)
	if v == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
		return nil, fmt.Errorf("loop.in %q gave %T, not a list", s.Loop.In.Source, v)
	}
	items := make([]any, rv.Len())
	for i := range items {
		items[i] = rv.Index(i).Interface()
	}
	return items, nil
}
