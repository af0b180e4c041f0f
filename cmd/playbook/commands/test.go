package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/internal/playtest"
	"playbook/interpreter/contract"
	"playbook/runs"
)

func (a *app) testCommand() *cobra.Command {
	var (
		run, junit, record, out string
		asJSON, verbose         bool
	)
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "run playbooks' test cases (NAME.test.yaml) with mocked steps and time skipped, no server",
		RunE: action(func(c *call) error {
			// This process runs no worker: spare the SDK's test
			// environment a checksum of the whole executable (a second
			// or more) as the build ID of its activity workers.
			sdkworker.SetBinaryChecksum("playbook-test")
			if record != "" {
				return a.withConnection(c, func(c *call, conn *connection) error { return recordCase(c, conn, record, out) })
			}
			if out != "" {
				return invalidf("-o goes with --record")
			}
			opts := playtest.Options{}
			if run != "" {
				re, err := regexp.Compile(run)
				if err != nil {
					return invalidf("--run: %v", err)
				}
				opts.Run = re
			}
			progress := func(r playtest.Result) {
				if !asJSON {
					printResult(c.stdout, r, verbose)
				}
			}
			rep, err := playtest.Run(c.args, opts, progress)
			if err != nil {
				return invalid(err)
			}
			if len(rep.Malformed) > 0 {
				if asJSON {
					_ = writeJSON(c.stdout, rep)
				}
				return invalidFile(fmt.Errorf("%s", strings.Join(rep.Malformed, "\n")))
			}
			if junit != "" {
				f, err := os.Create(junit)
				if err != nil {
					return err
				}
				err = rep.WriteJUnit(f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
			}
			if asJSON {
				if err := writeJSON(c.stdout, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(c.stdout, "%d passed, %d failed\n", rep.Passed, rep.Failed)
			}
			if rep.Failed > 0 {
				return exitWith(exitFailed)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&run, "run", "", "run only the cases whose name matches this regular expression")
	f.StringVar(&junit, "junit", "", "also write the results as JUnit XML to this file")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	f.BoolVarP(&verbose, "verbose", "v", false, "print each case's event log")
	f.StringVar(&record, "record", "", "write a case made from this ended run (RUN): its attempts as mocks, its decisions as events, its outcome as expected")
	f.StringVarP(&out, "output", "o", "", "with --record: the test file to write, or to add the case to when it exists (default: print it)")
	return cmd
}

// recordCase writes a case made from an ended run.
func recordCase(c *call, conn *connection, run, out string) error {
	st, err := runs.StatusOf(c.ctx, conn.client, run)
	if err != nil {
		return err
	}
	if st.Aggregate == nil || st.EndedByTemporal() {
		return fmt.Errorf("%s has no outcome of its own to record (still running, terminated or timed out by Temporal)", run)
	}
	if st.Status == contract.RunRunning || st.Status == contract.RunWaiting || st.Status == contract.RunQueued {
		return invalidf("%s is still running: record it once it has ended", run)
	}
	in, err := runs.FrozenInput(c.ctx, conn.client, run)
	if err != nil {
		return err
	}
	dest := out
	if dest == "" {
		dest = "recorded" + playtest.Suffix // paths relative to the working directory
	}
	var history string
	if out != "" {
		// The run's history beside the test file, which the case replays.
		h, err := fetchHistory(c.ctx, conn.client, run, "")
		if err != nil {
			return err
		}
		b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
		if err != nil {
			return err
		}
		history = playtest.HistoryName(out, run)
		if err := os.WriteFile(filepath.Join(filepath.Dir(out), history), b, 0o644); err != nil {
			return err
		}
	}
	text, err := playtest.Record(in, st.Aggregate, "recorded from "+run, dest, history)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = c.stdout.Write(text)
		return err
	}
	if old, err := os.ReadFile(out); err == nil {
		text = playtest.AppendCase(old, text)
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "recorded %s as a case of %s, its history as %s\n", run, out, filepath.Join(filepath.Dir(out), history))
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printResult prints a case's line; a failing case says why, with the
// simulated run's steps.
func printResult(w io.Writer, r playtest.Result, verbose bool) {
	if r.Passed {
		fmt.Fprintf(w, "ok    %s: case %q (%s)\n", r.File, r.Case, r.Duration.Round(100_000))
	} else {
		fmt.Fprintf(w, "FAIL  %s:%d: case %q\n", r.File, r.Line, r.Case)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "      %s\n", p)
		}
		if r.Steps != "" {
			for _, line := range strings.Split(strings.TrimRight(r.Steps, "\n"), "\n") {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	if verbose {
		for _, line := range r.Log {
			fmt.Fprintf(w, "      | %s\n", line)
		}
	}
}
