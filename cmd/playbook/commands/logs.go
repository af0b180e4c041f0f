package commands

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"

	"playbook/activities"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/worker"
)

func (a *app) logsCommand() *cobra.Command {
	var (
		attempt    int
		logDir     string
		runID      string
		trustHosts []string
	)
	cmd := &cobra.Command{
		Use:   "logs RUN STEP",
		Short: "print the stdout and stderr of a step's attempt (default: its last), from the worker's log directory, else from the worker that ran it",
		Args:  exactArgs(2, "RUN and STEP"),
		RunE: action(func(c *call) error {
			run, step := c.args[0], c.args[1]
			if attempt < 0 {
				return invalidf("--attempt %d: give an attempt's number, from 1 (0: the last)", attempt)
			}
			names := map[string]string{"RUN": run, "STEP": step}
			if runID != "" {
				names["--run-id"] = runID
			}
			for what, name := range names {
				if err := spec.CheckPathName(what, name); err != nil {
					return invalid(err)
				}
			}
			server := a.knownServer(c)
			defer server.close()
			if runID == "" {
				runID = latestRunLogged(c, server, logDir, run)
			}
			runDir := activities.RunLogDir(logDir, run, runID)
			dir := filepath.Join(runDir, step)
			attempts := runs.LoggedAttempts(dir)
			if len(attempts) == 0 && len(loopElementsLogged(runDir, step)) == 0 {
				if err := noLogsBecause(c, server, run, step); err != nil {
					return err
				}
			}
			if attempt == 0 || !slices.Contains(attempts, attempt) {
				if done, err := remoteLogs(c, server, newLogsTrust(trustHosts, c.stderr), run, runID, step, attempt, attempts); done {
					return err
				}
			}
			if len(attempts) == 0 {
				if logged := loopElementsLogged(runDir, step); len(logged) > 0 {
					return invalidf("%s is a loop step: name one element by its index, as in `playbook logs %s '%s[%d]'` (%s logged here, %s)",
						step, run, step, logged[0], countOf(len(logged), "element"), indexList(logged))
				}
				if name, _, ok := strings.Cut(step, "["); ok {
					if logged := loopElementsLogged(runDir, name); len(logged) > 0 {
						return fmt.Errorf("no logs of %s: %s of %s logged here, %s (an element run on another worker is logged there; a worker started with --metrics-address serves them)", step, countOf(len(logged), "element"), name, indexList(logged))
					}
				}
				return fmt.Errorf("no logs in %s (logs stay on the machine of the worker that ran the step; a worker started with --metrics-address serves them, and the run records where)", dir)
			}
			n := attempts[len(attempts)-1]
			if attempt != 0 {
				n = attempt
			}
			for _, stream := range []string{"stdout", "stderr"} {
				path := filepath.Join(dir, fmt.Sprintf("attempt-%d.%s", n, stream))
				if err := printLogFile(c.stdout, fmt.Sprintf("== attempt %d %s (%s) ==\n", n, stream, path), path); err != nil {
					return fmt.Errorf("attempt %d: %v (attempts logged: %v)", n, err, attempts)
				}
			}
			// The recovery script an exit-code rule ran after the attempt.
			for _, stream := range []string{"stdout", "stderr"} {
				path := filepath.Join(dir, fmt.Sprintf("attempt-%d.recovery.%s", n, stream))
				if _, err := os.Lstat(path); err == nil {
					if err := printLogFile(c.stdout, fmt.Sprintf("== attempt %d recovery script %s (%s) ==\n", n, stream, path), path); err != nil {
						return err
					}
				}
			}
			return nil
		}),
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "which attempt (1-based); default (0) the last")
	cmd.Flags().StringVar(&logDir, "log-dir", worker.DefaultLogDir(), "the worker's log directory")
	cmd.Flags().StringVar(&runID, "run-id", "", "the run `ID` of an earlier run with this workflow ID (default: the latest run logged)")
	cmd.Flags().StringSliceVar(&trustHosts, "trust-logs-host", nil, "send $"+logsTokenEnv+" to the worker at `HOST` (or HOST:PORT) when it serves the logs (default: loopback only, and $"+logsHostsEnv+")")
	return cmd
}

