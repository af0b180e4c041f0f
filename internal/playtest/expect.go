package playtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/expr-lang/expr/ast"
	exprparser "github.com/expr-lang/expr/parser"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// check compares what the run showed with what the case expects: one
// line per mismatch, expected then actual.
func (x Expect) check(sim *simulation) []string {
	var out []string
	agg := sim.agg
	if x.Status != "" && x.Status != agg.Status {
		out = append(out, fmt.Sprintf("run status: expected %s, got %s", x.Status, agg.Status))
	}
	for _, name := range sortedKeys(x.Steps) {
		want := x.Steps[name]
		got := agg.Steps[name]
		if got == nil {
			out = append(out, fmt.Sprintf("step %q: expected it in the run, it is not in the aggregate", name))
			continue
		}
		mismatch := func(what string, want, got any) {
			out = append(out, fmt.Sprintf("step %q: expected %s %v, got %v", name, what, want, got))
		}
		if want.Status != "" && string(got.Status) != want.Status {
			mismatch("status", want.Status, got.Status)
		}
		if want.Attempts != nil && *want.Attempts != got.Attempts {
			mismatch("attempts", *want.Attempts, got.Attempts)
		}
		if want.RoutedToEnd != nil && *want.RoutedToEnd != got.RoutedToEnd {
			mismatch("routed_to_end", *want.RoutedToEnd, got.RoutedToEnd)
		}
		if want.SkipReason != nil && !strings.Contains(got.SkipReason, *want.SkipReason) {
			mismatch("skip_reason containing", quote(*want.SkipReason), quote(got.SkipReason))
		}
		if want.Recovery != nil && *want.Recovery != got.Recovery {
			mismatch("recovery", quote(*want.Recovery), quote(got.Recovery))
		}
		gotType, gotMsg := "none", ""
		if got.Error != nil {
			gotType, gotMsg = got.Error.Type, got.Error.Message
		}
		if want.ErrorType != nil && *want.ErrorType != gotType {
			mismatch("error type", *want.ErrorType, gotType)
		}
		if want.ErrorMessage != nil && !strings.Contains(gotMsg, *want.ErrorMessage) {
			mismatch("error message containing", quote(*want.ErrorMessage), quote(gotMsg))
		}
	}
	if len(x.Order) > 0 {
		if got := startOrder(sim.started, x.Order); !slices.Equal(got, x.Order) {
			out = append(out, fmt.Sprintf("steps started: expected %s in that order, got %s", strings.Join(x.Order, ", "), orNone(strings.Join(got, ", "))))
		}
	}
	if len(x.Asserts) > 0 {
		env := aggregateEnv(agg, sim.workload)
		for _, a := range x.Asserts {
			ok, err := a.expr.EvalBool(env)
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("assert %q (line %d): %v", a.Source, a.Line, err))
			case !ok:
				out = append(out, fmt.Sprintf("assert %q (line %d) is false%s", a.Source, a.Line, sides(a.Source, env)))
			}
		}
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func orNone(s string) string {
	if s == "" {
		return "none of them"
	}
	return s
}

// startOrder is the order in which the named steps started (each once).
func startOrder(started, named []string) []string {
	want := map[string]bool{}
	for _, n := range named {
		want[n] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range started {
		if want[s] && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// aggregateEnv is what an assertion reads: the aggregate as JSON has it
// (steps.NAME.status, failed_steps_count, ...) and the case's workload.
func aggregateEnv(agg *contract.Aggregate, workload map[string]any) map[string]any {
	env := map[string]any{}
	_ = convert(agg, &env)
	for _, k := range aggregateNames {
		if _, ok := env[k]; !ok {
			env[k] = nil
		}
	}
	for _, k := range []string{"warning_steps", "failed_steps"} {
		if env[k] == nil {
			env[k] = []any{}
		}
	}
	if env["warning_steps_count"] == nil {
		env["warning_steps_count"] = 0
	}
	env["workload"] = workload
	if env["workload"] == nil {
		env["workload"] = map[string]any{}
	}
	env["execution_id"] = agg.WorkflowID
	env["run"] = map[string]any{"logical_time": agg.LogicalTime, "timed_out": agg.Timeout != nil}
	return env
}

func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// stepsTable is the simulated run's steps, in file order.
func stepsTable(pb *spec.Playbook, agg *contract.Aggregate) string {
	if agg == nil {
		return ""
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "STEP\tSTATUS\tATTEMPTS\tDETAIL")
	for _, s := range pb.Steps {
		st := agg.Steps[s.Name]
		if st == nil {
			continue
		}
		detail := ""
		switch {
		case st.Error != nil:
			detail = st.Error.Type + ": " + expr.FirstLine(st.Error.Message)
		case st.SkipReason != "":
			detail = st.SkipReason
		}
		if st.RoutedToEnd {
			detail += " (routed to end)"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", s.Name, st.Status, st.Attempts, detail)
	}
	w.Flush()
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// sides says what the two sides of a false comparison were (": left is
// 3, right is 2"), so that a failed assert shows the value it met; "" for
// an assert that is not a comparison, or a side that cannot be evaluated.
func sides(src string, env map[string]any) string {
	tree, err := exprparser.Parse(src)
	if err != nil {
		return ""
	}
	b, ok := tree.Node.(*ast.BinaryNode)
	if !ok || !slices.Contains([]string{"==", "!=", "<", "<=", ">", ">=", "in", "not in", "contains", "startsWith", "endsWith", "matches"}, b.Operator) {
		return ""
	}
	var shown []string
	for _, n := range []ast.Node{b.Left, b.Right} {
		if constant(n) {
			continue // as written in the assert
		}
		e, err := expr.CompileExprAt(n.String(), 0, expr.ScopeEnd, false, aggregateNames...)
		if err != nil {
			return ""
		}
		v, err := e.Eval(env)
		if err != nil {
			return ""
		}
		j, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		shown = append(shown, fmt.Sprintf("%s is %s", n.String(), j))
	}
	if len(shown) == 0 {
		return ""
	}
	return ": " + strings.Join(shown, ", ")
}

// constant tells whether a node is a value written in the expression: a
// literal, or a list of them.
func constant(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode:
		return true
	case *ast.ArrayNode:
		return !slices.ContainsFunc(n.Nodes, func(e ast.Node) bool { return !constant(e) })
	}
	return false
}
