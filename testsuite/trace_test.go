package testsuite

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"playbook/interpreter/contract"
)

// gotSpan is one span an OTLP receiver got, as the test reads it.
type gotSpan struct {
	trace, id, parent string
	name              string
	start, end        time.Time
	attrs             map[string]any
	failed            bool
	links             []string // "trace/span"
}

// otlpReceiver is a small OTLP trace collector on the official protobuf
// module: a gRPC TraceService and the HTTP /v1/traces endpoint, both
// keeping every span they get.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	grpcAddr, httpURL string

	mu    sync.Mutex
	spans []gotSpan
}

func startOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, r)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	r.grpcAddr = lis.Addr().String()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &msg) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.take(&msg)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(hs.Close)
	r.httpURL = hs.URL
	return r
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.take(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) take(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, readSpan(s))
			}
		}
	}
}

func readSpan(s *tracepb.Span) gotSpan {
	g := gotSpan{trace: hex.EncodeToString(s.GetTraceId()), id: hex.EncodeToString(s.GetSpanId()), parent: hex.EncodeToString(s.GetParentSpanId()),
		name: s.GetName(), start: time.Unix(0, int64(s.GetStartTimeUnixNano())), end: time.Unix(0, int64(s.GetEndTimeUnixNano())),
		attrs: map[string]any{}, failed: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR}
	for _, kv := range s.GetAttributes() {
		g.attrs[kv.GetKey()] = anyValue(kv.GetValue())
	}
	for _, l := range s.GetLinks() {
		g.links = append(g.links, hex.EncodeToString(l.GetTraceId())+"/"+hex.EncodeToString(l.GetSpanId()))
	}
	return g
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return int(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	}
	return v.String()
}

// trace is every span of trace t got so far.
func (r *otlpReceiver) trace(t contract.TraceID) []gotSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gotSpan
	for _, s := range r.spans {
		if s.trace == t.String() {
			out = append(out, s)
		}
	}
	return out
}

// named is the one span of spans named name.
func named(t *testing.T, spans []gotSpan, name string) gotSpan {
	t.Helper()
	var found []gotSpan
	for _, s := range spans {
		if s.name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q among %v", name, spanNames(spans))
	return found[0]
}

func spanNames(spans []gotSpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.name)
	}
	return names
}

// requireWholeTree checks that a trace has no span twice and that every
// span's parent is in it: no duplicate, no orphan.
func requireWholeTree(t *testing.T, spans []gotSpan) {
	t.Helper()
	ids := map[string]string{}
	for _, s := range spans {
		prev, twice := ids[s.id]
		require.False(t, twice, "span %s (%q) emitted twice (before as %q)", s.id, s.name, prev)
		ids[s.id] = s.name
	}
	roots := 0
	for _, s := range spans {
		if s.parent == "" {
			roots++
			continue
		}
		_, ok := ids[s.parent]
		require.True(t, ok, "span %q has no parent in its trace (orphan): %v", s.name, spanNames(spans))
	}
	require.Equal(t, 1, roots, "one root span: %v", spanNames(spans))
}

// tracedWorker starts a real `playbook worker` on queue exporting traces to
// endpoint over protocol, with an exporter header a step must not see.
func tracedWorker(t *testing.T, queue, endpoint, protocol string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(playbookBinary(t), "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", t.TempDir(),
		"--step-env", "OTEL_EXPORTER_OTLP_HEADERS")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+protocol,
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=collector-secret", "OTEL_BSP_SCHEDULE_DELAY=100")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("worker stderr:\n%s", stderr.String())
		}
	})
	return cmd
}

const tracedPlaybook = `metadata: {name: traced}
workload: {flag: "", items: [a, b, c]}
workflow:
  - step: flaky
    retry: {max_attempts: 2, initial_delay: 1s, jitter: false}
    tool:
      kind: shell
      command: 'if [ -e "$FLAG" ]; then echo "$TRACEPARENT|$TRACESTATE|${OTEL_EXPORTER_OTLP_HEADERS:-none}"; else touch "$FLAG"; exit 3; fi'
      env: {FLAG: "{{ workload.flag }}"}
    next: each
  - step: each
    loop: {in: "workload.items", iterator: it}
    tool: {kind: shell, command: 'echo "$IT"', env: {IT: "{{ it }}"}}
    next: child
  - step: child
    tool: {kind: playbook, path: sub.yaml}
    next: gate
  - step: gate
    tool: {kind: approval, message: "go on?", approvers: [alice]}
`

const tracedChild = `metadata: {name: traced-child}
workflow:
  - step: inner
    tool: {kind: shell, command: 'echo inner'}
`

