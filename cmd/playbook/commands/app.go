// Package commands is the playbook CLI: flags, printing and exit codes.
// cmd/playbook calls Main; tests call it in-process.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// Exit codes of the CLI (the README's table).
const (
	exitOK          = 0   // the run completed; the command did what it was asked
	exitFailed      = 1   // the run failed, or the command could not do its work
	exitInvalid     = 2   // usage or invalid input: nothing was started
	exitCancelled   = 3   // the run ended cancelled
	exitUnreachable = 4   // Temporal cannot be reached
	exitEnded       = 5   // the run already ended (cancel: nothing to cancel)
	exitDetached    = 130 // Ctrl-C: the CLI stopped following; the run goes on
)

// Main runs the CLI with these arguments and returns its exit code. When
// ctx ends, long-running commands (dev, worker) stop.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:      "playbook",
		Usage:     "run YAML playbooks as durable workflows on Temporal",
		Writer:    stdout,
		ErrWriter: stderr,
		// Exit codes are ours to return, not urfave's to os.Exit with.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			runCommand(),
			validateCommand(),
			schemaCommand(),
			devCommand(),
			workerCommand(),
			pendingCommand(),
			classifyCommand(),
			logsCommand(),
			cancelCommand(),
			terminateCommand(),
			statusCommand(),
			eventsCommand(),
			listCommand(),
			setupCommand(),
			retryCommand(),
			historyCommand(),
			replayCommand(),
			upgradeCheckCommand(),
			deploymentCommand(),
			graphCommand(),
			mcpCommand(),
			scheduleCommand(),
			versionCommand(),
			codecServerCommand(),
		},
		Flags: []cli.Flag{&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version, commit and Temporal versions"}},
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				printVersion(c.App.Writer)
				return nil
			}
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("playbook: no command %q (see `playbook --help`)", c.Args().First()), exitInvalid)
			}
			return cli.ShowAppHelp(c)
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return cli.Exit(err.Error(), exitInvalid)
		},
	}
	err := app.RunContext(ctx, flagsFirst(app.Commands, args))
	if err == nil {
		return exitOK
	}
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		if msg := coder.Error(); msg != "" {
			fmt.Fprintln(stderr, msg)
		}
		return coder.ExitCode()
	}
	fmt.Fprintln(stderr, "playbook:", err)
	return exitInvalid
}

// connectionFlags are shared by every command that talks to Temporal.
func connectionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "address", Usage: "Temporal frontend host:port (default: TEMPORAL_ADDRESS, the envconfig profile, or an embedded server)"},
		&cli.StringFlag{Name: "namespace", Usage: "Temporal namespace (default: TEMPORAL_NAMESPACE or default)"},
		&cli.StringFlag{Name: "profile", Usage: "envconfig profile in the Temporal config file (default: TEMPORAL_PROFILE or default)"},
		&cli.StringFlag{Name: "task-queue", Value: "playbook", Usage: "task queue of playbook workers"},
	}
}
