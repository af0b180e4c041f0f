package spec

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

func (d *decoder) playbook(n *yaml.Node, pb *Playbook) error {
	var steps, onTimeout *yaml.Node
	err := d.fields(n, "the playbook", d.playbookKeys(pb, &steps, &onTimeout))
	// A required key may be missing because it is misspelt: then the
	// unknown key says it, and "required" would only repeat it.
	errs := Errors{}.Add(d.file, err)
	switch {
	case err == nil && pb.Name == "":
		errs = errs.Add(d.file, d.errf(n, "metadata.name is required"))
	case err == nil && steps == nil:
		errs = errs.Add(d.file, d.errf(n, "workflow (the list of steps) is required"))
	case steps != nil && steps.Kind != yaml.SequenceNode:
		errs = errs.Add(d.file, d.errf(steps, "workflow must be a list of steps"))
	}
	// These hold whatever else is wrong with the file: one pass tells
	// them beside the other keys' errors.
	errs = errs.Add(d.file, d.checkConcurrencyKey(pb))
	if onTimeout != nil && pb.Timeout == 0 && !hasKey(n, "timeout") {
		errs = errs.Add(d.file, d.errf(onTimeout, "on_timeout applies to the run's timeout, and the playbook sets none"))
	}
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return errs.Err()
	}
	pb.byName = map[string]*Step{}
	for _, sn := range steps.Content {
		s, err := d.stepNode(sn)
		errs = errs.Add(d.file, err)
		if s == nil {
			continue
		}
		if prev := pb.byName[s.Name]; prev != nil {
			errs = errs.Add(d.file, &Error{File: d.file, Line: s.Line, Step: s.Name, Msg: fmt.Sprintf("step name used twice (first at line %d)", prev.Line)})
			continue
		}
		if err != nil {
			// In the graph, but its errors are told: the checks after
			// decoding say nothing more of it.
			pb.broken = append(pb.broken, s.Name)
		}
		pb.byName[s.Name] = s
		pb.Steps = append(pb.Steps, s)
		if s.lostAttempts == nil {
			s.LostAttempts = pb.LostAttempts
		}
		if s.Queue == "" {
			s.Queue = pb.Queue
		}
		d.local(pb, s, d.stepAt.x, sn)
	}
	d.lines["workflow"] = steps.Line
	return errs.Err()
}

