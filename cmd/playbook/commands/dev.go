//go:build !noserver

package commands

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"playbook/internal/claims"
	"playbook/internal/devserver"
	"playbook/runs"
	"playbook/worker"
)

func devCommand() *cobra.Command {
	var (
		flags                                       workerFlags
		db, namespace, taskQueue, logLevel, keyFile string
		port, uiPort                                int
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "run an embedded Temporal server (SQLite), the Web UI and a playbook worker on 127.0.0.1",
		Args:  noArgs,
		RunE: action(func(c *call) error {
			// The worker's own log says "Activity error." for every step that
			// fails or is cancelled, as expected: shown only when asked for.
			level := quietLogs
			if logLevel != "" {
				var err error
				if level, err = parseLogLevel(logLevel); err != nil {
					return invalid(err)
				}
			}
			logSize, err := flags.maxLogBytes()
			if err != nil {
				return invalid(err)
			}
			if err := flags.checkSecretsDir(); err != nil {
				return invalid(err)
			}
			st, err := openStore(c.ctx, flags.store)
			if err != nil {
				return err
			}
			obs, err := newObserver(flags.observe)
			if err != nil {
				return invalid(err)
			}
			defer obs.Close()
			if db == ":memory:" {
				db = ""
			} else if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
				return err
			}
			codecEndpoint, stopCodec, err := devCodec(keyFile, uiPort)
			if err != nil {
				return invalid(err)
			}
			defer stopCodec()
			dev, err := devserver.Start(devserver.Options{
				IP: "127.0.0.1", Port: port, UIPort: uiPort, DBFile: db,
				Namespace: namespace, LogLevel: logLevel, CodecEndpoint: codecEndpoint,
				SearchAttributes: runs.SearchAttributes(),
			})
			var inUse *devserver.PortInUseError
			if errors.As(err, &inUse) {
				flag := map[string]string{"port": "--port", "UI port": "--ui-port"}[inUse.Which]
				return invalidf("%s: %s is in use (another playbook dev or Temporal server?): stop it, or give another %s", flag, inUse.Address, flag)
			}
			if err != nil {
				// Its errors say "dev server: ...".
				return &exitError{code: exitFailed, err: err, whole: true}
			}
			defer dev.Stop()
			opts := client.Options{HostPort: dev.Address, Namespace: dev.Namespace,
				Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level})))}
			obs.tune(c.stderr, level)(&opts)
			if _, err := useCodec(&opts, keyFile); err != nil {
				return invalid(err)
			}
			opts.ConnectionOptions.GrpcCompression = compression(compressionAuto).of(dev.Address)
			worker.RefuseOversizedUpdates(&opts)
			claims.Use(&opts, claims.Open(st), true)
			cl, err := client.Dial(opts)
			if err != nil {
				return err
			}
			defer cl.Close()
			logsAt, err := obs.start(cl, worker.DefaultLogDir(), worker.HookOptions{Namespace: dev.Namespace, SecretsDir: flags.secretsDir, Log: obs.logger(c.stderr)}, c.stderr)
			if err != nil {
				return err
			}
			tracing, stopTracing, err := startTracing(c.ctx, c.stderr)
			if err != nil {
				return invalid(err)
			}
			defer stopTracing()
			w := worker.New(cl, worker.Options{TaskQueue: taskQueue, DrainTimeout: flags.drain(), StepEnv: flags.stepEnv, SecretsDir: flags.secretsDir, LogsAt: logsAt, MaxLogBytes: logSize, Store: st, Tracing: tracing, LargeValues: true})
			if err := w.Start(); err != nil {
				return fmt.Errorf("worker: %w", err)
			}
			// Ready is said once the server lists the worker's poll: a run
			// submitted then is not told that no worker polls.
			awaitPoller(c.ctx, cl, taskQueue)
			where := "in memory"
			if db != "" {
				where = db
			}
			fmt.Fprintf(c.stdout, "Temporal gRPC on %s, namespace %s, state %s\n", dev.Address, dev.Namespace, where)
			if dev.UIAddress != "" {
				fmt.Fprintf(c.stdout, "Web UI on http://%s\n", dev.UIAddress)
			}
			if codecEndpoint != "" {
				fmt.Fprintf(c.stdout, "Payloads encrypted; codec server for the Web UI on %s\n", codecEndpoint)
			}
			if logsAt != "" {
				fmt.Fprintf(c.stdout, "Metrics, health and logs on %s\n", logsAt)
			}
			fmt.Fprintf(c.stdout, "Worker on task queue %s. Stop with Ctrl-C.\n", taskQueue)
			if stopOnSignal(c, obs.watch(w), flags.drain(), obs.say(c.stderr)) {
				return errors.New("stopped at once")
			}
			return nil
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&db, "db", defaultDevDB(), "SQLite `FILE` holding all state (\":memory:\" keeps nothing)")
	fs.IntVar(&port, "port", 7233, "gRPC frontend port")
	fs.IntVar(&uiPort, "ui-port", 8233, "Web UI port (0: no UI)")
	// dev serves these, rather than reaching them: its own flags, over the
	// connection flags of the same names.
	fs.StringVar(&namespace, "namespace", "default", "namespace to create and serve")
	fs.StringVar(&taskQueue, "task-queue", "playbook", "task queue of the worker")
	fs.StringVar(&logLevel, "log-level", "", "show the server's and the worker's own logs from this `LEVEL`: debug (each attempt's start and end too), info, warn or error (default: none)")
	flags.register(fs)
	codecKeyFileFlag(fs, &keyFile)
	return offline(cmd)
}

func defaultDevDB() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "playbook", "dev.db")
	}
	return "playbook-dev.db"
}

// startEmbedded starts the in-memory server `run` uses when none is configured.
func startEmbedded(namespace string, port int) (embeddedServer, string, error) {
	dev, err := devserver.Start(devserver.Options{IP: "127.0.0.1", Port: port, Namespace: namespace, SearchAttributes: runs.SearchAttributes()})
	var inUse *devserver.PortInUseError
	if errors.As(err, &inUse) {
		return nil, "", invalidf("--embedded-port: %s is in use (another playbook dev or Temporal server?): stop it, or give another --embedded-port", inUse.Address)
	}
	if err != nil {
		return nil, "", err
	}
	return dev, dev.Address, nil
}
