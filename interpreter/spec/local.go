package spec

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// LocalTimeoutBound is the longest `timeout` a local step may have, and
// the timeout of a local step that gives none. A local step runs as a
// Temporal local activity: inside the workflow task of its run, on the
// worker that runs the run's workflow, without heartbeats. The SDK keeps
// that task open while the attempt runs and, at 80% of the task's timeout
// (10s by default), completes it and opens another to stay alive; nothing
// the run receives meanwhile (a cancel, another step's end) is acted on
// until then, and a worker that dies mid-attempt is noticed only when the
// task times out. So an attempt, its timeout and the kill after it, must
// end well within one task: 5s leaves the other 3s for the process group's
// kill and the report. A longer step is an ordinary step.
const LocalTimeoutBound = 5 * time.Second

// LocalRetryWithin is the longest retry delay a local step waits in its
// worker, within the workflow task (Temporal's local retry); a longer one
// is a durable timer in the run's history, as the SDK makes one past the
// workflow task's timeout: the run is not held up while it waits.
const LocalRetryWithin = 2 * time.Second

// runsActivity says whether a step's tool runs as an activity, which
// `local` makes a local one: shell, python, http. noop, fail, wait and
// approval are decided in the workflow; a playbook step is a child
// workflow.
func runsActivity(s *Step) bool {
	if s.Tool == nil {
		return false
	}
	switch k := s.Tool.Kind; {
	case k == "noop", k == "playbook", k == FailKind, IsPause(k):
		return false
	}
	return true
}

// local applies `local` to a step once the playbook's defaults are known:
// the step's own key, else the playbook's default for the steps that run
// an activity. What a local step gives up is refused at submission (the
// workflow's re-parse stays free to change the bound): heartbeats, lost
// attempts counted, another queue, a timeout over LocalTimeoutBound. A
// local step without a timeout gets the bound.
func (d *decoder) local(pb *Playbook, s *Step, x stepKeysState, n *yaml.Node) {
	d.step = s.Name
	if x.localNode != nil {
		if !s.ownLocal {
			return
		}
		if why := notLocal(s); why != "" {
			d.refuse(x.localNode, "%s", why)
			return
		}
	} else if !pb.Local || !runsActivity(s) {
		return
	}
	s.Local = true
	at := x.localNode
	// How a step stops being local: its own key left out, or, local by
	// the playbook's default, its own local: false.
	notLocal := "leave local out"
	if at == nil {
		at = n
		notLocal = "give it local: false"
	}
	switch {
	case x.heartbeatNode != nil:
		d.refuse(x.heartbeatNode, "heartbeat_timeout does not apply to a local step: a local activity cannot heartbeat (%s for a step that must)", notLocal)
	case x.lostNode != nil || x.onLostNode != nil:
		key, node := "lost_attempts", x.lostNode
		if node == nil {
			key, node = "on_lost", x.onLostNode
		}
		d.refuse(node, "%s does not apply to a local step: an attempt lost with its worker is run again whenever its workflow task is retried, and no worker counts it", key)
	case s.Queue != "":
		d.refuse(at, "a local step runs on the worker that runs its run's workflow: queue %q does not apply (%s, or leave queue out)", s.Queue, notLocal)
	case s.Timeout > LocalTimeoutBound:
		d.refuse(x.timeoutNode, "timeout %s is over the %s a local step may run: it cannot heartbeat, so an attempt must end within one workflow task (%s for a longer step)", s.Timeout, LocalTimeoutBound, notLocal)
	}
	if s.Timeout == 0 {
		s.Timeout = LocalTimeoutBound
	}
}

// notLocal says why `local: true` does not apply to a step; "" when it does.
func notLocal(s *Step) string {
	switch {
	case s.Tool == nil:
		return "local applies to a step's tool, and this step has none"
	case s.Tool.Kind == "noop":
		return "local does not apply to a noop step: it is decided in the workflow, without an activity"
	case s.Tool.Kind == FailKind:
		return "local does not apply to a fail step: it fails at once, in the workflow"
	case s.Tool.Kind == "wait":
		return "local does not apply to a wait step: it waits in the workflow, without an activity"
	case s.Tool.Kind == "approval":
		return "local does not apply to an approval step: it waits in the workflow, without an activity"
	case s.Tool.Kind == "playbook":
		return "local does not apply to a playbook step: it runs as a child workflow (give the sub-playbook's own steps local: true)"
	}
	return ""
}
