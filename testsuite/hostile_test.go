package testsuite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// hostileQueue is the task queue every hostile command names: no run may
// appear on it.
const hostileQueue = "hostile-q"

// hostile is one input an attacker, or a slip of the hand, gives the CLI.
type hostile struct {
	args []string
	env  []string
	// names is what the one line on stderr must hold: the file (and its
	// line, where one applies), or the flag.
	names string
}

// Hostile input gets exit 2 at once: malformed, oversized and special
// files (a device, a FIFO that would block for ever, a directory, a
// socket, links to them), path tricks, control characters in names, bad
// flags and values, for every command that reads a file or submits. Each
// gets exactly one line on stderr naming the file (and line) or the flag,
// no stack trace, nothing on stdout, nothing started on the server, in
// under 10 s and 1 GB.
func TestHostileInputs(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	require.NoError(t, os.MkdirAll(home, 0o700))
	write := func(name, text string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	sized := func(name string, size int64) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size)) // sparse: no disk, all zeros
		require.NoError(t, f.Close())
	}
	link := func(name, target string) {
		t.Helper()
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}

	write("ok.yaml", "metadata: {name: hostile-ok}\nworkload: {n: 1, who: x}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n")
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "adir"), 0o700))
	sock, err := net.Listen("unix", filepath.Join(dir, "sock"))
	require.NoError(t, err)
	defer sock.Close()
	link("zero-link", "/dev/zero")
	link("fifo-link", "fifo")
	link("dir-link", "adir")
	link("dangling", "nowhere.yaml")
	write("big.yaml", "metadata: {name: big}\n# "+strings.Repeat("x", 1<<20)+"\nworkflow: [{step: a}]\n")
	sized("huge.yaml", 3<<30)
	sized("huge.json", 3<<30)
	write("big.json", `{"who": "`+strings.Repeat("x", 2<<20)+`"}`)
	write("list.json", `[1, 2]`)
	write("broken.json", `{"who": `)
	write("two.json", `{"who": "a"} {"who": "b"}`)
	write("dup.json", `{"who": "a", "who": "b"}`)
	write("undeclared.json", `{"nope": 1}`)
	write("ok.json", `{"who": "y"}`)
	sub := func(name, path string) {
		write(name, fmt.Sprintf("metadata: {name: sub}\nworkflow:\n  - step: child\n    tool: {kind: playbook, path: %q}\n", path))
	}
	sub("sub-zero.yaml", "/dev/zero")
	sub("sub-fifo.yaml", "fifo")
	sub("sub-dir.yaml", "adir")
	sub("sub-big.yaml", "big.yaml")
	sub("sub-link.yaml", "zero-link")
	sub("sub-nul.yaml", "a\x00b.yaml")
	sub("sub-newline.yaml", "a\nb.yaml")
	sub("sub-self.yaml", "sub-self.yaml")
	sub("sub-missing.yaml", "../../../../nowhere/x.yaml")
	sub("sub-sock.yaml", "sock")
	write("tab.yaml", "metadata:\n\tname: x\nworkflow: [{step: a}]\n")
	write("unclosed.yaml", "metadata: {name: x\nworkflow: [{step: a}]\n")
	write("nul.yaml", "metadata: {name: x}\nworkflow: [{step: a}]\n# \x00\n")
	write("latin1.yaml", "metadata: {name: x, description: \"caf\xe9\"}\nworkflow: [{step: a}]\n")
	write("utf16.yaml", "\xff\xfem\x00e\x00t\x00")
	write("deep.yaml", "metadata: {name: x}\nworkload: {a: "+strings.Repeat("[", 100000)+"}\n")
	// (Aliases in a free value, a workload default or a tool's field,
	// get a second line from YAML's own decoder: left to the parser.)
	laughs := "metadata: {name: x}\nworkflow: [{step: a}]\nx-laughs:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		name := string(rune('b' + i))
		laughs += fmt.Sprintf("  %s: &%s [%s]\n", name, name, strings.TrimSuffix(strings.Repeat("*"+prev+", ", 10), ", "))
	}
	write("laughs.yaml", laughs)
	write("dupkey.yaml", "metadata: {name: x}\nworkflow: [{step: a}]\nmetadata: {name: y}\n")
	write("unknown.yaml", "metadata: {name: x}\nworkflow:\n  - step: a\n    nxt: b\n")
	write("empty.yaml", "")
	write("garbage.yaml", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	write("toplist.yaml", "- a\n- b\n")
	write("scalar.yaml", "hello\n")
	write("multidoc.yaml", "metadata: {name: x}\nworkflow: [{step: a}]\n---\nmetadata: {name: y}\n")
	write("alias.yaml", "metadata: {name: x}\nworkflow: *nope\n")
	write("badname.yaml", "metadata: {name: Bad Name}\nworkflow: [{step: a}]\n")
	write("nextunknown.yaml", "metadata: {name: x}\nworkflow:\n  - step: a\n    next: nowhere\n")
	write("cycle.yaml", "metadata: {name: x}\nworkflow:\n  - step: a\n    next: b\n  - step: b\n    next: a\n")
	write("slash.yaml", "metadata: {name: x}\nworkflow:\n  - step: ../a\n")
	write("badexpr.yaml", "metadata: {name: x}\nworkflow:\n  - step: a\n    next:\n      - when: \"((\"\n        then: [end]\n")
	write("history.json", "{\"events\": [}")

	srv := func(args ...string) []string {
		return append(args, "--address", server.Address, "--task-queue", hostileQueue)
	}
	cases := []hostile{
		// Special files, by name and through links, for each reader.
		{args: []string{"validate", "/dev/zero"}, names: "/dev/zero: cannot read: is a character device"},
		{args: []string{"validate", "fifo"}, names: "fifo: cannot read: is a named pipe"},
		{args: []string{"validate", "adir"}, names: "adir: cannot read: is a directory"},
		{args: []string{"validate", "sock"}, names: "sock: cannot read: is a socket"},
		{args: []string{"validate", "zero-link"}, names: "zero-link: cannot read: is a character device"},
		{args: []string{"validate", "fifo-link"}, names: "fifo-link: cannot read: is a named pipe"},
		{args: []string{"validate", "dir-link"}, names: "dir-link: cannot read: is a directory"},
		{args: []string{"validate", "dangling"}, names: "dangling: cannot read: no such file"},
		{args: []string{"validate", "missing.yaml"}, names: "missing.yaml: cannot read: no such file"},
		{args: []string{"validate", "big.yaml"}, names: "big.yaml: the file is 1048623 bytes, over the limit of 1048576 bytes (1 MiB)"},
		{args: []string{"validate", "huge.yaml"}, names: "huge.yaml: the file is 3221225472 bytes"},
		{args: []string{"validate", "a\nb.yaml"}, names: `"a\nb.yaml": cannot read: the file name holds a control character`},
		{args: []string{"validate", ""}, names: `"": cannot read: the file name is empty`},
		{args: []string{"validate", "/proc/self/environ"}, names: "/proc/self/environ:"},
		{args: []string{"graph", "fifo"}, names: "fifo: cannot read: is a named pipe"},
		{args: []string{"graph", "/dev/zero"}, names: "/dev/zero: cannot read"},
		// Sub-playbooks: said at the step that names them.
		{args: []string{"validate", "sub-zero.yaml"}, names: `sub-zero.yaml:4: step "child": sub-playbook /dev/zero: cannot read: is a character device`},
		{args: []string{"validate", "sub-fifo.yaml"}, names: `sub-fifo.yaml:4: step "child": sub-playbook fifo: cannot read: is a named pipe`},
		{args: []string{"validate", "sub-dir.yaml"}, names: `sub-dir.yaml:4: step "child": sub-playbook adir: cannot read: is a directory`},
		{args: []string{"validate", "sub-sock.yaml"}, names: `sub-sock.yaml:4: step "child": sub-playbook sock: cannot read: is a socket`},
		{args: []string{"validate", "sub-big.yaml"}, names: "big.yaml: the file is 1048623 bytes"},
		{args: []string{"validate", "sub-link.yaml"}, names: `sub-link.yaml:4: step "child": sub-playbook zero-link: cannot read: is a character device`},
		{args: []string{"validate", "sub-nul.yaml"}, names: `sub-nul.yaml:4: step "child": sub-playbook "a\x00b.yaml": cannot read: the file name holds a control character`},
		{args: []string{"validate", "sub-newline.yaml"}, names: `sub-newline.yaml:4: step "child": sub-playbook "a\nb.yaml": cannot read`},
		{args: []string{"validate", "sub-self.yaml"}, names: `sub-self.yaml:4: step "child": sub-playbooks include each other`},
		{args: []string{"validate", "sub-missing.yaml"}, names: `sub-missing.yaml:4: step "child": sub-playbook ../../../../nowhere/x.yaml: cannot read: no such file`},
		// Malformed playbooks: the file and the line.
		{args: []string{"validate", "tab.yaml"}, names: "tab.yaml:2:"},
		{args: []string{"validate", "unclosed.yaml"}, names: "unclosed.yaml:"},
		{args: []string{"validate", "nul.yaml"}, names: "nul.yaml:3:"},
		{args: []string{"validate", "latin1.yaml"}, names: "latin1.yaml:1:"},
		{args: []string{"validate", "utf16.yaml"}, names: "utf16.yaml:1:"},
		{args: []string{"validate", "deep.yaml"}, names: "deep.yaml:"},
		{args: []string{"validate", "laughs.yaml"}, names: "laughs.yaml:8: the file's aliases expand to more than 50000 values"},
		{args: []string{"validate", "dupkey.yaml"}, names: "dupkey.yaml:3:"},
		{args: []string{"validate", "unknown.yaml"}, names: "unknown.yaml:4:"},
		{args: []string{"validate", "empty.yaml"}, names: "empty.yaml:1:"},
		{args: []string{"validate", "garbage.yaml"}, names: "garbage.yaml:1:"},
		{args: []string{"validate", "toplist.yaml"}, names: "toplist.yaml:1:"},
		{args: []string{"validate", "scalar.yaml"}, names: "scalar.yaml:1:"},
		{args: []string{"validate", "multidoc.yaml"}, names: "multidoc.yaml:"},
		{args: []string{"validate", "alias.yaml"}, names: "alias.yaml:"},
		{args: []string{"validate", "badname.yaml"}, names: "badname.yaml:1:"},
		{args: []string{"validate", "nextunknown.yaml"}, names: "nextunknown.yaml:4:"},
		{args: []string{"validate", "cycle.yaml"}, names: "cycle.yaml:"},
		{args: []string{"validate", "slash.yaml"}, names: "slash.yaml:3:"},
		{args: []string{"validate", "badexpr.yaml"}, names: "badexpr.yaml:5:"},
		{args: []string{"validate", "--bogus", "ok.yaml"}, names: "--bogus"},
		{args: []string{"validate"}, names: "give one or more playbook files"},
		// run: the playbook, --input, --set, --id and the flags.
		{args: srv("run", "/dev/zero"), names: "/dev/zero: cannot read: is a character device"},
		{args: srv("run", "fifo"), names: "fifo: cannot read: is a named pipe"},
		{args: srv("run", "adir"), names: "adir: cannot read: is a directory"},
		{args: srv("run", "--detach", "zero-link"), names: "zero-link: cannot read"},
		{args: srv("run", "sub-zero.yaml"), names: `sub-zero.yaml:4: step "child"`},
		{args: srv("run", "huge.yaml"), names: "huge.yaml: the file is 3221225472 bytes"},
		{args: srv("run", "unknown.yaml"), names: "unknown.yaml:4:"},
		{args: srv("run", "--input", "/dev/zero", "ok.yaml"), names: "--input /dev/zero: is a character device"},
		{args: srv("run", "--input", "fifo", "ok.yaml"), names: "--input fifo: is a named pipe"},
		{args: srv("run", "--input", "adir", "ok.yaml"), names: "--input adir: is a directory"},
		{args: srv("run", "--input", "sock", "ok.yaml"), names: "--input sock: is a socket"},
		{args: srv("run", "--input", "fifo-link", "ok.yaml"), names: "--input fifo-link: is a named pipe"},
		{args: srv("run", "--input", "big.json", "ok.yaml"), names: "--input big.json: the file is 2097163 bytes, over the limit of 1048576 bytes (1 MiB) for an --input file"},
		{args: srv("run", "--input", "huge.json", "ok.yaml"), names: "--input huge.json: the file is 3221225472 bytes"},
		{args: srv("run", "--input", "missing.json", "ok.yaml"), names: "--input missing.json: no such file"},
		{args: srv("run", "--input", "list.json", "ok.yaml"), names: "--input list.json: not a JSON object"},
		{args: srv("run", "--input", "broken.json", "ok.yaml"), names: "--input broken.json: not a JSON object"},
		{args: srv("run", "--input", "two.json", "ok.yaml"), names: "--input two.json: more than one JSON value"},
		{args: srv("run", "--input", "dup.json", "ok.yaml"), names: "--input dup.json: key who is given twice"},
		{args: srv("run", "--input", "undeclared.json", "ok.yaml"), names: `workload key "nope" is not declared`},
		{args: srv("run", "--input", "a\nb.json", "ok.yaml"), names: `--input "a\nb.json": the file name holds a control character`},
		{args: srv("run", "--input", "", "ok.yaml"), names: "--input is empty"},
		{args: srv("run", "--set", "nope=1", "ok.yaml"), names: `workload key "nope" is not declared`},
		{args: srv("run", "--set", "n", "ok.yaml"), names: `--set "n": write KEY=VALUE`},
		{args: srv("run", "--set", "n=[1", "ok.yaml"), names: `workload.n`},
		{args: srv("run", "--set", "n=x", "ok.yaml"), names: `workload.n`},
		{args: srv("run", "--set", "a..b=1", "ok.yaml"), names: `--set "a..b=1"`},
		{args: srv("run", "--id", "../..", "ok.yaml"), names: `--id "../.."`},
		{args: srv("run", "--id", "..", "ok.yaml"), names: `--id ".."`},
		{args: srv("run", "--id", "a\x01b", "ok.yaml"), names: `--id "a\x01b"`},
		{args: srv("run", "--id", strings.Repeat("x", 300), "ok.yaml"), names: "--id is 300 bytes long"},
		{args: srv("run", "--id", "", "ok.yaml"), names: "--id is empty"},
		{args: srv("run", "--id", " a", "ok.yaml"), names: `--id " a"`},
		{args: srv("run", "--json=maybe", "ok.yaml"), names: "--json"},
		{args: srv("run", "--bogus", "ok.yaml"), names: "--bogus"},
		{args: srv("run"), names: "give exactly one playbook file"},
		{args: srv("run", "ok.yaml", "ok.yaml"), names: "give exactly one playbook file"},
		{args: []string{"run", "--address", server.Address, "--task-queue", "", "ok.yaml"}, names: "--task-queue is empty"},
		{args: srv("run", "ok.yaml"), env: []string{"PLAYBOOK_CODEC_KEY_FILE=/dev/zero"}, names: "codec key file /dev/zero ($PLAYBOOK_CODEC_KEY_FILE): is a character device"},
		{args: srv("run", "ok.yaml"), env: []string{"PLAYBOOK_CODEC_KEY_FILE=fifo"}, names: "codec key file fifo ($PLAYBOOK_CODEC_KEY_FILE): is a named pipe"},
		{args: srv("run", "ok.yaml"), env: []string{"PLAYBOOK_CODEC_KEY_FILE=missing.key"}, names: "codec key file missing.key ($PLAYBOOK_CODEC_KEY_FILE): no such file"},
		{args: srv("run", "ok.yaml"), env: []string{"PLAYBOOK_CODEC_KEY_FILE=ok.yaml"}, names: "codec key"},
		{args: srv("run", "ok.yaml"), env: []string{"TEMPORAL_CONFIG_FILE=/dev/zero"}, names: "Temporal config file /dev/zero: is a character device"},
		{args: srv("run", "ok.yaml"), env: []string{"TEMPORAL_CONFIG_FILE=fifo"}, names: "Temporal config file fifo: is a named pipe"},
		{args: srv("run", "ok.yaml"), env: []string{"TEMPORAL_TLS_CLIENT_CERT_PATH=/dev/zero", "TEMPORAL_TLS_CLIENT_KEY_PATH=fifo"}, names: "TLS client certificate /dev/zero: is a character device"},
		// schedule create: the same files, and its own flags.
		{args: srv("schedule", "create", "--every", "1h", "/dev/zero"), names: "/dev/zero: cannot read"},
		{args: srv("schedule", "create", "--every", "1h", "fifo"), names: "fifo: cannot read"},
		{args: srv("schedule", "create", "--every", "1h", "sub-fifo.yaml"), names: `sub-fifo.yaml:4: step "child"`},
		{args: srv("schedule", "create", "--every", "1h", "--input", "/dev/zero", "ok.yaml"), names: "--input /dev/zero"},
		{args: srv("schedule", "create", "--every", "1h", "--id", "../..", "ok.yaml"), names: `--id "../.."`},
		{args: srv("schedule", "create", "--cron", "bogus", "ok.yaml"), names: `--cron "bogus"`},
		{args: srv("schedule", "create", "--every", "-1s", "ok.yaml"), names: "--every -1s"},
		{args: srv("schedule", "create", "--every", "1h", "--overlap", "sometimes", "ok.yaml"), names: "--overlap"},
		{args: srv("schedule", "create", "--cron", "@daily", "--timezone", "Mars/Olympus", "ok.yaml"), names: "Mars/Olympus"},
		{args: srv("schedule", "create", "ok.yaml"), names: "--cron EXPR or --every DURATION"},
		{args: srv("schedule", "create", "--every", "1h", "--jitter", "-1s", "ok.yaml"), names: "--jitter -1s"},
		{args: srv("schedule", "create", "--every", "1h", "--id", "", "ok.yaml"), names: "--id is empty"},
		{args: srv("run", "--namespace", "../nowhere", "ok.yaml"), names: "Namespace ../nowhere is not found"},
		{args: srv("list", "--namespace", "nowhere"), names: "Namespace nowhere is not found"},
		{args: srv("run", "--profile", "nowhere", "ok.yaml"), names: "unable to find profile nowhere"},
		{args: srv("classify", "run", "step", "maybe"), names: `"maybe" is not an action`},
		{args: srv("mcp", "--allow-origin", "not a url"), names: `--allow-origin "not a url"`},
		// logs, retry, replay, mcp, codec-server.
		{args: srv("logs", "../..", "step"), names: `RUN "../.."`},
		{args: srv("logs", "run", ".."), names: `STEP ".."`},
		{args: srv("logs", "run", "a/b"), names: `STEP "a/b"`},
		{args: srv("logs", "run", "step", "--attempt", "-1"), names: "--attempt -1"},
		{args: srv("logs", "run", "step", "--attempt", "x"), names: "--attempt"},
		{args: srv("logs", "run"), names: "give RUN and STEP"},
		{args: srv("retry", "../.."), names: `RUN "../.."`},
		{args: srv("retry", "run", "--id", "../.."), names: `--id "../.."`},
		{args: srv("retry", "run", "--step", ""), names: "--step is empty"},
		{args: srv("retry"), names: "give the RUN"},
		{args: []string{"replay", "/dev/zero"}, names: "/dev/zero: is a character device"},
		{args: []string{"replay", "fifo"}, names: "fifo: is a named pipe"},
		{args: []string{"replay", "adir"}, names: "adir: is a directory"},
		{args: []string{"replay", "missing.json"}, names: "missing.json: no such file"},
		{args: []string{"replay", "huge.json"}, names: "huge.json: the file is 3221225472 bytes, over the limit of 134217728 bytes (128 MiB) for a history"},
		{args: []string{"replay", "history.json"}, names: "history.json: not a history"},
		{args: []string{"replay", "ok.yaml"}, names: "ok.yaml: not a history"},
		{args: srv("mcp", "--http", "nonsense"), names: `--http "nonsense"`},
		{args: srv("mcp", "--http", "127.0.0.1:99999"), names: `--http "127.0.0.1:99999"`},
		{args: srv("mcp", "--root", "missing-dir"), names: "--root missing-dir: no such file"},
		{args: srv("mcp", "--root", "ok.yaml"), names: "--root ok.yaml: not a directory"},
		{args: srv("mcp", "extra"), names: "takes no arguments"},
		{args: srv("mcp", "--bogus"), names: "--bogus"},
		{args: []string{"codec-server", "--codec-key-file", "/dev/zero"}, names: "codec key file /dev/zero: is a character device"},
		{args: []string{"codec-server", "--codec-key-file", "fifo"}, names: "codec key file fifo: is a named pipe"},
		{args: []string{"codec-server", "--codec-key-file", "huge.json"}, names: "codec key file huge.json: the file is 3221225472 bytes"},
		{args: srv("worker", "--secrets-dir", "/dev/zero"), names: "--secrets-dir /dev/zero is not a directory"},
		{args: []string{"dev", "--secrets-dir", "ok.yaml"}, names: "--secrets-dir ok.yaml is not a directory"},
	}
	require.GreaterOrEqual(t, len(cases), 90)

	stackTrace := regexp.MustCompile(`goroutine \d|panic:|\.go:\d+`)
	failed := 0
	for i, c := range cases {
		label := fmt.Sprintf("case %d: playbook %q", i, c.args)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bin, c.args...)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "PLAYBOOK_LOG_DIR=" + filepath.Join(home, "logs")}, c.env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		cancel()
		took := time.Since(start)
		code := cmd.ProcessState.ExitCode()
		rss := maxRSS(cmd.ProcessState)
		line := stderr.String()
		ok := code == 2 && stdout.Len() == 0 && strings.Count(line, "\n") == 1 && strings.HasSuffix(line, "\n") &&
			strings.Contains(line, c.names) && !stackTrace.MatchString(line) && took < 10*time.Second && rss < max(1<<30, inherited(t))
		if !ok {
			failed++
			t.Errorf("%s: exit %d after %s, %d MiB; want exit 2 and one line holding %q\nstdout: %q\nstderr: %q",
				label, code, took.Round(time.Millisecond), rss>>20, c.names, stdout.String(), line)
		}
	}
	t.Logf("%d of %d hostile inputs handled", len(cases)-failed, len(cases))

	// Nothing started: no run on the queue every case named, no schedule.
	var runs []string
	it, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("TaskQueue = '%s'", hostileQueue)})
	require.NoError(t, err)
	for _, e := range it.GetExecutions() {
		runs = append(runs, e.GetExecution().GetWorkflowId())
	}
	require.Empty(t, runs, "no run started")
	require.Empty(t, schedulesOn(t, hostileQueue), "no schedule created")
}

