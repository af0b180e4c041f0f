package commands

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

func (a *app) deploymentCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "deployment",
		Short: "show a Worker Deployment's versions, or make one current: new runs start on the current version, running ones stay on theirs",
	}, a.deploymentSetCurrentCommand(), a.deploymentDescribeCommand())
}

// deploymentNameFlag is the deployment a deployment command is about.
func deploymentNameFlag(cmd *cobra.Command, name *string) {
	cmd.Flags().StringVar(name, "deployment-name", "", "the Worker Deployment `NAME` (`playbook worker --deployment-name`)")
	_ = cmd.MarkFlagRequired("deployment-name")
}

func (a *app) deploymentSetCurrentCommand() *cobra.Command {
	var name, buildID string
	cmd := &cobra.Command{
		Use:   "set-current",
		Short: "make the version --build-id current: new runs (and auto-upgrade ones) go to its workers; it needs a worker of that version polling",
		Args:  noArgs,
		RunE: a.connected(func(c *call, conn *connection) error {
			h := conn.client.WorkerDeploymentClient().GetHandle(name)
			// The version it replaces is read first, and the change is
			// made only if nothing changed the deployment in between (its
			// conflict token).
			desc, err := h.Describe(c.ctx, client.WorkerDeploymentDescribeOptions{})
			if err != nil {
				return err
			}
			was := "none"
			if v := desc.Info.RoutingConfig.CurrentVersion; v != nil {
				was = v.BuildID
			}
			if _, err := h.SetCurrentVersion(c.ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID, ConflictToken: desc.ConflictToken}); err != nil {
				return err
			}
			if err := routingReached(c.ctx, conn, h, buildID, routingWait); err != nil {
				if c.ctx.Err() != nil {
					return c.ctx.Err()
				}
				before := "version " + was
				if was == "none" {
					before = "unversioned workers"
				}
				fmt.Fprintf(c.stdout, "Deployment %s: current version %s (was %s), not yet confirmed known to every task queue (%v): until it is, workflow tasks may still go to %s. Pinned runs stay on the version that started them.\n", name, buildID, was, err, before)
				return nil
			}
			fmt.Fprintf(c.stdout, "Deployment %s: current version %s (was %s). New runs start on it; pinned runs stay on the version that started them.\n", name, buildID, was)
			return nil
		}),
	}
	deploymentNameFlag(cmd, &name)
	cmd.Flags().StringVar(&buildID, "build-id", "", "the version's `ID` (`playbook worker --build-id`)")
	_ = cmd.MarkFlagRequired("build-id")
	return cmd
}

// routingWait bounds how long set-current waits for the new current
// version to reach the deployment's task queues.
const routingWait = time.Minute

// routingReached waits, up to within, until each workflow task queue the
// version's workers poll routes to it: the server makes a version current
// at once and tells the task queues after (asynchronously since Temporal
// 1.28), and until a queue knows, its workflow tasks, an auto-upgrade
// run's next one included, still go to the version before. A queue's
// DescribeTaskQueue answers from the partition that holds its routing.
// (The deployment's routing_config_update_state, which waits for every
// partition of every queue to confirm, stayed "in progress" for minutes
// under load while the queues routed to the new version.) A question the
// server does not answer is asked again, less often as the wait goes on.
func routingReached(ctx context.Context, conn *connection, h client.WorkerDeploymentHandle, buildID string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	pause := 100 * time.Millisecond
	for {
		pending, err := queuesNotRouting(ctx, conn, h, buildID)
		if err == nil && len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("the server did not say within %s: %w", within, err)
			}
			return fmt.Errorf("task queue %s still routed elsewhere after %s", strings.Join(pending, ", "), within)
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// queuesNotRouting lists the workflow task queues of version buildID that
// do not route new workflow tasks to it yet.
func queuesNotRouting(ctx context.Context, conn *connection, h client.WorkerDeploymentHandle, buildID string) ([]string, error) {
	v, err := h.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: buildID})
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, q := range v.Info.TaskQueuesInfos {
		if q.Type != client.TaskQueueTypeWorkflow {
			continue
		}
		resp, err := conn.client.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: conn.namespace, TaskQueue: &taskqueuepb.TaskQueue{Name: q.Name, Kind: enumspb.TASK_QUEUE_KIND_NORMAL}, TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW})
		if err != nil {
			return nil, err
		}
		if resp.GetVersioningInfo().GetCurrentDeploymentVersion().GetBuildId() != buildID {
			pending = append(pending, q.Name)
		}
	}
	return pending, nil
}

func (a *app) deploymentDescribeCommand() *cobra.Command {
	var (
		name string
		out  printer
	)
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "list a Worker Deployment's versions and which is current",
		Args:  noArgs,
		RunE: a.connected(func(c *call, conn *connection) error {
			resp, err := conn.client.WorkerDeploymentClient().GetHandle(name).Describe(c.ctx, client.WorkerDeploymentDescribeOptions{})
			if err != nil {
				return err
			}
			v := viewDeployment(resp.Info)
			return out.print(c.stdout, v, func(w io.Writer) { printDeployment(w, v) })
		}),
	}
	deploymentNameFlag(cmd, &name)
	out.flag(cmd.Flags(), "print the deployment as JSON")
	return cmd
}

// deploymentView is a Worker Deployment as `deployment describe` shows it.
type deploymentView struct {
	Name     string   `json:"name"`
	Current  string   `json:"current,omitempty"`
	Ramping  string   `json:"ramping,omitempty"`
	Percent  float32  `json:"ramping_percent,omitempty"`
	Versions []string `json:"versions"`
}

func viewDeployment(info client.WorkerDeploymentInfo) deploymentView {
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
	return v
}

func printDeployment(w io.Writer, v deploymentView) {
	current := v.Current
	if current == "" {
		current = "none (runs go to unversioned workers)"
	}
	fmt.Fprintf(w, "deployment %s\ncurrent    %s\n", v.Name, current)
	if v.Ramping != "" {
		fmt.Fprintf(w, "ramping    %s (%.0f%% of new runs)\n", v.Ramping, v.Percent)
	}
	for _, b := range v.Versions {
		fmt.Fprintf(w, "version    %s\n", b)
	}
}
