package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"playbook/internal/codec"
	"playbook/interpreter/playbookwf"
)

func retryCommand() *cli.Command {
	return &cli.Command{
		Name:      "retry",
		Usage:     "start a new run of a finished run's frozen playbook, reusing the steps that completed",
		ArgsUsage: "RUN",
		Description: "The new run has the same playbook text, sub-playbooks and workload as RUN. Steps that\n" +
			"completed are `reused` (their results carried over, not run again); failed, skipped and\n" +
			"cancelled steps run. With --step S, S and everything downstream of it run again too.\n" +
			"Followed like `run`: same output, --json and exit codes.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "step", Usage: "run this `STEP` and everything downstream of it again"},
			&cli.BoolFlag{Name: "json", Usage: "print only the aggregate on stdout; progress goes to stderr"},
			&cli.StringFlag{Name: "id", Usage: "workflow ID of the new run (default NAME-RANDOM)"},
			&cli.StringFlag{Name: "reason", Usage: "why: recorded in the new run's events, status and Web UI details"},
		}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("retry: give the RUN (workflow ID) to retry", exitInvalid)
			}
			earlierID := c.Args().First()
			if err := checkRunID(c); err != nil {
				return cli.Exit("retry: "+err.Error(), exitInvalid)
			}
			return withConnection(c, "retry", func(conn *connection) error {
				r, err := startRetry(c.Context, conn, earlierID, c.String("step"), c.String("id"), c.String("task-queue"), "cli", c.String("reason"))
				if err != nil {
					var mistake *retryError
					var notStarted *submitError
					switch {
					case errors.As(err, &mistake):
						return cli.Exit("retry: "+err.Error(), exitInvalid)
					case errors.As(err, &notStarted):
						return startFailed("retry", notStarted.id, notStarted.err)
					}
					return cli.Exit("retry: "+err.Error(), exitFailed)
				}
				conn.warnWithoutWorker(c.Context, c.String("task-queue"), c.App.ErrWriter)
				if len(r.reused) == 0 {
					fmt.Fprintf(progressWriter(c), "Retrying %s as %s; no completed step to reuse: every step runs.\n", earlierID, r.run.GetID())
				} else {
					fmt.Fprintf(progressWriter(c), "Retrying %s as %s, reusing %s: %s\n", earlierID, r.run.GetID(), countOf(len(r.reused), "completed step"), strings.Join(r.reused, ", "))
				}
				return followAndReport(c, conn, r.pb, r.run)
			})
		},
	}
}

// frozenInput reads the input a run was started with: its playbook text,
// sub-playbooks and workload, from the first event of its history.
func frozenInput(ctx context.Context, c client.Client, run string) (playbookwf.Input, error) {
	var in playbookwf.Input
	it := c.GetWorkflowHistory(ctx, run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, fmt.Errorf("%s has no history", run)
	}
	first, err := it.Next()
	if err != nil {
		return in, err
	}
	payloads := first.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(payloads) != 1 {
		return in, errors.New(run + " is not a playbook run")
	}
	dc, err := payloadConverter()
	if err != nil {
		return in, err
	}
	if err := dc.FromPayload(payloads[0], &in); err != nil {
		return in, fmt.Errorf("%s is not a playbook run: %v", run, err)
	}
	in.Reuse, in.Index = nil, false
	return in, nil
}

// payloadConverter reads a history's payloads: with the codec key of
// $PLAYBOOK_CODEC_KEY or $PLAYBOOK_CODEC_KEY_FILE when one is set.
func payloadConverter() (converter.DataConverter, error) {
	keys, err := codec.Load("")
	if err != nil || keys == nil {
		return converter.GetDefaultDataConverter(), err
	}
	return keys.DataConverter(), nil
}
