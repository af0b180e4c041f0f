package commands

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/internal/claims"
	"playbook/internal/codec"
	"playbook/internal/quietlog"
	"playbook/internal/store"
	"playbook/internal/userfile"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/runs"
	"playbook/worker"
)

// fetchHistory reads a run's whole history (runID "": its latest run).
func fetchHistory(ctx context.Context, c client.Client, workflowID, runID string) (*historypb.History, error) {
	h := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		h.Events = append(h.Events, e)
	}
	return h, nil
}

func (a *app) historyCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "history RUN",
		Short: "print a run's full Temporal history as JSON, or save it with -o (for `playbook replay` and `temporal workflow show`)",
		Args:  exactArgs(1, "the RUN (workflow ID)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			h, err := fetchHistory(c.ctx, conn.client, c.args[0], "")
			if err != nil {
				return err
			}
			b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				_, err := fmt.Fprintf(c.stdout, "%s\n", b)
				return err
			}
			if err := os.WriteFile(output, b, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Wrote %d events of %s to %s\n", len(h.Events), c.args[0], output)
			return nil
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the history to `FILE` (default: stdout)")
	return cmd
}

func replayCommand() *cobra.Command {
	var storeURL string
	cmd := &cobra.Command{
		Use:   "replay FILE.json...",
		Short: "replay recorded histories against this binary's interpreter; exit 1 naming the first diverging event",
		Long: "A run that kept large values in its store left claims in its history in\n" +
			"their place: replaying it reads them from that store, given with --store.",
		Args: someArgs("one or more history files (from `playbook history`)"),
		RunE: action(func(c *call) error {
			keys, err := codec.Load("")
			if err != nil {
				return invalid(err)
			}
			var st store.Store
			if storeURL != "" {
				if st, err = openStore(c.ctx, storeURL); err != nil {
					return err
				}
			}
			bad, encrypted := 0, 0
			for _, file := range c.args {
				h, err := readHistory(file)
				if err != nil {
					return invalid(err)
				}
				if why := unreadableHistory(h, keys); why != "" {
					encrypted++
					fmt.Fprintf(c.stderr, "%s: %s\n", file, why)
					continue
				}
				if st == nil && claims.HoldsClaims(h) {
					bad++
					fmt.Fprintf(c.stderr, "%s: the run kept large values in its store and this history holds claims to them: replay it with --store URL, the store its workers used\n", file)
					continue
				}
				if err := worker.ReplayFrom(h, quietlog.New(), keys, st); err != nil {
					bad++
					if where := worker.DivergingEvent(h, err); where != "" {
						fmt.Fprintf(c.stderr, "%s: diverges at %s: %v\n", file, where, err)
					} else {
						fmt.Fprintf(c.stderr, "%s: replay failed: %v\n", file, err)
					}
					continue
				}
				fmt.Fprintf(c.stdout, "%s: ok (%d events)\n", file, len(h.GetEvents()))
			}
			switch {
			case bad > 0:
				return exitWith(exitFailed)
			case encrypted > 0:
				return exitWith(exitInvalid)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&storeURL, "store", os.Getenv("PLAYBOOK_STORE"), "read the claims of large values from this store `URL` (file:///dir or s3://bucket/prefix?endpoint=URL&region=R; default $PLAYBOOK_STORE)")
	return offline(cmd)
}

func (a *app) graphCommand() *cobra.Command {
	var run string
	cmd := &cobra.Command{
		Use:   "graph FILE",
		Short: "print a playbook's step graph as a Mermaid flowchart, coloured by status with --run",
		Args:  exactArgs(1, "one playbook file"),
		RunE: action(func(c *call) error {
			pb, _, err := runs.Load(c.args[0])
			if err != nil {
				return invalidFile(err)
			}
			var statuses map[string]contract.Status
			if run != "" {
				err := a.withConnection(c, func(c *call, conn *connection) error {
					st, err := runs.StatusOf(c.ctx, conn.client, run)
					if err != nil {
						return err
					}
					statuses = map[string]contract.Status{}
					for name, s := range st.Aggregate.Steps {
						statuses[name] = s.Status
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			fmt.Fprint(c.stdout, engine.Mermaid(pb, statuses))
			return nil
		}),
	}
	cmd.Flags().StringVar(&run, "run", "", "colour the steps by the status they have in `RUN`")
	return cmd
}

// unreadableHistory says why this CLI cannot replay h, whose payloads a
// codec key encrypted that it does not have; "" when it can. Replayed
// anyway, such a history fails as if it diverged.
func unreadableHistory(h *historypb.History, keys *codec.AESGCM) string {
	id := codec.UnreadableKey(h, keys)
	switch {
	case id == "":
		return ""
	case keys == nil:
		return fmt.Sprintf("its payloads are encrypted (codec key %s) and this CLI has no key: %s", id, codec.KeyHint)
	}
	return fmt.Sprintf("its payloads are encrypted with codec key %s and this CLI's key is %s: %s", id, keys.KeyID(), codec.KeyHint)
}

// readHistory reads a history file as `playbook history` writes it: a
// regular file within worker.MaxHistoryFile.
func readHistory(file string) (*historypb.History, error) {
	b, err := userfile.Read(file, worker.MaxHistoryFile, "a history")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", userfile.Show(file), err)
	}
	h, err := worker.HistoryFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", userfile.Show(file), err)
	}
	return h, nil
}
