package commands

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/submit"
)

// approveCommand and rejectCommand decide a waiting approval step. What
// the run would refuse (an input not declared or of another type, a
// required input left out, a name not among the approvers) is refused here first, exit 2, before anything
// is sent; the run's Update validator checks the same again.
func (a *app) approveCommand() *cobra.Command {
	return a.decideCommand(contract.DecisionApprove)
}

func (a *app) rejectCommand() *cobra.Command {
	return a.decideCommand(contract.DecisionReject)
}

func (a *app) decideCommand(decision string) *cobra.Command {
	var sets []string
	var reason, by string
	use, short := "approve RUN STEP", "approve a waiting approval step, with its inputs (--set)"
	if decision == contract.DecisionReject {
		use, short = "reject RUN STEP", "reject a waiting approval step: it fails with error type rejected"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(2, "RUN STEP"),
		PreRunE: func(*cobra.Command, []string) error {
			for _, kv := range sets {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					return invalidf("--set %q: write NAME=VALUE", kv)
				}
			}
			return nil
		},
		RunE: a.connected(func(c *call, conn *connection) error {
			d := contract.ApprovalDecision{Step: c.args[1], Decision: decision, By: by, Reason: reason}
			if d.By == "" {
				d.By = userName()
			}
			if err := contract.CheckDecision(d); err != nil {
				return invalid(err)
			}
			waiting, err := runs.Deliver(c.ctx, c.args[0], func(ctx context.Context, _ string) (engine.WaitingApproval, error) {
				return runs.WaitingApproval(ctx, conn.client, c.args[0], d.Step)
			})
			if err != nil {
				return err
			}
			if d.Inputs, err = inputsFromSets(waiting, sets); err != nil {
				return invalid(err)
			}
			if err := contract.CheckDecision(d); err != nil {
				return invalid(err)
			}
			if k := spec.MissingInput(waiting.Inputs, d.Inputs); k != "" && decision == contract.DecisionApprove {
				return invalid(engine.MissingInputError(k))
			}
			if len(waiting.Approvers) > 0 && !slices.Contains(waiting.Approvers, d.By) {
				return invalidf("%s is not an approver of step %q (approvers: %s); give --by NAME", d.By, d.Step, strings.Join(waiting.Approvers, ", "))
			}
			answer, err := runs.DecideApproval(c.ctx, conn.client, c.args[0], d)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, answer)
			return nil
		}),
	}
	fs := cmd.Flags()
	if decision == contract.DecisionApprove {
		fs.StringArrayVar(&sets, "set", nil, "give an input: `NAME=VALUE` (VALUE as written for a string input, else read as YAML; repeatable)")
	}
	fs.StringVar(&reason, "reason", "", "why, recorded with the decision")
	fs.StringVar(&by, "by", "", "who decides (default: your user name); must be one of the step's approvers when it names some")
	return cmd
}

// userName is who decides when --by is not given: the OS user.
func userName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

// inputsFromSets reads --set NAME=VALUE against the declared inputs: a
// string input takes the text as written, any other reads it as YAML, and
// the value must have its default's type.
func inputsFromSets(waiting engine.WaitingApproval, sets []string) (map[string]any, error) {
	given := map[string]any{}
	for _, kv := range sets {
		k, text, _ := strings.Cut(kv, "=")
		if waiting.Types[k] == spec.InputString {
			given[k] = text
			continue
		}
		given[k] = submit.PlainOverrides(map[string]any{k: submit.SetText(text)})[k]
	}
	if _, err := spec.ConvertInputs(waiting.Inputs, waiting.Types, given); err != nil {
		return nil, err
	}
	if len(given) == 0 {
		return nil, nil
	}
	return given, nil
}
