package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// RetrySide is one of the two runs a retry compares: the earlier run as it
// ran, or the new run as it will run.
type RetrySide struct {
	Playbook *spec.Playbook
	// Definitions are its steps' definitions in canonical form
	// (spec.StepDefinitions); nil on both sides: the same text.
	Definitions map[string]string
	// Workload is the workload its steps read: the defaults with the
	// overrides merged in.
	Workload map[string]any
	// BaseDir is the playbook's directory, against which a relative script
	// path resolves.
	BaseDir string
	// Texts are the sub-playbooks frozen into the run, by absolute path
	// (Input.Files).
	Texts map[string]string
	// Files are digests of the files its steps read (scripts named by
	// path, recovery scripts, sub-playbooks), by absolute path.
	Files map[string]string
	// LogicalTime is the run's run.logical_time.
	LogicalTime string
	// RunID is the run's workflow ID (run.id), "" when not known yet.
	RunID string
	// FilesGone, on the earlier side, are the steps that completed whose
	// handed-on files the workers' store no longer holds (`files gc`
	// removed them) and a step that runs in the new run takes
	// (FilesTakenFrom), each with the first such file's path: they run
	// again, and a loop's elements whose files are still there are
	// reused. nil: the store was not looked in, or no step that runs
	// takes files that are gone.
	FilesGone map[string]string
}

// filesGoneReason is why a step whose files are gone runs again.
const filesGoneReason = " is gone from the store"

// FilesGone is the reason a step runs again whose file path is no longer
// in the store.
func FilesGone(path string) string { return "its file " + path + filesGoneReason }

// ReuseDecision says whether a retry reuses a step, and why not.
type ReuseDecision struct {
	Step   string `json:"step"`
	Reused bool   `json:"reused"`
	// Why the step runs, its first reason as a path into the playbook or
	// the workload: "tool.command changed", "failed before", "upstream x
	// runs again", "--from", "workload.rate changed (read by tool.env.R)",
	// "scripts/t.py changed", "not in the earlier run"...
	Why string `json:"why,omitempty"`
	// Elements, for a loop step that runs for itself (it did not complete
	// before), count the elements that run and those reused.
	Elements *ElementCounts `json:"elements,omitempty"`
	// Child, for a sub-playbook step that runs for itself, is the plan of
	// its child: a retry of the earlier run's child.
	Child []ReuseDecision `json:"child,omitempty"`
}

// ElementCounts say, for a loop step that runs, how many of its elements
// run and how many a retry reuses.
type ElementCounts struct {
	Total  int `json:"total"`
	Run    int `json:"run"`
	Reused int `json:"reused"`
}

// ReusePlan is what a retry reuses of an earlier run.
type ReusePlan struct {
	// Decisions are one per step of the new playbook, in file order.
	Decisions []ReuseDecision
	// Reuse holds the earlier states of the steps reused (Input.Reuse).
	Reuse map[string]*contract.StepState
	// Warnings name reused steps upstream of a cleanup step (on_failure:
	// run, on_cancel: run) that ran in the earlier run: what they left may have been cleaned up.
	Warnings []string
	// inputs holds, for each step, what it reads that changed
	// (inputChanges) and that stands against reusing anything within it:
	// whatever its status before, such a step has nothing within it
	// reused (RunsForItself). A sub-playbook step's child files are left
	// out: its child's plan judges each of its steps by them.
	inputs map[string][]string
	// childChanged are the sub-playbook steps that completed before and
	// run only because files of their child's tree changed, with that
	// change: they run as a retry of their child, as one that failed does
	// (RunsForItself).
	childChanged map[string]string
}

