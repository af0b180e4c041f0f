package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// reuseBase is the earlier run's playbook of the table below: fetch, then
// transform (reading workload.rate) and audit side by side, then load.
const reuseBase = `metadata: {name: t}
workload: {rate: 1, dir: /tmp}
workflow:
  - step: fetch
    tool: {kind: shell, command: ./fetch.sh, env: {D: "{{ workload.dir }}"}}
    next: [transform, audit]
  - step: transform
    tool: {kind: noop, result: "{{ workload.rate }}"}
    next: load
  - step: audit
    tool: {kind: noop, result: "{{ run.logical_time }}"}
  - step: load
    tool: {kind: noop}
`

func TestPlanReuse(t *testing.T) {
	completed := map[string]*contract.StepState{
		"fetch":     {Status: contract.StatusCompleted},
		"transform": {Status: contract.StatusCompleted},
		"audit":     {Status: contract.StatusCompleted},
		"load":      {Status: contract.StatusCompleted},
		"end":       {Status: contract.StatusCompleted},
	}
	failed := map[string]*contract.StepState{
		"fetch":     {Status: contract.StatusCompleted},
		"transform": {Status: contract.StatusFailed},
		"audit":     {Status: contract.StatusCompleted},
		"load":      {Status: contract.StatusSkipped, OriginalFailedStep: new(string)},
	}
	for _, c := range []struct {
		name    string
		edit    func(string) string // the new playbook's text
		earlier map[string]*contract.StepState
		set     map[string]any // the new run's workload
		from    string
		script  string // fetch.sh's digest now
		time    string
		gone    map[string]string // the earlier side's FilesGone
		want    string            // fetch/transform/audit/load: why, "" reused
	}{
		{name: "nothing changed", earlier: completed, want: "|||"},
		{name: "a failed step and its downstream", earlier: failed, want: "|failed before||upstream transform runs again"},
		{name: "a changed command", earlier: completed, edit: func(s string) string { return strings.Replace(s, "./fetch.sh", "./fetch.sh --all", 1) },
			want: "tool.command changed|upstream fetch runs again|upstream fetch runs again|upstream transform runs again"},
		{name: "key order and layout do not count", earlier: completed, edit: func(s string) string {
			return strings.Replace(s, `tool: {kind: noop, result: "{{ workload.rate }}"}`, "tool:\n      result: '{{ workload.rate }}'\n      kind: noop", 1)
		}, want: "|||"},
		{name: "desc does not count", earlier: completed, edit: func(s string) string {
			return strings.Replace(s, "  - step: load\n", "  - step: load\n    desc: loads\n", 1)
		}, want: "|||"},
		{name: "a workload value read", earlier: completed, set: map[string]any{"rate": 2}, want: "|workload.rate changed (read by tool.result)||upstream transform runs again"},
		{name: "the same value, another type", earlier: completed, set: map[string]any{"rate": 1.0}, want: "|||"},
		{name: "--from", earlier: completed, from: "transform", want: "|--from||upstream transform runs again"},
		{name: "a script changed", earlier: completed, script: "new", want: "fetch.sh changed|upstream fetch runs again|upstream fetch runs again|upstream transform runs again"},
		{name: "the logical time, read by audit only", earlier: completed, time: "2026-01-02T00:00:00Z", want: "||run.logical_time changed (read by tool.result)|"},
		{name: "a new step upstream", earlier: completed, edit: func(s string) string {
			s = strings.Replace(s, "  - step: load\n", "  - step: check\n    tool: {kind: noop}\n    next: load\n  - step: load\n", 1)
			return strings.Replace(s, "    next: load\n  - step: audit", "    next: check\n  - step: audit", 1)
		}, want: "|||upstream check runs again"},
		{name: "an env value changed", earlier: completed, edit: func(s string) string { return strings.Replace(s, `D: "{{ workload.dir }}"`, `D: "/srv"`, 1) },
			want: "tool.env.D changed|upstream fetch runs again|upstream fetch runs again|upstream transform runs again"},
		{name: "a workload value read by env", earlier: completed, set: map[string]any{"dir": "/srv"},
			want: "workload.dir changed (read by tool.env.D)|upstream fetch runs again|upstream fetch runs again|upstream transform runs again"},
		{name: "a retry block added", earlier: completed, edit: func(s string) string {
			return strings.Replace(s, "    next: load\n", "    retry: {max_attempts: 3}\n    next: load\n", 1)
		}, want: "|retry changed||upstream transform runs again"},
		{name: "routing is not what a step does", earlier: completed, edit: func(s string) string {
			return strings.Replace(s, "    next: [transform, audit]\n", "    next:\n      - when: \"workload.rate > 0\"\n        then: [transform, audit]\n", 1)
		}, want: "|||"},
		{name: "a step whose files are gone", earlier: completed, gone: map[string]string{"transform": "out/a.csv"},
			want: "|its file out/a.csv is gone from the store||upstream transform runs again"},
		{name: "files gone of a step that runs anyway", earlier: failed, gone: map[string]string{"transform": "a.csv", "audit": "b.csv"},
			want: "|failed before|its file b.csv is gone from the store|upstream transform runs again"},
		{name: "a step not in the earlier run", earlier: map[string]*contract.StepState{"fetch": {Status: contract.StatusCompleted}}, want: "|not in the earlier run|not in the earlier run|not in the earlier run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := reuseBase
			if c.edit != nil {
				src = c.edit(src)
			}
			before := side(t, reuseBase, nil, "old", "2026-01-01T00:00:00Z")
			before.FilesGone = c.gone
			script, lt := "old", "2026-01-01T00:00:00Z"
			if c.script != "" {
				script = c.script
			}
			if c.time != "" {
				lt = c.time
			}
			now := side(t, src, c.set, script, lt)
			plan, err := PlanReuse(before, now, c.earlier, c.from)
			require.NoError(t, err)
			var got []string
			for _, d := range plan.Decisions {
				if d.Step != spec.EndStep && d.Step != "check" {
					got = append(got, d.Why)
				}
				require.Equal(t, d.Reused, plan.Reuse[d.Step] != nil)
			}
			require.Equal(t, c.want, strings.Join(got, "|"))
		})
	}
}

