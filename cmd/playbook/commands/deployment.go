package commands

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"
)

func deploymentCommand() *cli.Command {
	name := &cli.StringFlag{Name: "deployment-name", Required: true, Usage: "the Worker Deployment `NAME` (`playbook worker --deployment-name`)"}
	return &cli.Command{
		Name:  "deployment",
		Usage: "show a Worker Deployment's versions, or make one current: new runs start on the current version, running ones stay on theirs",
		Subcommands: []*cli.Command{
			{
				Name:  "set-current",
				Usage: "make the version --build-id current: new runs (and auto-upgrade ones) go to its workers; it needs a worker of that version polling",
				Flags: append([]cli.Flag{name, &cli.StringFlag{Name: "build-id", Required: true, Usage: "the version's `ID` (`playbook worker --build-id`)"}}, connectionFlags()...),
				Action: func(c *cli.Context) error {
					return withConnection(c, "deployment set-current", func(conn *connection) error {
						h := conn.client.WorkerDeploymentClient().GetHandle(c.String("deployment-name"))
						resp, err := h.SetCurrentVersion(c.Context, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: c.String("build-id")})
						if err != nil {
							return cli.Exit("deployment set-current: "+err.Error(), exitFailed)
						}
						was := "none"
						if v := resp.PreviousVersion; v != nil {
							was = v.BuildID
						}
						fmt.Fprintf(c.App.Writer, "Deployment %s: current version %s (was %s). New runs start on it; pinned runs stay on the version that started them.\n",
							c.String("deployment-name"), c.String("build-id"), was)
						return nil
					})
				},
			},
			{
				Name:  "describe",
				Usage: "list a Worker Deployment's versions and which is current",
				Flags: append([]cli.Flag{name, &cli.BoolFlag{Name: "json", Usage: "print the deployment as JSON"}}, connectionFlags()...),
				Action: func(c *cli.Context) error {
					return withConnection(c, "deployment describe", func(conn *connection) error {
						h := conn.client.WorkerDeploymentClient().GetHandle(c.String("deployment-name"))
						resp, err := h.Describe(c.Context, client.WorkerDeploymentDescribeOptions{})
						if err != nil {
							return cli.Exit("deployment describe: "+err.Error(), exitFailed)
						}
						return printDeployment(c, resp.Info)
					})
				},
			},
		},
	}
}

// deploymentView is a Worker Deployment as `deployment describe` shows it.
type deploymentView struct {
	Name     string   `json:"name"`
	Current  string   `json:"current,omitempty"`
	Ramping  string   `json:"ramping,omitempty"`
	Percent  float32  `json:"ramping_percent,omitempty"`
	Versions []string `json:"versions"`
}

func printDeployment(c *cli.Context, info client.WorkerDeploymentInfo) error {
	v := deploymentView{Name: info.Name, Versions: []string{}}
	if cur := info.RoutingConfig.CurrentVersion; cur != nil {
		v.Current = cur.BuildID
	}
	if r := info.RoutingConfig.RampingVersion; r != nil {
		v.Ramping, v.Percent = r.BuildID, info.RoutingConfig.RampingVersionPercentage
	}
	for _, s := range info.VersionSummaries {
		v.Versions = append(v.Versions, s.Version.BuildID)
	}
	if c.Bool("json") {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintln(c.App.Writer, string(b))
		return nil
	}
	current := v.Current
	if current == "" {
		current = "none (runs go to unversioned workers)"
	}
	fmt.Fprintf(c.App.Writer, "deployment %s\ncurrent    %s\n", v.Name, current)
	if v.Ramping != "" {
		fmt.Fprintf(c.App.Writer, "ramping    %s (%.0f%% of new runs)\n", v.Ramping, v.Percent)
	}
	for _, b := range v.Versions {
		fmt.Fprintf(c.App.Writer, "version    %s\n", b)
	}
	return nil
}
