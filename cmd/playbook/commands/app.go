// Package commands is the playbook CLI: flags, printing and exit codes.
// cmd/playbook calls Main; tests call it in-process.
package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help lists the commands in the order they are added: by what they are
// for, as docs/CLI.md's table does, not alphabetically.
func init() { cobra.EnableCommandSorting = false }

// Main runs the CLI with these arguments and returns its exit code. When
// ctx ends, long-running commands (dev, worker) stop.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := (&app{}).root()
	root.SetArgs(append([]string{}, args[min(1, len(args)):]...))
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	return report(cmd, err, stderr)
}

// app is the command tree and what its commands share: the flags of the
// ones that talk to Temporal.
type app struct {
	conn connectionFlags
	// embeddedPort is run --embedded-port: the port of the embedded
	// server, 0 for any free one.
	embeddedPort int
}

// CommandName is the name of the top-level command a command line runs
// (args without the program's name), "" when it names none: the command
// tree's own parse, flags and their values skipped.
func CommandName(args []string) string {
	root := (&app{}).root()
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return ""
	}
	for cmd.Parent() != root {
		cmd = cmd.Parent()
	}
	return cmd.Name()
}

func (a *app) root() *cobra.Command {
	var version bool
	root := &cobra.Command{
		Use:   "playbook",
		Short: "run YAML playbooks as durable workflows on Temporal",
		Args:  noCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version {
				printVersion(cmd.OutOrStdout())
				return nil
			}
			return cmd.Help()
		},
		// The commands that do not talk to Temporal take no connection flags.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseEmptyFlags(cmd); err != nil {
				return err
			}
			return a.conn.refuseOffline(cmd)
		},
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.Flags().BoolVarP(&version, "version", "v", false, "print the version, commit and Temporal versions")
	a.conn.register(root.PersistentFlags())
	root.SetHelpFunc(help)
	root.SetUsageFunc(usage)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return invalidf("%v (see `%s --help`)", err, cmd.CommandPath())
	})
	root.AddCommand(
		a.runCommand(),
		validateCommand(),
		a.testCommand(),
		schemaCommand(),
		devCommand(),
		a.workerCommand(),
		a.pendingCommand(),
		a.classifyCommand(),
		a.approveCommand(),
		a.rejectCommand(),
		a.sendCommand(),
		a.logsCommand(),
		a.filesCommand(),
		a.cancelCommand(),
		a.terminateCommand(),
		a.statusCommand(),
		a.eventsCommand(),
		a.listCommand(),
		a.setupCommand(),
		a.retryCommand(),
		a.historyCommand(),
		replayCommand(),
		a.upgradeCheckCommand(),
		a.deploymentCommand(),
		a.graphCommand(),
		a.mcpCommand(),
		a.scheduleCommand(),
		versionCommand(),
		codecServerCommand(),
	)
	return root
}

// group is a command whose subcommands do the work: alone it prints its
// help.
func group(cmd *cobra.Command, subcommands ...*cobra.Command) *cobra.Command {
	cmd.Args = noCommand
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.AddCommand(subcommands...)
	return cmd
}

// connectionFlags say how to reach Temporal. They are the root's
// persistent flags; the commands marked offline refuse them.
type connectionFlags struct {
	address, namespace, profile, taskQueue string
	// compression is --grpc-compression: auto, gzip or none.
	compression string
	set         *pflag.FlagSet
}

func (f *connectionFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.address, "address", "", "Temporal frontend host:port (default: TEMPORAL_ADDRESS, the envconfig profile, or an embedded server)")
	fs.StringVar(&f.namespace, "namespace", "", "Temporal namespace (default: TEMPORAL_NAMESPACE or default)")
	fs.StringVar(&f.profile, "profile", "", "envconfig profile in the Temporal config file (default: TEMPORAL_PROFILE or default)")
	fs.StringVar(&f.taskQueue, "task-queue", "playbook", "task queue of playbook workers")
	fs.StringVar(&f.compression, "grpc-compression", compressionAuto, "gzip or none: the compression of requests to Temporal (default auto: none on loopback, gzip elsewhere)")
	f.set = fs
}

// given says whether the flag name was on the command line.
func (f *connectionFlags) given(name string) bool { return f.set.Changed(name) }

// offlineAnnotation marks a command that does not talk to Temporal.
const offlineAnnotation = "offline"

// offline marks cmd as one that does not talk to Temporal: it neither
// takes nor lists the connection flags.
func offline(cmd *cobra.Command) *cobra.Command {
	cmd.Annotations = map[string]string{offlineAnnotation: "true"}
	return cmd
}

func isOffline(cmd *cobra.Command) bool { return cmd.Annotations[offlineAnnotation] != "" }

// refuseOffline refuses a connection flag given to an offline command, as
// an unknown flag.
func (f *connectionFlags) refuseOffline(cmd *cobra.Command) error {
	if !isOffline(cmd) {
		return nil
	}
	var given error
	cmd.InheritedFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && given == nil && f.set.Lookup(fl.Name) == fl {
			given = invalidf("unknown flag: --%s (see `%s --help`)", fl.Name, cmd.CommandPath())
		}
	})
	return given
}
