package commands

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/runs"
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
			pb, in, err := runs.Load(c.args[0])
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
			if in.Workload, err = submit.ReadOverrides(input, sets); err != nil {
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
				id = runs.NewRunID(pb.Name)
			}
			if err := conn.checkCodec(ctx, a.conn.taskQueue); err != nil {
				return err
			}
			conn.warnWithoutWorker(ctx, a.conn.taskQueue, pb, c.stderr)
			wr, existing, err := once.start(ctx, conn, runs.Start{Playbook: pb, Input: in, ID: id, TaskQueue: a.conn.taskQueue, LargeValues: conn.largeValues})
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

// checkRunID checks --id: a run's ID names its log directory on workers.
func checkRunID(id string) error {
	if id == "" {
		return nil
	}
	return spec.CheckPathName("--id", id)
}
