package commands

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"playbook/interpreter/playbookwf"
)

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "cancel a run: running steps are cancelled, pending ones skipped, then end runs and the run ends cancelled",
		ArgsUsage: "RUN",
		Description: "Exit 5 when the run has already ended (nothing to cancel).\n" +
			"With --drain, running steps finish and no new step starts (a `drain` signal);\n" +
			"either way `end` still runs. The same cancel can come from `temporal workflow cancel`,\n" +
			"the Web UI or any Temporal client.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why: recorded by the run (cancel_reason in its aggregate and events) and in Temporal's history"},
			&cli.BoolFlag{Name: "drain", Usage: "let running steps finish and start no new ones"},
		}, connectionFlags()...),
		Action: onArgs("cancel", 1, "the RUN (workflow ID)", func(c *cli.Context, conn *connection) error {
			run := c.Args().First()
			if outcome := endedOutcome(c.Context, conn.client, run); outcome != "" {
				return cli.Exit(fmt.Sprintf("cancel: %s already ended: %s; nothing to cancel", run, outcome), exitEnded)
			}
			if c.Bool("drain") {
				if err := conn.client.SignalWorkflow(c.Context, run, "", playbookwf.SignalDrain, c.String("reason")); err != nil {
					return cli.Exit("cancel --drain: "+err.Error(), exitFailed)
				}
				fmt.Fprintf(c.App.Writer, "Draining %s: running steps finish, no new step starts.\n", run)
				return nil
			}
			if err := requestCancel(c.Context, conn, run, c.String("reason")); err != nil {
				return cli.Exit("cancel: "+err.Error(), exitFailed)
			}
			fmt.Fprintf(c.App.Writer, "Cancel requested for %s: running steps are being cancelled; end will run.\n", run)
			return nil
		}),
	}
}

func terminateCommand() *cli.Command {
	return &cli.Command{
		Name:      "terminate",
		Usage:     "stop a run at once: the hard stop. No step is told, end does not run, no aggregate is made",
		ArgsUsage: "RUN",
		Description: "Terminate is Temporal's forced stop: the workflow ends Terminated on the spot.\n" +
			"`end` never runs, no webhook is called and no aggregate is made; a worker kills a running\n" +
			"step's processes when its next heartbeat finds the run gone. Prefer `playbook cancel`.",
		Flags: append([]cli.Flag{&cli.StringFlag{Name: "reason", Value: "terminated from the playbook CLI", Usage: "why, recorded in the workflow's history"}}, connectionFlags()...),
		Action: onArgs("terminate", 1, "the RUN (workflow ID)", func(c *cli.Context, conn *connection) error {
			if err := conn.client.TerminateWorkflow(c.Context, c.Args().First(), "", c.String("reason")); err != nil {
				return cli.Exit("terminate: "+err.Error(), exitFailed)
			}
			fmt.Fprintf(c.App.Writer, "Terminated %s.\n", c.Args().First())
			return nil
		}),
	}
}
