package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"playbook/interpreter/contract"
	"playbook/runs"
)

type sendEventArgs struct {
	Run   string `json:"run" jsonschema:"the run's workflow ID"`
	Event string `json:"event" jsonschema:"the event's name, as a wait_event step of the run waits for it"`
	Data  any    `json:"data,omitempty" jsonschema:"the event's data, any JSON (at most 256 KiB): the steps' result.data"`
	By    string `json:"by,omitempty" jsonschema:"who sends it (default mcp; another name only with --act-for)"`
}

// addEventTools adds send_event: what `playbook send` does, with
// --allow-write only.
func addEventTools(srv *mcp.Server, t *tools) {
	mcp.AddTool(srv, &mcp.Tool{Name: "send_event", Description: "Send a run an event: each of its wait_event steps waiting for that event (started or not, and not yet given one) completes with the data. The run refuses an event no step takes. Needs --allow-write.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: false}}, t.sendEvent)
}

func (t *tools) sendEvent(ctx context.Context, _ *mcp.CallToolRequest, a sendEventArgs) (*mcp.CallToolResult, any, error) {
	if !t.AllowWrite {
		return nil, nil, errors.New(mcpWriteRefusal)
	}
	if err := need("run", a.Run, "event", a.Event); err != nil {
		return nil, nil, err
	}
	by, err := t.who(a.By)
	if err != nil {
		return nil, nil, err
	}
	if err := contract.CheckEvent(a.Event, a.Data, by); err != nil {
		return nil, nil, err
	}
	answer, err := runs.SendEvent(ctx, t.Client, a.Run, a.Event, a.Data, by)
	if err != nil {
		return nil, nil, toolError(a.Run, err)
	}
	return reply(map[string]any{"run": a.Run, "event": a.Event, "by": by, "result": answer,
		"next": "follow it with run_status " + a.Run})
}