// PlanReuse decides, as a build system decides what to rebuild, which
// steps of the new playbook a retry reuses from the earlier run (whose
// step states are earlier): a step that completed there (or was reused
// there) is reused when what it does is unchanged (its definition but its
// routing, the workload values, files and run fields it reads) and no
// step upstream of it runs. from, when given, runs again with everything
// downstream of it. A step no branch led to (skipped with no failure
// behind it) does not make its dependants run, unless a reused step's
// arcs, evaluated again, lead to it now. `end` always runs. The
// reused steps' `next` are evaluated again, on their reused results with
// the new playbook and workload (TakenNext of the states in Reuse); a
// step the new arcs no longer lead to is not reused.
func PlanReuse(before, now RetrySide, earlier map[string]*contract.StepState, from string) (*ReusePlan, error) {
	p := now.Playbook
	if from != "" && (p.Step(from) == nil || from == spec.EndStep) {
		return nil, fmt.Errorf("no step %q to retry from in playbook %s", from, p.Name)
	}
	why := map[string]string{}
	inputs := map[string][]string{}
	childChanged := map[string]string{}
	// quiet: the steps skipped before with no failure behind them, which
	// run without making their dependants run, as long as no branch
	// leads to them in the new run.
	quiet := map[string]bool{}
	// propagates: the steps that run, and so make their dependants run.
	var propagates []string
	for _, s := range p.Steps {
		if s.Name == spec.EndStep {
			why[s.Name] = "the end step always runs"
			continue
		}
		var changes []string
		if before.Playbook.Step(s.Name) != nil {
			changes = inputChanges(before, now, s, FilesRead(s, now.BaseDir, now.Texts))
			inputs[s.Name] = changes
			if s.Tool != nil && s.Tool.Kind == "playbook" {
				inputs[s.Name] = inputChanges(before, now, s, ownFiles(s, now.BaseDir))
			}
		}
		w, q := ownReason(before, now, s, earlier[s.Name], from, changes)
		why[s.Name] = w
		if len(changes) > 0 && w == changes[0] && len(inputs[s.Name]) == 0 {
			childChanged[s.Name] = w
		}
		if w != "" && !q {
			propagates = append(propagates, s.Name)
		}
		quiet[s.Name] = w != "" && q
	}
	for {
		// One walk along the arcs: whatever is downstream of a step that
		// runs runs too, said of the first such step found.
		for len(propagates) > 0 {
			n := propagates[0]
			propagates = propagates[1:]
			for _, a := range p.Outgoing(n) {
				if why[a.To] == "" || why[a.To] == skippedBefore || why[a.To] == pendingBefore {
					why[a.To] = "upstream " + n + " runs again"
					quiet[a.To] = false
					propagates = append(propagates, a.To)
				}
			}
		}
		plan := &ReusePlan{Reuse: map[string]*contract.StepState{}, inputs: inputs, childChanged: childChanged}
		for _, s := range p.Steps {
			d := ReuseDecision{Step: s.Name, Reused: why[s.Name] == "", Why: why[s.Name]}
			if d.Reused {
				plan.Reuse[s.Name] = earlier[s.Name]
			}
			plan.Decisions = append(plan.Decisions, d)
		}
		led := reroute(now, plan)
		// A step skipped before that a reused step's arcs, evaluated
		// again, now lead to runs: what is downstream of it read it
		// skipped, and runs again too. Until no such step is left.
		for _, s := range p.Steps {
			if quiet[s.Name] && led[s.Name] {
				quiet[s.Name] = false
				propagates = append(propagates, s.Name)
			}
		}
		if len(propagates) == 0 {
			plan.Warnings = cleanupWarnings(p, plan.Reuse, earlier)
			return plan, nil
		}
	}
}