// Acceptance (#45): a run with a retried step, a loop, a sub-playbook and
// an approval, on a worker exporting over OTLP gRPC to a receiver the test
// runs, exports one trace whose span tree is the run's: the run's span,
// a span per step under it, the attempts under their step (the retry's
// delay the gap between them), the loop's elements under the loop with
// their attempts, the approval's span saying who decided; the
// sub-playbook's run is a trace of its own linked to its step. The shell
// step's TRACEPARENT names its attempt's span, and the exporter's headers
// never reach the step.
func TestTraceOfARunIsItsSpanTree(t *testing.T) {
	parallel(t)
	recv := startOTLPReceiver(t)
	queue := fmt.Sprintf("traced-%d", time.Now().UnixNano())
	tracedWorker(t, queue, "http://"+recv.grpcAddr, "grpc")
	dir := t.TempDir()
	file := writePlaybook(t, dir, "traced.yaml", tracedPlaybook)
	writePlaybook(t, dir, "sub.yaml", tracedChild)
	run := startOn(t, tc, file, "", queue, map[string]any{"flag": filepath.Join(dir, "flag"), "items": []any{"a", "b", "c"}})
	tid := contract.RunTrace(run.GetID(), run.GetRunID())
	// While the run waits at its approval, the steps that ended are in
	// the trace already, with their attempts and elements; the run's span
	// and the approval's are not, until they end.
	waitFor(t, "the spans of the steps that ended, while the run waits", func() bool {
		return hasSpans(recv.trace(tid), "step flaky", "attempt 1 flaky", "attempt 2 flaky", "step each", "element each[2]", "attempt 1 each[2]", "step child")
	})
	waiting := spanNames(recv.trace(tid))
	require.NotContains(t, waiting, "playbook traced")
	require.NotContains(t, waiting, "step gate")
	waitFor(t, "the approval to wait", func() bool {
		code, _, _ := cli(t, "approve", "--address", server.Address, run.GetID(), "gate", "--by", "alice")
		return code == 0
	})
	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)

	root := contract.RootSpan(tid).String()
	waitFor(t, "the run's span", func() bool {
		for _, s := range recv.trace(tid) {
			if s.id == root {
				return true
			}
		}
		return false
	})
	spans := recv.trace(tid)
	requireWholeTree(t, spans)

	r := named(t, spans, "playbook traced")
	require.Equal(t, root, r.id)
	require.Equal(t, "traced", r.attrs["playbook.name"])
	require.Equal(t, run.GetID(), r.attrs["playbook.run_id"])
	require.Equal(t, "completed", r.attrs["playbook.outcome"])
	require.NotEmpty(t, r.attrs["playbook.logical_time"])
	require.False(t, r.failed)

	for _, step := range []string{"flaky", "each", "child", "gate"} {
		s := named(t, spans, "step "+step)
		require.Equal(t, root, s.parent, step)
		require.Equal(t, "completed", s.attrs["playbook.status"], step)
		require.Equal(t, false, s.attrs["playbook.routed_to_end"], step)
	}
	flaky := named(t, spans, "step flaky")
	require.Equal(t, 2, flaky.attrs["playbook.attempts"])
	require.Equal(t, "shell", flaky.attrs["playbook.kind"])
	first, second := named(t, spans, "attempt 1 flaky"), named(t, spans, "attempt 2 flaky")
	require.Equal(t, flaky.id, first.parent)
	require.Equal(t, flaky.id, second.parent)
	require.True(t, first.failed)
	require.Equal(t, "retried", first.attrs["playbook.status"])
	require.Equal(t, "exit_code", first.attrs["playbook.error.type"])
	require.Equal(t, 3, first.attrs["playbook.exit_code"])
	require.False(t, second.failed)
	require.GreaterOrEqual(t, second.start.Sub(first.end), 800*time.Millisecond, "the retry's delay is the gap between the attempts")

	// The step's TRACEPARENT names its attempt's span; TRACESTATE is set,
	// empty; the exporter's header is the worker's alone.
	require.Equal(t, fmt.Sprintf("00-%s-%s-01||none", tid, second.id), strings.TrimSpace(fmt.Sprint(agg.Steps["flaky"].Result.(map[string]any)["stdout"])))

	each := named(t, spans, "step each")
	require.Equal(t, 3, each.attrs["playbook.loop.elements"])
	for i := range 3 {
		el := named(t, spans, fmt.Sprintf("element each[%d]", i))
		require.Equal(t, each.id, el.parent)
		require.Equal(t, i, el.attrs["playbook.loop.index"])
		at := named(t, spans, fmt.Sprintf("attempt 1 each[%d]", i))
		require.Equal(t, el.id, at.parent)
	}

	gate := named(t, spans, "step gate")
	require.Equal(t, "approval", gate.attrs["playbook.kind"])
	require.Equal(t, "approved", gate.attrs["playbook.approval.decision"])
	require.Equal(t, "alice", gate.attrs["playbook.approval.by"])

	// The sub-playbook's run: a trace of its own, its span linked to the
	// step that started it, and the step's span to it.
	child := named(t, spans, "step child")
	require.Len(t, child.links, 1)
	childTrace := strings.Split(child.links[0], "/")[0]
	var childSpans []gotSpan
	waitFor(t, "the sub-playbook's trace", func() bool {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		childSpans = childSpans[:0]
		for _, s := range recv.spans {
			if s.trace == childTrace {
				childSpans = append(childSpans, s)
			}
		}
		names := spanNames(childSpans)
		return slicesContains(names, "playbook traced-child") && slicesContains(names, "attempt 1 inner")
	})
	requireWholeTree(t, childSpans)
	cr := named(t, childSpans, "playbook traced-child")
	require.Equal(t, child.links[0], childTrace+"/"+cr.id)
	require.Equal(t, []string{tid.String() + "/" + child.id}, cr.links)
	require.Equal(t, named(t, childSpans, "step inner").id, named(t, childSpans, "attempt 1 inner").parent)
}