func side(t *testing.T, src string, set map[string]any, script, logicalTime string) RetrySide {
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	return RetrySide{Playbook: pb, Definitions: spec.StepDefinitions([]byte(src)), Workload: spec.MergeWorkload(pb.Workload, set),
		BaseDir: "/w", Files: map[string]string{"/w/fetch.sh": script}, LogicalTime: logicalTime}
}

// A file a step declares it reads (`reads`) is judged as a script it runs:
// changed, the step runs again and the plan names the file; a changed
// `reads` list is a change of the step's definition.
func TestPlanReuseJudgesTheFilesAStepReads(t *testing.T) {
	src := strings.Replace(reuseBase, "  - step: transform\n", "  - step: transform\n    reads: [data/ref.csv]\n", 1)
	completed := map[string]*contract.StepState{"fetch": {Status: contract.StatusCompleted}, "transform": {Status: contract.StatusCompleted},
		"audit": {Status: contract.StatusCompleted}, "load": {Status: contract.StatusCompleted}}
	for _, c := range []struct {
		name, now, ref, want string
	}{
		{"unchanged", src, "v1", ""},
		{"the file changed", src, "v2", "data/ref.csv changed"},
		{"another file declared", strings.Replace(src, "data/ref.csv", "data/other.csv", 1), "v1", "reads[0] changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, now := side(t, src, nil, "old", ""), side(t, c.now, nil, "old", "")
			before.Files["/w/data/ref.csv"], now.Files["/w/data/ref.csv"] = "v1", c.ref
			plan, err := PlanReuse(before, now, completed, "")
			require.NoError(t, err)
			require.Equal(t, "transform", plan.Decisions[1].Step)
			require.Equal(t, c.want, plan.Decisions[1].Why)
		})
	}
}

func TestPlanReuseWarnsOfACleanupThatRan(t *testing.T) {
	src := `metadata: {name: t}
workflow:
  - {step: fetch, tool: {kind: noop}, next: work}
  - {step: work, tool: {kind: noop}, next: cleanup}
  - {step: cleanup, on_failure: run, tool: {kind: noop}}
`
	ran := contract.StepState{Status: contract.StatusCompleted, StartedAt: &time.Time{}}
	earlier := map[string]*contract.StepState{"fetch": {Status: contract.StatusCompleted}, "work": {Status: contract.StatusFailed}, "cleanup": &ran}
	s := side(t, src, nil, "", "")
	plan, err := PlanReuse(s, s, earlier, "")
	require.NoError(t, err)
	require.Equal(t, []string{"cleanup (on_failure: run) ran in the earlier run after fetch, which this run reuses: what fetch left may have been cleaned up"}, plan.Warnings)
	_, err = PlanReuse(s, s, earlier, "end")
	require.EqualError(t, err, `no step "end" to retry from in playbook t`)

	// A cleanup step that ran after a cancel warns the same way.
	for key, shown := range map[string]string{"on_cancel: run": "on_cancel: run", "always: true": "always: true"} {
		s := side(t, strings.Replace(src, "on_failure: run", key, 1), nil, "", "")
		plan, err := PlanReuse(s, s, earlier, "")
		require.NoError(t, err)
		require.Equal(t, []string{"cleanup (" + shown + ") ran in the earlier run after fetch, which this run reuses: what fetch left may have been cleaned up"}, plan.Warnings)
	}
}

