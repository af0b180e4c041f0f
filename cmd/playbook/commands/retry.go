package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"playbook/internal/codec"
	"playbook/playbookwf"
	"playbook/spec"
)

func (a *app) retryCommand() *cobra.Command {
	var (
		step, id, reason string
		out              printer
	)
	cmd := &cobra.Command{
		Use:   "retry RUN",
		Short: "start a new run of a finished run's frozen playbook, reusing the steps that completed",
		Long: "The new run has the same playbook text, sub-playbooks and workload as RUN. Steps that\n" +
			"completed are `reused` (their results carried over, not run again); failed, skipped and\n" +
			"cancelled steps run. With --step S, S and everything downstream of it run again too.\n" +
			"Followed like `run`: same output, --json and exit codes.",
		Args: exactArgs(1, "the RUN (workflow ID) to retry"),
		RunE: action(func(c *call) error {
			earlierID := c.args[0]
			// Every run playbook starts has an ID that follows the rule.
			if err := spec.CheckPathName("RUN", earlierID); err != nil {
				return invalid(err)
			}
			if err := checkRunID(id); err != nil {
				return invalid(err)
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				r, err := startRetry(c.ctx, conn, earlierID, step, id, a.conn.taskQueue, "cli", reason)
				var mistake *retryError
				var notStarted *submitError
				switch {
				case errors.As(err, &mistake):
					return invalid(err)
				case errors.As(err, &notStarted):
					return startFailed(notStarted.id, notStarted.err)
				case err != nil:
					return err
				}
				conn.warnWithoutWorker(c.ctx, a.conn.taskQueue, c.stderr)
				if len(r.reused) == 0 {
					fmt.Fprintf(out.progress(c), "Retrying %s as %s; no completed step to reuse: every step runs.\n", earlierID, r.run.GetID())
				} else {
					fmt.Fprintf(out.progress(c), "Retrying %s as %s, reusing %s: %s\n", earlierID, r.run.GetID(), countOf(len(r.reused), "completed step"), strings.Join(r.reused, ", "))
				}
				return followAndReport(c, conn, r.pb, r.run, &out)
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&step, "step", "", "run this `STEP` and everything downstream of it again")
	out.flag(fs, "print only the aggregate on stdout; progress goes to stderr")
	fs.StringVar(&id, "id", "", "workflow ID of the new run (default NAME-RANDOM)")
	fs.StringVar(&reason, "reason", "", "why: recorded in the new run's events, status and Web UI details")
	return cmd
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
