//go:build !noserver

package commands

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"playbook/internal/devserver"
	"playbook/worker"
)

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run an embedded Temporal server (SQLite), the Web UI and a playbook worker on 127.0.0.1",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "db", Value: defaultDevDB(), Usage: "SQLite `FILE` holding all state (\":memory:\" keeps nothing)"},
			&cli.IntFlag{Name: "port", Value: 7233, Usage: "gRPC frontend port"},
			&cli.IntFlag{Name: "ui-port", Value: 8233, Usage: "Web UI port (0: no UI)"},
			&cli.StringFlag{Name: "namespace", Value: "default", Usage: "namespace to create and serve"},
			&cli.StringFlag{Name: "task-queue", Value: "playbook", Usage: "task queue of the worker"},
			&cli.StringFlag{Name: "log-level", Usage: "show the server's and the worker's own logs from this level: debug, info, warn, error (default: none)"},
			drainFlag(),
			stepEnvFlag(),
			logSizeFlag(),
			codecKeyFileFlag(),
		}, observeFlags()...),
		Action: func(c *cli.Context) error {
			// The worker's own log says "Activity error." for every step that
			// fails or is cancelled, as expected: shown only when asked for.
			level := quietLogs
			if c.IsSet("log-level") {
				if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
					return cli.Exit("dev: --log-level: "+err.Error(), exitInvalid)
				}
			}
			logSize, err := maxLogSize(c)
			if err != nil {
				return cli.Exit("dev: "+err.Error(), exitInvalid)
			}
			obs, err := newObserver(c)
			if err != nil {
				return cli.Exit("dev: "+err.Error(), exitInvalid)
			}
			defer obs.Close()
			db := c.String("db")
			if db == ":memory:" {
				db = ""
			} else if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
				return cli.Exit("dev: "+err.Error(), exitFailed)
			}
			codecEndpoint, stopCodec, err := devCodec(c)
			if err != nil {
				return cli.Exit("dev: "+err.Error(), exitInvalid)
			}
			defer stopCodec()
			dev, err := devserver.Start(devserver.Options{
				IP: "127.0.0.1", Port: c.Int("port"), UIPort: c.Int("ui-port"), DBFile: db,
				Namespace: c.String("namespace"), LogLevel: c.String("log-level"), CodecEndpoint: codecEndpoint,
			})
			if err != nil {
				return cli.Exit(err.Error(), exitFailed)
			}
			defer dev.Stop()
			opts := client.Options{HostPort: dev.Address, Namespace: dev.Namespace,
				Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})))}
			obs.tune(c.App.ErrWriter, level)(&opts)
			if err := useCodec(&opts, c.String("codec-key-file")); err != nil {
				return cli.Exit("dev: "+err.Error(), exitInvalid)
			}
			cl, err := client.Dial(opts)
			if err != nil {
				return cli.Exit("dev: "+err.Error(), exitFailed)
			}
			defer cl.Close()
			logsAt, err := obs.start(c, cl, worker.DefaultLogDir())
			if err != nil {
				return cli.Exit("dev: "+err.Error(), exitFailed)
			}
			w := worker.New(cl, worker.Options{TaskQueue: c.String("task-queue"), DrainTimeout: drainTimeout(c), StepEnv: c.StringSlice("step-env"), LogsAt: logsAt, MaxLogBytes: logSize})
			if err := w.Start(); err != nil {
				return cli.Exit("dev: worker: "+err.Error(), exitFailed)
			}
			where := "in memory"
			if db != "" {
				where = db
			}
			fmt.Fprintf(c.App.Writer, "Temporal gRPC on %s, namespace %s, state %s\n", dev.Address, dev.Namespace, where)
			if dev.UIAddress != "" {
				fmt.Fprintf(c.App.Writer, "Web UI on http://%s\n", dev.UIAddress)
			}
			if codecEndpoint != "" {
				fmt.Fprintf(c.App.Writer, "Payloads encrypted; codec server for the Web UI on %s\n", codecEndpoint)
			}
			if logsAt != "" {
				fmt.Fprintf(c.App.Writer, "Metrics, health and logs on %s\n", logsAt)
			}
			fmt.Fprintf(c.App.Writer, "Worker on task queue %s. Stop with Ctrl-C.\n", c.String("task-queue"))
			if stopOnSignal(c, obs.watch(w)) {
				return cli.Exit("dev: stopped at once", exitFailed)
			}
			return nil
		},
	}
}

func defaultDevDB() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "playbook", "dev.db")
	}
	return "playbook-dev.db"
}

// startEmbedded starts the in-memory server `run` uses when none is configured.
func startEmbedded(namespace string) (embeddedServer, string, error) {
	dev, err := devserver.Start(devserver.Options{IP: "127.0.0.1", Namespace: namespace})
	if err != nil {
		return nil, "", err
	}
	return dev, dev.Address, nil
}
