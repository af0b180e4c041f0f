package commands

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/worker"
)

// observeFlags are a worker's flags for operators: metrics, health, its
// log format, and its attempts' logs (served to other machines, kept for
// a while).
func observeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "metrics-address", Usage: "serve /metrics (Prometheus), /healthz, /readyz and the attempts' logs over HTTP on `HOST:PORT` (default: none)"},
		&cli.StringFlag{Name: "advertise-address", Usage: "`HOST:PORT` where other machines reach --metrics-address, recorded with each attempt for `playbook logs` (default: the bound address; this host's name when it binds every interface)"},
		&cli.StringFlag{Name: "logs-token", EnvVars: []string{logsTokenEnv}, Usage: "require this bearer token to read logs over HTTP (set $" + logsTokenEnv + " rather than the flag: a command line is visible to every user)"},
		&cli.StringFlag{Name: "log-format", Value: "text", Usage: "the worker's own log lines: text or json (a line per step transition)"},
		&cli.DurationFlag{Name: "log-retention", Value: worker.DefaultLogRetention, Usage: "remove attempts' logs older than this (0: keep them all)"},
	}
}

// logsTokenEnv holds the token a worker requires to serve its logs, and
// `playbook logs` sends.
const logsTokenEnv = "PLAYBOOK_LOGS_TOKEN"

// observer is what a worker serves and keeps for operators.
type observer struct {
	metrics    *worker.Metrics
	endpoint   *worker.Endpoint
	json       bool
	stopKeeper func()
}

func newObserver(c *cli.Context) (*observer, error) {
	o := &observer{stopKeeper: func() {}}
	switch f := c.String("log-format"); f {
	case "text":
	case "json":
		o.json = true
	default:
		return nil, fmt.Errorf("--log-format %q: give text or json", f)
	}
	if c.String("metrics-address") != "" {
		o.metrics = worker.NewMetrics()
	}
	return o, nil
}

// tune gives a client the metrics handler and the log format.
func (o *observer) tune(notes io.Writer, level slog.Level) func(*client.Options) {
	return func(opts *client.Options) {
		if o.metrics != nil {
			opts.MetricsHandler = o.metrics.Handler
		}
		if o.json {
			opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewJSONHandler(notes, &slog.HandlerOptions{Level: level})))
		}
	}
}

// start keeps logDir within its retention and serves the endpoint when
// asked for; logsAt is where the attempts' logs are served, if they are.
func (o *observer) start(c *cli.Context, cl client.Client, logDir string) (logsAt string, err error) {
	o.stopKeeper = worker.KeepLogs(logDir, c.Duration("log-retention"))
	if c.String("metrics-address") == "" {
		return "", nil
	}
	o.endpoint, err = worker.StartEndpoint(worker.EndpointOptions{
		Address: c.String("metrics-address"), Advertise: c.String("advertise-address"),
		Metrics: o.metrics, LogDir: logDir, LogsToken: c.String("logs-token"), Client: cl,
	})
	if err != nil {
		return "", fmt.Errorf("--metrics-address: %w", err)
	}
	return o.endpoint.URL, nil
}

// watch marks the worker ready once started, and not ready once asked to stop.
func (o *observer) watch(w sdkworker.Worker) sdkworker.Worker {
	if o.endpoint == nil {
		return w
	}
	o.endpoint.Polling(true)
	return observedWorker{Worker: w, endpoint: o.endpoint}
}

func (o *observer) Close() {
	o.stopKeeper()
	if o.endpoint != nil {
		o.endpoint.Close()
	}
	if o.metrics != nil {
		o.metrics.Close()
	}
}

// observedWorker is a worker whose endpoint stops being ready when it is
// asked to stop.
type observedWorker struct {
	sdkworker.Worker
	endpoint *worker.Endpoint
}

func (w observedWorker) Stop() {
	w.endpoint.Polling(false)
	w.Worker.Stop()
}