// A value only a step's `next` reads does not make it run: it is reused,
// and its arcs are evaluated again on its result with the new value.
func TestPlanReuseRoutesAReusedStepAgain(t *testing.T) {
	src := `metadata: {name: t}
workload: {min_rows: 5}
workflow:
  - step: extract
    tool: {kind: noop, result: 10}
    next:
      - when: "steps.extract.result > workload.min_rows"
        then: big
      - else: small
  - {step: big, tool: {kind: noop}}
  - {step: small, tool: {kind: noop}}
`
	earlier := map[string]*contract.StepState{
		"extract": {Status: contract.StatusCompleted, Result: 10.0, TakenNext: []string{"big"}},
		"big":     {Status: contract.StatusCompleted},
		"small":   {Status: contract.StatusSkipped},
	}
	before := side(t, src, nil, "", "")
	plan, err := PlanReuse(before, side(t, src, map[string]any{"min_rows": 20}, "", ""), earlier, "")
	require.NoError(t, err)
	var got []string
	for _, d := range plan.Decisions {
		got = append(got, d.Step+": "+d.Why)
	}
	require.Equal(t, []string{"extract: ", "big: no branch leads to it now", "small: skipped before", "end: the end step always runs"}, got)
	require.Equal(t, []string{"small"}, plan.Reuse["extract"].TakenNext, "routed by the new value")
	require.Equal(t, []string{"big"}, earlier["extract"].TakenNext, "the earlier states are left as they were")

	plan, err = PlanReuse(before, before, earlier, "")
	require.NoError(t, err)
	require.Equal(t, []string{"big"}, plan.Reuse["extract"].TakenNext)
	require.NotNil(t, plan.Reuse["big"])
}

// A step no branch led to before, that a reused step's arcs lead to now,
// runs: the steps downstream of it read it skipped, and run again too
// (a join reused here kept the result it made without it).
func TestPlanReuseRunsWhatAStepNowLedToFeeds(t *testing.T) {
	src := `metadata: {name: t}
workload: {go_b: false}
workflow:
  - step: a
    tool: {kind: noop, result: 1}
    next:
      - when: "workload.go_b"
        then: [b]
      - else: [c]
  - {step: b, tool: {kind: noop, result: "b ran"}, next: d}
  - {step: c, tool: {kind: noop, result: "c ran"}, next: d}
  - {step: d, tool: {kind: noop, result: "b {{ steps.b.status }}"}, next: e}
  - {step: e, tool: {kind: noop}}
`
	earlier := map[string]*contract.StepState{
		"a": {Status: contract.StatusCompleted, Result: 1.0, TakenNext: []string{"c"}},
		"b": {Status: contract.StatusSkipped},
		"c": {Status: contract.StatusCompleted, Result: "c ran", TakenNext: []string{"d"}},
		"d": {Status: contract.StatusCompleted, Result: "b skipped", TakenNext: []string{"e"}},
		"e": {Status: contract.StatusCompleted, TakenNext: []string{}},
	}
	before := side(t, src, nil, "", "")
	for _, c := range []struct {
		name string
		set  map[string]any
		want []string
	}{
		{"routed as before", nil, []string{"a: ", "b: skipped before", "c: ", "d: ", "e: ", "end: the end step always runs"}},
		{"routed to b now", map[string]any{"go_b": true}, []string{"a: ", "b: skipped before", "c: no branch leads to it now",
			"d: upstream b runs again", "e: upstream d runs again", "end: the end step always runs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := side(t, src, c.set, "", "")
			plan, err := PlanReuse(before, now, earlier, "")
			require.NoError(t, err)
			var got []string
			for _, d := range plan.Decisions {
				got = append(got, d.Step+": "+d.Why)
				require.Equal(t, d.Why == "", plan.Reuse[d.Step] != nil, d.Step)
			}
			require.Equal(t, c.want, got)

			// The new run, as the workflow runs it with this plan.
			r := NewRun(now.Playbook, now.Workload, "t-2", func() time.Time { return time.Time{} })
			r.Reuse(plan.Reuse)
			for ready := r.Ready(); len(ready) > 0; ready = r.Ready() {
				for _, s := range ready {
					tool, err := r.RenderTool(s)
					require.NoError(t, err)
					r.Complete(s.Name, tool["result"], 1)
				}
			}
			if c.set != nil {
				require.Equal(t, "b ran", r.State("b").Result)
				require.Equal(t, "b completed", r.State("d").Result, "d ran after b, not reused from when b was skipped")
			} else {
				require.Equal(t, contract.StatusReused, r.State("d").Status)
			}
		})
	}
}