// playbookKeys are the playbook's top-level keys; steps receives the
// workflow's node, decoded after the other keys.
func (d *decoder) playbookKeys(pb *Playbook, steps, onTimeout **yaml.Node) keys {
	return keys{
		"apiVersion": {sEnum("The language's version.", "playbook/v1"), func(v *yaml.Node) error {
			var s string
			if err := d.str(v, "apiVersion", &s); err != nil {
				return err
			}
			if s != "playbook/v1" {
				return d.errf(v, "apiVersion %q is not known (use playbook/v1)", s)
			}
			return nil
		}},
		"kind": {sEnum("What the file is.", "Playbook"), func(v *yaml.Node) error {
			var s string
			if err := d.str(v, "kind", &s); err != nil {
				return err
			}
			if s != "Playbook" {
				return d.errf(v, "kind %q is not known (use Playbook)", s)
			}
			return nil
		}},
		"metadata": {sRef("metadata", "The playbook's name and description."), func(v *yaml.Node) error {
			return d.fields(v, "metadata", d.metadataKeys(pb))
		}},
		"workload": {sMapping("The run's inputs and their defaults, which `--set` and `--input` override."), func(v *yaml.Node) error {
			if v.Kind != yaml.MappingNode {
				pb.brokenWorkload = true
				return d.errf(v, "workload must be a mapping")
			}
			d.refuseTemplates(v, "a workload default", "make the value in a step (a noop's result) and read steps.NAME.result")
			w, err := d.value(v, "workload")
			if err != nil {
				pb.brokenWorkload = true
				return err
			}
			pb.Workload = w.(map[string]any)
			return nil
		}},
		"failure_mode": {sEnum("What a failed step does to the rest of the run (default stop).", string(FailureContinue), string(FailureStop), string(FailureCancel)), func(v *yaml.Node) error {
			switch FailureMode(v.Value) {
			case FailureContinue, FailureStop, FailureCancel:
				pb.FailureMode = FailureMode(v.Value)
				return nil
			}
			return d.errf(v, "failure_mode must be continue, stop or cancel, not %q", v.Value)
		}},
		"use_pending_failed": {sBool("Hold failed steps as pending_failed, waiting for `playbook classify` (retry, fail or skip)."), func(v *yaml.Node) error {
			return d.boolean(v, "use_pending_failed", &pb.UsePendingFailed)
		}},
		"pending_timeout": {sDuration("How long a pending_failed step waits before it fails."), func(v *yaml.Node) error {
			return d.duration(v, "pending_timeout", &pb.PendingTimeout)
		}},
		"notify": {sRef("notify", "Webhooks told of the run's outcome."), func(v *yaml.Node) error { return d.notify(v, &pb.Notify) }},
		"failure_handlers": {jsonSchema{"type": "array", "items": jsonSchema{"$ref": "#/$defs/failure_handler"}, "description": "Named sets of exit-code rules that steps refer to."}, func(v *yaml.Node) (err error) {
			pb.Handlers, err = d.handlers(v)
			pb.brokenHandlers = err != nil
			return err
		}},
		"workflow":      {jsonSchema{"type": "array", "items": jsonSchema{"$ref": "#/$defs/step"}, "minItems": 1, "description": "The steps."}, func(v *yaml.Node) error { *steps = v; return nil }},
		"queue":         {sQueue("The task queue of the workers that run the steps with no queue of their own (default: the run's)."), func(v *yaml.Node) error { return d.queue(v, &pb.Queue) }},
		"lost_attempts": {sInt("How many attempts lost with their worker are retried (default 3).", 0, 0), func(v *yaml.Node) error { return d.lostAttempts(v, &pb.LostAttempts) }},
		"local":         {sBool("true: every step that runs an activity (shell, python, http) is a local step unless it says local: false."), func(v *yaml.Node) error { return d.boolean(v, "local", &pb.Local) }},
		"schedule":      {sRef("schedule", "When `playbook schedule apply` makes the playbook run by itself."), func(v *yaml.Node) (err error) { pb.Schedule, err = d.schedule(v); return err }},
		"triggers":      {jsonSchema{"type": "array", "items": jsonSchema{"$ref": "#/$defs/trigger"}, "minItems": 1, "description": "What starts a run by itself once `playbook schedule apply` registered it: a signed webhook, or another playbook's run ending."}, func(v *yaml.Node) (err error) { pb.Triggers, err = d.triggers(v); return err }},
		"concurrency":   {sRef("concurrency", "How many runs with the same key run at once, and what a run does when they all run."), func(v *yaml.Node) (err error) { pb.Concurrency, err = d.concurrency(v); return err }},
		"timeout": {sDuration("The run's deadline, from its start: when it passes, running steps are cancelled, the rest skipped, cleanup steps run, then end."), func(v *yaml.Node) error {
			if err := d.duration(v, "timeout", &pb.Timeout); err != nil {
				return err
			}
			if pb.Timeout == 0 {
				return d.errf(v, "timeout must be more than 0 (leave it out for a run without a deadline)")
			}
			return nil
		}},
		"on_timeout": {sEnum("What a passed deadline makes of the run: cancel (default: end decides, a success_when may accept it) or fail.", string(TimeoutCancel), string(TimeoutFail)), func(v *yaml.Node) error {
			*onTimeout = v
			switch OnTimeout(v.Value) {
			case TimeoutCancel, TimeoutFail:
				pb.OnTimeout = OnTimeout(v.Value)
				return nil
			}
			return d.errf(v, "on_timeout must be cancel or fail, not %q", v.Value)
		}},
	}
}

// metadataKeys are the keys of `metadata`.
func (d *decoder) metadataKeys(pb *Playbook) keys {
	return keys{
		"name": {sName("The playbook's name: [a-z0-9][a-z0-9_-]*, at most 180 bytes."), func(v *yaml.Node) error {
			d.lines["name"] = v.Line
			if err := d.str(v, "metadata.name", &pb.Name); err != nil {
				return err
			}
			if !namePattern.MatchString(pb.Name) {
				return d.errf(v, "metadata.name %q must match [a-z0-9][a-z0-9_-]*", pb.Name)
			}
			return nil
		}},
		"description": {sString("What the playbook does."), func(v *yaml.Node) error { return d.str(v, "metadata.description", &pb.Description) }},
	}
}

// hasKey tells whether mapping n has key, whatever its value.
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}
