package testsuite

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/worker"
)

// outageProxy forwards TCP to the shared server and can cut everything
// through it for a while: open connections are closed and new ones are
// refused, as a server that restarts looks to its workers.
type outageProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newOutageProxy(t *testing.T, target string) *outageProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &outageProxy{ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = ln.Close(); p.closeAll() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				_ = in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.track(in, out)
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	return p
}

func (p *outageProxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = true
	}
}

func (p *outageProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// cut closes every connection and refuses new ones for d.
func (p *outageProxy) cut(d time.Duration) {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	p.closeAll()
	time.Sleep(d)
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// workerBehindProxy starts a worker on a task queue of its own that reaches
// the shared server through an outageProxy.
func workerBehindProxy(t *testing.T, name string) (*outageProxy, string) {
	t.Helper()
	queue := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	proxy := newOutageProxy(t, server.Address)
	c, err := client.Dial(client.Options{HostPort: proxy.ln.Addr().String(), Logger: quietlog.New()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w := worker.New(c, worker.Options{TaskQueue: queue, LogDir: t.TempDir()})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return proxy, queue
}

// A worker cut off from the server for less than the step's heartbeat
// timeout loses nothing: its running step goes on and finishes in its
// first attempt, with no lost attempt on record. (The SDK's own heartbeat
// gives an attempt up after one second without an answer.)
func TestShortServerOutageLosesNoAttempt(t *testing.T) {
	// Serial: an outage timed in seconds against heartbeat timeouts of seconds (see parallel).
	proxy, queue := workerBehindProxy(t, "outage")

	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: outage}
workflow:
  - step: long
    heartbeat_timeout: 10s
    tool: {kind: shell, command: "sleep 6; echo done"}
`)
	run := start(t, file, queue, nil)
	waitFor(t, "the step to run", func() bool { return startedSteps(tc, run.GetID()) == 1 })
	time.Sleep(1500 * time.Millisecond) // past the step's first heartbeats
	proxy.cut(3 * time.Second)

	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)
	s := agg.Steps["long"]
	require.Equal(t, contract.StatusCompleted, s.Status)
	require.Equal(t, 1, s.Attempts, "the outage cost an attempt: %+v", s.AttemptErrors)
	require.Empty(t, s.AttemptErrors)
}

// A worker cut off from the server for longer than the step's heartbeat
// timeout stops the step itself: the server has given the attempt up and
// retries it, so the old process must not run on beside the retry. The
// step's first attempt is killed before it writes its mark; the retry,
// once the worker is back, writes the only one.
func TestLongServerOutageStopsTheStep(t *testing.T) {
	// Serial: an outage timed in seconds against heartbeat timeouts of seconds (see parallel).
	proxy, queue := workerBehindProxy(t, "cutoff")

	marks := filepath.Join(t.TempDir(), "marks")
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: cutoff}
workload: {marks: ""}
workflow:
  - step: long
    heartbeat_timeout: 2s
    tool:
      kind: shell
      command: 'sleep 5; echo "done $PLAYBOOK_ATTEMPT" >> "$MARKS"'
      env: {MARKS: "{{ workload.marks }}"}
`)
	run := start(t, file, queue, map[string]any{"marks": marks})
	waitFor(t, "the step to run", func() bool { return startedSteps(tc, run.GetID()) == 1 })
	time.Sleep(500 * time.Millisecond)
	proxy.cut(8 * time.Second)

	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)
	s := agg.Steps["long"]
	require.Equal(t, 2, s.Attempts)
	require.Len(t, s.AttemptErrors, 1)
	require.True(t, s.AttemptErrors[0].Lost)
	require.Equal(t, "done 2\n", readFile(marks), "the cut-off attempt was stopped before its end")
}