// Acceptance (#45): a worker SIGKILLed in the middle of a run (after a
// loop, in a step's attempt) and another started: the run's trace, sent
// over OTLP HTTP, has every step's span once and no span without its
// parent: the new worker replays what the killed one did without
// emitting it again.
func TestTraceOfARunSurvivesAKilledWorker(t *testing.T) {
	parallel(t)
	recv := startOTLPReceiver(t)
	queue := fmt.Sprintf("traced-kill-%d", time.Now().UnixNano())
	first := tracedWorker(t, queue, recv.httpURL, "http/protobuf")
	dir := t.TempDir()
	gateFile := filepath.Join(dir, "gate")
	file := writePlaybook(t, dir, "killed.yaml", `metadata: {name: traced-kill}
workload: {gate: ""}
workflow:
  - step: each
    loop: {in: "[1, 2]", iterator: it}
    tool: {kind: shell, command: 'echo "$IT"', env: {IT: "{{ it }}"}}
    next: b
  - step: b
    heartbeat_timeout: 5s
    tool: {kind: shell, command: 'while [ ! -e "$GATE" ]; do sleep 0.1; done; echo b', env: {GATE: "{{ workload.gate }}"}}
    next: c
  - step: c
    tool: {kind: shell, command: 'echo c'}
`)
	run := startOn(t, tc, file, "", queue, map[string]any{"gate": gateFile})
	tid := contract.RunTrace(run.GetID(), run.GetRunID())
	// The loop's spans are out before the kill, the step's with its
	// elements' as it ended: the killed worker emitted them, and the next
	// one replays the loop without emitting them again.
	waitFor(t, "the loop's spans", func() bool {
		return hasSpans(recv.trace(tid), "step each", "element each[0]", "element each[1]", "attempt 1 each[0]", "attempt 1 each[1]")
	})
	waitFor(t, "step b to run", func() bool { return slicesContains(runningSteps(tc, run.GetID()), "b") })
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	tracedWorker(t, queue, recv.httpURL, "http/protobuf")
	require.NoError(t, os.WriteFile(gateFile, nil, 0o644))
	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)

	root := contract.RootSpan(tid).String()
	waitFor(t, "the run's span", func() bool {
		for _, s := range recv.trace(tid) {
			if s.id == root {
				return true
			}
		}
		return false
	})
	time.Sleep(500 * time.Millisecond) // any late duplicate would come now
	spans := recv.trace(tid)
	requireWholeTree(t, spans)
	for _, name := range []string{"playbook traced-kill", "step each", "element each[0]", "element each[1]", "step b", "step c", "attempt 1 c"} {
		named(t, spans, name)
	}
	b := named(t, spans, "step b")
	require.Equal(t, agg.Steps["b"].Attempts, b.attrs["playbook.attempts"])
	// The attempt lost with the killed worker has no span; the one that
	// finished has, under b.
	last := named(t, spans, fmt.Sprintf("attempt %d b", agg.Steps["b"].Attempts))
	require.Equal(t, b.id, last.parent)
}

