package commands

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A run this CLI cannot read for want of the codec key is not checked,
// and never counted as diverging: the summary says which key is wanted,
// and the exit code is 2 unless something worse (a divergence, a history
// that could not be fetched) makes it 1.
func TestUpgradeReportOfEncryptedRuns(t *testing.T) {
	hint := "give it the workers' key ($PLAYBOOK_CODEC_KEY_FILE or $PLAYBOOK_CODEC_KEY)"
	ok := upgradeRun{WorkflowID: "plain", Type: "Playbook", Status: "running", Events: 12, Checked: true, OK: true}
	enc := upgradeRun{WorkflowID: "enc", Type: "Playbook", Status: "running", Events: 9, Encrypted: true,
		Error: "its payloads are encrypted (codec key 1a2b3c4d) and this CLI has no key: " + hint}
	diverging := upgradeRun{WorkflowID: "bad", Type: "Playbook", Status: "running", Events: 9, Checked: true,
		DivergesAt: "event 5 ActivityTaskScheduled (x)", Error: "nondeterministic workflow"}
	unfetched := upgradeRun{WorkflowID: "gone", Type: "Playbook", Status: "running", Error: "fetching its history: deadline exceeded"}
	for _, tc := range []struct {
		name    string
		report  upgradeReport
		summary string
		code    int
	}{
		{"only encrypted", upgradeReport{Runs: []upgradeRun{enc}, Unchecked: 1, Encrypted: 1},
			"No run of namespace ns replayed: 1 could not be checked (their payloads are encrypted and this CLI cannot read them): " + hint + ".", 2},
		{"ok and encrypted", upgradeReport{Runs: []upgradeRun{ok, enc}, Replayed: 1, Unchecked: 1, Encrypted: 1},
			"1 runs of namespace ns replayed: all ok; 1 could not be checked (their payloads are encrypted and this CLI cannot read them): " + hint + ".", 2},
		{"encrypted and unfetched", upgradeReport{Runs: []upgradeRun{ok, enc, unfetched}, Replayed: 1, Unchecked: 2, Encrypted: 1},
			"1 runs of namespace ns replayed: all ok; 1 could not be checked (their histories could not be fetched): check again; 1 could not be checked (their payloads are encrypted and this CLI cannot read them): " + hint + ".", 1},
		{"diverging and encrypted", upgradeReport{Runs: []upgradeRun{ok, diverging, enc}, Replayed: 2, Diverging: 1, Unchecked: 1, Encrypted: 1},
			"2 runs of namespace ns replayed: 1 ok, 1 do not replay: a worker of this binary would stop them with a nondeterminism error. 1 could not be checked (their payloads are encrypted and this CLI cannot read them): " + hint + ".", 1},
		{"all ok", upgradeReport{Runs: []upgradeRun{ok}, Replayed: 1},
			"1 runs of namespace ns replayed: all ok; this binary can take them over.", 0},
	} {
		tc.report.Namespace = "ns"
		var out bytes.Buffer
		printUpgradeReport(&out, tc.report)
		lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
		require.Len(t, lines, len(tc.report.Runs)+1, tc.name)
		require.Equal(t, tc.summary, string(lines[len(lines)-1]), tc.name)
		require.Equal(t, tc.code, tc.report.exitCode(), tc.name)
		for _, r := range tc.report.Runs {
			if r.Encrypted {
				require.Contains(t, "\n"+out.String(), "\nenc (Playbook, running): not checked: its payloads are encrypted (codec key 1a2b3c4d) and this CLI has no key: "+hint+"\n", tc.name)
			}
		}
	}
}
