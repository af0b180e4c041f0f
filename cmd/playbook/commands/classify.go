package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter"
	"playbook/interpreter/playbookwf"
)

func classifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "classify",
		Usage:     "resolve a pending_failed step: retry it, fail it, or skip it",
		ArgsUsage: "RUN STEP retry|fail|skip",
		Flags:     append([]cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, recorded in the run's events and shown by status"}}, connectionFlags()...),
		Action: onArgs("classify", 3, "RUN STEP and one of retry, fail, skip", func(c *cli.Context, conn *connection) error {
			run, step, action := c.Args().Get(0), c.Args().Get(1), c.Args().Get(2)
			answer, err := classifyStep(c.Context, conn.client, run, step, action, c.String("reason"), "")
			if err != nil {
				var appErr *temporal.ApplicationError
				if errors.As(err, &appErr) {
					return cli.Exit("classify: "+appErr.Message(), exitInvalid)
				}
				return cli.Exit("classify: "+err.Error(), exitFailed)
			}
			fmt.Fprintln(c.App.Writer, answer)
			return nil
		}),
	}
}

func pendingCommand() *cli.Command {
	return &cli.Command{
		Name:      "pending",
		Usage:     "list a run's pending_failed steps with their error and stderr, to decide how to classify them",
		ArgsUsage: "RUN",
		Flags:     append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the list as JSON"}}, connectionFlags()...),
		Action: onArgs("pending", 1, "the RUN (workflow ID)", func(c *cli.Context, conn *connection) error {
			v, err := conn.client.QueryWorkflow(c.Context, c.Args().First(), "", playbookwf.QueryPending)
			var steps []interpreter.PendingStep
			if err == nil {
				err = v.Get(&steps)
			}
			if err != nil {
				return cli.Exit("pending: "+err.Error(), exitFailed)
			}
			if c.Bool("json") {
				b, _ := json.MarshalIndent(steps, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
				return nil
			}
			if len(steps) == 0 {
				fmt.Fprintln(c.App.Writer, "No step is waiting for a classification.")
				return nil
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "STEP\tSINCE\tATTEMPTS\tRECOVERY\tERROR")
			for _, p := range steps {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s: %s\n", p.Step, p.Since.Local().Format("15:04:05"), p.Attempts, p.Recovery, p.Error.Type, interpreter.FirstLine(p.Error.Message))
			}
			tw.Flush()
			for _, p := range steps {
				if d, ok := p.Error.Details.(map[string]any); ok && d["stderr"] != nil && d["stderr"] != "" {
					fmt.Fprintf(c.App.Writer, "\n%s stderr (tail):\n%s", p.Step, d["stderr"])
				}
			}
			fmt.Fprintf(c.App.Writer, "\nClassify with: playbook classify %s STEP retry|fail|skip\n", c.Args().First())
			return nil
		}),
	}
}