// latestRunLogged is the run ID of the latest run with workflow ID run,
// as the server knows it, when this machine keeps logs by run ID: the
// latest run may have logged on another worker only, and the local
// latest is then an earlier run's. "" when the server cannot say, or this
// log directory keeps run's logs in the layout from before run IDs.
func latestRunLogged(c *call, server *knownServer, logDir, run string) string {
	entries, _ := os.ReadDir(filepath.Join(logDir, run))
	byRunID := false
	for _, e := range entries {
		byRunID = byRunID || (e.IsDir() && activities.IsRunIDName(e.Name()))
	}
	if len(entries) > 0 && !byRunID {
		return ""
	}
	conn := server.get()
	if conn == nil {
		return ""
	}
	d, err := conn.client.DescribeWorkflowExecution(c.ctx, run, "")
	if err != nil {
		return ""
	}
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// noLogsBecause says why a step has no logs anywhere when the run's
// playbook tells: the run has no such step, or the step runs no process of
// its own (an http or noop step, a sub-playbook, a step without a tool).
// nil when it may have run a process, or the run cannot be read.
func noLogsBecause(c *call, server *knownServer, run, step string) error {
	conn := server.get()
	if conn == nil {
		return nil
	}
	pb := runs.FrozenPlaybook(c.ctx, conn.client, run)
	if pb == nil {
		var missing *serviceerror.NotFound
		if _, err := conn.client.DescribeWorkflowExecution(c.ctx, run, ""); errors.As(err, &missing) {
			return &exitError{code: exitFailed, err: fmt.Errorf("the server knows no run %s (a mistyped ID? its retention may have removed it), and this log directory holds none of its logs", run)}
		}
		return nil
	}
	name, _, _ := strings.Cut(step, "[")
	s := pb.Step(name)
	if s == nil {
		var names []string
		for _, s := range pb.Steps {
			names = append(names, s.Name)
		}
		return invalidf("run %s (playbook %s) has no step %q; its steps: %s", run, pb.Name, name, strings.Join(names, ", "))
	}
	switch {
	case s.Tool == nil:
		return fmt.Errorf("step %s has no tool: nothing ran, so it has no logs", name)
	case s.Tool.Kind == "playbook":
		child := childRun(c, conn, run, name)
		return fmt.Errorf("step %s runs a sub-playbook: its steps ran in the child run %s, and their logs are there: `playbook logs %s STEP` (`playbook status %s` lists its steps)",
			name, child, child, child)
	case s.Tool.Kind != "shell" && s.Tool.Kind != "python":
		return fmt.Errorf("step %s (kind %s) runs no process, so it has no logs; its result or error is in `playbook status %s --json`", name, s.Tool.Kind, run)
	}
	// A step (or a loop's element) a retry reused did not run in this
	// run: its logs are those of the run up the retry chain that ran it.
	index := -1
	if i, ok := strings.CutPrefix(step, name+"["); ok {
		if n, err := strconv.Atoi(strings.TrimSuffix(i, "]")); err == nil {
			index = n
		}
	}
	chain, sameIndex := runs.ReusedFrom(c.ctx, conn.client, run, name, index)
	if len(chain) == 0 {
		return nil
	}
	ranIn, what, where := chain[len(chain)-1], "step "+name, "`playbook logs "+chain[len(chain)-1]+" "+step+"`"
	if index >= 0 {
		what = "element " + step
		if !sameIndex {
			// Matched by its item, it may have had another index there.
			where = fmt.Sprintf("`playbook logs %s %s` names the elements logged there (matched by its item, it may have had another index)", ranIn, name)
		}
	}
	via := ""
	if len(chain) > 1 {
		via = " (through " + strings.Join(chain[:len(chain)-1], ", ") + ", which reused it in turn)"
	}
	return fmt.Errorf("%s did not run in %s: the retry reused it from %s%s, whose logs are its logs: %s", what, run, ranIn, via, where)
}

// childRun is the workflow ID of the child run a sub-playbook step
// started: RUN.STEP, or RUN-STEP for a run from before that change.
func childRun(c *call, conn *connection, run, step string) string {
	if _, err := conn.client.DescribeWorkflowExecution(c.ctx, run+"-"+step, ""); err == nil {
		if _, err := conn.client.DescribeWorkflowExecution(c.ctx, run+"."+step, ""); err != nil {
			return run + "-" + step
		}
	}
	return run + "." + step
}

// loopElementsLogged lists, in order, the indices of the elements of a
// loop step that have logs in a run's log directory: each element logs
// under `step[i]`.
func loopElementsLogged(runDir, step string) []int {
	entries, _ := os.ReadDir(runDir)
	var logged []int
	for _, e := range entries {
		if i, ok := strings.CutPrefix(e.Name(), step+"["); ok {
			if n, err := strconv.Atoi(strings.TrimSuffix(i, "]")); err == nil && strings.HasSuffix(i, "]") {
				logged = append(logged, n)
			}
		}
	}
	slices.Sort(logged)
	return logged
}

// indexList writes indices as people read them: 0 to 9, or 2, 5, 7, the
// first ten of a long list and how many more.
func indexList(indices []int) string {
	if n := len(indices); indices[n-1]-indices[0] == n-1 {
		if n == 1 {
			return "index " + strconv.Itoa(indices[0])
		}
		return fmt.Sprintf("index %d to %d", indices[0], indices[n-1])
	}
	var b []string
	for _, i := range indices[:min(len(indices), 10)] {
		b = append(b, strconv.Itoa(i))
	}
	if len(indices) > 10 {
		b = append(b, fmt.Sprintf("and %d more", len(indices)-10))
	}
	return "index " + strings.Join(b, ", ")
}

// remoteLogs prints an attempt's logs (attempt, else the last) from the
// worker that ran it, as the run's history records it, when a server is
// there to ask; done is false when the attempt is not known to have logged
// elsewhere, or its last attempt logged here (local).
func remoteLogs(c *call, server *knownServer, trust logsTrust, run, runID, step string, attempt int, local []int) (done bool, err error) {
	conn := server.get()
	if conn == nil {
		return false, nil
	}
	where, err := runs.AttemptLocations(c.ctx, conn.client, run, runID, step)
	if err != nil || len(where) == 0 {
		return false, nil
	}
	n := slices.Max(slices.Collect(maps.Keys(where)))
	if attempt != 0 {
		n = attempt
	} else if len(local) > 0 && local[len(local)-1] >= n {
		return false, nil
	}
	logsAt, ok := where[n]
	if !ok {
		return false, nil
	}
	if err := printRemoteLogs(c, trust, logsAt, run, runID, step, n); err != nil {
		return true, fmt.Errorf("attempt %d: %w", n, err)
	}
	return true, nil
}
