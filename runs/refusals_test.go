package runs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// signalCounter is a fakeClient that counts the signals sent.
type signalCounter struct {
	*fakeClient
	signalled int
}

func (s *signalCounter) SignalWorkflow(context.Context, string, string, string, any) error {
	s.signalled++
	return nil
}

// Playbook c after a-b and playbook b-c after a have one registration ID
// (names hold dashes): apply refuses the second rather than overwrite the
// first's registration, and loading both files together is refused.
func TestAfterTriggersThatShareAnIDAreRefused(t *testing.T) {
	a := contract.TriggerRegistration{Playbook: "c", Upstream: "a-b", Statuses: []string{"completed"}, TaskQueue: "q", File: "/w/c.yaml"}
	b := contract.TriggerRegistration{Playbook: "b-c", Upstream: "a", Statuses: []string{"completed"}, TaskQueue: "q", File: "/w/b-c.yaml"}
	require.Equal(t, TriggerID(a), TriggerID(b))
	f := &signalCounter{fakeClient: &fakeClient{runs: map[string]*fakeRun{
		TriggerID(a): {queries: map[string]func(...any) (any, error){contract.QueryTrigger: func(...any) (any, error) { return a, nil }}},
	}}}
	_, err := ApplyTrigger(context.Background(), f, b)
	var invalid *InvalidError
	require.ErrorAs(t, err, &invalid)
	require.EqualError(t, err, "playbook b-c's trigger after a has the registration playbook-after-a-b-c, which playbook c's trigger after a-b (/w/c.yaml) holds: rename one of these playbooks")
	require.Zero(t, f.signalled, "c's registration is left as it was")

	dir := t.TempDir()
	write := func(name, up string) string {
		p := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(p, []byte("metadata: {name: "+name+"}\ntriggers:\n  - after: {playbook: "+up+", status: [completed]}\nworkflow:\n  - step: s\n    tool: {kind: noop}\n"), 0o600))
		return p
	}
	c, bc := write("c", "a-b"), write("b-c", "a")
	_, err = LoadTriggers([]string{c, bc}, "q")
	require.EqualError(t, err, bc+": playbook b-c's trigger after a and playbook c's after a-b ("+c+") would share the registration playbook-after-a-b-c: rename one of these playbooks")
}

// A classification whose reason or sender the run would refuse whatever
// its state is refused before anything is sent, as a decision is.
func TestClassifyChecksBeforeSending(t *testing.T) {
	f := &fakeClient{runs: map[string]*fakeRun{"r1": {status: 1}}}
	for _, c := range []struct{ reason, by, want string }{
		{"ok\x1b[2Jforged", "ana", "the reason holds a control character (\\x1b at byte 2): give one line of printable text"},
		{"fine", "ana\nbob", "by holds a control character (\\n at byte 3): give one line of printable text"},
	} {
		_, err := Classify(context.Background(), f, "r1", "s", "retry", c.reason, c.by, "")
		var invalid *InvalidError
		require.ErrorAs(t, err, &invalid)
		require.EqualError(t, err, c.want)
	}
	require.Empty(t, f.updated, "nothing was sent")
}