// reroute evaluates the `next` of the reused steps again, as the new run
// will see them (its playbook, workload and logical time, the reused
// results), into the states plan.Reuse carries; then it drops a reused
// step no arc leads to any more (NotLedTo). A condition that cannot be
// evaluated leaves TakenNext nil, and the run evaluates it again. It
// returns the steps an arc may lead to in the new run.
func reroute(now RetrySide, plan *ReusePlan) (led map[string]bool) {
	p := now.Playbook
	var opts []RunOption
	if t, err := time.Parse(time.RFC3339, now.LogicalTime); err == nil {
		opts = append(opts, WithLogicalTime(t))
	}
	run := NewRun(p, now.Workload, now.RunID, func() time.Time { return time.Time{} }, opts...)
	states := map[string]*contract.StepState{}
	for name, prev := range plan.Reuse {
		c := *prev
		states[name] = &c
		// As the step ended: its result, and the attempts it took.
		st := run.states[name]
		st.Status, st.Result, st.Attempts, st.Files = contract.StatusReused, prev.Result, prev.Attempts, prev.Files
	}
	for name, st := range states {
		taken, err := run.nextTargets(name)
		st.TakenNext = taken
		if err != nil {
			st.TakenNext = nil
		}
	}
	// led: the steps an arc may lead to in the new run, from the steps
	// with no arc into them on: a reused step's taken arcs, and every arc
	// of a step that runs (which arcs it takes is for the run).
	led = map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, s := range p.Steps {
			if led[s.Name] {
				continue
			}
			in := p.Incoming(s.Name)
			if len(in) == 0 || slices.ContainsFunc(in, func(a spec.Arc) bool {
				from := states[a.From]
				if from == nil {
					return led[a.From]
				}
				return led[a.From] && (a.Kind == spec.ArcDependsOn || from.TakenNext == nil || slices.Contains(from.TakenNext, s.Name))
			}) {
				led[s.Name], changed = true, true
			}
		}
	}
	for i, s := range p.Steps {
		if states[s.Name] != nil && !led[s.Name] {
			delete(states, s.Name)
			plan.Decisions[i] = ReuseDecision{Step: s.Name, Why: NotLedTo}
		}
	}
	plan.Reuse = states
	return led
}

// ReusableSteps is PlanReuse of the same playbook and workload: every
// step that completed, but from and what is downstream of it.
func ReusableSteps(p *spec.Playbook, earlier map[string]*contract.StepState, from string) (map[string]*contract.StepState, error) {
	side := RetrySide{Playbook: p}
	plan, err := PlanReuse(side, side, earlier, from)
	if err != nil {
		return nil, err
	}
	return plan.Reuse, nil
}

// NotLedTo is why a step that completed before is not reused: with the
// reused steps' arcs evaluated again, no branch leads to it; it will not
// run either, unless a step that runs leads to it.
const NotLedTo = "no branch leads to it now"

// skippedBefore is why a step skipped in the earlier run runs, unless a
// step upstream of it runs: "downstream of x" says it better. It runs as
// the new run's arcs decide: a branch may skip it again.
const skippedBefore = SkippedBefore

// SkippedBefore is skippedBefore, for the front ends' lines.
const SkippedBefore = "skipped before"

// pendingBefore is why a step that never started in the earlier run (it
// was terminated first) runs, with the same exception.
const pendingBefore = "pending before"

// ownReason is why a step runs for itself, "" when it may be reused;
// quiet: it does not make its dependants run (a step skipped before that
// no failure skipped: no branch led to it, and none will), and a step
// upstream that runs says why better ("downstream of x"). changes are
// what it reads that changed (inputChanges), the last reason looked at.
func ownReason(before, now RetrySide, s *spec.Step, prev *contract.StepState, from string, changes []string) (why string, quiet bool) {
	old := before.Playbook.Step(s.Name)
	switch {
	case s.Name == from:
		return "--from", false
	case old == nil || prev == nil:
		return "not in the earlier run", false
	case before.Definitions[s.Name] != now.Definitions[s.Name]:
		return definitionChange(before.Definitions[s.Name], now.Definitions[s.Name]), false
	case prev.Status == contract.StatusSkipped:
		// Skipped after a failure upstream, the step downstream of what
		// runs says so instead; skipped as no branch led to it, its arcs
		// are as they were, and nothing after it runs for it.
		return skippedBefore, prev.OriginalFailedStep == nil
	case prev.Status != contract.StatusCompleted && prev.Status != contract.StatusReused:
		return string(prev.Status) + " before", false
	}
	if len(changes) > 0 {
		return changes[0], false
	}
	if path := before.FilesGone[s.Name]; path != "" {
		return FilesGone(path), false
	}
	return "", false
}

