package commands

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"playbook/interpreter/contract"
	"playbook/runs"
)

func (a *app) cancelCommand() *cobra.Command {
	var (
		reason string
		drain  bool
	)
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "cancel a run: running steps are cancelled, pending ones skipped, then end runs and the run ends cancelled",
		Long: "Exit 5 when the run has already ended (nothing to cancel).\n" +
			"With --drain, running steps finish and no new step starts (a `drain` signal);\n" +
			"either way the cleanup steps (on_cancel: run, always: true), then `end`, still run.\n" +
			"The same cancel can come from `temporal workflow cancel`,\n" +
			"the Web UI or any Temporal client.",
		Args: exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			run := c.args[0]
			if err := contract.CheckSize("--reason", len(reason)); err != nil {
				return invalid(err)
			}
			if drain {
				if err := runs.Drain(c.ctx, conn.client, run, reason); err != nil {
					var ended *runs.EndedError
					if errors.As(err, &ended) {
						return err
					}
					return &exitError{code: exitFailed, err: errors.New("cancel --drain: " + err.Error()), whole: true}
				}
				fmt.Fprintf(c.stdout, "Draining %s: running steps finish, no new step starts.\n", run)
				return nil
			}
			// A run its deadline already winds down ends as the deadline
			// says (docs/LANGUAGE.md): the cancel changes nothing of that.
			agg, _ := runs.QueryState(c.ctx, conn.client, run)
			if err := runs.Cancel(c.ctx, conn.client, conn.namespace, run, reason); err != nil {
				return err
			}
			if agg != nil && agg.Timeout != nil && agg.CancelReason == "" {
				fmt.Fprintf(c.stdout, "Cancel requested for %s, whose deadline has passed: it already winds down, and ends as its on_timeout says; its cleanup steps are not cancelled.\n", run)
				return nil
			}
			fmt.Fprintf(c.stdout, "Cancel requested for %s: running steps are being cancelled; end will run (after the cleanup steps, if any).\n", run)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why: recorded by the run (cancel_reason in its aggregate and events) and in Temporal's history")
	cmd.Flags().BoolVar(&drain, "drain", false, "let running steps finish and start no new ones")
	return cmd
}

func (a *app) terminateCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "terminate RUN",
		Short: "stop a run at once: the hard stop. No step is told, end does not run, no aggregate is made",
		Long: "Terminate is Temporal's forced stop: the workflow ends Terminated on the spot.\n" +
			"`end` never runs, no webhook is called and no aggregate is made; a worker kills a running\n" +
			"step's processes when its next heartbeat finds the run gone. Prefer `playbook cancel`.\n" +
			"Exit 5 when the run has already ended.",
		Args: exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			if err := runs.Terminate(c.ctx, conn.client, c.args[0], reason); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Terminated %s.\n", c.args[0])
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "terminated from the playbook CLI", "why, recorded in the workflow's history")
	return cmd
}
