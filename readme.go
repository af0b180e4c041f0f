// Package playbook holds the project's README, embedded so that the MCP
// server can offer it to agents as the language reference.
package playbook

import _ "embed"

// README is README.md: the language, the CLI and how runs recover.
//
//go:embed README.md
var README string