// inputChanges are what a step reads that changed since the earlier run,
// each said as a runs line says it, in the order: workload values, the
// logical time, the files it runs. A step that did not complete before
// but whose inputs are all unchanged may have what it completed within
// it reused (RunsForItself). files are the files of those it reads to
// judge (FilesRead, or a sub-playbook step's ownFiles).
func inputChanges(before, now RetrySide, s *spec.Step, files []string) []string {
	var out []string
	reads := StepReads(now.Playbook, s)
	var exprs []*expr.Expr
	for _, r := range reads {
		exprs = append(exprs, r.Expr)
	}
	for _, k := range workloadRead(exprs, now.Workload, before.Workload) {
		if !sameValue(before.Workload[k], now.Workload[k]) {
			out = append(out, "workload."+k+" changed (read by "+readerOf(reads, func(e *expr.Expr) bool { return e.ReadsAll["workload"] || slices.Contains(e.WorkloadRefs, k) })+")")
		}
	}
	if before.LogicalTime != now.LogicalTime {
		if by := readerOf(reads, func(e *expr.Expr) bool { return e.ReadsRun }); by != "" {
			out = append(out, "run.logical_time changed (read by "+by+")")
		}
	}
	for _, f := range files {
		old, known := before.Files[f]
		if !known {
			// Not recorded: a run from before runs recorded digests (or
			// before this word counted), or a file that was not there,
			// which the step could not have run.
			continue
		}
		if old != now.Files[f] {
			name := f
			if rel, err := filepath.Rel(now.BaseDir, f); err == nil && !strings.HasPrefix(rel, "..") {
				name = rel
			}
			out = append(out, name+" changed")
		}
	}
	return out
}

// definitionChange names the first place, in key order, where a step's
// definition (spec.StepDefinitions) changed: "tool.command changed",
// "retry.max_attempts changed", "failure_handler.rules[0] changed".
func definitionChange(before, now string) string {
	var a, b any
	if json.Unmarshal([]byte(before), &a) != nil || json.Unmarshal([]byte(now), &b) != nil {
		return "its definition changed"
	}
	// A change of what the step does comes first; its list's only then.
	if p := firstChange(withoutList(a), withoutList(b), ""); p != "" {
		return p + " changed"
	}
	if p := firstChange(a, b, ""); p != "" {
		return p + " changed"
	}
	return "its definition changed"
}

// withoutList is a step's definition without its loop's list.
func withoutList(def any) any {
	m, ok := def.(map[string]any)
	if !ok {
		return def
	}
	loop, ok := m["loop"].(map[string]any)
	if !ok {
		return def
	}
	m, loop = maps.Clone(m), maps.Clone(loop)
	delete(loop, "in")
	m["loop"] = loop
	return m
}

// listChanged tells a reason that says only a loop's list changed: its
// elements are judged one by one.
func listChanged(why string) bool {
	return why == "loop.in changed" || strings.HasSuffix(why, "(read by loop.in)")
}

