package mcpserver

import (
	"context"
	"fmt"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"playbook/internal/playtest"
)

type testArgs struct {
	Path string `json:"path" jsonschema:"a test file, a playbook with its NAME.test.yaml beside it, or a directory of them, under the server's root"`
	Run  string `json:"run,omitempty" jsonschema:"run only the cases whose name matches this regular expression"`
}

// testPlaybook runs test cases read under the root, the playbooks they
// name too (playtest refuses one outside alike whether it is there or
// not); a step under real: does not run (the tool starts nothing).
func (t *tools) testPlaybook(_ context.Context, _ *mcp.CallToolRequest, a testArgs) (*mcp.CallToolResult, any, error) {
	if err := need("path", a.Path); err != nil {
		return nil, nil, err
	}
	path, err := t.Root.resolve(t.Root.abs(a.Path))
	if err != nil {
		return nil, nil, err
	}
	opts := playtest.Options{Read: t.Root.readPlaybook, NoReal: true, Root: t.Root.dir}
	if a.Run != "" {
		if opts.Run, err = regexp.Compile(a.Run); err != nil {
			return nil, nil, fmt.Errorf("run: %v", err)
		}
	}
	rep, err := playtest.Run([]string{path}, opts, nil)
	if err != nil {
		return nil, nil, err
	}
	return reply(rep)
}
