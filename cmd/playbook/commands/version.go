package commands

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Version is the release this binary is; a release build sets it with
// -ldflags "-X playbook/cmd/playbook/commands.Version=v1.2.3". Otherwise the
// module version the Go toolchain recorded is used.
var Version = ""

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, the commit and the Temporal SDK and server versions built in (also --version)",
		Action: func(c *cli.Context) error {
			printVersion(c.App.Writer)
			return nil
		},
	}
}

// printVersion says what this binary is: version, commit (from the VCS
// stamp the Go toolchain records), and the Temporal modules built in.
func printVersion(out io.Writer) {
	version, commit := Version, "unknown (built without VCS information)"
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" {
			version = bi.Main.Version
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			commit = rev
			if t := settings["vcs.time"]; t != "" {
				commit += " (" + t + ")"
			}
			if settings["vcs.modified"] == "true" {
				commit += ", with uncommitted changes"
			}
		}
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			deps[d.Path] = d.Version
		}
		deps["go"] = bi.GoVersion
	}
	if version == "" {
		version = "(devel)"
	}
	fmt.Fprintf(out, "playbook %s\ncommit %s\n", version, commit)
	for _, m := range []struct{ name, path string }{
		{"Temporal Go SDK", "go.temporal.io/sdk"},
		{"Temporal server", "go.temporal.io/server"},
		{"Go", "go"},
	} {
		v := deps[m.path]
		if v == "" {
			v = "unknown"
		}
		fmt.Fprintf(out, "%s %s\n", m.name, v)
	}
}
