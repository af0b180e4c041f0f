package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"playbook/internal/claims"
	"playbook/internal/codec"
	"playbook/internal/quietlog"
	"playbook/internal/store"
	"playbook/interpreter/spec/expr"
	"playbook/runs"
	"playbook/worker"
)

// upgradeCheckFetches is how many histories upgrade-check fetches and
// replays at once.
const upgradeCheckFetches = 8

// upgradeRun is one run upgrade-check replayed, as --json prints it.
type upgradeRun struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	Events     int    `json:"events"`
	OK         bool   `json:"ok"`
	// Checked is false when the history could not be fetched, or its
	// payloads are encrypted with a key this CLI does not have (Encrypted).
	Checked   bool `json:"checked"`
	Encrypted bool `json:"encrypted,omitempty"`
	// NeedsStore: the run kept large values in its store, and upgrade-check
	// was given none (--store) to read their claims from.
	NeedsStore bool `json:"needs_store,omitempty"`
	// DivergesAt names the recorded event the replay parted from, when it
	// can tell ("event 5 ActivityTaskScheduled (greet)").
	DivergesAt string `json:"diverges_at,omitempty"`
	Error      string `json:"error,omitempty"`
}

// upgradeReport is upgrade-check's --json output.
type upgradeReport struct {
	Namespace string       `json:"namespace"`
	Runs      []upgradeRun `json:"runs"`
	Replayed  int          `json:"replayed"`
	Diverging int          `json:"diverging"`
	// Unchecked are the runs neither proven to replay nor shown not to:
	// their history could not be fetched, or (Encrypted, counted in
	// Unchecked too) its payloads are encrypted with a key this CLI does not
	// have.
	Unchecked int `json:"unchecked"`
	Encrypted int `json:"encrypted"`
	// NeedsStore, counted in Unchecked too, are the runs that keep large
	// values in a store upgrade-check was not given.
	NeedsStore int `json:"needs_store"`
}

func (a *app) upgradeCheckCommand() *cobra.Command {
	var (
		closed   int
		storeURL string
		out      printer
	)
	cmd := &cobra.Command{
		Use: "upgrade-check",
		Short: "replay the namespace's open runs (and with --closed N the last N closed ones) against this binary before rolling it out; " +
			"exit 0 when every one replays, 1 naming each that diverges",
		Args: noArgs,
		RunE: action(func(c *call) error {
			if closed < 0 {
				return invalidf("--closed must be 0 or more")
			}
			keys, err := codec.Load("")
			if err != nil {
				return invalid(err)
			}
			return a.withConnection(c, func(c *call, conn *connection) error {
				st, err := conn.workersStore(c.ctx, storeURL)
				if err != nil {
					return err
				}
				runs, err := runsToCheck(c.ctx, conn, closed)
				if err != nil {
					return fmt.Errorf("listing runs: %w", err)
				}
				checkRuns(c.ctx, conn, keys, st, runs)
				report := upgradeReport{Namespace: conn.namespace, Runs: runs}
				for _, r := range runs {
					switch {
					case r.Encrypted:
						report.Unchecked++
						report.Encrypted++
					case r.NeedsStore:
						report.Unchecked++
						report.NeedsStore++
					case !r.Checked:
						report.Unchecked++
					case !r.OK:
						report.Replayed++
						report.Diverging++
					default:
						report.Replayed++
					}
				}
				if err := out.print(c.stdout, report, func(w io.Writer) { printUpgradeReport(w, report) }); err != nil {
					return err
				}
				return exitWith(report.exitCode())
			})
		}),
	}
	cmd.Flags().IntVar(&closed, "closed", 0, "also replay the last `N` closed runs")
	cmd.Flags().StringVar(&storeURL, "store", os.Getenv("PLAYBOOK_STORE"), "read the claims of runs that keep large values from this store `URL`, the workers' (default $PLAYBOOK_STORE, or the local playbook dev's)")
	out.flag(cmd.Flags(), "print the report as JSON")
	return cmd
}

// exitCode is 1 when a run diverges or its history could not be fetched;
// else 2 when a run's payloads are encrypted with a key this CLI does not
// have, or its large values are in a store it was not given (not a
// divergence: the CLI was not given what it needs); else 0.
func (r upgradeReport) exitCode() int {
	switch {
	case r.Diverging > 0 || r.Unchecked > r.Encrypted+r.NeedsStore:
		return exitFailed
	case r.Encrypted > 0 || r.NeedsStore > 0:
		return exitInvalid
	}
	return exitOK
}

