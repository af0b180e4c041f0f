package commands

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.temporal.io/sdk/client"

	"github.com/urfave/cli/v2"

	"playbook/interpreter"
	"playbook/submit"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "submit a playbook and follow it to its end",
		ArgsUsage: "FILE",
		Description: "Exit codes: 0 completed, 1 failed, 2 invalid input (nothing started), 3 cancelled,\n" +
			"4 Temporal unreachable, 130 detached by Ctrl-C (the run goes on).\n" +
			"With no server configured (no --address, TEMPORAL_ADDRESS or profile) and none listening\n" +
			"on 127.0.0.1:7233, an embedded in-memory server and worker run for this run only.",
		Flags: append([]cli.Flag{
			&cli.GenericFlag{Name: "set", Value: &wholeValues{}, Usage: "override a workload value: `KEY=VALUE` (VALUE as written for a string key, else read as YAML; KEY may be dotted; repeatable)"},
			&cli.StringFlag{Name: "input", Usage: "read workload overrides from a JSON object `FILE`"},
			&cli.BoolFlag{Name: "json", Usage: "print only the aggregate on stdout; progress goes to stderr"},
			&cli.StringFlag{Name: "id", Usage: "workflow ID of the run (default NAME-RANDOM)"},
			&cli.BoolFlag{Name: "detach", Usage: "submit the run, print its ID and exit 0 without following it"},
		}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("run: give exactly one playbook file", exitInvalid)
			}
			pb, in, err := load(c.Args().First())
			if err != nil {
				return cli.Exit(err.Error(), exitInvalid)
			}
			if err := checkRunID(c); err != nil {
				return cli.Exit("run: "+err.Error(), exitInvalid)
			}
			if in.Workload, err = workloadOverrides(c.String("input"), repeatable(c, "set")); err != nil {
				return cli.Exit("run: "+err.Error(), exitInvalid)
			}
			if in.Workload, err = submit.CheckOverrides(pb, in.Workload); err != nil {
				return cli.Exit("run: "+err.Error(), exitInvalid)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			c.Context = ctx
			// The SDK's own log lines would repeat, less clearly, what follow prints.
			// A detached run outlives this command, so it needs a real server,
			// never the embedded one that ends with the command.
			conn, err := connect(c, !c.Bool("detach"), c.App.ErrWriter, quietLogs)
			if err != nil {
				return connectFailed("run", err)
			}
			defer conn.Close()
			id := c.String("id")
			if id == "" {
				id = pb.Name + "-" + randomSuffix()
			}
			conn.warnWithoutWorker(ctx, c.String("task-queue"), c.App.ErrWriter)
			wr, err := conn.submit(ctx, pb, in, id, c.String("task-queue"))
			if err != nil {
				return startFailed("run", id, err)
			}
			if c.Bool("detach") {
				fmt.Fprintf(c.App.Writer, "Started %s (run %s); follow it with: playbook events %s --follow\n", wr.GetID(), wr.GetRunID(), wr.GetID())
				return nil
			}
			return followAndReport(c, conn, pb, wr)
		},
	}
}

// followAndReport follows a run to its end, prints its progress and summary
// (or, with --json, only the aggregate on stdout) and returns the exit code
// for its outcome.
func followAndReport(c *cli.Context, conn *connection, pb *interpreter.Playbook, wr client.WorkflowRun) error {
	progress := progressWriter(c)
	fmt.Fprintf(progress, "Started %s (run %s)\n", wr.GetID(), wr.GetRunID())
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	agg, err := follow(ctx, conn.client, wr, pb, progress)
	if err != nil && ctx.Err() != nil {
		return detached(c, conn, wr.GetID())
	}
	if err != nil {
		return cli.Exit(c.Command.Name+": "+err.Error(), exitFailed)
	}
	if c.Bool("json") {
		b, _ := json.MarshalIndent(agg, "", "  ")
		fmt.Fprintln(c.App.Writer, string(b))
	}
	printSummary(progress, pb, agg)
	return cli.Exit("", exitCodeOf(agg.Status))
}

// progressWriter is where progress goes: stdout, or stderr with --json so
// that stdout carries only the aggregate.
func progressWriter(c *cli.Context) io.Writer {
	if c.Bool("json") {
		return c.App.ErrWriter
	}
	return c.App.Writer
}

func exitCodeOf(status string) int {
	switch status {
	case interpreter.RunCompleted:
		return exitOK
	case interpreter.RunCancelled:
		return exitCancelled
	}
	return exitFailed
}

// workloadOverrides reads --input then applies each --set on top.
func workloadOverrides(inputFile string, sets []string) (map[string]any, error) {
	w := map[string]any{}
	if inputFile != "" {
		b, err := os.ReadFile(inputFile)
		if err != nil {
			return nil, fmt.Errorf("--input: %w", err)
		}
		// Numbers keep their digits (json.Number): a string key gets them as
		// written, a whole number exactly.
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&w); err != nil || w == nil {
			why := "null"
			if err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("--input %s: not a JSON object: %s", inputFile, why)
		}
		if d.More() {
			return nil, fmt.Errorf("--input %s: more than one JSON value; give one object", inputFile)
		}
	}
	for _, kv := range sets {
		key, raw, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("--set %q: write KEY=VALUE", kv)
		}
		path := strings.Split(key, ".")
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
func checkRunID(c *cli.Context) error {
	if !c.IsSet("id") {
		return nil
	}
	return interpreter.CheckPathName("--id", c.String("id"))
}
