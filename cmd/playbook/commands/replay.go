package commands

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/internal/codec"
	"playbook/internal/quietlog"
	"playbook/interpreter"
	"playbook/worker"
)

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "save a run's full Temporal history as JSON (for `playbook replay` and `temporal workflow show`)",
		ArgsUsage: "RUN",
		Flags:     append([]cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "write the history to `FILE`"}}, connectionFlags()...),
		Action: onArgs("history", 1, "the RUN (workflow ID)", func(c *cli.Context, conn *connection) error {
			h := &historypb.History{}
			it := conn.client.GetWorkflowHistory(c.Context, c.Args().First(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					return cli.Exit("history: "+err.Error(), exitFailed)
				}
				h.Events = append(h.Events, e)
			}
			b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
			if err != nil {
				return cli.Exit("history: "+err.Error(), exitFailed)
			}
			if err := os.WriteFile(c.String("output"), b, 0o644); err != nil {
				return cli.Exit("history: "+err.Error(), exitFailed)
			}
			fmt.Fprintf(c.App.Writer, "Wrote %d events of %s to %s\n", len(h.Events), c.Args().First(), c.String("output"))
			return nil
		}),
	}
}

func replayCommand() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "replay recorded histories against this binary's interpreter; exit 1 naming the first diverging event",
		ArgsUsage: "FILE.json...",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.Exit("replay: give one or more history files (from `playbook history`)", exitInvalid)
			}
			keys, err := codec.Load("")
			if err != nil {
				return cli.Exit("replay: "+err.Error(), exitInvalid)
			}
			bad := 0
			for _, file := range c.Args().Slice() {
				f, err := os.Open(file)
				if err != nil {
					return cli.Exit("replay: "+unwrapPathError(err), exitInvalid)
				}
				h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
				f.Close()
				if err != nil {
					return cli.Exit(fmt.Sprintf("replay: %s: not a history: %v", file, err), exitInvalid)
				}
				if err := worker.ReplayWithCodec(h, quietlog.New(), keys); err != nil {
					bad++
					where := worker.DivergingEvent(h, err)
					if where == "" {
						where = "replay failed"
					}
					fmt.Fprintf(c.App.ErrWriter, "%s: diverges at %s: %v\n", file, where, err)
					continue
				}
				fmt.Fprintf(c.App.Writer, "%s: ok (%d events)\n", file, len(h.GetEvents()))
			}
			if bad > 0 {
				return cli.Exit("", exitFailed)
			}
			return nil
		},
	}
}

func graphCommand() *cli.Command {
	return &cli.Command{
		Name:      "graph",
		Usage:     "print a playbook's step graph as a Mermaid flowchart, coloured by status with --run",
		ArgsUsage: "FILE",
		Flags:     append([]cli.Flag{&cli.StringFlag{Name: "run", Usage: "colour the steps by the status they have in `RUN`"}}, connectionFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("graph: give one playbook file", exitInvalid)
			}
			pb, _, err := load(c.Args().First())
			if err != nil {
				return cli.Exit(err.Error(), exitInvalid)
			}
			var statuses map[string]interpreter.Status
			if run := c.String("run"); run != "" {
				conn, err := connect(c, false, c.App.ErrWriter, quietLogs)
				if err != nil {
					return connectFailed("graph", err)
				}
				defer conn.Close()
				st, err := runStatus(c.Context, conn.client, run)
				if err != nil {
					return cli.Exit("graph: "+err.Error(), exitFailed)
				}
				statuses = map[string]interpreter.Status{}
				for name, s := range st.Aggregate.Steps {
					statuses[name] = s.Status
				}
			}
			fmt.Fprint(c.App.Writer, pb.Mermaid(statuses))
			return nil
		},
	}
}
