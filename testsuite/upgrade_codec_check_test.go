package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"playbook/internal/codec"
	"playbook/internal/quietlog"
	"playbook/worker"
)

// A CLI without the workers' codec key (or with another) cannot read an
// encrypted run: upgrade-check says so of each such run, counts it as not
// checked and never as a divergence, and exits 2; replay and status say
// the same of a history and of a run (exit 2). With the key, all read.
func TestCommandsWithoutTheCodecKeySayThePayloadsAreEncrypted(t *testing.T) {
	// Serial: `setup` changes a namespace, and t.Setenv (the codec key)
	// (see parallel).
	ns := fmt.Sprintf("upgrade-codec-%d", time.Now().UnixNano())
	code, _, errOut := cli(t, "setup", "--address", server.Address, "--namespace", ns)
	require.Equal(t, 0, code, errOut)
	keyFile, keyID := newKeyFile(t)
	otherKey, otherID := newKeyFile(t)
	keys, err := codec.Load(keyFile)
	require.NoError(t, err)

	// Workers that encrypt on one task queue, and workers that do not on
	// another: a namespace can hold both kinds of run.
	enc, err := client.Dial(client.Options{HostPort: server.Address, Namespace: ns, Logger: quietlog.New(),
		DataConverter: keys.DataConverter(), FailureConverter: keys.FailureConverter()})
	require.NoError(t, err)
	defer enc.Close()
	plain, err := client.Dial(client.Options{HostPort: server.Address, Namespace: ns, Logger: quietlog.New()})
	require.NoError(t, err)
	defer plain.Close()
	for c, queue := range map[client.Client]string{enc: "enc-q", plain: "plain-q"} {
		w := worker.New(c, worker.Options{TaskQueue: queue, LogDir: t.TempDir()})
		require.NoError(t, w.Start())
		defer w.Stop()
	}

	dir := t.TempDir()
	long := writePlaybook(t, dir, "long.yaml", "metadata: {name: enc-long}\nworkflow:\n  - step: left\n    tool: {kind: shell, command: \"sleep 60\"}\n")
	quick := writePlaybook(t, dir, "quick.yaml", "metadata: {name: enc-quick}\nworkflow:\n  - step: hi\n    tool: {kind: shell, command: \"echo hi\"}\n")
	encLong := startOn(t, enc, long, "enc-long", "enc-q", nil)
	defer func() { _ = enc.TerminateWorkflow(context.Background(), encLong.GetID(), "", "test over") }()
	plainLong := startOn(t, plain, long, "plain-long", "plain-q", nil)
	defer func() { _ = plain.TerminateWorkflow(context.Background(), plainLong.GetID(), "", "test over") }()
	encDone := startOn(t, enc, quick, "enc-done", "enc-q", nil)
	require.NoError(t, encDone.Get(context.Background(), nil))
	for _, run := range []client.WorkflowRun{encLong, plainLong} {
		waitFor(t, run.GetID()+"'s step to run", func() bool { return startedSteps(enc, run.GetID()) == 1 })
	}

	withKey := func(file string) {
		t.Setenv(codec.KeyEnv, "")
		t.Setenv(codec.KeyFileEnv, file)
	}
	conn := []string{"--address", server.Address, "--namespace", ns}
	check := func(args ...string) (int, string, string) {
		return cli(t, append(append([]string{"upgrade-check"}, conn...), args...)...)
	}
	hint := "give it the workers' key ($PLAYBOOK_CODEC_KEY_FILE or $PLAYBOOK_CODEC_KEY)"

	withKey("")
	waitFor(t, "the two open runs to be listed", func() bool {
		_, out, _ := check()
		return strings.Count(out, "(Playbook, running)") == 2
	})

	// upgrade-check without the key.
	code, out, errOut := check()
	require.Equal(t, 2, code, out+errOut)
	require.Empty(t, errOut)
	require.Regexp(t, `(?m)^plain-long \(Playbook, running\): ok \(\d+ events\)$`, out)
	require.Contains(t, out, "\nenc-long (Playbook, running): not checked: its payloads are encrypted (codec key "+keyID+") and this CLI has no key: "+hint+"\n")
	require.Contains(t, out, "\n1 runs of namespace "+ns+" replayed: all ok; 1 could not be checked (their payloads are encrypted and this CLI cannot read them): "+hint+".\n")
	require.NotContains(t, out, "nondeterminism")
	require.NotContains(t, out, "TMPRL")

	code, out, errOut = check("--closed", "5", "--json")
	require.Equal(t, 2, code, out+errOut)
	var report struct {
		Runs []struct {
			WorkflowID string `json:"workflow_id"`
			OK         bool   `json:"ok"`
			Checked    bool   `json:"checked"`
			Encrypted  bool   `json:"encrypted"`
			DivergesAt string `json:"diverges_at"`
		} `json:"runs"`
		Replayed, Diverging, Unchecked, Encrypted int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &report), out)
	require.Equal(t, 1, report.Replayed)
	require.Equal(t, 0, report.Diverging)
	require.Equal(t, 2, report.Unchecked)
	require.Equal(t, 2, report.Encrypted)
	for _, r := range report.Runs {
		require.Equal(t, r.WorkflowID != "plain-long", r.Encrypted, r.WorkflowID)
		require.Equal(t, r.WorkflowID == "plain-long", r.Checked && r.OK, r.WorkflowID)
		require.Empty(t, r.DivergesAt, r.WorkflowID)
	}

	// With another key, the same, naming both keys.
	withKey(otherKey)
	code, out, errOut = check()
	require.Equal(t, 2, code, out+errOut)
	require.Contains(t, out, "\nenc-long (Playbook, running): not checked: its payloads are encrypted with codec key "+keyID+" and this CLI's key is "+otherID+": "+hint+"\n")

	// With the workers' key, every run replays.
	withKey(keyFile)
	code, out, errOut = check("--closed", "5")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "3 runs of namespace "+ns+" replayed: all ok; this binary can take them over.\n")

	// replay of a saved history: the encrypted one is refused, the plain
	// one beside it replays.
	encFile, plainFile := filepath.Join(t.TempDir(), "enc.json"), filepath.Join(t.TempDir(), "plain.json")
	for file, id := range map[string]string{encFile: "enc-done", plainFile: "plain-long"} {
		code, _, errOut := cli(t, append(append([]string{"history"}, conn...), "-o", file, id)...)
		require.Equal(t, 0, code, errOut)
	}
	withKey("")
	code, out, errOut = cli(t, "replay", plainFile, encFile)
	require.Equal(t, 2, code, out+errOut)
	require.Regexp(t, `^`+regexp.QuoteMeta(plainFile)+`: ok \(\d+ events\)\n$`, out)
	require.Equal(t, encFile+": its payloads are encrypted (codec key "+keyID+") and this CLI has no key: "+hint+"\n", errOut)
	withKey(otherKey)
	code, _, errOut = cli(t, "replay", encFile)
	require.Equal(t, 2, code, errOut)
	require.Equal(t, encFile+": its payloads are encrypted with codec key "+keyID+" and this CLI's key is "+otherID+": "+hint+"\n", errOut)
	withKey(keyFile)
	code, out, errOut = cli(t, "replay", encFile, plainFile)
	require.Equal(t, 0, code, out+errOut)

	// status of a run that ended (its result) and of one running (a query).
	status := func(run string) (int, string, string) {
		return cli(t, append(append([]string{"status"}, conn...), run)...)
	}
	for _, run := range []string{"enc-done", "enc-long"} {
		withKey("")
		code, out, errOut = status(run)
		require.Equal(t, 2, code, out+errOut)
		require.Empty(t, out)
		require.Equal(t, "status: run "+run+"'s payloads are encrypted and this client cannot read them (it has no codec key): "+hint+"\n", errOut)
		withKey(otherKey)
		code, _, errOut = status(run)
		require.Equal(t, 2, code, errOut)
		require.Equal(t, "status: run "+run+"'s payloads are encrypted and this client cannot read them (payload encrypted with key "+keyID+", this key is "+otherID+"): "+hint+"\n", errOut)
		withKey(keyFile)
		code, out, errOut = status(run)
		require.Equal(t, 0, code, out+errOut)
		require.Contains(t, out, "Run "+run+" (playbook enc-")
	}
	// pending asks the running run too.
	withKey("")
	code, out, errOut = cli(t, append(append([]string{"pending"}, conn...), "enc-long")...)
	require.Equal(t, 2, code, out+errOut)
	require.Equal(t, "pending: run enc-long's payloads are encrypted and this client cannot read them (it has no codec key): "+hint+"\n", errOut)
	withKey(keyFile)
}
