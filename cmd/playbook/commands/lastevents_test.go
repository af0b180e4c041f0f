package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// pagesThenFails answers the events query with its pages, then with err.
type pagesThenFails struct {
	client.Client
	pages [][]engine.Event
	err   error
}

func (f *pagesThenFails) QueryWorkflow(_ context.Context, _, _, query string, _ ...any) (converter.EncodedValue, error) {
	if query != contract.QueryEvents || len(f.pages) == 0 {
		return nil, f.err
	}
	page := f.pages[0]
	f.pages = f.pages[1:]
	return jsonAnswer{page}, nil
}

type jsonAnswer struct{ v any }

func (j jsonAnswer) HasValue() bool { return true }
func (j jsonAnswer) Get(ptr any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

type endedRun struct{ client.WorkflowRun }

func (endedRun) GetID() string    { return "big-1" }
func (endedRun) GetRunID() string { return "r1" }

// When `run` cannot ask for the events its run's end left untold, it
// prints those it got and says that the rest cannot be shown and which
// command shows them (#39: it silently stopped printing).
func TestRunSaysWhenItCannotShowTheLastEvents(t *testing.T) {
	pb, err := spec.Parse("p.yaml", []byte("metadata: {name: p}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"))
	require.NoError(t, err)
	var out bytes.Buffer
	p := newProgress(pb, &out, " --address 127.0.0.1:7234")
	at := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	c := &pagesThenFails{pages: [][]engine.Event{{{Seq: 1, Time: at, Type: "step_started", Step: "a"}}}, err: context.DeadlineExceeded}
	p.lastEvents(context.Background(), c, endedRun{})
	lines := out.String()
	require.Regexp(t, `(?m)^\S+  a +started`, lines, "the events it got")
	require.Contains(t, lines, "(run)")
	require.Contains(t, lines, "the run's last events cannot be shown (context deadline exceeded): `playbook events big-1 --address 127.0.0.1:7234` shows them")
	require.Equal(t, 1, p.seen)
}
