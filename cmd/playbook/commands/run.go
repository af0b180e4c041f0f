package commands

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"playbook/internal/userfile"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/submit"
)

func (a *app) runCommand() *cobra.Command {
	var (
		out    printer
		sets   []string
		input  string
		id     string
		detach bool
		strict bool
		once   submitPolicy
		// logicalTime is the run's run.logical_time, when given.
		logicalTime rfc3339
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "submit a playbook and follow it to its end",
		Long: "Exit codes: 0 completed (or completed_with_warnings: only allow_failure steps failed;\n" +
			"1 with --strict), 1 failed, 2 invalid input (nothing started), 3 cancelled,\n" +
			"4 Temporal unreachable, 130 detached by Ctrl-C (the run goes on).\n" +
			"With no server configured (no --address, TEMPORAL_ADDRESS or profile) and none listening\n" +
			"on 127.0.0.1:7233, an embedded in-memory server and worker run for this run only.",
		Args: exactArgs(1, "exactly one playbook file"),
		RunE: action(func(c *call) error {
			pb, in, err := load(c.args[0])
			if err != nil {
				return invalidFile(err)
			}
			printWarnings(c.stderr, pb)
			if err := checkRunID(id); err != nil {
				return invalid(err)
			}
			if err := once.check(id); err != nil {
				return invalid(err)
			}
			if in.Workload, err = workloadOverrides(input, sets); err != nil {
				return invalid(err)
			}
			if in.Workload, err = submit.CheckOverrides(pb, in.Workload); err != nil {
				return invalid(err)
			}
			// The run stands for when it was submitted, unless told.
			lt := time.Now().UTC().Truncate(time.Second)
			if t := time.Time(logicalTime); !t.IsZero() {
				lt = t.UTC()
			}
			in.LogicalTime = &lt
			ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			c.ctx = ctx
			// The SDK's own log lines would repeat, less clearly, what follow prints.
			// A detached run outlives this command, so it needs a real server,
			// never the embedded one that ends with the command.
			conn, err := a.connect(c, !detach, quietLogs)
			if err != nil {
				return err
			}
			defer conn.Close()
			if id == "" {
				id = once.runID(pb.Name)
			}
			if id == "" {
				id = pb.Name + "-" + randomSuffix()
			}
			if err := conn.checkCodec(ctx, a.conn.taskQueue); err != nil {
				return err
			}
			conn.warnWithoutWorker(ctx, a.conn.taskQueue, c.stderr)
			wr, existing, err := conn.submitOnce(ctx, pb, in, id, a.conn.taskQueue, once)
			if err != nil {
				return startFailed(id, conn.reach, err)
			}
			what := "Started"
			if existing {
				what = "Already submitted, not started again:"
			}
			if detach {
				fmt.Fprintf(c.stdout, "%s %s (run %s); follow it with: playbook events %s --follow%s\n", what, wr.GetID(), wr.GetRunID(), wr.GetID(), conn.reach)
				return nil
			}
			return followFrom(c, conn, pb, wr, &out, strict, what)
		}),
	}
	fs := cmd.Flags()
	strictFlag(fs, &strict)
	fs.StringArrayVar(&sets, "set", nil, "override a workload value: `KEY=VALUE` (VALUE as written for a string key, else read as YAML; KEY may be dotted; repeatable)")
	fs.StringVar(&input, "input", "", "read workload overrides from a JSON object `FILE`")
	out.flag(fs, "print only the aggregate on stdout; progress goes to stderr")
	fs.StringVar(&id, "id", "", "workflow ID of the run (default NAME-RANDOM)")
	once.flags(fs)
	fs.BoolVar(&detach, "detach", false, "submit the run, print its ID and exit 0 without following it")
	fs.IntVar(&a.embeddedPort, "embedded-port", 0, "the `PORT` of the embedded server on 127.0.0.1, when run starts one (default: any free port)")
	fs.Var(&logicalTime, "logical-time", "the time the run stands for, run.logical_time and PLAYBOOK_LOGICAL_TIME (`TIME`, RFC 3339; default: now)")
	return cmd
}

// followAndReport follows a run to its end, prints its progress and summary
// (or, with --json, only the aggregate on stdout) and returns the exit code
// for its outcome.
func followAndReport(c *call, conn *connection, pb *spec.Playbook, wr client.WorkflowRun, out *printer, strict bool) error {
	return followFrom(c, conn, pb, wr, out, strict, "Started")
}

