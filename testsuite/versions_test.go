package testsuite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
)

// newSides are playbooks whose runs reach the point of each change (docs/
// VERSIONING.md) on today's interpreter: they record its marker and take
// its new side. `make histories` keeps their histories as
// change_<id>.json, the corpus's proof that runs started after each change
// replay (TestReplayRecordedHistories). lost-attempts-retried needs a
// worker killed under its step: TestOnLostFailFailsTheStep records it.
var newSides = []struct {
	change string
	source string
	// files are more files beside the playbook (sub-playbooks, input).
	files map[string]string
	args  []string
}{
	{change: "workload-deep-merge", source: `metadata: {name: deep-merge}
workload: {db: {host: a, port: 5432}}
workflow:
  - step: show
    tool: {kind: noop, result: "{{ workload.db.host }}:{{ workload.db.port }}"}
`, files: map[string]string{"input.json": `{"db": {"host": "b"}}`}, args: []string{"--input", "input.json"}},
	{change: "arcs-per-kind", source: `metadata: {name: both-arcs}
workflow:
  - step: a
    tool: {kind: noop, result: 1}
    next: b
  - step: b
    depends_on: [a]
    tool: {kind: noop, result: 2}
`},
	{change: "end-disconnected", source: `metadata: {name: end-tool}
workflow:
  - step: a
    tool: {kind: noop, result: 1}
  - step: end
    tool: {kind: shell, command: "echo done"}
`},
	{change: "child-id-dot", source: `metadata: {name: parent-dot}
workflow:
  - step: child
    tool: {kind: playbook, path: sub.yaml}
`, files: map[string]string{"sub.yaml": "metadata: {name: sub}\nworkflow:\n  - step: x\n    tool: {kind: noop, result: 1}\n"}},
	{change: "noop-in-workflow", source: `metadata: {name: noop}
workflow:
  - step: a
    tool: {kind: noop, result: 1}
`},
	{change: "loop-size-bound", source: `metadata: {name: loop-over-bound}
workload: {n: 3}
workflow:
  - step: each
    loop: {in: "1..workload.n", mode: parallel}
    tool: {kind: noop, result: "{{ item }}"}
`, args: []string{"--set", "n=100001"}},
	{change: "wait-in-order", source: `metadata: {name: two-at-once}
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
  - step: b
    tool: {kind: shell, command: "true"}
`},
	{change: "payload-budget", source: `metadata: {name: input-over-budget}
workload: {big: ""}
workflow:
  - step: big
    tool: {kind: shell, command: "true", env: {BIG: "{{ workload.big + workload.big }}"}}
`, files: map[string]string{"input.json": `{"big": "` + strings.Repeat("x", 600<<10) + `"}`}, args: []string{"--input", "input.json"}},
	{change: "loop-driver", source: `metadata: {name: loop-driver}
workflow:
  - step: each
    loop: {in: "1..501", mode: parallel, max_in_flight: 100}
    tool: {kind: shell, command: "true"}
`},
	{change: "pace-yields", source: noopChain(120)},
	{change: "running-cap", source: wideFanOut(1001)},
	{change: "null-safe-member", source: `metadata: {name: null-member}
workflow:
  - step: probe
    tool: {kind: shell, command: "true"}
    next:
      - when: "steps.probe.error.type == 'disk_low'"
        then: [alarm]
      - else: [fine]
  - step: alarm
    tool: {kind: noop, result: alarm}
  - step: fine
    tool: {kind: noop, result: fine}
  - step: end
    success_when: "steps.probe.error.type != 'disk_low'"
`},
	{change: "embedded-zones", source: `metadata: {name: zones}
workload: {tz: Europe/Paris}
workflow:
  - step: noon
    tool: {kind: noop, result: "{{ date('2026-07-01 12:00', '2006-01-02 15:04', workload.tz).UTC().Format('15:04') }}"}
`},
	{change: "wait-until-bound", source: `metadata: {name: wait-far}
workload: {until: "9999-12-31T23:59:59Z"}
workflow:
  - step: far
    tool: {kind: wait, until: "{{ workload.until }}"}
`},
	{change: "null-safe-compare", source: `metadata: {name: null-compare}
workflow:
  - step: probe
    tool: {kind: shell, command: "echo '{\"count\": null}'"}
    next:
      - when: "{{ steps.probe.result.json.count > 3 }}"
        then: [big]
      - else: [small]
  - step: big
    tool: {kind: noop, result: big}
  - step: small
    tool: {kind: noop, result: small}
`},
	{change: "concurrency-limit", source: `metadata: {name: limited-once}
workload: {service: web}
concurrency: {key: "{{ workload.service }}", limit: 1}
workflow:
  - step: a
    tool: {kind: noop, result: 1}
`},
	{change: "local-elements-direct", source: `metadata: {name: local-elements}
local: true
workflow:
  - step: each
    loop: { in: "1..4", mode: parallel, max_in_flight: 2 }
    retry: { max_attempts: 2, initial_delay: 2500ms, jitter: false }
    tool: { kind: shell, command: '[ "$I" != 2 ] || [ "$PLAYBOOK_ATTEMPT" -ge 2 ] || exit 7', env: { I: "{{ item }}" } }
`},
	{change: "wait-event-notice", source: `metadata: {name: event-notice}
notify: {on_waiting: {webhook: "http://127.0.0.1:9/waiting"}}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed, timeout: 1s, on_timeout: complete}
`},
}

