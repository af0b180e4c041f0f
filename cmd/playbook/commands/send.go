package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"playbook/internal/userfile"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/submit"
)

// sendCommand sends a run an event for its wait_event steps. What the run
// would refuse for its shape (a name that is not one, data that is not
// JSON or over the bound) is refused here first, exit 2, before anything
// is sent; the run refuses an event no step takes (exit 1), and a run
// that has ended is said to have (exit 5).
func (a *app) sendCommand() *cobra.Command {
	var data, dataFile, by, start string
	var sets []string
	cmd := &cobra.Command{
		Use:   "send RUN EVENT",
		Short: "send a run an event: its wait_event steps waiting for EVENT complete with --data",
		Long: "With --start FILE, a run of FILE with the ID RUN is started when no run with that ID is open,\n" +
			"and receives the event in the same request (Temporal's update-with-start).",
		Args: exactArgs(2, "RUN EVENT"),
		RunE: a.connected(func(c *call, conn *connection) error {
			event := c.args[1]
			if by == "" {
				by = userName()
			}
			value, err := eventData(data, dataFile)
			if err != nil {
				return invalid(err)
			}
			if err := contract.CheckEvent(event, value, by); err != nil {
				return invalid(err)
			}
			if start != "" {
				return a.sendStarting(c, conn, start, sets, event, value, by)
			}
			if len(sets) > 0 {
				return invalidf("--set goes with --start: it sets the workload of the run started")
			}
			answer, err := runs.SendEvent(c.ctx, conn.client, c.args[0], event, value, by)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, answer)
			return nil
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&data, "data", "", "the event's data: a `JSON` value (default null), the steps' result.data")
	fs.StringVar(&dataFile, "data-file", "", "read the event's data from a JSON `FILE`")
	fs.StringVar(&by, "by", "", "who sends it (default: your user name), the steps' result.by")
	fs.StringVar(&start, "start", "", "start a run of the playbook `FILE` with the ID RUN when none is open, and send it the event")
	fs.StringArrayVar(&sets, "set", nil, "with --start: override a workload value of the run started: `KEY=VALUE` (as run --set; repeatable)")
	return cmd
}

// eventData reads --data or --data-file: one JSON value, whole numbers
// kept as written, nothing over the bound on what a run is sent.
func eventData(data, file string) (any, error) {
	text := []byte(data)
	what := "--data"
	switch {
	case data != "" && file != "":
		return nil, fmt.Errorf("give --data or --data-file, not both")
	case file != "":
		b, err := userfile.Read(file, 2*contract.MaxDecisionBytes, "a --data-file")
		if err != nil {
			return nil, fmt.Errorf("--data-file %s: %w", userfile.Show(file), err)
		}
		text, what = b, "--data-file "+userfile.Show(file)
	case data == "":
		return nil, nil
	}
	if err := contract.CheckSize("the event's data", len(bytes.TrimSpace(text))); err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: not JSON (%v); a string is quoted: '\"ok\"'", what, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%s: more than one JSON value; give one", what)
	}
	return v, nil
}

// sendStarting sends the event to the open run RUN, or starts one of file
// with that ID and sends it the event in the same request. A playbook
// that has no wait_event step for the event is refused before anything
// starts: the run would refuse the event.
func (a *app) sendStarting(c *call, conn *connection, file string, sets []string, event string, data any, by string) error {
	id := c.args[0]
	pb, in, err := runs.Load(file)
	if err != nil {
		return invalidFile(err)
	}
	printWarnings(c.stderr, pb)
	if err := checkRunID(id); err != nil {
		return invalid(err)
	}
	if !slices.ContainsFunc(pb.Steps, func(s *spec.Step) bool {
		return s.Tool != nil && s.Tool.Kind == spec.WaitEventKind && s.Tool.WaitEvent().Event == event
	}) {
		return invalidf("%s: no wait_event step waits for event %s: a run of it would refuse the event, so none is started", file, event)
	}
	if in.Workload, err = submit.ReadOverrides("", sets); err != nil {
		return invalid(err)
	}
	if in.Workload, err = submit.CheckOverrides(pb, in.Workload); err != nil {
		return invalid(err)
	}
	lt := time.Now().UTC().Truncate(time.Second)
	in.LogicalTime = &lt
	if err := conn.checkCodec(c.ctx, a.conn.taskQueue); err != nil {
		return err
	}
	opts, in := runs.StartOptions(c.ctx, conn.client, conn.namespace, runs.Start{Playbook: pb, Input: in, ID: id, TaskQueue: a.conn.taskQueue, Details: "started by event " + event, LargeValues: conn.largeValues})
	answer, runID, err := runs.SendEventStarting(c.ctx, conn.client, opts, in, event, data, by)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s (run %s)\n", answer, runID)
	return nil
}
