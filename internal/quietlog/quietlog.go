// Package quietlog is the Temporal SDK logger that says nothing: for the
// CLI's client, which reports in its own words, and for tests.
package quietlog

import (
	"log/slog"

	sdklog "go.temporal.io/sdk/log"
)

// New is an SDK logger that drops every record.
func New() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
}
