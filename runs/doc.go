// Package runs is the client side of a run, for every front end (the CLI
// and the MCP server): starting a run and retrying one, what a run is
// doing and telling it what to do, and the schedules that start runs. It
// names what a client asks of a run through the wire the contract defines
// (interpreter/contract), returns typed errors (errors.go), and knows
// nothing of flags, exit codes or printing.
package runs
