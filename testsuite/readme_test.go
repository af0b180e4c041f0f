package testsuite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// placeholders fill the guides' placeholders, where a fenced line uses one.
var placeholders = map[string]string{
	"FILE": "playbooks/hello.yaml",
	"RUN":  "hello-1",
	"STEP": "greet",
}

// readmeLine is one fenced `playbook` line of a Markdown guide.
type readmeLine struct {
	text       string
	args       []string
	background bool
	untilCtrlC bool
	exit       int
}

var exitsComment = regexp.MustCompile(`#\s*exits (\d+)\s*$`)

// readmeLines reads every line starting with `playbook` in the fenced
// blocks of a Markdown file (path relative to testsuite/), but those in a
// block marked <!-- no-test -->.
func readmeLines(t *testing.T, path string) []readmeLine {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []readmeLine
	inBlock, skip, prev := false, false, ""
	for _, raw := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "```") {
			if !inBlock {
				skip = prev == "<!-- no-test -->"
			}
			inBlock = !inBlock
			prev = trimmed
			continue
		}
		if trimmed != "" {
			prev = trimmed
		}
		if !inBlock || skip || !strings.HasPrefix(trimmed, "playbook ") {
			continue
		}
		l := readmeLine{text: trimmed}
		if m := exitsComment.FindStringSubmatch(trimmed); m != nil {
			l.exit, _ = strconv.Atoi(m[1])
		}
		l.untilCtrlC = strings.Contains(trimmed, "# until Ctrl-C")
		cmd, _, _ := strings.Cut(trimmed, "#")
		cmd = strings.TrimSpace(cmd)
		if strings.HasSuffix(cmd, "&") {
			l.background = true
			cmd = strings.TrimSpace(strings.TrimSuffix(cmd, "&"))
		}
		l.args = shellWords(t, cmd)[1:]
		for i, a := range l.args {
			if v, ok := placeholders[a]; ok {
				l.args[i] = v
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// shellWords splits a command line as sh would, for the quoting the guides use.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.Zero(t, quote, "unbalanced quotes in %q", s)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// Every command line in the README runs as written, against the shared
// test server (TEMPORAL_ADDRESS), with the exit code it says.
func TestReadmeCommands(t *testing.T) {
	// Serial: t.Setenv (the docs run as printed) (see parallel).
	runGuideLines(t, readmeLines(t, "../README.md"))
}

// runGuideLines runs one file's lines in order, as a person following it
// from the repository's root would: in a directory of their own that holds
// playbooks/ and codec.key, against the shared test server.
func runGuideLines(t *testing.T, lines []readmeLine) {
	bin := playbookBinary(t) // built before the test leaves the module's directory
	dir := t.TempDir()
	abs, err := filepath.Abs("../playbooks")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(abs, filepath.Join(dir, "playbooks")))
	t.Chdir(dir)
	t.Setenv("TEMPORAL_ADDRESS", server.Address)
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(dir, "none.toml"))
	t.Setenv("PLAYBOOK_LOG_DIR", logDir)
	// The guides make codec.key with openssl, a line that is not
	// playbook's: the test makes one the same way.
	key := make([]byte, 32)
	_, err = rand.Read(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile("codec.key", []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))

	type background struct {
		line readmeLine
		cmd  *exec.Cmd
		out  *lockedBuffer
		done chan struct{}
	}
	var bg []*background
	defer func() {
		for _, p := range bg {
			_ = p.cmd.Process.Kill()
		}
	}()
	for _, l := range lines {
		if l.background {
			cmd := exec.Command(bin, l.args...)
			out := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			require.NoError(t, cmd.Start(), l.text)
			p := &background{line: l, cmd: cmd, out: out, done: make(chan struct{})}
			go func() { _ = cmd.Wait(); close(p.done) }()
			bg = append(bg, p)
			continue
		}
		// A line after a background one may have to wait for it, as a
		// person typing would: it is tried again for up to 60s.
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, out, errOut := cli(t, l.args...)
			if code == l.exit {
				break
			}
			if len(bg) == 0 || time.Now().After(deadline) {
				t.Fatalf("%s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", l.text, code, l.exit, out, errOut)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	for _, p := range bg {
		if p.line.untilCtrlC {
			awaitReady(t, p.line, p.out, p.done)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		}
		select {
		case <-p.done:
		case <-time.After(90 * time.Second):
			t.Fatalf("%s did not end", p.line.text)
		}
		require.Equal(t, p.line.exit, p.cmd.ProcessState.ExitCode(), "%s\n%s", p.line.text, p.out.String())
	}
}

// awaitReady waits until a command run until Ctrl-C is ready for it, as a
// person would before pressing it: a worker once the server lists its poll
// of its task queue, the others once they said where they serve; or once
// it has ended (its exit code is checked next).
func awaitReady(t *testing.T, l readmeLine, out *lockedBuffer, done <-chan struct{}) {
	t.Helper()
	ended := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	if l.args[0] != "worker" {
		waitFor(t, l.text+" to say it is ready", func() bool { return ended() || out.String() != "" })
		return
	}
	queue := "playbook"
	for i, a := range l.args[:len(l.args)-1] {
		if a == "--task-queue" {
			queue = l.args[i+1]
		}
	}
	waitFor(t, l.text+" to poll its task queue", func() bool {
		resp, err := tc.DescribeTaskQueue(context.Background(), queue, enums.TASK_QUEUE_TYPE_WORKFLOW)
		return ended() || (err == nil && len(resp.GetPollers()) > 0)
	})
}
