package commands

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"playbook/internal/userfile"
	"playbook/interpreter/contract"
	"playbook/runs"
)

// sendCommand sends a run an event for its wait_event steps. What the run
// would refuse for its shape (a name that is not one, data that is not
// JSON or over the bound) is refused here first, exit 2, before anything
// is sent; the run refuses an event no step takes (exit 1), and a run
// that has ended is said to have (exit 5).
func (a *app) sendCommand() *cobra.Command {
	var data, dataFile, by string
	cmd := &cobra.Command{
		Use:   "send RUN EVENT",
		Short: "send a run an event: its wait_event steps waiting for EVENT complete with --data",
		Args:  exactArgs(2, "RUN EVENT"),
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
