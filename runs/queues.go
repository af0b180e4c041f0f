package runs

import (
	"context"

	enumspb "go.temporal.io/api/enums/v1"

	"playbook/interpreter/spec"
)

// queuesOf are the task queues the steps of pb run on, by step, when one
// of them is not the run's own (runQueue): a step's `queue`, else the
// playbook's, else the run's. nil when every step runs on the run's queue
// (or the playbook cannot be read).
func queuesOf(pb *spec.Playbook, runQueue string) map[string]string {
	if pb == nil {
		return nil
	}
	out := map[string]string{}
	other := false
	for _, s := range pb.Steps {
		if s.Tool == nil {
			continue
		}
		q := s.Queue
		if q == "" {
			q = pb.Queue
		}
		if q == "" {
			q = runQueue
		}
		out[s.Name] = q
		other = other || q != runQueue
	}
	if !other {
		return nil
	}
	return out
}

// IdleQueue is a task queue a playbook's steps name that no worker polls:
// those steps wait until one does.
type IdleQueue struct {
	Queue string
	Steps []string
}

// IdleQueues are the queues other than runQueue that pb's steps (a step's
// `queue`, else the playbook's) name and no worker has polled for
// activities lately, each with the steps that name it, in the order the
// playbook first names them. A queue the server cannot describe is left
// out: nothing is said rather than something wrong.
func IdleQueues(ctx context.Context, c Client, pb *spec.Playbook, runQueue string) []IdleQueue {
	var out []IdleQueue
	at := map[string]int{}
	for _, s := range pb.Steps {
		if s.Tool == nil || s.Queue == "" || s.Queue == runQueue {
			continue
		}
		i, seen := at[s.Queue]
		if !seen {
			i = len(out)
			at[s.Queue] = i
			out = append(out, IdleQueue{Queue: s.Queue})
		}
		out[i].Steps = append(out[i].Steps, s.Name)
	}
	idle := out[:0]
	for _, q := range out {
		resp, err := c.DescribeTaskQueue(ctx, q.Queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		if err == nil && len(resp.GetPollers()) == 0 {
			idle = append(idle, q)
		}
	}
	return idle
}
