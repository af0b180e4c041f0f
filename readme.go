// Package playbook holds the project's README and language reference,
// embedded so that the MCP server can offer them to agents.
package playbook

import _ "embed"

// README is README.md: what playbook is, a tour, where to read on.
//
//go:embed README.md
var README string

// Language is docs/LANGUAGE.md: the language reference (every key, the
// failure language, the limits).
//
//go:embed docs/LANGUAGE.md
var Language string
