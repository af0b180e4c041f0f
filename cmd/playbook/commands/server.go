package commands

import (
	"log/slog"

	"github.com/urfave/cli/v2"

	"playbook/worker"
)

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run a playbook worker against any Temporal cluster (settings from envconfig and flags)",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "log-dir", Value: worker.DefaultLogDir(), Usage: "where each attempt's stdout and stderr are kept"},
			&cli.IntFlag{Name: "max-concurrent-steps", Usage: "steps this worker runs at once (default: the SDK's)"},
			drainFlag(),
			stepEnvFlag(),
		}, append(observeFlags(), connectionFlags()...)...),
		Action: func(c *cli.Context) error {
			obs, err := newObserver(c)
			if err != nil {
				return cli.Exit("worker: "+err.Error(), exitInvalid)
			}
			defer obs.Close()
			conn, err := connectWith(c, false, c.App.ErrWriter, slog.LevelInfo, obs.tune(c.App.ErrWriter, slog.LevelInfo))
			if err != nil {
				return connectFailed("worker", err)
			}
			defer conn.Close()
			logsAt, err := obs.start(c, conn.client, c.String("log-dir"))
			if err != nil {
				return cli.Exit("worker: "+err.Error(), exitFailed)
			}
			w := worker.New(conn.client, worker.Options{TaskQueue: c.String("task-queue"), LogDir: c.String("log-dir"), MaxConcurrentSteps: c.Int("max-concurrent-steps"), DrainTimeout: drainTimeout(c), StepEnv: c.StringSlice("step-env"), LogsAt: logsAt})
			if err := w.Start(); err != nil {
				return cli.Exit("worker: "+err.Error(), exitFailed)
			}
			if stopOnSignal(c, obs.watch(w)) {
				return cli.Exit("worker: stopped at once", exitFailed)
			}
			return nil
		},
	}
}

// stepEnvFlag names the worker's variables that steps see besides PATH,
// HOME, LANG, TZ and TMPDIR.
func stepEnvFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "step-env", Usage: "pass these worker environment variables to steps: `VAR,...` (TEMPORAL_* never reach a step)"}
}
