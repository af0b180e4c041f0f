package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"playbook"
)

const (
	readmeURI   = "playbook://readme"
	languageURI = "playbook://language"
)

// addGuides offers the README and the language reference as resources,
// and a prompt that walks an agent through a run's pending_failed steps.
func addGuides(srv *mcp.Server) {
	for _, r := range []struct{ uri, name, desc, text string }{
		{readmeURI, "playbook README", "What playbook is, a five-minute tour, and where each guide is.", playbook.README},
		{languageURI, "playbook language reference", "The playbook language: every key, tools, retries, exit-code rules, failure modes, pending_failed and classify, the aggregate, the limits.", playbook.Language},
	} {
		srv.AddResource(&mcp.Resource{URI: r.uri, Name: r.name, Description: r.desc, MIMEType: "text/markdown"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.uri, MIMEType: "text/markdown", Text: r.text}}}, nil
			})
	}
	srv.AddPrompt(&mcp.Prompt{Name: "triage_pending_failures", Description: "Decide, step by step, what to do with a run's pending_failed steps.",
		Arguments: []*mcp.PromptArgument{{Name: "run", Description: "the run's workflow ID", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			run := req.Params.Arguments["run"]
			if run == "" {
				return nil, fmt.Errorf("run is required")
			}
			text := fmt.Sprintf("Triage the pending_failed steps of playbook run %q.\n\n"+
				"1. Call list_pending_failed with run %[1]q: each step has its error, exit code, attempts and the tail of its stderr and stdout.\n"+
				"2. When the tail is not enough, read more with step_logs (page with next_offset); run_status shows the other steps.\n"+
				"3. For each step decide: retry when the cause was transient or has been fixed, fail when the step cannot succeed and the run should route it to end, skip when the run can do without it (its dependants skip too).\n"+
				"4. Classify each with classify_step (run, step, action, and a one-sentence reason that cites the evidence), then check run_status.\n"+
				"If unsure, say what you would need to know instead of classifying.", run)
			return &mcp.GetPromptResult{Description: "triage run " + run, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
		})
}
