package commands

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"playbook/interpreter/playbookwf"
)

// Version and Commit are what a release build stamps (`make release`,
// `make build`): -ldflags "-X playbook/cmd/playbook/commands.Version=v1.2.3
// -X playbook/cmd/playbook/commands.Commit=<hash>". Unstamped, the module
// version and the VCS information the Go toolchain recorded are used.
var Version, Commit = "", ""

func versionCommand() *cobra.Command {
	return offline(&cobra.Command{
		Use:   "version",
		Short: "print the version, the commit, the Temporal SDK and server versions built in, and the workflow's newest change (also --version)",
		Args:  noArgs,
		RunE: action(func(c *call) error {
			printVersion(c.stdout)
			return nil
		}),
	})
}

// printVersion says what this binary is: version, commit, the Temporal
// modules built in, and the workflow changes it knows (docs/VERSIONING.md);
// whether it replays a cluster's runs is what upgrade-check tells.
func printVersion(out io.Writer) {
	version, commit := Version, Commit
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" {
			version = bi.Main.Version
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" && commit == "" {
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
	if version == "" || version == "(devel)" {
		version = "(devel: not a release build; `make build` or `make release` stamps the version)"
	}
	if commit == "" {
		commit = "unknown (built without VCS information)"
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
	changes := playbookwf.Changes()
	fmt.Fprintf(out, "workflow changes %d, newest %s\n", len(changes), changes[len(changes)-1].ID)
}
