package spec

import (
	"fmt"
	"strconv"
	"time"

	"playbook/interpreter/spec/expr"

	"go.yaml.in/yaml/v3"
)

// MaxAttempts bounds the attempts a step may make (retry, retries, or an
// exit-code rule's max_retries + 1): far above any real need, far below the
// int32 Temporal's retry policy counts in.
const MaxAttempts = 1_000_000

// MinHeartbeatTimeout is the shortest heartbeat_timeout a step may have:
// an attempt heartbeats 200ms after it starts, then every third of its
// heartbeat timeout (activities' beatEvery), and a heartbeat has to reach
// the server and be recorded before the timeout passes. Below a second a
// loaded worker or server lets attempts that are running be declared lost.
const MinHeartbeatTimeout = time.Second

// CheckSubmit reports the first problem that makes a parsed playbook unfit
// to start a run, beyond what Parse rejects. These checks came after runs
// were started with playbooks they reject, so the workflow's re-parse of a
// frozen playbook (Parse) must keep accepting such files; they run where a
// playbook is submitted: validate, run and retry.
func (p *Playbook) CheckSubmit() error {
	if len(p.submitErrs) > 0 {
		return p.submitErrs[0]
	}
	return nil
}

// refuse records a problem CheckSubmit reports, at a node.
func (d *decoder) refuse(n *yaml.Node, format string, args ...any) {
	d.submitErrs = append(d.submitErrs, d.errf(n, format, args...))
}

// checkAttempts refuses a count of attempts over MaxAttempts.
func (d *decoder) checkAttempts(n *yaml.Node, what string, attempts int) {
	if attempts > MaxAttempts {
		d.refuse(n, "%s: a step makes at most %d attempts; this asks for %d", what, MaxAttempts, attempts)
	}
}

// checkKeys finds a mapping, at any depth, with two keys that read as the
// same string key: normalization would keep only one of them. Keys written
// alike (1 and "1") are an error, as the YAML decoder always made them;
// keys written differently (1 and 1.0, true and True) are refused at
// submission.
func (d *decoder) checkKeys(n *yaml.Node, what string) error {
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && k.Tag != "!!merge" {
				var v any
				if k.Decode(&v) == nil {
					key := fmt.Sprint(v)
					if prev := seen[key]; prev != nil {
						format, args := "%s: keys %s (line %d) and %s are the same key %q once read: write it once", []any{what, asWritten(prev), prev.Line, asWritten(k), key}
						if prev.Value == k.Value {
							return d.errf(k, format, args...)
						}
						d.refuse(k, format, args...)
					}
					seen[key] = k
				}
			}
			if err := d.checkKeys(n.Content[i+1], what); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if err := d.checkKeys(c, what); err != nil {
				return err
			}
		}
	}
	return nil
}

func asWritten(n *yaml.Node) string {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// refuseTemplates refuses, at submission, a template anywhere in a value
// that is used as written (keys included): its {{ }} would never be
// rendered. Accepted before, so the workflow's re-parse still accepts it.
func (d *decoder) refuseTemplates(n *yaml.Node, what, instead string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if expr.IsTemplate(n.Value) {
			d.refuse(n, "%s is used as written: a template there is never rendered; %s", what, instead)
		}
	case yaml.MappingNode, yaml.SequenceNode:
		for _, c := range n.Content {
			d.refuseTemplates(c, what, instead)
		}
	}
}

// refuseIgnored refuses, at submission, the keys of a step that nothing
// would read: they were accepted and ignored before (so the workflow's
// re-parse still accepts them), and a playbook's author believes them.
func (d *decoder) refuseIgnored(s *Step, x stepKeysState) {
	kind := ""
	if s.Tool != nil {
		kind = s.Tool.Kind
	}
	for _, k := range []struct {
		node *yaml.Node
		key  string
	}{{x.timeoutNode, "timeout"}, {x.heartbeatNode, "heartbeat_timeout"}, {x.retryNode, "retry"}} {
		switch {
		case k.node == nil:
		case s.Tool == nil && !(s.Name == EndStep && k.key == "retry"): // end's own error says so
			d.refuse(k.node, "%s applies to a step's tool, and this step has none", k.key)
		case kind == FailKind:
			d.refuse(k.node, "%s does not apply to a fail step: it fails at once, on purpose, with nothing to retry or bound", k.key)
		case kind == "noop" && k.key == "timeout":
			d.refuse(k.node, "timeout does not apply to a noop step: it is decided at once, without an attempt to bound")
		case kind == "noop" && k.key == "heartbeat_timeout" && (s.Retry == nil || s.Retry.RetryWhen == nil):
			d.refuse(k.node, "heartbeat_timeout does not apply to a noop step: it is decided at once, in the workflow")
		case kind == "playbook" && k.key == "heartbeat_timeout":
			d.refuse(k.node, "heartbeat_timeout does not apply to a playbook step: the sub-playbook's own steps heartbeat")
		}
	}
	if kind == FailKind && x.retryNode == nil && (x.retries != nil || x.retryDelay != nil) {
		d.refuse(x.retriesNode, "retries does not apply to a fail step: it fails at once, on purpose, with nothing to retry")
	}
	if kind == FailKind && !s.AllowFailure {
		// A failed step's next rules are not read: their conditions
		// could never choose.
		for _, r := range s.Next {
			if r.When != nil || r.Else {
				d.refuse(&yaml.Node{Line: r.Line}, "a fail step's next conditions are never read: it always fails, and a failed step takes no conditional arc (give it allow_failure: true to go on after it, or route on its error in end or a step with on_failure: run)")
				break
			}
		}
	}
	for _, k := range []struct {
		node *yaml.Node
		key  string
	}{{x.lostNode, "lost_attempts"}, {x.onLostNode, "on_lost"}} {
		if kind == FailKind && k.node != nil {
			d.refuse(k.node, "%s does not apply to a fail step: it runs on no worker, so no attempt of it can be lost", k.key)
		}
	}
	if x.heartbeatNode != nil && s.HeartbeatTimeout < MinHeartbeatTimeout {
		d.refuse(x.heartbeatNode, "heartbeat_timeout must be at least %s, not %s: a running attempt first heartbeats after 200ms, and a shorter silence would lose attempts whose worker is alive (leave it out for the default, 30s)", MinHeartbeatTimeout, s.HeartbeatTimeout)
	}
}
