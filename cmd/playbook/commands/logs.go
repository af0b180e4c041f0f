package commands

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"playbook/interpreter"
	"playbook/worker"
)

var attemptLog = regexp.MustCompile(`^attempt-(\d+)\.stdout$`)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print the stdout and stderr of a step's attempt (default: its last), from the worker's log directory, else from the worker that ran it",
		ArgsUsage: "RUN STEP",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "attempt", Usage: "which attempt (1-based); default the last"},
			&cli.StringFlag{Name: "log-dir", Value: worker.DefaultLogDir(), Usage: "the worker's log directory"},
		}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return cli.Exit("logs: give RUN and STEP", exitInvalid)
			}
			for what, name := range map[string]string{"RUN": c.Args().Get(0), "STEP": c.Args().Get(1)} {
				if err := interpreter.CheckPathName(what, name); err != nil {
					return cli.Exit("logs: "+err.Error(), exitInvalid)
				}
			}
			dir := filepath.Join(c.String("log-dir"), c.Args().Get(0), c.Args().Get(1))
			attempts := loggedAttempts(dir)
			if !c.IsSet("attempt") || !slices.Contains(attempts, c.Int("attempt")) {
				if done, err := remoteLogs(c, c.Args().Get(0), c.Args().Get(1), attempts); done {
					return err
				}
			}
			if len(attempts) == 0 {
				if n := loopElementsLogged(c.String("log-dir"), c.Args().Get(0), c.Args().Get(1)); n > 0 {
					return cli.Exit(fmt.Sprintf("logs: %s is a loop step: name one element by its index, as in `playbook logs %s '%s[0]'` (%d elements logged, index 0 to %d)",
						c.Args().Get(1), c.Args().Get(0), c.Args().Get(1), n, n-1), exitInvalid)
				}
				return cli.Exit(fmt.Sprintf("logs: no logs in %s (logs stay on the machine of the worker that ran the step; a worker started with --metrics-address serves them, and the run records where)", dir), exitFailed)
			}
			n := attempts[len(attempts)-1]
			if c.IsSet("attempt") {
				n = c.Int("attempt")
			}
			for _, stream := range []string{"stdout", "stderr"} {
				path := filepath.Join(dir, fmt.Sprintf("attempt-%d.%s", n, stream))
				b, err := os.ReadFile(path)
				if err != nil {
					return cli.Exit(fmt.Sprintf("logs: attempt %d: %v (attempts logged: %v)", n, unwrapPathError(err), attempts), exitFailed)
				}
				fmt.Fprintf(c.App.Writer, "== attempt %d %s (%s) ==\n%s", n, stream, path, b)
				if len(b) > 0 && b[len(b)-1] != '\n' {
					fmt.Fprintln(c.App.Writer)
				}
			}
			return nil
		},
	}
}

// loggedAttempts lists the attempts that have logs in dir, in order.
func loggedAttempts(dir string) []int {
	entries, _ := os.ReadDir(dir)
	var out []int
	for _, e := range entries {
		if m := attemptLog.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// loopElementsLogged counts the elements of a loop step that have logs:
// each element logs under `step[i]`.
func loopElementsLogged(logDir, run, step string) int {
	entries, _ := os.ReadDir(filepath.Join(logDir, run))
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), step+"[") && strings.HasSuffix(e.Name(), "]") {
			n++
		}
	}
	return n
}

// remoteLogs prints an attempt's logs (the one asked for, else the last)
// from the worker that ran it, as the run's history records it, when a
// server is there to ask; done is false when the attempt is not known to
// have logged elsewhere, or its last attempt logged here (local).
func remoteLogs(c *cli.Context, run, step string, local []int) (done bool, err error) {
	if !serverKnown(c) {
		return false, nil
	}
	conn, err := connect(c, false, c.App.ErrWriter, quietLogs)
	if err != nil {
		return false, nil
	}
	defer conn.Close()
	where, err := attemptLocations(c.Context, conn.client, run, step)
	if err != nil || len(where) == 0 {
		return false, nil
	}
	n := slices.Max(slices.Collect(maps.Keys(where)))
	if c.IsSet("attempt") {
		n = c.Int("attempt")
	} else if len(local) > 0 && local[len(local)-1] >= n {
		return false, nil
	}
	logsAt, ok := where[n]
	if !ok {
		return false, nil
	}
	if err := printRemoteLogs(c, logsAt, run, step, n); err != nil {
		return true, cli.Exit("logs: attempt "+strconv.Itoa(n)+": "+err.Error(), exitFailed)
	}
	return true, nil
}