// wideFanOut is a playbook of n steps ready at once, each an activity.
func wideFanOut(n int) string {
	var b strings.Builder
	b.WriteString("metadata: {name: wide}\nworkflow:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {step: s%d, tool: {kind: noop, result: %d}, retry: {retry_when: \"false\"}}\n", i, i)
	}
	return b.String()
}

// Every registered change has a run above that takes its new side (its
// marker is in the history), and every such run replays.
func TestEveryChangeTakesItsNewSide(t *testing.T) {
	parallel(t)
	// reuse-elements needs a retry: TestRetryRunsOnlyTheFailedElements
	// records it; queued-status a run queued behind another:
	// TestConcurrencyListShowsQueuedRuns records it. loop-reports-delivered
	// is in a loop driver's history, not the run's:
	// TestLocalLoopDriverClosesCleanly records it, and local-task-cap
	// (a driver's too) TestLocalLoopTaskHoldsItsShare, and loop-own-count
	// TestLoopDriverRunsPastTheServersEventCount. cancelled-fails-at-once
	// and queued-cancel need a cancel at a point in the run:
	// TestACancelledRunDoesNotWaitForAClassification and
	// TestConcurrencyQueuedRunCancelledStartsNoStep record them.
	// truncated-reads needs a step's output over its budget:
	// TestATemplateReadingPastAStubFails records it.
	covered := map[string]bool{"lost-attempts-retried": true, "reuse-elements": true, "queued-status": true, "loop-reports-delivered": true, "local-task-cap": true, "loop-own-count": true,
		"cancelled-fails-at-once": true, "queued-cancel": true, "truncated-reads": true}
	for _, c := range newSides {
		covered[c.change] = true
		t.Run(c.change, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range c.files {
				writePlaybook(t, dir, name, text)
			}
			file := writePlaybook(t, dir, "playbook.yaml", c.source)
			args := []string{"run", "--address", server.Address, "--json"}
			for _, a := range c.args {
				if strings.HasSuffix(a, ".json") {
					a = filepath.Join(dir, a)
				}
				args = append(args, a)
			}
			code, out, errOut := cli(t, append(args, file)...)
			var agg contract.Aggregate
			require.NoError(t, json.Unmarshal([]byte(out), &agg), "stderr:\n%s", errOut)
			require.Equal(t, exitCodeFor(agg.Status), code, errOut)
			require.True(t, hasMarker(t, agg.WorkflowID, c.change), "%s: no marker of %s in the run's history", agg.WorkflowID, c.change)
			replay(t, "change_"+strings.ReplaceAll(c.change, "-", "_"), agg.WorkflowID, agg.RunID)
		})
	}
	for _, c := range playbookwf.Changes() {
		require.True(t, covered[c.ID], "no run here takes the new side of %s", c.ID)
	}
}