// hasSpans tells whether spans has a span of each of the names.
func hasSpans(spans []gotSpan, names ...string) bool {
	got := spanNames(spans)
	for _, n := range names {
		if !slicesContains(got, n) {
			return false
		}
	}
	return true
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

const waitingPlaybook = `metadata: {name: traced-wait}
workflow:
  - step: a
    tool: {kind: shell, command: 'echo a'}
    next: gate
  - step: gate
    tool: {kind: approval, message: "go on?"}
`

// Runs that do not end through their end (#45): a cancelled run exports
// its span (outcome cancelled) with its steps', the approval it waited at
// cancelled; a terminated run runs no code at its end, so its trace has
// the spans of the steps that ended before (emitted as each ended) and
// no run span.
func TestTraceOfARunThatDoesNotReachItsEnd(t *testing.T) {
	parallel(t)
	recv := startOTLPReceiver(t)
	queue := fmt.Sprintf("traced-end-%d", time.Now().UnixNano())
	tracedWorker(t, queue, recv.httpURL, "http/protobuf")
	file := writePlaybook(t, t.TempDir(), "wait.yaml", waitingPlaybook)

	cancelled := startOn(t, tc, file, "", queue, nil)
	ctid := contract.RunTrace(cancelled.GetID(), cancelled.GetRunID())
	// Step a's span is out as the run waits at the gate, which started
	// with a's end.
	waitFor(t, "step a's span while the run waits", func() bool { return hasSpans(recv.trace(ctid), "step a", "attempt 1 a") })
	code, _, errOut := cli(t, "cancel", "--address", server.Address, cancelled.GetID(), "--reason", "not today")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "cancelled", finish(t, cancelled).Status)
	waitFor(t, "the cancelled run's span", func() bool { return hasSpans(recv.trace(ctid), "playbook traced-wait") })
	spans := recv.trace(ctid)
	requireWholeTree(t, spans)
	r := named(t, spans, "playbook traced-wait")
	require.Equal(t, "cancelled", r.attrs["playbook.outcome"])
	require.True(t, r.failed)
	gate := named(t, spans, "step gate")
	require.Equal(t, "cancelled", gate.attrs["playbook.status"])
	require.Equal(t, "completed", named(t, spans, "step a").attrs["playbook.status"])

	terminated := startOn(t, tc, file, "", queue, nil)
	ttid := contract.RunTrace(terminated.GetID(), terminated.GetRunID())
	waitFor(t, "step a's span while the run waits", func() bool { return hasSpans(recv.trace(ttid), "step a", "attempt 1 a") })
	require.NoError(t, tc.TerminateWorkflow(context.Background(), terminated.GetID(), terminated.GetRunID(), "test"))
	time.Sleep(500 * time.Millisecond) // any span sent late would come now
	spans = recv.trace(ttid)
	require.ElementsMatch(t, []string{"step a", "attempt 1 a"}, spanNames(spans), "the steps that ended, no run span")
	a := named(t, spans, "step a")
	require.Equal(t, contract.RootSpan(ttid).String(), a.parent, "under the run's span, which a terminated run never sends")
	require.Equal(t, a.id, named(t, spans, "attempt 1 a").parent)
}

// A local step's attempts (#45) have their spans under the step's, numbered
// across its local activities (an attempt after a retry delay longer than
// spec.LocalRetryWithin runs in a local activity of its own), and the
// step's TRACEPARENT names the attempt that ran it.
func TestTraceOfALocalStep(t *testing.T) {
	parallel(t)
	recv := startOTLPReceiver(t)
	queue := fmt.Sprintf("traced-local-%d", time.Now().UnixNano())
	tracedWorker(t, queue, recv.httpURL, "http/protobuf")
	dir := t.TempDir()
	file := writePlaybook(t, dir, "local.yaml", `metadata: {name: traced-local}
workload: {flag: ""}
workflow:
  - step: quick
    local: true
    retry: {max_attempts: 3, initial_delay: 3s, jitter: false}
    tool:
      kind: shell
      command: 'if [ -e "$FLAG" ]; then echo "$TRACEPARENT"; else touch "$FLAG"; exit 3; fi'
      env: {FLAG: "{{ workload.flag }}"}
`)
	run := startOn(t, tc, file, "", queue, map[string]any{"flag": filepath.Join(dir, "flag")})
	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 2, agg.Steps["quick"].Attempts)
	tid := contract.RunTrace(run.GetID(), run.GetRunID())
	waitFor(t, "the run's span", func() bool { return hasSpans(recv.trace(tid), "playbook traced-local") })
	spans := recv.trace(tid)
	requireWholeTree(t, spans)
	step := named(t, spans, "step quick")
	first, second := named(t, spans, "attempt 1 quick"), named(t, spans, "attempt 2 quick")
	require.Equal(t, step.id, first.parent)
	require.Equal(t, step.id, second.parent)
	require.Equal(t, "retried", first.attrs["playbook.status"])
	require.Equal(t, "completed", second.attrs["playbook.status"])
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", tid, second.id), strings.TrimSpace(fmt.Sprint(agg.Steps["quick"].Result.(map[string]any)["stdout"])))
}
