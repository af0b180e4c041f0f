package worker

import (
	"fmt"
	"net/http"
	"os"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// Metrics is a worker's Prometheus metrics: give Handler to the client
// (client.Options.MetricsHandler) and serve HTTP. The SDK's own worker
// metrics and the engine's playbook_* metrics both go through Handler.
type Metrics struct {
	// Handler is the SDK's tally metrics handler over a Prometheus reporter.
	Handler client.MetricsHandler
	// HTTP serves the metrics in Prometheus's text format.
	HTTP http.Handler

	closer interface{ Close() error }
}

// metricsInterval is how often tally hands what was recorded to the reporter.
const metricsInterval = time.Second

// NewMetrics returns metrics on their own registry (several workers in one
// process keep theirs apart). Close it when the worker has stopped.
func NewMetrics() *Metrics {
	registry := prom.NewRegistry()
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       registry,
		Gatherer:         registry,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError: func(err error) {
			fmt.Fprintln(os.Stderr, "metrics:", err)
		},
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, metricsInterval)
	return &Metrics{
		Handler: sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)),
		HTTP:    reporter.HTTPHandler(),
		closer:  closer,
	}
}

// Close flushes and stops reporting.
func (m *Metrics) Close() { _ = m.closer.Close() }
