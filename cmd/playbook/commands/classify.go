package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
	"playbook/runs"
)

func (a *app) classifyCommand() *cobra.Command {
	var reason, result, by string
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
			if by == "" {
				by = userName()
			}
			answer, err := runs.Classify(c.ctx, conn.client, c.args[0], c.args[1], c.args[2], reason, by, result)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, answer)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the run's events and shown by status")
	cmd.Flags().StringVar(&by, "by", "", "who classifies (default: your user name), recorded with the classification")
	cmd.Flags().StringVar(&result, "result", "", "with skip: the step completes by hand with this `JSON` result, which the steps after it read")
	return cmd
}

func (a *app) pendingCommand() *cobra.Command {
	var out printer
	cmd := &cobra.Command{
		Use:   "pending RUN",
		Short: "list a run's steps waiting for a person: approvals to decide, pending_failed steps to classify",
		Args:  exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			run := c.args[0]
			steps, err := runs.Pending(c.ctx, conn.client, run)
			if err != nil {
				return err
			}
			// A worker older than approvals answers no such query: the run
			// then has none.
			approvals, _ := runs.Approvals(c.ctx, conn.client, run)
			items := pendingItems(run, conn.reach, steps, approvals)
			return out.print(c.stdout, items, func(w io.Writer) {
				printPending(w, run, conn.reach, steps, approvals)
				if len(steps) == 0 && len(approvals) == 0 {
					for _, step := range runs.RunningSubPlaybooks(c.ctx, conn.client, run) {
						child := childRun(c, conn, run, step)
						fmt.Fprintf(w, "Step %s runs a sub-playbook, whose steps may wait in its own run: playbook pending %s%s\n", step, child, conn.reach)
					}
				}
			})
		}),
	}
	out.flag(cmd.Flags(), "print the list as JSON")
	return cmd
}

// pendingItem is one step waiting for a person, as `pending --json` lists
// it: an approval (kind approval) or a pending_failed step (kind
// pending_failed, with the fields it always had), and the commands that
// resolve it.
type pendingItem struct {
	Kind     string              `json:"kind"`
	Step     string              `json:"step"`
	Since    time.Time           `json:"since"`
	Attempts int                 `json:"attempts,omitempty"`
	Recovery string              `json:"recovery,omitempty"`
	Error    *contract.StepError `json:"error,omitempty"`
	// An approval's: its inputs' defaults and types (a default of 3 and
	// one of 3.0 read the same in JSON).
	Message   string            `json:"message,omitempty"`
	Inputs    map[string]any    `json:"inputs,omitempty"`
	Types     map[string]string `json:"types,omitempty"`
	Approvers []string          `json:"approvers,omitempty"`
	Deadline  *time.Time        `json:"deadline,omitempty"`
	OnTimeout string            `json:"on_timeout,omitempty"`
	Commands  []string          `json:"commands"`
}

func pendingItems(run, reach string, steps []engine.PendingStep, approvals []engine.WaitingApproval) []pendingItem {
	items := []pendingItem{}
	for _, w := range approvals {
		items = append(items, pendingItem{Kind: "approval", Step: w.Step, Since: w.Since, Message: w.Message, Inputs: w.Inputs, Types: w.Types, Approvers: w.Approvers, Deadline: w.Deadline, OnTimeout: w.OnTimeout,
			Commands: withReach(engine.ApprovalCommands(run, w.Step, spec.Approval{Inputs: w.Inputs, Approvers: w.Approvers}), reach)})
	}
	for _, p := range steps {
		items = append(items, pendingItem{Kind: string(contract.StatusPendingFailed), Step: p.Step, Since: p.Since, Attempts: p.Attempts, Recovery: p.Recovery, Error: p.Error,
			Commands: []string{engine.ClassifyCommand(run, p.Step) + reach}})
	}
	return items
}

// printPending shows the approvals waiting, with their inputs and the
// commands that decide them, then the pending_failed steps as a table and
// each one's stderr tail.
func printPending(w io.Writer, run, reach string, steps []engine.PendingStep, approvals []engine.WaitingApproval) {
	if len(steps) == 0 && len(approvals) == 0 {
		fmt.Fprintln(w, "No step is waiting for a person: no approval, no classification.")
		return
	}
	for _, a := range approvals {
		fmt.Fprintf(w, "%s waits for approval since %s: %s\n", a.Step, a.Since.Local().Format("15:04:05"), a.Message)
		if len(a.Approvers) > 0 {
			fmt.Fprintf(w, "  approvers: %s\n", strings.Join(a.Approvers, ", "))
		}
		for _, k := range slices.Sorted(maps.Keys(a.Inputs)) {
			def := "default " + expr.Text(a.Inputs[k])
			if text, ok := a.Inputs[k].(string); ok {
				def = "default " + strconv.Quote(text)
			} else if a.Inputs[k] == nil {
				def = "required"
			}
			fmt.Fprintf(w, "  input %s: %s, %s\n", k, inputTypes[a.Types[k]], def)
		}
		if a.Deadline != nil {
			fmt.Fprintf(w, "  timeout at %s: then %s\n", a.Deadline.Local().Format("15:04:05"), a.OnTimeout)
		}
		cmds := withReach(engine.ApprovalCommands(run, a.Step, spec.Approval{Inputs: a.Inputs, Approvers: a.Approvers}), reach)
		fmt.Fprintf(w, "  approve: %s\n  reject:  %s\n\n", cmds[0], cmds[1])
	}
	if len(steps) == 0 {
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
	fmt.Fprintf(w, "\nClassify with: playbook classify %s STEP retry|fail|skip%s\n", run, reach)
}

// withReach adds to each command line what reaches the server (connection.reach).
func withReach(cmds []string, reach string) []string {
	for i := range cmds {
		cmds[i] += reach
	}
	return cmds
}

// inputTypes say what an input takes, by its type (spec.InputType).
var inputTypes = map[string]string{
	spec.InputAny: "any value", spec.InputBool: "true or false", spec.InputInt: "a whole number", spec.InputFloat: "a number",
	spec.InputString: "a string", spec.InputList: "a list", spec.InputMapping: "a mapping",
}
