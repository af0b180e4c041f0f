package expr

import (
	"fmt"
	"reflect"
	"testing"
)

// The guarded program (Guarded) gives exactly what the program
// as written gives, but where it fails with a truncated read: a run from
// before "truncated-reads" replays as it ran whenever the guard is on
// (an old history takes the value as written where the read is past a
// stub). About 270 expressions over an environment with stubs beside
// ordinary data, under each null-safety rule.
func TestGuardedReadsAsWritten(t *testing.T) {
	stub := Truncated(3<<20, 1<<20, "x")
	jstub := map[string]any{"truncated": true, "bytes": 3145728.0, "budget": 1048576.0, "full_in": "x"}
	env := map[string]any{
		"execution_id": "e-1",
		"playbook":     map[string]any{"name": "p"},
		"run":          map[string]any{"logical_time": "2024-01-02T03:04:05Z", "timed_out": false},
		"trigger":      nil,
		"workload":     map[string]any{"w": stub, "k": "v", "list": []any{stub, map[string]any{"x": 1}}, "n": 2, "nilv": nil},
		"steps": map[string]any{
			"big": map[string]any{"status": "completed", "error": nil, "attempts": 1, "result": map[string]any{
				"json": stub, "j2": jstub, "n": 3.0, "s": "héllo", "list": []any{1.0, 2.0, 3.0}, "nilv": nil,
				"rows":   []any{map[string]any{"id": "a", "x": map[string]any{"y": 1.0}}, map[string]any{"id": "b", "x": nil}, stub},
				"nested": map[string]any{"a": map[string]any{"b": 1.0}}, "when": "2024-01-02T03:04:05Z",
				"stubs": []any{stub, stub}, "empty": []any{}, "m": map[string]any{"truncated": true, "bytes": 1, "budget": 1, "full_in": "y"},
			}},
			"cut":    map[string]any{"status": "completed", "error": nil, "attempts": 1, "result": stub},
			"failed": map[string]any{"status": "failed", "result": nil, "attempts": 2, "error": map[string]any{"type": "x", "message": "m", "details": nil}},
		},
		"item": stub,
		"loop": map[string]any{"index": 0, "length": 2},
	}
	exprs := []string{
		`steps.big.result.json.truncated`, `steps.big.result.json.bytes`, `steps.big.result.json["full_in"]`, `steps.big.result.json?.budget`,
		`steps.big.result.json.n`, `steps.big.result.json?.n`, `steps.big.result.json.n ?? "d"`, `steps.big.result.json?.n ?? "d"`,
		`len(steps.big.result.json)`, `len(steps.cut.result)`, `steps.cut.result[0]`, `steps.cut.result[-1]`,
		`"n" in steps.big.result.json`, `"truncated" in steps.big.result.json`, `steps.big.result.json == nil`, `steps.big.result.json ?? 1`,
		`steps.big.result.n`, `steps.big.result.n + 1`, `steps.big.result.s`, `len(steps.big.result.s)`, `steps.big.result.s[1]`, `steps.big.result.s[-1]`,
		`steps.big.result.s[1:3]`, `steps.big.result.list[1:2]`, `steps.big.result.list[-1]`, `steps.big.result.list[5]`, `steps.big.result.list[-5]`,
		`steps.big.result.list?.[1]`, `steps.big.result.nilv?.a.b`, `steps.big.result.nilv?.a.b ?? "d"`, `steps.big.result.nilv.a`, `steps.big.result.nilv?.a`,
		`steps.nope?.result.json.n`, `steps.nope?.result.json.n ?? "d"`, `steps.nope.result`, `steps["big"].result.nested.a.b`, `steps.big.result.nested?.a?.b`,
		`steps.big.result.nested.a.c`, `steps.big.result.nested.a.c.d`, `steps.big.result.nested.a.c?.d`,
		`filter(steps.big.result.rows, .x.y == 1)[0].id`, `filter(steps.big.result.rows, #.x?.y == 1)[0].id`, `filter(steps.big.result.rows, .id == "zz")[0]`,
		`len(filter(steps.big.result.rows, .x.y == 1)) > 0`, `count(steps.big.result.rows, .x?.y == 1)`, `any(steps.big.result.rows, .id == "b")`,
		`map(steps.big.result.rows, .id)`, `map(steps.big.result.rows, #?.id)`, `map(steps.big.result.list, # * 2)`, `filter(steps.big.result.rows, .truncated)`,
		`find(steps.big.result.rows, .id == "b")`, `findLast(steps.big.result.rows, .truncated == true)`, `filter(steps.big.result.rows, .id == "a")[-1].id`,
		`first(steps.big.result.stubs)`, `last(steps.big.result.stubs).bytes`, `steps.big.result.stubs[0].truncated`, `steps.big.result.stubs[1].x`, `len(steps.big.result.stubs)`,
		`sum(map(steps.big.result.list, #))`, `reduce(steps.big.result.list, #acc + #, 0)`, `sortBy(steps.big.result.rows[0:2], .id)[0].id`,
		`groupBy(steps.big.result.rows[0:2], .id)["a"][0].id`, `toJSON(steps.big.result.json)`, `keys(steps.big.result.json)`, `values(steps.cut.result)`,
		`get(steps.big.result.json, "n")`, `get(steps.big.result.json, "bytes")`, `get(steps.big.result, "json").n`,
		`let r = steps.big.result; r.json.n`, `let r = steps.big.result; r.n * 2`, `steps.big.result.list | map(# + 1) | filter(# > 2)`, `steps.big.result.rows | first() | get("id")`,
		`{"a": steps.big.result.json}.a.n`, `{"a": steps.big.result.n}.a`, `[steps.big.result.n, 2][0]`, `[1, 2, 3][1]`, `[1, 2][0] in [1, 2]`, `{"a": 1}.a + 1`,
		`{"a": 1}?.b`, `{"a": {"b": nil}}.a.b?.c`, `[1,2,3][-1]`, `[1, 2][0] == 1.0`, `["a","b"][0] in ["a"]`, `[1,2][0] in [1.0]`,
		`$env.steps.big.result.n`, `$env["steps"]["big"].result.json.n`, `$env.workload.k`, `"steps" in $env`, `$env?.nope?.x`,
		`workload.k`, `workload.w`, `workload.w.x`, `workload.w.truncated`, `workload.list[0].x`, `workload.list[1].x`, `len(workload.list)`, `workload.nilv?.x`,
		`workload.n > 1`, `workload.nope`, `workload["w"]["bytes"]`,
		`date(steps.big.result.when).Year()`, `date(steps.big.result.when).Unix()`, `[date(steps.big.result.when)][0].Year()`, `{"d": date("2024-01-02")}.d.Month()`,
		`duration("1h").Hours()`, `[duration("90m")][0].Minutes()`, `date(run.logical_time).Add(duration("1h")).Format("15:04")`,
		`steps.failed.error.type`, `steps.failed.error.details.x`, `steps.failed.result.x`, `steps.failed.result?.x`, `steps.failed.attempts >= 2`,
		`item.x`, `item.truncated`, `item?.x`, `loop.index`, `loop.length - 1`, `item[0]`, `item["bytes"] > 0`,
		`steps.big.result.m.truncated`, `steps.big.result.m.x`, `steps.big.result.j2.x`, `steps.big.result.j2.bytes`, `len(steps.big.result.j2)`,
		`steps.big.result.json[nil]`, `steps.big.result.json[1]`, `steps.big.result.list[1.0]`, `steps.big.result.list["a"]`,
		`upper(steps.big.result.s)`, `steps.big.result.s contains "é"`, `steps.big.result.s matches "^h"`, `trim(" " + steps.big.result.s)`,
		`string(steps.big.result.json)`, `type(steps.big.result.json)`, `type(steps.big.result.list[0])`, `int(steps.big.result.n) % 2`,
		`steps.big.result.n in steps.big.result.list`, `1..int(steps.big.result.n)`, `none(steps.big.result.list, # > 5)`, `one(steps.big.result.list, # == 2)`,
		`steps.big.result.rows[0].x.y > 0 ? "y" : "n"`, `steps.big.result.rows[1].x?.y > 0`, `steps.big.result.rows[1].x.y > 0`,
		`execution_id + "-" + playbook.name`, `run.timed_out`, `trigger?.x`, `trigger.x`, `nil?.x`,
		`steps.big.result.list[0:1][0]`, `len(steps.big.result.list[1:])`, `concat(steps.big.result.list, [4])[3]`, `flatten([steps.big.result.list])[2]`,
		`uniq(steps.big.result.list)[0]`, `sort(steps.big.result.list)[0]`, `max(steps.big.result.list)`, `mean(steps.big.result.list)`,
		`steps.big.result?.rows?.[2]?.id`, `steps.big.result.rows[2].id`, `steps.big.result.rows[2].truncated`,
		`steps.big.result.empty[0]`, `steps.big.result.empty?.[0]`, `first(steps.big.result.empty)`, `len(steps.big.result.empty) == 0`,
	}
	safeties := []Safety{0, NullMembers, NullOrderings, NullOrderings | NullMembers}
	bad := 0
	for _, src := range exprs {
		e, err := CompileExprAt(src, 0, ScopeStep, false, "item", "loop")
		if err != nil {
			t.Logf("compile %s: %v", src, err)
			continue
		}
		bad += guardedDiffers(t, src, e, env, safeties...)
	}
	t.Logf("%d expressions, %d differ", len(exprs), bad)
}

