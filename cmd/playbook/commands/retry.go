package commands

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"playbook/interpreter/spec"
)

func (a *app) retryCommand() *cobra.Command {
	var (
		file, from, step, id, reason, input, by string
		sets                                    []string
		dryRun, strict, otherName               bool
		logicalTime                             rfc3339
		out                                     printer
	)
	cmd := &cobra.Command{
		Use:   "retry RUN",
		Short: "start a new run of an ended run, with its playbook or a fixed one, reusing the steps that need not run again",
		Long: "The new run has RUN's playbook (or, with --file, the new one, checked as `run` checks it), its\n" +
			"workload with --input then --set on top, and its logical time (or --logical-time). A step that\n" +
			"completed in RUN is `reused` (its result carried over, its next evaluated again on it) when what\n" +
			"it does is unchanged: its definition but its routing, the workload values and files it reads and\n" +
			"runs, and no step upstream of it runs; every other step runs, and so does everything downstream\n" +
			"of one that runs. Of a loop, only the elements that did not complete run; of a sub-playbook\n" +
			"step, only its child's steps that did not. With --from S, S and everything downstream of it run.\n" +
			"Before it starts, one line per step says reused, or runs and why; --dry-run prints only those\n" +
			"(--json: as data). Followed like `run`: same output, --json, --strict and exit codes.",
		Args: exactArgs(1, "the RUN (workflow ID) to retry"),
		RunE: action(func(c *call) error {
			// Every run playbook starts has an ID that follows the rule.
			if err := spec.CheckPathName("RUN", c.args[0]); err != nil {
				return invalid(err)
			}
			if by == "" {
				by = userName()
			}
			req := retryRequest{earlierID: c.args[0], from: from, id: id, taskQueue: a.conn.taskQueue, by: by, reason: reason, dryRun: dryRun, otherName: otherName}
			if step != "" {
				if from != "" && from != step {
					return invalidf("give --from or --step (its other name), not both")
				}
				req.from = step
			}
			if err := checkRunID(id); err != nil {
				return invalid(err)
			}
			if file != "" {
				pb, in, err := load(file)
				if err != nil {
					return invalidFile(err)
				}
				req.pb, req.in, req.file = pb, &in, file
			}
			var err error
			if req.overrides, err = workloadOverrides(input, sets); err != nil {
				return invalid(err)
			}
			if t := time.Time(logicalTime); !t.IsZero() {
				req.logicalTime = &t
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				r, err := startRetry(c.ctx, conn, req)
				var mistake *retryError
				var notStarted *submitError
				switch {
				case errors.As(err, &mistake):
					return invalid(err)
				case errors.As(err, &notStarted):
					return startFailed(notStarted.id, conn.reach, notStarted.err)
				case err != nil:
					return err
				}
				w := out.progress(c)
				if dryRun {
					w = c.stdout
				}
				for _, k := range r.dropped {
					fmt.Fprintf(c.stderr, "warning: workload.%s was set in %s, but the playbook no longer declares it: dropped\n", k, req.earlierID)
				}
				for _, warn := range r.plan.Warnings {
					fmt.Fprintf(c.stderr, "warning: %s\n", warn)
				}
				if dryRun {
					return out.print(w, retryPlanJSON(req.earlierID, r), func(w io.Writer) {
						fmt.Fprintf(w, "Retrying %s would reuse %s and run the rest (dry run: nothing started):\n", req.earlierID, countOf(len(r.reused), "step"))
						fmt.Fprintln(w, strings.Join(decisionLines(r.plan), "\n"))
					})
				}
				conn.warnWithoutWorker(c.ctx, a.conn.taskQueue, c.stderr)
				if len(r.reused) == 0 {
					fmt.Fprintf(w, "Retrying %s as %s; no completed step to reuse: every step runs.\n", req.earlierID, r.run.GetID())
				} else {
					fmt.Fprintf(w, "Retrying %s as %s, reusing %s: %s\n", req.earlierID, r.run.GetID(), countOf(len(r.reused), "completed step"), strings.Join(r.reused, ", "))
				}
				fmt.Fprintln(w, strings.Join(decisionLines(r.plan), "\n"))
				return followAndReport(c, conn, r.pb, r.run, &out, strict)
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&file, "file", "", "run this playbook `FILE` (and the sub-playbooks it names, read again) instead of RUN's frozen one")
	fs.BoolVar(&otherName, "other-name", false, "let --file have another metadata.name than RUN's playbook")
	fs.StringArrayVar(&sets, "set", nil, "override a workload value on top of RUN's: `KEY=VALUE` (as `run --set`; repeatable)")
	fs.StringVar(&input, "input", "", "read workload overrides from a JSON object `FILE`, on top of RUN's workload and under --set")
	fs.StringVar(&from, "from", "", "run this `STEP` and everything downstream of it again, even if unchanged")
	fs.StringVar(&step, "step", "", "another name of --from")
	_ = fs.MarkHidden("step")
	fs.StringVar(&by, "by", "", "who asks (default: your user name), recorded in the new run's origin")
	fs.BoolVar(&dryRun, "dry-run", false, "print which steps would be reused and which would run, and why; start nothing")
	fs.Var(&logicalTime, "logical-time", "the new run's logical `TIME` (RFC 3339; default RUN's)")
	out.flag(fs, "print only the aggregate on stdout; progress goes to stderr")
	fs.StringVar(&id, "id", "", "workflow ID of the new run (default NAME-RANDOM)")
	fs.StringVar(&reason, "reason", "", "why: recorded in the new run's events, status and Web UI details")
	strictFlag(fs, &strict)
	return cmd
}

// retryPlanJSON is a retry's plan as data (retry --dry-run --json, MCP
// retry_run): one decision per step, and the warnings.
func retryPlanJSON(earlierID string, r *retried) map[string]any {
	return map[string]any{"retry_of": earlierID, "steps": r.plan.Decisions, "reused": r.reused, "warnings": r.plan.Warnings}
}
