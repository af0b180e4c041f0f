// Package runs is the client side of a run, for every front end (the CLI
// and the MCP server): it names what a client asks of a run through the
// wire the contract defines (interpreter/contract), and knows nothing of
// flags, exit codes or printing.
package runs