// A loop whose list alone changed runs for its elements; one whose tool
// changed runs whole, and says so first.
func TestPlanReuseJudgesALoopsListApart(t *testing.T) {
	src := `metadata: {name: t}
workflow:
  - step: each
    loop: {in: "[1, 2, 3]"}
    tool: {kind: shell, command: "echo $I", env: {I: "{{ item }}"}}
`
	earlier := map[string]*contract.StepState{"each": {Status: contract.StatusCompleted}}
	before := side(t, src, nil, "", "")
	for edit, want := range map[string]struct {
		why      string
		elements bool
	}{
		`[1, 2, 3, 4]"}`:                       {"loop.in changed", true},
		`[1, 2, 3, 4]"}` + "\n    timeout: 5s": {"timeout changed", false},
	} {
		now := side(t, strings.Replace(src, `[1, 2, 3]"}`, edit, 1), nil, "", "")
		plan, err := PlanReuse(before, now, earlier, "")
		require.NoError(t, err)
		require.Equal(t, want.why, plan.Decisions[0].Why)
		require.Equal(t, want.elements, plan.RunsForItself(now.Playbook, "each"), edit)
	}
}

// A step that failed before runs for itself, and what it completed within
// it (a loop's elements, a sub-playbook's steps) may be reused, only when
// nothing else it reads changed: not when the script it runs changed, nor
// a workload value it passes down.
func TestRunsForItselfOnlyWhenItsInputsStand(t *testing.T) {
	loop := `metadata: {name: t}
workload: {region: us}
workflow:
  - step: each
    loop: {in: "[1, 2, 3]"}
    tool: {kind: shell, command: "./fetch.sh $I", env: {I: "{{ item }}"}}
`
	sub := `metadata: {name: t}
workload: {region: us}
workflow:
  - step: child
    tool: {kind: playbook, path: child.yaml, workload: {region: "{{ workload.region }}"}}
`
	failed := map[string]*contract.StepState{"each": {Status: contract.StatusFailed}, "child": {Status: contract.StatusFailed}}
	for _, c := range []struct {
		name, src, step string
		set             map[string]any
		script          string
		want            bool
	}{
		{"a failed loop, nothing changed", loop, "each", nil, "v1", true},
		{"a failed loop whose script changed", loop, "each", nil, "v2", false},
		{"a failed sub-playbook, nothing changed", sub, "child", nil, "v1", true},
		{"a failed sub-playbook given another value", sub, "child", map[string]any{"region": "eu"}, "v1", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := side(t, c.src, nil, "v1", "")
			now := side(t, c.src, c.set, c.script, "")
			plan, err := PlanReuse(before, now, failed, "")
			require.NoError(t, err)
			require.Equal(t, "failed before", plan.Decisions[0].Why)
			require.Equal(t, c.want, plan.RunsForItself(now.Playbook, c.step))
		})
	}
}

// A completed loop some of whose elements' files are gone runs for
// itself: its elements whose files are there are reused. Not when what it
// reads changed too, nor a step that is not a loop.
func TestALoopWhoseFilesAreGoneRunsForItself(t *testing.T) {
	src := `metadata: {name: t}
workflow:
  - step: each
    loop: {in: "[1, 2, 3]"}
    tool: {kind: shell, command: "./fetch.sh $I", env: {I: "{{ item }}"}}
  - step: one
    tool: {kind: shell, command: "./fetch.sh"}
`
	completed := map[string]*contract.StepState{"each": {Status: contract.StatusCompleted}, "one": {Status: contract.StatusCompleted}}
	for _, c := range []struct {
		name, script string
		want         bool
	}{{"nothing else changed", "v1", true}, {"its script changed too", "v2", false}} {
		t.Run(c.name, func(t *testing.T) {
			before := side(t, src, nil, "v1", "")
			before.FilesGone = map[string]string{"each": "[1]/part.txt", "one": "out.txt"}
			now := side(t, src, nil, c.script, "")
			plan, err := PlanReuse(before, now, completed, "")
			require.NoError(t, err)
			if c.want {
				require.Equal(t, "its file [1]/part.txt is gone from the store", plan.Decisions[0].Why)
				require.Equal(t, "its file out.txt is gone from the store", plan.Decisions[1].Why)
			}
			require.Equal(t, c.want, plan.RunsForItself(now.Playbook, "each"))
			require.False(t, plan.RunsForItself(now.Playbook, "one"), "a step that is not a loop runs whole")
		})
	}
}

