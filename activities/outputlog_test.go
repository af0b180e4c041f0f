package activities

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// marker is the line an attempt's log starts with once it dropped the
// head of its stream.
var marker = regexp.MustCompile(`^\[playbook: the first (\d+) bytes of this output were dropped: its log keeps the last part, at most 1 KiB\]\n`)

// requireTail checks a capped log: the marker, then the last part of want,
// no more than the cap and no less than half of it; dropped and kept add
// up to all of want.
func requireTail(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := marker.FindSubmatch(b)
	require.NotNil(t, m, "the log starts with the marker: %.200q", b)
	dropped, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	kept := string(b[len(m[0]):])
	require.Equal(t, len(want), dropped+len(kept), "the bytes dropped and the bytes kept are the whole stream")
	require.Equal(t, want[dropped:], kept, "the log keeps the stream's last part")
	require.LessOrEqual(t, len(kept), 1024)
	require.GreaterOrEqual(t, len(kept), 512)
}

// Each stream of an attempt keeps at most the worker's cap in its log
// file: the last part written, after a line saying how many bytes before
// it were dropped. The result's tails read the end as before; a stdout
// that was JSON is no longer whole, so it is no longer `json`.
func TestLogKeepsTheTailOverItsCap(t *testing.T) {
	a := &Activities{LogDir: t.TempDir(), MaxLogBytes: 1024}
	in := shellInput(t, map[string]any{"command": `seq 1 3000; seq 1 2000 >&2`})
	o := a.runTool(context.Background(), in, 1)
	require.Nil(t, o.Err)
	dir := filepath.Join(a.LogDir, "wf-1", "s")
	requireTail(t, filepath.Join(dir, "attempt-1.stdout"), lines(3000))
	requireTail(t, filepath.Join(dir, "attempt-1.stderr"), lines(2000))
	r := o.Result.(map[string]any)
	require.True(t, strings.HasSuffix(r["stdout"].(string), "2999\n3000\n"), "the result's stdout is the end of the stream")
	require.True(t, strings.HasSuffix(r["stderr"].(string), "1999\n2000\n"))

	in = shellInput(t, map[string]any{"command": `printf '{"xs": ['; seq -s, 1 1000; printf ']}'`})
	o = a.runTool(context.Background(), in, 2)
	require.Nil(t, o.Err)
	require.Nil(t, o.Result.(map[string]any)["json"], "a JSON stdout over the cap is no longer JSON")

	in = shellInput(t, map[string]any{"command": `printf '{"xs": [1, 2]}'`})
	o = a.runTool(context.Background(), in, 3)
	require.Nil(t, o.Err)
	require.Equal(t, map[string]any{"xs": []any{1.0, 2.0}}, o.Result.(map[string]any)["json"], "one under it is")
	out, err := os.ReadFile(filepath.Join(dir, "attempt-3.stdout"))
	require.NoError(t, err)
	require.Equal(t, `{"xs": [1, 2]}`, string(out), "a stream under the cap is kept whole, without a marker")
}

// The cap holds however the stream comes: in writes larger than the cap,
// smaller, or across its boundary.
func TestOutputLogWrites(t *testing.T) {
	for _, chunk := range []int{1, 7, 100, 511, 512, 1024, 3000} {
		path := filepath.Join(t.TempDir(), "out")
		l, w, err := newOutputLog(path, 1024, nil)
		require.NoError(t, err)
		want := lines(2000)
		for s := want; s != ""; {
			n := min(chunk, len(s))
			_, err := w.WriteString(s[:n])
			require.NoError(t, err)
			s = s[n:]
		}
		require.NoError(t, w.Close())
		<-l.done
		requireTail(t, path, want)
		entries, err := os.ReadDir(filepath.Dir(path))
		require.NoError(t, err)
		require.Len(t, entries, 1, "no file but the log is left behind")
	}
}

// A process that left the step's group (setsid) and still holds its
// output does not hold the step: the step ends a second at most after its
// group, and what the process writes later still goes to the log.
func TestOutputHeldOutsideTheGroupDoesNotHoldTheStep(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	in := shellInput(t, map[string]any{"command": `setsid sh -c 'sleep 5; echo late' & sleep 0.3; echo started`})
	started := time.Now()
	o := a.runTool(context.Background(), in, 1)
	require.Nil(t, o.Err)
	took := time.Since(started)
	require.Less(t, took, 4*time.Second, "the step did not wait for the process outside its group (it ends after 5 s)")
	require.Equal(t, "started\n", o.Result.(map[string]any)["stdout"])
	path := filepath.Join(a.LogDir, "wf-1", "s", "attempt-1.stdout")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(path)
		return strings.HasSuffix(string(b), "started\nlate\n")
	}, 10*time.Second, 50*time.Millisecond, "what it writes later still goes to the log")
}

// A process that writes without end does not hold its step: not a member
// of the step's group while its leader exits (the group goes with the
// leader, who exited 3), nor a process that left the group (its output
// goes on into the log on a goroutine once the grace has passed).
func TestFloodingOutputDoesNotHoldTheStep(t *testing.T) {
	flood := fmt.Sprintf("playbook-flood-%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("pkill", "-f", flood).Run() })
	for i, c := range []struct {
		command string
		exit    int
	}{
		{`for i in 1 2 3 4; do yes ` + flood + ` & done; sleep 0.3; exit 3`, 3},
		{`for i in 1 2 3 4; do setsid yes ` + flood + ` & done; sleep 0.3; echo started`, 0},
	} {
		a := &Activities{LogDir: t.TempDir(), MaxLogBytes: 64 << 10}
		// Secrets that most of the flood's bytes begin: its log is written
		// slower than it comes.
		var secrets []string
		for j := range flood {
			secrets = append(secrets, flood[j:]+"!")
		}
		ctx := withRedactor(context.Background(), newRedactor(secrets))
		ended := make(chan ToolResult, 1)
		go func() { ended <- a.runTool(ctx, shellInput(t, map[string]any{"command": c.command}), i+1) }()
		select {
		case o := <-ended:
			require.NotNil(t, o.ExitCode, "%s: %+v", c.command, o)
			require.Equal(t, c.exit, *o.ExitCode, c.command)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the attempt did not end", c.command)
		}
	}
}

// lines is what `seq 1 n` prints.
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}
