package commands

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/submit"
)

func (a *app) retryCommand() *cobra.Command {
	var (
		file, from, step, id, reason, input, by string
		storeURL                                string
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
			req := runs.RetryRequest{Run: c.args[0], From: from, ID: id, TaskQueue: a.conn.taskQueue, By: by, Reason: reason, DryRun: dryRun, OtherName: otherName}
			if step != "" {
				if from != "" && from != step {
					return invalidf("give --from or --step (its other name), not both")
				}
				req.From = step
			}
			if err := checkRunID(id); err != nil {
				return invalid(err)
			}
			if file != "" {
				pb, in, err := runs.Load(file)
				if err != nil {
					return invalidFile(err)
				}
				req.Playbook, req.Input, req.File = pb, &in, file
			}
			var err error
			if req.Overrides, err = submit.ReadOverrides(input, sets); err != nil {
				return invalid(err)
			}
			if t := time.Time(logicalTime); !t.IsZero() {
				req.LogicalTime = &t
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				req.Check, req.LargeValues = conn.checkCodec, conn.largeValues
				var err error
				if req.Store, err = conn.workersStore(c.ctx, storeURL); err != nil {
					return err
				}
				r, err := runs.Retry(c.ctx, conn.client, conn.namespace, req)
				var notStarted *runs.NotStartedError
				if errors.As(err, &notStarted) {
					return startFailed(notStarted.ID, conn.reach, notStarted.Err)
				}
				if err != nil {
					return err
				}
				w := out.progress(c)
				if dryRun {
					w = c.stdout
				}
				for _, k := range r.Dropped {
					fmt.Fprintf(c.stderr, "warning: workload.%s was set in %s, but the playbook no longer declares it: dropped\n", k, req.Run)
				}
				for _, warn := range r.Plan.Warnings {
					fmt.Fprintf(c.stderr, "warning: %s\n", warn)
				}
				if dryRun {
					return out.print(w, r.PlanData(req.Run), func(w io.Writer) {
						reused := countOf(len(r.Reused), "step")
						if within := reusedWithin(r.Plan.Decisions); within != "" {
							reused += ", and " + within + " within the steps that run,"
						}
						fmt.Fprintf(w, "Retrying %s would reuse %s and run the rest (dry run: nothing started):\n", req.Run, reused)
						fmt.Fprintln(w, strings.Join(decisionLines(r.Plan), "\n"))
					})
				}
				conn.warnWithoutWorker(c.ctx, a.conn.taskQueue, r.Playbook, c.stderr)
				within := reusedWithin(r.Plan.Decisions)
				switch {
				case len(r.Reused) == 0 && within == "":
					fmt.Fprintf(w, "Retrying %s as %s; no completed step to reuse: every step runs.\n", req.Run, r.Run.GetID())
				case len(r.Reused) == 0:
					fmt.Fprintf(w, "Retrying %s as %s; no step is reused whole, but the steps that run reuse %s that completed:\n", req.Run, r.Run.GetID(), within)
				default:
					fmt.Fprintf(w, "Retrying %s as %s, reusing %s: %s\n", req.Run, r.Run.GetID(), countOf(len(r.Reused), "completed step"), strings.Join(r.Reused, ", "))
				}
				fmt.Fprintln(w, strings.Join(decisionLines(r.Plan), "\n"))
				return followAndReport(c, conn, r.Playbook, r.Run, &out, strict)
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
	fs.StringVar(&storeURL, "store", "", "the workers' store `URL`, where the retry looks for the files the steps it would reuse handed on: a step whose files are gone (files gc) runs again (default: $PLAYBOOK_STORE, or the local `playbook dev`'s; else it does not look)")
	fs.StringVar(&id, "id", "", "workflow ID of the new run (default NAME-RANDOM)")
	fs.StringVar(&reason, "reason", "", "why: recorded in the new run's events, status and Web UI details")
	strictFlag(fs, &strict)
	return cmd
}

// reusedWithin says what the steps that run reuse within them: loop
// elements, and a sub-playbook child's steps, at every level ("4 loop
// elements and 2 steps of sub-playbooks"); "" when nothing.
func reusedWithin(decisions []engine.ReuseDecision) string {
	var elements, steps int
	var count func([]engine.ReuseDecision, bool)
	count = func(ds []engine.ReuseDecision, child bool) {
		for _, d := range ds {
			if d.Reused && child {
				steps++
			}
			if d.Elements != nil {
				elements += d.Elements.Reused
			}
			count(d.Child, true)
		}
	}
	count(decisions, false)
	var parts []string
	if elements == 1 {
		parts = append(parts, "1 loop element")
	} else if elements > 1 {
		parts = append(parts, thousands(elements)+" loop elements")
	}
	if steps > 0 {
		parts = append(parts, countOf(steps, "step")+" of sub-playbooks")
	}
	return strings.Join(parts, " and ")
}

// decisionLines are a retry's decisions, one line per step: "reused", or
// "runs: why", with the step names in one column; a loop's counts its
// elements, and a sub-playbook step's child plan follows it, indented.
func decisionLines(plan *engine.ReusePlan) []string {
	return decisionLinesOf(plan.Decisions, "  ")
}

func decisionLinesOf(decisions []engine.ReuseDecision, indent string) []string {
	width := 0
	for _, d := range decisions {
		width = max(width, len(d.Step))
	}
	var out []string
	for _, d := range decisions {
		what := "reused"
		switch {
		case d.Elements != nil:
			what = fmt.Sprintf("%s of %s elements run (%s), %s reused", thousands(d.Elements.Run), thousands(d.Elements.Total), d.Why, thousands(d.Elements.Reused))
		case d.Why == engine.NotLedTo:
			what = "not reused: " + d.Why
		case d.Why == engine.SkippedBefore:
			// The new run's arcs decide whether it runs: it may be
			// skipped again.
			what = "not reused: " + d.Why + "; runs if a branch leads to it"
		case d.Child != nil:
			what = "runs: " + d.Why + "; a retry of its sub-playbook:"
		case !d.Reused:
			what = "runs: " + d.Why
		}
		out = append(out, fmt.Sprintf("%s%-*s  %s", indent, width, d.Step, what))
		out = append(out, decisionLinesOf(d.Child, indent+"    ")...)
	}
	return out
}

// thousands writes n with a comma every three digits: 100,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