func TestGuardedReadsAsWrittenAtTheEnd(t *testing.T) {
	stub := Truncated(3<<20, 1<<20, "x")
	type inner struct{ Type, Message string }
	env := map[string]any{
		"workload": map[string]any{}, "execution_id": "e", "playbook": map[string]any{"name": "p"}, "run": map[string]any{},
		"steps": map[string]any{
			"l": map[string]any{"status": "failed", "result": nil, "error": map[string]any{"type": "loop", "details": map[string]any{"index": 1, "error": &inner{"x", "m"}, "nilp": (*inner)(nil), "s": stub}}},
			"c": map[string]any{"status": "completed", "result": stub},
		},
		"failed_steps": []string{"l"}, "failed_steps_count": 1, "total_steps": 2, "warning_steps": []string{}, "warning_steps_count": 0,
	}
	bad := 0
	for _, src := range []string{
		`failed_steps[0]`, `failed_steps[-1]`, `failed_steps[0] in ["l"]`, `failed_steps[0] + "!"`, `len(failed_steps[0])`, `warning_steps?.[0]`,
		`steps[failed_steps[0]].error.type`, `steps.l.error.details.error.Type`, `steps.l.error.details.error?.Message`, `steps.l.error.details.nilp?.Type`,
		`steps.l.error.details.nilp == nil`, `steps.l.error.details?.nilp?.Type ?? "d"`, `steps.l.error.details.s.bytes`, `steps.l.error.details.s.x`,
		`map(failed_steps, steps[#].status)`, `all(failed_steps, steps[#]?.error?.type == "loop")`, `steps.c.result.x == nil`, `steps.c.result?.x ?? "none"`,
		`filter(failed_steps, #index == 0)[0]`, `failed_steps | map(#index)`, `steps.l.error.details.error.Nope`,
	} {
		e, err := CompileExprAt(src, 0, ScopeEnd, false)
		if err != nil {
			t.Logf("compile %s: %v", src, err)
			continue
		}
		bad += guardedDiffers(t, src, e, env, 0, NullMembers, NullOrderings|NullMembers)
	}
	t.Logf("%d differ", bad)
}

