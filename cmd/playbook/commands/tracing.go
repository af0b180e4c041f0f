package commands

import (
	"context"
	"fmt"
	"io"
	"time"

	"playbook/worker"
)

// traceFlushTimeout bounds how long a stopping worker sends the spans it
// still holds.
const traceFlushTimeout = 5 * time.Second

// startTracing is the exporter of runs' traces the OTEL_* variables
// configure (worker.TracingFromEnv), nil when they configure none, and
// what sends its last spans when the worker stops.
func startTracing(ctx context.Context, notes io.Writer) (*worker.Tracing, func(), error) {
	tr, err := worker.TracingFromEnv(ctx)
	if err != nil || tr == nil {
		return nil, func() {}, err
	}
	return tr, func() {
		sctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			fmt.Fprintf(notes, "traces: %v\n", err)
		}
	}, nil
}
