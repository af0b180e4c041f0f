package commands

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docs/CLI.md is where every flag is written down (OPERATIONS.md and the
// other guides link there): each command's row in its table of commands
// names each of the command's flags (a worker's: the row or the table of
// worker flags), and the connection flags every command that talks to
// Temporal takes are named on the page. A schedule
// subcommand's flags are in SCHEDULING.md, its guide.
func TestCLIDocNamesEveryFlag(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../../docs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cliDoc, scheduling := read("CLI.md"), read("SCHEDULING.md")
	start := strings.Index(cliDoc, "### Worker flags")
	end := strings.Index(cliDoc, "### What the commands print")
	if start < 0 || end < start {
		t.Fatal("docs/CLI.md has no section \"### Worker flags\" before \"### What the commands print\"")
	}
	workerFlags := cliDoc[start:end]
	rows := map[string]string{}
	for _, line := range strings.Split(cliDoc, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `playbook "); ok {
			name, _, _ := strings.Cut(rest, " ")
			name = strings.TrimSuffix(strings.TrimSuffix(name, "`"), "|")
			rows[name] += line
		}
	}
	root := (&app{}).root()
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !strings.Contains(cliDoc, "--"+f.Name) {
			t.Errorf("docs/CLI.md does not name the connection flag --%s", f.Name)
		}
	})
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, c := range cmd.Commands() {
			if c.Hidden {
				continue
			}
			walk(c)
			if c.HasSubCommands() {
				continue
			}
			top := c
			for top.Parent() != root {
				top = top.Parent()
			}
			c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
				if f.Hidden || f.Name == "help" {
					return
				}
				where, doc := "its row in docs/CLI.md's table of commands", rows[top.Name()]
				switch top.Name() {
				case "schedule":
					where, doc = "docs/SCHEDULING.md", scheduling
				case "worker", "dev":
					where, doc = "its row or docs/CLI.md's worker flags", doc+workerFlags
				}
				if doc == "" {
					t.Errorf("docs/CLI.md's table of commands has no row for playbook %s", top.Name())
					return
				}
				if !strings.Contains(doc, "--"+f.Name) {
					t.Errorf("%s: --%s is not in %s", c.CommandPath(), f.Name, where)
				}
			})
		}
	}
	walk(root)
}