// runsToCheck lists the namespace's open runs of this binary's workflow
// types, then the last closed ones, newest first.
func runsToCheck(ctx context.Context, conn *connection, closed int) ([]upgradeRun, error) {
	infos, err := runs.Replayable(ctx, conn.client, conn.namespace, closed)
	if err != nil {
		return nil, err
	}
	var out []upgradeRun
	for _, e := range infos {
		out = append(out, upgradeRun{WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(), Type: e.GetType().GetName(), Status: runs.TemporalStatus(e)})
	}
	return out, nil
}

// checkRuns fetches each run's history and replays it, upgradeCheckFetches
// at a time, filling in each run's outcome.
func checkRuns(ctx context.Context, conn *connection, keys *codec.AESGCM, st store.Store, runs []upgradeRun) {
	todo := make(chan *upgradeRun)
	var wg sync.WaitGroup
	for range min(upgradeCheckFetches, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range todo {
				checkRun(ctx, conn, keys, st, r)
			}
		}()
	}
	for i := range runs {
		todo <- &runs[i]
	}
	close(todo)
	wg.Wait()
}

func checkRun(ctx context.Context, conn *connection, keys *codec.AESGCM, st store.Store, r *upgradeRun) {
	h, err := fetchHistory(ctx, conn.client, r.WorkflowID, r.RunID)
	if err != nil {
		r.Error = "fetching its history: " + err.Error()
		return
	}
	r.Events = len(h.Events)
	if why := unreadableHistory(h, keys); why != "" {
		r.Encrypted, r.Error = true, why
		return
	}
	if st == nil && claims.HoldsClaims(h) {
		r.NeedsStore, r.Error = true, "the run kept large values in its store, and its history holds claims to them: check it with --store URL, the store its workers used"
		return
	}
	r.Checked = true
	if err := worker.ReplayFrom(h, quietlog.New(), keys, st); err != nil {
		r.DivergesAt, r.Error = worker.DivergingEvent(h, err), err.Error()
		return
	}
	r.OK = true
}

// printUpgradeReport prints one line per run, then the summary.
func printUpgradeReport(out io.Writer, report upgradeReport) {
	for _, r := range report.Runs {
		name := r.WorkflowID + " (" + r.Type + ", " + r.Status + ")"
		switch {
		case r.OK:
			fmt.Fprintf(out, "%s: ok (%d events)\n", name, r.Events)
		case r.DivergesAt != "":
			fmt.Fprintf(out, "%s: diverges at %s: %s\n", name, r.DivergesAt, expr.FirstLine(r.Error))
		case !r.Checked:
			fmt.Fprintf(out, "%s: not checked: %s\n", name, expr.FirstLine(r.Error))
		default:
			fmt.Fprintf(out, "%s: %s\n", name, expr.FirstLine(r.Error))
		}
	}
	var unchecked []string
	if n := report.Unchecked - report.Encrypted - report.NeedsStore; n > 0 {
		unchecked = append(unchecked, fmt.Sprintf("%d could not be checked (their histories could not be fetched): check again", n))
	}
	if report.Encrypted > 0 {
		unchecked = append(unchecked, fmt.Sprintf("%d could not be checked (their payloads are encrypted and this CLI cannot read them): %s", report.Encrypted, codec.KeyHint))
	}
	if report.NeedsStore > 0 {
		unchecked = append(unchecked, fmt.Sprintf("%d could not be checked (they keep large values in a store): give --store URL, the workers' store", report.NeedsStore))
	}
	switch {
	case report.Diverging > 0:
		fmt.Fprintf(out, "%d runs of namespace %s replayed: %d ok, %d do not replay: a worker of this binary would stop them with a nondeterminism error.",
			report.Replayed, report.Namespace, report.Replayed-report.Diverging, report.Diverging)
		for _, u := range unchecked {
			fmt.Fprintf(out, " %s.", u)
		}
		fmt.Fprintln(out)
	case len(unchecked) == 0:
		fmt.Fprintf(out, "%d runs of namespace %s replayed: all ok; this binary can take them over.\n", report.Replayed, report.Namespace)
	case report.Replayed == 0:
		fmt.Fprintf(out, "No run of namespace %s replayed: %s.\n", report.Namespace, strings.Join(unchecked, "; "))
	default:
		fmt.Fprintf(out, "%d runs of namespace %s replayed: all ok; %s.\n", report.Replayed, report.Namespace, strings.Join(unchecked, "; "))
	}
}
