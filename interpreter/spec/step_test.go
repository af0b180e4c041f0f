package spec

import (
	"testing"
	"time"

	"playbook/interpreter/spec/expr"

	"github.com/stretchr/testify/require"
)

func TestParseFullStep(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`
apiVersion: playbook/v1
kind: Playbook
metadata: {name: etl, description: Extract}
workload: {source: "http://x", batch: 3}
failure_mode: continue
workflow:
  - step: extract
    desc: Download
    tool: { kind: shell, command: "./extract.sh", env: { URL: "{{ workload.source }}" } }
    timeout: 10m
    heartbeat_timeout: 60s
    retry:
      max_attempts: 5
      initial_delay: 1s
      backoff_multiplier: 2
      max_delay: 30s
      jitter: true
      retry_when: "exit_code in [75, 111]"
      stop_when: "{{ exit_code == 2 }}"
    next:
      - when: "steps.extract.result.rows > 0"
        then: [transform, {step: audit}]
      - else: [end]
  - step: transform
    retries: 2
    retry_delay: 5s
    tool: {kind: noop}
  - step: audit
    retry: true
    tool: {kind: http, url: "http://127.0.0.1:1/a", expect_status: [200, 201]}
  - step: cleanup
    depends_on: [extract, transform]
    on_failure: run
  - step: end
    success_when: "failed_steps_count <= 1"
`))
	require.NoError(t, err)
	require.Equal(t, "etl", pb.Name)
	require.Equal(t, FailureContinue, pb.FailureMode)
	require.Equal(t, map[string]any{"source": "http://x", "batch": 3}, pb.Workload)
	names := []string{}
	for _, s := range pb.Steps {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"extract", "transform", "audit", "cleanup", "end"}, names)
	ex := pb.Step("extract")
	require.Equal(t, 10*time.Minute, ex.Timeout)
	require.Equal(t, 60*time.Second, ex.HeartbeatTimeout)
	require.Equal(t, 5, ex.Retry.MaxAttempts)
	require.Equal(t, 30*time.Second, ex.Retry.MaxDelay)
	require.Equal(t, "exit_code == 2", ex.Retry.StopWhen.Source)
	require.Len(t, ex.Next, 2)
	require.Equal(t, []string{"transform", "audit"}, ex.Next[0].Then)
	require.True(t, ex.Next[1].Else)
	tr := pb.Step("transform")
	require.Equal(t, Retry{MaxAttempts: 3, InitialDelay: 5 * time.Second, Multiplier: 1, MaxDelay: 5 * time.Second}, *tr.Retry)
	require.Equal(t, DefaultRetry(), *pb.Step("audit").Retry)
	require.True(t, pb.Step("cleanup").OnFailureRun)
	require.Nil(t, pb.Step("cleanup").Tool)
	require.False(t, pb.End().Injected)
	require.Equal(t, []Arc{{From: "extract", To: "cleanup", Kind: ArcDependsOn}, {From: "transform", To: "cleanup", Kind: ArcDependsOn}}, pb.Incoming("cleanup"))
}

func TestParseInjectsEndLast(t *testing.T) {
	pb, err := Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - step: end\n  - step: a\n"))
	require.NoError(t, err)
	require.Equal(t, "a", pb.Steps[0].Name)
	require.Equal(t, EndStep, pb.Steps[1].Name)

	pb, err = Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - step: a\n"))
	require.NoError(t, err)
	require.True(t, pb.End().Injected)
	require.Len(t, pb.Steps, 2)
}

// Names whose value is known only at run time (results, workload, errors)
// accept member access at compile time in every scope that has them.
func TestDynamicNamesCompile(t *testing.T) {
	for _, tc := range []struct {
		scope expr.Scope
		src   string
	}{
		{expr.ScopeStep, "workload.a.b > 1 && steps.x.result.rows > 0 && playbook.name != ''"},
		{expr.ScopeRetry, "result.ready == false || error.type == 'exit_code' || exit_code in [75] || status_code >= 500 || attempt > 2 || !success"},
		{expr.ScopeEnd, "failed_steps_count <= 1 && total_steps > 0 && !('a' in failed_steps)"},
	} {
		_, err := expr.CompileExpr(tc.src, tc.scope, true)
		require.NoError(t, err, tc.src)
	}
	_, err := expr.CompileExpr("exit_code == 1", expr.ScopeStep, true)
	require.EqualError(t, err, `"exit_code == 1": unknown name exit_code (1:1)`, "exit_code exists only in retry expressions")
}

// allow_failure is read on any step; a fail tool keeps its type, its
// message template and its details as written.
func TestParseAllowFailureAndFail(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`metadata: {name: t}
workflow:
  - step: probe
    tool: {kind: shell, command: "false"}
    allow_failure: true
    next: no_rows
  - step: no_rows
    tool: {kind: fail, type: empty_input, message: "{{ steps.probe.status }}", details: {table: orders}}
    allow_failure: false
`))
	require.NoError(t, err)
	require.True(t, pb.Step("probe").AllowFailure)
	require.False(t, pb.Step("no_rows").AllowFailure)
	require.False(t, pb.Step("end").AllowFailure)
	require.Equal(t, FailKind, pb.Step("no_rows").Tool.Kind)
	require.Equal(t, map[string]any{"type": "empty_input", "message": "{{ steps.probe.status }}", "details": map[string]any{"table": "orders"}}, pb.Step("no_rows").Tool.Spec)
}

// `reads` lists the files a step declares it reads, as written; what is
// not a list of file paths is refused at its line.
func TestParseReads(t *testing.T) {
	for _, tc := range []struct {
		reads string
		want  []string
		err   string
	}{
		{reads: "[data/ref.csv]", want: []string{"data/ref.csv"}},
		{reads: "[data/ref.csv, /etc/app/limits.json]", want: []string{"data/ref.csv", "/etc/app/limits.json"}},
		{reads: "[]", want: nil},
		{reads: "data/ref.csv", err: `x.yaml:4: step "t": reads must be a list of file paths, e.g. reads: [data/ref.csv]`},
		{reads: `[""]`, err: `x.yaml:4: step "t": an item of reads must be a file path, not empty`},
		{reads: "[{a: b}]", err: `x.yaml:4: step "t": an item of reads must be a string`},
		{reads: "[s3://bucket/ref.csv]", err: `x.yaml:4: step "t": reads names files where the playbook is, not "s3://bucket/ref.csv"`},
		{reads: `["$HOME/ref.csv"]`, err: `x.yaml:4: step "t": reads takes paths as written, without variables: "$HOME/ref.csv"`},
		{reads: `["data/{{ workload.day }}.csv"]`, err: `x.yaml:4: step "t": reads is used as written: a template there is never rendered`},
	} {
		t.Run(tc.reads, func(t *testing.T) {
			pb, err := Parse("x.yaml", []byte("metadata: {name: r}\nworkflow:\n  - step: t\n    reads: "+tc.reads+"\n    tool: {kind: shell, command: ./t.sh}\n"))
			if err == nil {
				err = pb.CheckSubmit()
			}
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, pb.Step("t").Reads)
		})
	}
}
