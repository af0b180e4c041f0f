package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/temporal"

	"playbook/engine"
	"playbook/playbookwf"
	"playbook/spec/expr"
)

func (a *app) classifyCommand() *cobra.Command {
	var reason, result string
	cmd := &cobra.Command{
		Use:   "classify RUN STEP retry|fail|skip",
		Short: "resolve a pending_failed step: retry it, fail it, or skip it",
		Args:  exactArgs(3, "RUN STEP and one of retry, fail, skip"),
		// An action the run cannot take is refused here, before anything is
		// sent to the server.
		PreRunE: func(_ *cobra.Command, args []string) error {
			if result != "" && args[2] != engine.ClassifySkip {
				return invalidf("--result goes with skip: the step completes with that result")
			}
			if result != "" && !json.Valid([]byte(result)) {
				return invalidf("--result %s: not JSON (a string is quoted: '\"ok\"')", result)
			}
			switch args[2] {
			case engine.ClassifyRetry, engine.ClassifyFail, engine.ClassifySkip:
				return nil
			}
			return invalidf("%q is not an action: give retry, fail or skip", args[2])
		},
		RunE: a.connected(func(c *call, conn *connection) error {
			answer, err := classifyStepWith(c.ctx, conn.client, c.args[0], c.args[1], c.args[2], reason, "", result)
			var rejected *temporal.ApplicationError
			if errors.As(err, &rejected) {
				return invalid(errors.New(rejected.Message()))
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, answer)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the run's events and shown by status")
	cmd.Flags().StringVar(&result, "result", "", "with skip: the step completes by hand with this `JSON` result, which the steps after it read")
	return cmd
}

func (a *app) pendingCommand() *cobra.Command {
	var out printer
	cmd := &cobra.Command{
		Use:   "pending RUN",
		Short: "list a run's pending_failed steps with their error and stderr, to decide how to classify them",
		Args:  exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			run := c.args[0]
			v, err := conn.client.QueryWorkflow(c.ctx, run, "", playbookwf.QueryPending)
			var steps []engine.PendingStep
			if err == nil {
				err = v.Get(&steps)
			}
			if err != nil {
				return err
			}
			return out.print(c.stdout, steps, func(w io.Writer) { printPending(w, run, steps) })
		}),
	}
	out.flag(cmd.Flags(), "print the list as JSON")
	return cmd
}

// printPending shows the pending_failed steps as a table, then each one's
// stderr tail.
func printPending(w io.Writer, run string, steps []engine.PendingStep) {
	if len(steps) == 0 {
		fmt.Fprintln(w, "No step is waiting for a classification.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSINCE\tATTEMPTS\tRECOVERY\tERROR")
	for _, p := range steps {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s: %s\n", p.Step, p.Since.Local().Format("15:04:05"), p.Attempts, p.Recovery, p.Error.Type, expr.FirstLine(p.Error.Message))
	}
	tw.Flush()
	for _, p := range steps {
		if d, ok := p.Error.Details.(map[string]any); ok && d["stderr"] != nil && d["stderr"] != "" {
			fmt.Fprintf(w, "\n%s stderr (tail):\n%s", p.Step, d["stderr"])
		}
	}
	fmt.Fprintf(w, "\nClassify with: playbook classify %s STEP retry|fail|skip\n", run)
}
