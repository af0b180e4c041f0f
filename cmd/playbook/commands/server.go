package commands

import (
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"playbook/activities"
	"playbook/worker"
)

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run a playbook worker against any Temporal cluster (settings from envconfig and flags)",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "log-dir", Value: worker.DefaultLogDir(), Usage: "where each attempt's stdout and stderr are kept"},
			&cli.IntFlag{Name: "max-concurrent-steps", Usage: "steps this worker runs at once",
				DefaultText: fmt.Sprintf("100 for each CPU it may use, %d here", worker.DefaultMaxConcurrentSteps())},
			drainFlag(),
			stepEnvFlag(),
			logSizeFlag(),
			&cli.StringFlag{Name: "deployment-name", Usage: "join the Worker Deployment `NAME` (Temporal's Worker Versioning): the worker takes only runs of its version, --build-id"},
			&cli.StringFlag{Name: "build-id", Usage: "this worker's version `ID` in its deployment (a release's version, a commit); runs stay on the version that started them"},
			&cli.BoolFlag{Name: "auto-upgrade", Usage: "with --deployment-name: runs move to the deployment's current version at their next workflow task, instead of staying on the one that started them"},
		}, append(observeFlags(), connectionFlags()...)...),
		Action: func(c *cli.Context) error {
			logSize, err := maxLogSize(c)
			if err != nil {
				return cli.Exit("worker: "+err.Error(), exitInvalid)
			}
			deployment, err := deploymentOf(c)
			if err != nil {
				return cli.Exit("worker: "+err.Error(), exitInvalid)
			}
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
			w := worker.New(conn.client, worker.Options{TaskQueue: c.String("task-queue"), LogDir: c.String("log-dir"), MaxConcurrentSteps: c.Int("max-concurrent-steps"), DrainTimeout: drainTimeout(c), StepEnv: c.StringSlice("step-env"), LogsAt: logsAt, MaxLogBytes: logSize, Deployment: deployment})
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

// logSizeFlag caps each attempt's stdout and stderr files.
func logSizeFlag() cli.Flag {
	return &cli.StringFlag{Name: "max-log-size", Value: fmt.Sprintf("%dMiB", activities.DefaultMaxLogBytes>>20),
		Usage: "each attempt's stdout and stderr files keep at most `SIZE` each: a longer stream's last part, after a line saying how much was dropped (bytes, or with KiB, MiB or GiB)"}
}

// sizeText is a size as --max-log-size takes it: 65536, 512KiB, 64MiB, 1GiB.
var sizeText = regexp.MustCompile(`^([0-9]+)(KiB|MiB|GiB)?$`)

// maxLogSize reads --max-log-size, in bytes.
func maxLogSize(c *cli.Context) (int64, error) {
	text := c.String("max-log-size")
	if m := sizeText.FindStringSubmatch(text); m != nil {
		shift := map[string]int{"": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil && n <= math.MaxInt64>>shift && n<<shift >= 1<<10 {
			return n << shift, nil
		}
	}
	return 0, fmt.Errorf("--max-log-size %q: want a size such as 64MiB (bytes, or a number with KiB, MiB or GiB), at least 1KiB", text)
}

// deploymentOf reads the worker's Worker Deployment flags: a name and a
// build ID, or neither.
func deploymentOf(c *cli.Context) (worker.Deployment, error) {
	d := worker.Deployment{Name: c.String("deployment-name"), BuildID: c.String("build-id"), AutoUpgrade: c.Bool("auto-upgrade")}
	switch {
	case d.Name == "" && d.BuildID == "" && !d.AutoUpgrade:
		return d, nil
	case d.Name == "" || d.BuildID == "":
		return d, fmt.Errorf("--deployment-name and --build-id go together (--auto-upgrade needs both)")
	case strings.ContainsAny(d.Name, ".:"):
		return d, fmt.Errorf("--deployment-name %q: a deployment's name cannot hold '.' or ':'", d.Name)
	}
	return d, nil
}
