package worker

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"

	"playbook/activities"
	"playbook/interpreter/spec"
)

// EndpointOptions configure a worker's HTTP endpoint: one listener for
// /metrics, /healthz, /readyz, /logs/ and /hooks/.
type EndpointOptions struct {
	// Required: HOST:PORT to listen on (":9090" listens on every interface).
	Address string
	// Optional: HOST:PORT other machines reach this endpoint at, recorded
	// with every attempt as where its logs are; default the bound address,
	// with this machine's host name when it listens on every interface.
	Advertise string
	// Optional: what /metrics serves; nil: no /metrics.
	Metrics *Metrics
	// Required: the worker's log directory, which /logs/ serves.
	LogDir string
	// Optional: the token /logs/ requires, sent as "Authorization: Bearer
	// TOKEN"; empty: anyone who reaches the endpoint reads the logs.
	LogsToken string
	// Required: the worker's client; /readyz asks its server for its health.
	Client client.Client
	// Optional: serve POST /hooks/NAME (webhook triggers) and their
	// events, POST /hooks/NAME/runs/RUN/events/EVENT; nil: none.
	Hooks *HookOptions
}

// Endpoint is a running worker's HTTP endpoint.
type Endpoint struct {
	// URL is where others reach it, as in "http://host:9090".
	URL string

	server  *http.Server
	client  client.Client
	polling atomic.Bool
	// openLogs: /logs/ needs no token and listens beyond loopback.
	openLogs bool
}

// readyTimeout bounds /readyz's call to the server.
const readyTimeout = 2 * time.Second

// StartEndpoint listens on o.Address and serves until Close.
func StartEndpoint(o EndpointOptions) (*Endpoint, error) {
	ln, err := net.Listen("tcp", o.Address)
	if err != nil {
		return nil, err
	}
	advertise := o.Advertise
	if advertise == "" {
		advertise = advertisedAddress(ln.Addr().(*net.TCPAddr))
	}
	e := &Endpoint{URL: "http://" + advertise, client: o.Client,
		openLogs: o.LogsToken == "" && !ln.Addr().(*net.TCPAddr).IP.IsLoopback()}
	mux := http.NewServeMux()
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics.HTTP)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", e.ready)
	mux.Handle("GET /logs/{run}/{step}/{attempt}/{stream}", logsHandler(o.LogDir, o.LogsToken))
	if o.Hooks != nil {
		hooks{HookOptions: *o.Hooks, client: o.Client}.routes(mux)
	}
	e.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.server.Serve(ln) }()
	return e, nil
}

// advertisedAddress is a bound address others can dial: a wildcard host
// becomes this machine's host name.
func advertisedAddress(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// OpenLogs says whether anyone who reaches the endpoint reads the
// attempts' logs: it requires no token and listens beyond loopback.
func (e *Endpoint) OpenLogs() bool { return e.openLogs }

// Polling says whether the worker polls for work: after it started, until
// it is asked to stop.
func (e *Endpoint) Polling(on bool) { e.polling.Store(on) }

// Close stops serving.
func (e *Endpoint) Close() { _ = e.server.Close() }

// ready answers 200 when the worker polls and its server answers a health
// check, else 503 saying which is not so.
func (e *Endpoint) ready(w http.ResponseWriter, r *http.Request) {
	if !e.polling.Load() {
		http.Error(w, "not ready: the worker is not polling", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if _, err := e.client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		http.Error(w, "not ready: the Temporal server does not answer: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// logsHandler serves an attempt's STREAM: the latest run's of workflow
// RUN, or with ?run_id= that run's (activities.RunLogDir).
func logsHandler(logDir, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
			http.Error(w, "this worker's logs need its token (PLAYBOOK_LOGS_TOKEN)", http.StatusUnauthorized)
			return
		}
		run, step, stream := r.PathValue("run"), r.PathValue("step"), r.PathValue("stream")
		attempt, err := strconv.Atoi(r.PathValue("attempt"))
		if err != nil || attempt < 1 || (stream != "stdout" && stream != "stderr") {
			http.Error(w, "ask for /logs/RUN/STEP/ATTEMPT/stdout or stderr", http.StatusBadRequest)
			return
		}
		runID := r.URL.Query().Get("run_id")
		names := map[string]string{"run": run, "step": step}
		if runID != "" {
			names["run_id"] = runID
		}
		for what, name := range names {
			if err := spec.CheckPathName(what, name); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		f, err := os.Open(filepath.Join(activities.RunLogDir(logDir, run, runID), step, fmt.Sprintf("attempt-%d.%s", attempt, stream)))
		if err != nil {
			http.Error(w, fmt.Sprintf("no %s for attempt %d of %s in %s on this worker", stream, attempt, step, run), http.StatusNotFound)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.Copy(w, f)
	})
}
