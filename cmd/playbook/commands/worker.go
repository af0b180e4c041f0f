package commands

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"playbook/activities"
	"playbook/internal/claims"
	"playbook/internal/store"
	"playbook/worker"
)

func (a *app) workerCommand() *cobra.Command {
	var (
		flags      workerFlags
		logDir     string
		maxSteps   int
		deployment worker.Deployment
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "run a playbook worker against any Temporal cluster (settings from envconfig and flags)",
		Args:  noArgs,
		RunE: action(func(c *call) error {
			logSize, err := flags.maxLogBytes()
			if err != nil {
				return invalid(err)
			}
			if err := flags.checkSecretsDir(); err != nil {
				return invalid(err)
			}
			if err := checkDeployment(deployment); err != nil {
				return invalid(err)
			}
			level, err := parseLogLevel(logLevel)
			if err != nil {
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
			tune := obs.tune(c.stderr, level)
			conn, err := a.connectWith(c, false, level, func(o *client.Options) {
				tune(o)
				claims.Use(o, claims.Open(st), true)
			})
			if err != nil {
				return err
			}
			defer conn.Close()
			logsAt, err := obs.start(conn.client, logDir, worker.HookOptions{Namespace: conn.namespace, SecretsDir: flags.secretsDir, Log: obs.logger(c.stderr)}, c.stderr)
			if err != nil {
				return err
			}
			tracing, stopTracing, err := startTracing(c.ctx, c.stderr)
			if err != nil {
				return invalid(err)
			}
			defer stopTracing()
			w := worker.New(conn.client, worker.Options{TaskQueue: a.conn.taskQueue, LogDir: logDir, MaxConcurrentSteps: maxSteps, DrainTimeout: flags.drain(), StepEnv: flags.stepEnv, SecretsDir: flags.secretsDir, LogsAt: logsAt, MaxLogBytes: logSize, Deployment: deployment, Store: st, Tracing: tracing, LargeValues: true})
			if err := w.Start(); err != nil {
				return err
			}
			if stopOnSignal(c, obs.watch(w), flags.drain(), obs.say(c.stderr)) {
				return errors.New("stopped at once")
			}
			return nil
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&logDir, "log-dir", worker.DefaultLogDir(), "where each attempt's stdout and stderr are kept")
	fs.StringVar(&logLevel, "log-level", "info", "the worker's own log lines from this `LEVEL`: debug (each attempt's start and end too), info, warn or error")
	fs.IntVar(&maxSteps, "max-concurrent-steps", 0, fmt.Sprintf("steps this worker runs at once (default 100 for each CPU it may use, %d here)", worker.DefaultMaxConcurrentSteps()))
	flags.register(fs)
	fs.StringVar(&deployment.Name, "deployment-name", "", "join the Worker Deployment `NAME` (Temporal's Worker Versioning): the worker takes only runs of its version, --build-id")
	fs.StringVar(&deployment.BuildID, "build-id", "", "this worker's version `ID` in its deployment (a release's version, a commit); runs stay on the version that started them")
	fs.BoolVar(&deployment.AutoUpgrade, "auto-upgrade", false, "with --deployment-name: runs move to the deployment's current version at their next workflow task, instead of staying on the one that started them")
	return cmd
}

// parseLogLevel reads --log-level: debug, info, warn or error.
func parseLogLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level %q: give debug, info, warn or error", s)
}

// workerFlags are what `worker` and `dev` share: how their worker runs
// steps and stops, and what it serves operators.
type workerFlags struct {
	drainTimeout time.Duration
	stepEnv      []string
	secretsDir   string
	maxLogSize   string
	store        string
	observe      observeFlags
}

func (f *workerFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.drainTimeout, "drain-timeout", worker.DefaultDrainTimeout,
		"on SIGTERM or SIGINT, how long running steps may finish before they are cancelled and retried on another worker")
	// Steps see these besides PATH, HOME, LANG, TZ and TMPDIR.
	fs.StringSliceVar(&f.stepEnv, "step-env", nil, "pass these worker environment variables to steps: `VAR,...` (TEMPORAL_* never reach a step)")
	secrets := os.Getenv("PLAYBOOK_SECRETS_DIR")
	if secrets == "" {
		secrets = activities.DefaultSecretsDir
	}
	fs.StringVar(&f.secretsDir, "secrets-dir", secrets, "the `DIR` steps read {secret: NAME} from, one file per secret (default $PLAYBOOK_SECRETS_DIR, else /run/secrets)")
	fs.StringVar(&f.maxLogSize, "max-log-size", fmt.Sprintf("%dMiB", activities.DefaultMaxLogBytes>>20),
		"each attempt's stdout and stderr files keep at most `SIZE` each: a longer stream's last part, after a line saying how much was dropped (bytes, or with KiB, MiB or GiB)")
	fs.StringVar(&f.store, "store", worker.DefaultStore(), storeFlagUsage)
	f.observe.register(fs)
}

// storeFlagUsage says what --store is, for every command that takes it.
const storeFlagUsage = "the run's store of step files, a `URL`: file:///dir, or s3://bucket/prefix?endpoint=URL&region=R with the AWS_* credentials (default $PLAYBOOK_STORE, else file://~/.local/state/playbook/store)"

// openStore opens --store; a URL it cannot use is the caller's mistake.
func openStore(ctx context.Context, raw string) (store.Store, error) {
	st, err := store.Open(ctx, raw)
	if err != nil {
		return nil, invalidf("--store: %v", err)
	}
	return st, nil
}

// drain is --drain-timeout; 0 cancels running steps at once.
func (f *workerFlags) drain() time.Duration {
	return max(f.drainTimeout, time.Nanosecond)
}

// checkSecretsDir refuses a --secrets-dir that is there and is not a
// directory (/dev/zero, a file): no step could read a secret from it. One
// that is not there yet is taken, as a directory mounted later.
func (f *workerFlags) checkSecretsDir() error {
	st, err := os.Stat(f.secretsDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--secrets-dir %s: %v", f.secretsDir, err)
	case !st.IsDir():
		return fmt.Errorf("--secrets-dir %s is not a directory: give the directory that holds one file per secret", f.secretsDir)
	}
	return nil
}

// sizeText is a size as --max-log-size takes it: 65536, 512KiB, 64MiB, 1GiB.
var sizeText = regexp.MustCompile(`^([0-9]+)(KiB|MiB|GiB)?$`)

// maxLogBytes reads --max-log-size, in bytes.
func (f *workerFlags) maxLogBytes() (int64, error) {
	if m := sizeText.FindStringSubmatch(f.maxLogSize); m != nil {
		shift := map[string]int{"": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil && n <= math.MaxInt64>>shift && n<<shift >= 1<<10 {
			return n << shift, nil
		}
	}
	return 0, fmt.Errorf("--max-log-size %q: want a size such as 64MiB (bytes, or a number with KiB, MiB or GiB), at least 1KiB", f.maxLogSize)
}

// checkDeployment checks the worker's Worker Deployment flags: a name and a
// build ID, or neither.
func checkDeployment(d worker.Deployment) error {
	switch {
	case d.Name == "" && d.BuildID == "" && !d.AutoUpgrade:
		return nil
	case d.Name == "" || d.BuildID == "":
		return errors.New("--deployment-name and --build-id go together (--auto-upgrade needs both)")
	case strings.ContainsAny(d.Name, ".:"):
		return fmt.Errorf("--deployment-name %q: a deployment's name cannot hold '.' or ':'", d.Name)
	}
	return nil
}
