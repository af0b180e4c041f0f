package commands

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/worker"
)

// observeFlags are a worker's flags for operators: metrics, health, its
// log format, and its attempts' logs (served to other machines, kept for
// a while).
type observeFlags struct {
	metricsAddress, advertiseAddress, logsToken, logFormat string
	logRetention                                           time.Duration
}

func (f *observeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.metricsAddress, "metrics-address", "", "serve /metrics (Prometheus), /healthz, /readyz, the attempts' logs and the webhook triggers (POST /hooks/NAME, and their events to runs) over HTTP on `HOST:PORT` (default: none)")
	fs.StringVar(&f.advertiseAddress, "advertise-address", "", "`HOST:PORT` where other machines reach --metrics-address, recorded with each attempt for `playbook logs` (default: the bound address; this host's name when it binds every interface)")
	fs.StringVar(&f.logsToken, "logs-token", "", "require this bearer token to read logs over HTTP (default $"+logsTokenEnv+"; set it rather than the flag: a command line is visible to every user)")
	fs.StringVar(&f.logFormat, "log-format", "text", "the worker's own log lines: text or json (a line per step transition)")
	fs.DurationVar(&f.logRetention, "log-retention", worker.DefaultLogRetention, "remove attempts' logs older than this (0: keep them all)")
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
	flags      observeFlags
}

func newObserver(flags observeFlags) (*observer, error) {
	if flags.logsToken == "" {
		flags.logsToken = os.Getenv(logsTokenEnv)
	}
	o := &observer{stopKeeper: func() {}, flags: flags}
	switch f := flags.logFormat; f {
	case "text":
	case "json":
		o.json = true
	default:
		return nil, fmt.Errorf("--log-format %q: give text or json", f)
	}
	if flags.metricsAddress != "" {
		o.metrics = worker.NewMetrics()
	}
	return o, nil
}

// logger writes the worker's own lines in its log format.
func (o *observer) logger(notes io.Writer) *slog.Logger {
	if o.json {
		return slog.New(slog.NewJSONHandler(notes, nil))
	}
	return slog.New(slog.NewTextHandler(notes, nil))
}

// say writes a notice of the command's own on notes: a line of text, or a
// JSON log line (msg, and event worker_stopping) in the JSON format.
func (o *observer) say(notes io.Writer) func(msg string) {
	return func(msg string) {
		if o.json {
			o.logger(notes).Info(msg, "event", "worker_stopping")
			return
		}
		fmt.Fprintln(notes, msg)
	}
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

// start keeps logDir within its retention and serves the endpoint (with
// the webhook triggers' /hooks/) when asked for; logsAt is where the attempts' logs are served, if they are.
// Served to anyone (no token, beyond loopback), it warns on notes.
func (o *observer) start(cl client.Client, logDir string, hooks worker.HookOptions, notes io.Writer) (logsAt string, err error) {
	o.stopKeeper = worker.KeepLogs(logDir, o.flags.logRetention)
	if o.flags.metricsAddress == "" {
		return "", nil
	}
	o.endpoint, err = worker.StartEndpoint(worker.EndpointOptions{
		Address: o.flags.metricsAddress, Advertise: o.flags.advertiseAddress,
		Metrics: o.metrics, LogDir: logDir, LogsToken: o.flags.logsToken, Client: cl, Hooks: &hooks,
	})
	if err != nil {
		// An address that cannot be had (in use, malformed) is a flag to
		// change, as a --port in use is: exit 2.
		return "", invalidf("--metrics-address: %v", err)
	}
	if o.endpoint.OpenLogs() {
		o.logger(notes).Warn(fmt.Sprintf("the attempts' logs are served without a token to anyone who reaches %s (/logs/): set %s to require one, or bind --metrics-address to 127.0.0.1",
			o.flags.metricsAddress, logsTokenEnv))
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