// firstChange is the path of the first difference between a and b, ""
// when they are equal.
func firstChange(a, b any, path string) string {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path
		}
		keys := maps.Clone(x)
		maps.Copy(keys, y)
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if p := firstChange(x[k], y[k], join(k)); p != "" {
				return p
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path
		}
		for i := range min(len(x), len(y)) {
			if p := firstChange(x[i], y[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		if len(x) != len(y) {
			return path
		}
		return ""
	}
	if sameValue(a, b) {
		return ""
	}
	return path
}

// A Read is an expression of a step and where it is in the step, as a
// path: "tool.env.MIN", "loop.in", "retry.retry_when".
type Read struct {
	Path string
	Expr *expr.Expr
}

// StepReads are the expressions of what a step does: its tool's
// templates, loop.in, retry_when and stop_when; not its `next`
// conditions, which route and are evaluated again on a reused result.
func StepReads(p *spec.Playbook, s *spec.Step) []Read {
	var out []Read
	if s.Tool != nil {
		templateReads(p, s.Tool.Spec, "tool", &out)
	}
	if s.Loop != nil && s.Loop.In != nil {
		out = append(out, Read{"loop.in", s.Loop.In})
	}
	if s.Retry != nil && s.Retry.RetryWhen != nil {
		out = append(out, Read{"retry.retry_when", s.Retry.RetryWhen})
	}
	if s.Retry != nil && s.Retry.StopWhen != nil {
		out = append(out, Read{"retry.stop_when", s.Retry.StopWhen})
	}
	return out
}

// FilesTakenFrom are the steps whose handed-on files step s takes or
// names: those of its inputs.from, and the steps its inputs.files
// templates, or its tool's templates that read a step's files, read.
func FilesTakenFrom(p *spec.Playbook, s *spec.Step) []string {
	var out []string
	if s.Files != nil {
		out = append(out, s.Files.From...)
	}
	var reads []Read
	if s.Files != nil {
		templateReads(p, s.Files.Spec(), "inputs.files", &reads)
	}
	for _, r := range StepReads(p, s) {
		if r.Expr != nil && strings.Contains(r.Expr.Source, "files") {
			reads = append(reads, r)
		}
	}
	for _, r := range reads {
		if r.Expr == nil {
			continue
		}
		out = append(out, r.Expr.StepRefs...)
		if r.Expr.ReadsAll["steps"] {
			// steps[name]: any step's files, as far as can be told.
			for _, u := range p.Steps {
				out = append(out, u.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ReadsLoopPosition tells whether a loop step's tool reads where an
// element stands (loop.index, loop.length): an element that completed is
// then reused only where its tool renders as it did, not wherever its
// item went.
func ReadsLoopPosition(p *spec.Playbook, s *spec.Step) bool {
	var reads []Read
	if s.Tool != nil {
		templateReads(p, s.Tool.Spec, "tool", &reads)
	}
	return slices.ContainsFunc(reads, func(r Read) bool { return r.Expr != nil && r.Expr.ReadsLoop })
}

// templateReads adds the expressions of the templates in v, a part of a
// tool's fields at path.
func templateReads(p *spec.Playbook, v any, path string, out *[]Read) {
	switch t := v.(type) {
	case string:
		if tpl := p.Templates()[t]; tpl != nil {
			for _, e := range tpl.Exprs() {
				*out = append(*out, Read{path, e})
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			templateReads(p, t[k], path+"."+k, out)
		}
	case []any:
		for i, e := range t {
			templateReads(p, e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// readerOf is the path of the first read whose expression reads what
// match says, "" when none does.
func readerOf(reads []Read, match func(*expr.Expr) bool) string {
	for _, r := range reads {
		if r.Expr != nil && match(r.Expr) {
			return r.Path
		}
	}
	return ""
}

// FilesRead are the absolute paths of the files a step reads by name:
// the scripts its command and recovery scripts name, and its sub-playbook
// with every file the sub-playbook's steps read, through texts (the
// frozen sub-playbooks). A relative path resolves against baseDir.
func FilesRead(s *spec.Step, baseDir string, texts map[string]string) []string {
	return filesRead(s, baseDir, texts, map[string]bool{})
}

// ownFiles are the files step s reads itself (its scripts, its reads),
// those of its sub-playbook's tree left out.
func ownFiles(s *spec.Step, baseDir string) []string {
	var out []string
	for _, w := range append(s.ScriptsNamed(), s.Reads...) {
		out = append(out, spec.SubPlaybookPath(baseDir, w))
	}
	return out
}

func filesRead(s *spec.Step, baseDir string, texts map[string]string, seen map[string]bool) []string {
	out := ownFiles(s, baseDir)
	if s.Tool == nil || s.Tool.Kind != "playbook" {
		return out
	}
	rel, _ := s.Tool.Spec["path"].(string)
	path := spec.SubPlaybookPath(baseDir, rel)
	out = append(out, path)
	if seen[path] {
		return out
	}
	seen[path] = true
	if sub, err := spec.Parse(path, []byte(texts[path])); err == nil {
		for _, ss := range sub.Steps {
			out = append(out, filesRead(ss, filepath.Dir(path), texts, seen)...)
		}
	}
	return out
}

// workloadRead are the workload keys exprs read, sorted; every key of
// either workload when one reads the workload as a whole.
func workloadRead(exprs []*expr.Expr, a, b map[string]any) []string {
	keys := map[string]bool{}
	for _, e := range exprs {
		if e == nil {
			continue
		}
		if e.ReadsAll["workload"] {
			for k := range a {
				keys[k] = true
			}
			for k := range b {
				keys[k] = true
			}
		}
		for _, k := range e.WorkloadRefs {
			keys[k] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// sameValue compares two workload values as JSON: 3 and 3.0 differ from
// "3", as the step would see them.
func sameValue(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// cleanupWarnings are a line for each cleanup step (on_failure: run or
// on_cancel: run) that ran in the earlier run and has reused steps upstream of it: whatever those left
// (files, tables) that step may have cleaned up.
func cleanupWarnings(p *spec.Playbook, reused, earlier map[string]*contract.StepState) []string {
	var out []string
	for _, s := range p.Steps {
		prev := earlier[s.Name]
		if !(s.OnFailureRun || s.OnCancelRun) || prev == nil || prev.StartedAt == nil || prev.Status == contract.StatusReused {
			continue
		}
		var up []string
		for _, u := range p.Steps {
			if reused[u.Name] != nil && u.Name != s.Name && slices.Contains(p.Downstream(u.Name), s.Name) {
				up = append(up, u.Name)
			}
		}
		if len(up) > 0 {
			out = append(out, fmt.Sprintf("%s (%s) ran in the earlier run after %s, which this run reuses: what %s left may have been cleaned up", s.Name, cleanupKey(s), strings.Join(up, ", "), strings.Join(up, ", ")))
		}
	}
	return out
}

// cleanupKey is the key that makes s a cleanup step, as a playbook writes it.
func cleanupKey(s *spec.Step) string {
	switch {
	case s.OnFailureRun && s.OnCancelRun:
		return "always: true"
	case s.OnCancelRun:
		return "on_cancel: run"
	}
	return "on_failure: run"
}

// RunsForItself tells whether step name runs only because it did not
// complete before (failed, cancelled, never ended), or, for a loop, its
// list changed (which its elements' tools show), with every step
// upstream of it reused and nothing else it reads changed: what it
// completed before may be reused within it (a loop's elements, a
// sub-playbook's steps), as its inputs render in the new run as they did.
// A sub-playbook step whose child's files changed runs for itself too,
// whether it completed before or not: its child's plan judges its steps
// by them; so does a loop some of whose elements' files are gone from
// the store: its elements whose files are there are reused.
func (p *ReusePlan) RunsForItself(pb *spec.Playbook, name string) bool {
	s := pb.Step(name)
	if s == nil || s.Tool == nil || p.Reuse[name] != nil {
		return false
	}
	i := slices.IndexFunc(p.Decisions, func(d ReuseDecision) bool { return d.Step == name })
	why := p.Decisions[i].Why
	gone := s.Loop != nil && strings.HasSuffix(why, filesGoneReason)
	if (!strings.HasSuffix(why, " before") || why == skippedBefore) && !(s.Loop != nil && listChanged(why)) && !gone && (why == "" || why != p.childChanged[name]) {
		return false
	}
	// What it reads changed (a value it passes down, a script it runs):
	// nothing it completed within it stands, but for a loop whose list
	// alone changed, whose elements are matched by the tool they render.
	for _, c := range p.inputs[name] {
		if s.Loop == nil || !listChanged(c) {
			return false
		}
	}
	for _, u := range pb.Steps {
		if p.Reuse[u.Name] == nil && u.Name != name && slices.Contains(pb.Downstream(u.Name), name) {
			return false
		}
	}
	return true
}

// LoopElements are loop step name's list and each element's rendered
// tool, as the new run (now, reusing plan.Reuse) will render them.
func (p *ReusePlan) LoopElements(now RetrySide, name string) ([]any, []map[string]any, error) {
	var opts []RunOption
	if t, err := time.Parse(time.RFC3339, now.LogicalTime); err == nil {
		opts = append(opts, WithLogicalTime(t))
	}
	run := NewRun(now.Playbook, now.Workload, now.RunID, func() time.Time { return time.Time{} }, opts...)
	run.Reuse(p.Reuse)
	s := now.Playbook.Step(name)
	items, err := run.LoopItems(s)
	if err != nil {
		return nil, nil, err
	}
	specs, err := run.RenderLoop(s, items)
	return items, specs, err
}