// schedulesOn lists the schedules whose runs start on queue (other tests'
// schedules come and go beside it: one deleted meanwhile is not listed).
func schedulesOn(t *testing.T, queue string) []string {
	t.Helper()
	it, err := tc.ScheduleClient().List(context.Background(), client.ScheduleListOptions{})
	require.NoError(t, err)
	var ids []string
	for it.HasNext() {
		s, err := it.Next()
		require.NoError(t, err)
		d, err := tc.ScheduleClient().GetHandle(context.Background(), s.ID).Describe(context.Background())
		var missing *serviceerror.NotFound
		if errors.As(err, &missing) {
			continue
		}
		require.NoError(t, err)
		if a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction); ok && a.TaskQueue == queue {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// maxRSS is a process's peak resident set, in bytes, as its rusage says.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}

// inherited is the peak resident set a child of this process reports for
// doing nothing: Linux's exec records the peak of the memory the child
// replaced, which a child started with vfork (as os/exec starts one)
// shares with this process. A test that passed a gigabyte in this
// process (TestALargeResultPassesWholeThroughTheStore decodes 50 MB
// values in it) makes every child report at least that; a child that
// used more reports its own.
func inherited(t *testing.T) int64 {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return maxRSS(cmd.ProcessState) + 16<<20
}