func TestGuardedReadsAsWrittenTyped(t *testing.T) {
	stub := Truncated(3<<20, 1<<20, "x")
	env := map[string]any{"workload": map[string]any{}, "execution_id": "e", "playbook": map[string]any{"name": "p"}, "run": map[string]any{},
		"steps": map[string]any{"c": map[string]any{"status": "completed", "result": stub}, "a": map[string]any{"result": map[string]any{"ok": true, "n": 2}}}}
	bad := 0
	for _, asBool := range []bool{false, true} {
		for _, src := range []string{
			`1..[3][0]`, `[1,2][0] ** 2`, `"abc"[0:1][0]`, `{"a": [1]}.a[0] + 1`, `-[1][0]`, `![true][0]`, `[true][0] && true`, `[true][0] ? 1 : 2`,
			`not [false][0]`, `[1][0] % 2`, `["a"][0] matches "a"`, `["a"][0] startsWith "a"`, `[[1]][0][0]`, `[1][0] | string()`, `bitand([3][0], 1)`,
			`[true][0]`, `steps.a.result.ok`, `len(steps.a.result) > 0`, `steps.a.result.n > 1 and [true][0]`, `[1, 2][0] / 2`, `[2][0] == 2`, `[2.5][0] > 2`,
			`{"a": true}.a`, `{"a": true}?.a`, `[{"x": true}][0].x`, `[1,2,3][0:2][1] == 2`, `int([1.5][0])`, `float([1][0])`, `abs(-[1][0])`, `[1][0] in 1..3`,
			`[duration("1h")][0] > duration("30m")`, `[date("2024-01-01")][0] < date("2025-01-01")`, `[date("2024-01-01")][0] - [date("2023-01-01")][0]`,
			`date("2024-01-01") + [duration("1h")][0]`, `steps.c.result.truncated`, `steps.c.result?.truncated`,
		} {
			e, err := CompileExprAt(src, 0, ScopeStep, asBool)
			if err != nil {
				continue
			}
			bad += guardedDiffers(t, src, e, env, 0, NullMembers, NullOrderings|NullMembers)
		}
	}
	t.Logf("%d differ", bad)
}

// guardedDiffers compares e evaluated as written and guarded, under each
// of safeties, against env, and tells how many differ other than by a
// truncated read.
func guardedDiffers(t *testing.T, src string, e *Expr, env map[string]any, safeties ...Safety) int {
	t.Helper()
	bad := 0
	for _, s := range safeties {
		v0, e0 := e.EvalWith(env, s)
		vg, eg := e.EvalWith(env, s|Guarded)
		if eg != nil && IsTruncatedRead(eg) {
			continue
		}
		if fmt.Sprint(e0) != fmt.Sprint(eg) || !reflect.DeepEqual(v0, vg) {
			bad++
			t.Errorf("%s (safety %d): as written %#v, %v; guarded %#v, %v", src, s, v0, e0, vg, eg)
		}
	}
	return bad
}