// A sub-playbook step whose child's files changed (its playbook, a script
// a child step runs) runs as a retry of its child, whose plan judges each
// child step by them: a fix to the child's failing step does not run the
// child's completed steps again. Not so when a step upstream of it runs,
// or a value it passes down changed.
func TestASubPlaybookWhoseChildChangedRunsForItself(t *testing.T) {
	parent := `metadata: {name: t}
workload: {region: us}
workflow:
  - {step: prep, tool: {kind: shell, command: ./prep.sh}, next: sub}
  - step: sub
    tool: {kind: playbook, path: child.yaml, workload: {region: "{{ workload.region }}"}}
`
	child := `metadata: {name: c}
workload: {region: us}
workflow:
  - {step: one, tool: {kind: shell, command: ./one.sh}, next: two}
  - {step: two, tool: {kind: shell, command: ./two.sh}}
`
	sideOf := func(set map[string]any, files map[string]string) RetrySide {
		s := side(t, parent, set, "", "")
		s.Texts = map[string]string{"/w/child.yaml": child}
		s.Files = files
		return s
	}
	digests := func(changes ...string) map[string]string {
		f := map[string]string{"/w/prep.sh": "p", "/w/child.yaml": "c", "/w/one.sh": "1", "/w/two.sh": "2"}
		for _, c := range changes {
			f[c] += "'"
		}
		return f
	}
	failed := map[string]*contract.StepState{"prep": {Status: contract.StatusCompleted}, "sub": {Status: contract.StatusFailed}}
	completed := map[string]*contract.StepState{"prep": {Status: contract.StatusCompleted}, "sub": {Status: contract.StatusCompleted}}
	for _, c := range []struct {
		name    string
		earlier map[string]*contract.StepState
		set     map[string]any
		changed []string
		why     string
		want    bool
	}{
		{"failed, a child step's script fixed", failed, nil, []string{"/w/two.sh"}, "failed before", true},
		{"failed, the child's playbook fixed", failed, nil, []string{"/w/child.yaml"}, "failed before", true},
		{"completed, a child step's script changed", completed, nil, []string{"/w/two.sh"}, "two.sh changed", true},
		{"failed, a step upstream changed", failed, nil, []string{"/w/prep.sh", "/w/two.sh"}, "failed before", false},
		{"failed, a value passed down changed", failed, map[string]any{"region": "eu"}, []string{"/w/two.sh"}, "failed before", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := PlanReuse(sideOf(nil, digests()), sideOf(c.set, digests(c.changed...)), c.earlier, "")
			require.NoError(t, err)
			require.Equal(t, "sub", plan.Decisions[1].Step)
			require.Equal(t, c.why, plan.Decisions[1].Why)
			require.Equal(t, c.want, plan.RunsForItself(sideOf(c.set, nil).Playbook, "sub"))
		})
	}
}

// The steps whose files a step takes: inputs.from, the steps its
// inputs.files templates read, and every step when one reads steps[name].
func TestFilesTakenFrom(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workload: {s: make}
workflow:
  - step: make
    tool: {kind: shell, command: "true"}
    outputs: {files: [a.txt]}
  - step: other
    tool: {kind: shell, command: "true"}
    outputs: {files: [b.txt]}
  - step: from
    depends_on: [make, other]
    tool: {kind: shell, command: "true"}
    inputs: {from: [make]}
  - step: named
    depends_on: [make, other]
    tool: {kind: shell, command: "true"}
    inputs: {files: {x: "{{ steps.other.files['b.txt'] }}"}}
  - step: any
    depends_on: [make, other]
    tool: {kind: shell, command: "true"}
    inputs: {files: {x: "{{ steps[workload.s].files['a.txt'] }}"}}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"make"}, FilesTakenFrom(pb, pb.Step("from")))
	require.Equal(t, []string{"other"}, FilesTakenFrom(pb, pb.Step("named")))
	require.Contains(t, FilesTakenFrom(pb, pb.Step("any")), "make")
	require.Empty(t, FilesTakenFrom(pb, pb.Step("make")))
}
