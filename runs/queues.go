package runs

import "playbook/interpreter/spec"

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