// followFrom is followAndReport whose first line says what happened to
// the run (Started, or Following a run submitted before).
func followFrom(c *call, conn *connection, pb *spec.Playbook, wr client.WorkflowRun, out *printer, strict bool, what string) error {
	progress := out.progress(c)
	fmt.Fprintf(progress, "%s %s (run %s)\n", what, wr.GetID(), wr.GetRunID())
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := newProgress(pb, progress, conn.reach)
	agg, err := follow(ctx, conn.client, wr, p)
	if err != nil && ctx.Err() != nil {
		if conn.embedded == nil {
			return detached(c, conn, wr.GetID())
		}
		agg, err = cancelEmbedded(c, conn, wr, p)
	}
	if err != nil {
		return err
	}
	// The summary is progress: with --json, only the aggregate is on stdout.
	if err := out.print(c.stdout, agg, func(io.Writer) {}); err != nil {
		return err
	}
	printSummary(progress, pb, agg)
	return exitWith(exitCodeOf(agg.Status, strict))
}

// exitCodeOf is a run's exit code for its status: a run completed with
// warnings succeeded, unless strict says that a warning fails the command.
func exitCodeOf(status string, strict bool) int {
	switch status {
	case contract.RunCompleted:
		return exitOK
	case contract.RunCompletedWithWarnings:
		if strict {
			return exitFailed
		}
		return exitOK
	case contract.RunCancelled:
		return exitCancelled
	}
	return exitFailed
}

// strictFlag is --strict of the commands that follow a run to its end.
func strictFlag(fs *pflag.FlagSet, strict *bool) {
	fs.BoolVar(strict, "strict", false, "exit 1 when the run ends completed_with_warnings (a step with allow_failure failed); default 0")
}

// workloadOverrides reads --input then applies each --set on top.
func workloadOverrides(inputFile string, sets []string) (map[string]any, error) {
	w := map[string]any{}
	if inputFile != "" {
		b, err := userfile.Read(inputFile, submit.MaxInputFileSize, "an --input file")
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", userfile.Show(inputFile), err)
		}
		// Numbers keep their digits (json.Number): a string key gets them as
		// written, a whole number exactly.
		if kind := jsonKind(b); kind != "an object" {
			return nil, fmt.Errorf("--input %s: not a JSON object: it holds %s", inputFile, kind)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&w); err != nil {
			return nil, fmt.Errorf("--input %s: not a JSON object: %s", inputFile, err)
		}
		if d.More() {
			return nil, fmt.Errorf("--input %s: more than one JSON value; give one object", inputFile)
		}
		if key := duplicateKey(b); key != "" {
			return nil, fmt.Errorf("--input %s: key %s is given twice: give it once", inputFile, key)
		}
	}
	for _, kv := range sets {
		key, raw, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("--set %q: write KEY=VALUE", kv)
		}
		path := strings.Split(key, ".")
		if slices.Contains(path, "") {
			return nil, fmt.Errorf("--set %q: the key %q has an empty part: write KEY=VALUE or KEY.SUBKEY=VALUE", kv, key)
		}
		m := w
		for i, p := range path[:len(path)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				if _, set := m[p]; set {
					return nil, fmt.Errorf("--set %s: %s is already set to a value that is not a mapping", kv, strings.Join(path[:i+1], "."))
				}
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		// The text as written: what it means depends on the key's default.
		m[path[len(path)-1]] = submit.SetText(raw)
	}
	return w, nil
}

// jsonKind says what JSON value a text holds, as a person names it.
func jsonKind(b []byte) string {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number or something that is not JSON"
}

// duplicateKey is the first key given twice in one object of a JSON text
// (as a path, a.b), "" when there is none: decoding would keep the last
// and lose the other silently.
func duplicateKey(b []byte) string {
	type container struct {
		object bool
		seen   map[string]bool
		path   string
		key    bool // in an object: the next token is a key
	}
	var stack []*container
	last := "" // the key whose value comes next
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		var top *container
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			k, _ := tok.(string) // json.Decoder gives a key as a string, or the closing brace
			if tok != json.Delim('}') {
				if top.seen[k] {
					return strings.TrimPrefix(top.path+"."+k, ".")
				}
				top.seen[k], top.key, last = true, false, k
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			path := ""
			if top != nil {
				path = top.path
				if top.object {
					path += "." + last
				}
			}
			stack = append(stack, &container{object: tok == json.Delim('{'), seen: map[string]bool{}, path: path, key: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value has ended: its object expects a key again.
		if len(stack) > 0 {
			stack[len(stack)-1].key = true
		}
	}
}

const suffixAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return string(b)
}

// checkRunID checks --id: a run's ID names its log directory on workers.
func checkRunID(id string) error {
	if id == "" {
		return nil
	}
	return spec.CheckPathName("--id", id)
}
