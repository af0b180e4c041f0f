package spec

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// Trigger is one entry of a playbook's `triggers:` key: what starts a run
// of it by itself once `playbook schedule apply` has registered it. Runs
// never read it; the run a trigger starts reads what started it as
// `trigger.*`.
type Trigger struct {
	Line int
	// Webhook: a signed POST to the worker's /hooks/NAME starts a run.
	Webhook *WebhookTrigger
	// After: a run of another playbook ending in one of the statuses
	// starts a run.
	After *AfterTrigger
}

// MaxHookName bounds a webhook's name: it is in its registration's
// workflow ID and, as "webhook NAME", in who sent an event (at most
// contract.MaxNameBytes).
const MaxHookName = 100

// WebhookTrigger is `webhook: {name, secret: {secret: NAME}}`.
type WebhookTrigger struct {
	// Name is the hook's name, the last part of its path /hooks/NAME.
	Name string
	// Secret names the worker's secret the body's HMAC-SHA256 is signed
	// with.
	Secret string
}

// AfterTrigger is `after: {playbook, status}`.
type AfterTrigger struct {
	// Playbook is the upstream playbook's metadata.name.
	Playbook string
	// Status lists the upstream run statuses that start a run.
	Status []string
}

// AfterStatuses are the statuses an after trigger may name: how a run ends.
var AfterStatuses = []string{"completed", "completed_with_warnings", "failed", "cancelled", "terminated", "timed_out"}

// triggers decodes the `triggers:` list.
func (d *decoder) triggers(n *yaml.Node) ([]Trigger, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, d.errf(n, "triggers must be a list of {webhook: ...} or {after: ...}")
	}
	var out []Trigger
	var errs Errors
	hooks := map[string]int{}
	for _, tn := range n.Content {
		t, err := d.trigger(tn, hooks)
		if err != nil {
			// The next entries are checked too: one pass tells every
			// problem of the list.
			errs = errs.Add(d.file, err)
			continue
		}
		out = append(out, t)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// trigger decodes one entry of the `triggers:` list; hooks are the
// webhook names given before it, with their lines.
func (d *decoder) trigger(tn *yaml.Node, hooks map[string]int) (Trigger, error) {
	t := Trigger{Line: tn.Line}
	err := d.fields(tn, "a trigger", d.triggerKeys(&t))
	switch {
	case err != nil && (t.Webhook == nil) == (t.After == nil):
		return t, err
	case (t.Webhook == nil) == (t.After == nil):
		return t, d.errf(tn, "a trigger is either webhook: or after:, one of them")
	case t.Webhook != nil:
		errs := Errors{}.Add(d.file, err)
		if t.Webhook.Name == "" || !namePattern.MatchString(t.Webhook.Name) {
			errs = errs.Add(d.file, d.errf(tn, "triggers: webhook.name %q must match [a-z0-9][a-z0-9_-]*", t.Webhook.Name))
		} else if len(t.Webhook.Name) > MaxHookName {
			errs = errs.Add(d.file, d.errf(tn, "triggers: webhook.name is %d bytes, over the limit of %d", len(t.Webhook.Name), MaxHookName))
		}
		if t.Webhook.Secret == "" && err == nil {
			errs = errs.Add(d.file, d.errf(tn, "triggers: webhook %q needs secret: {secret: NAME}, the worker's secret its deliveries are signed with", t.Webhook.Name))
		}
		if line, ok := hooks[t.Webhook.Name]; ok {
			errs = errs.Add(d.file, d.errf(tn, "triggers: webhook %q given twice (first at line %d)", t.Webhook.Name, line))
		} else {
			hooks[t.Webhook.Name] = tn.Line
		}
		return t, errs.Err()
	default:
		errs := Errors{}.Add(d.file, err)
		if !namePattern.MatchString(t.After.Playbook) {
			errs = errs.Add(d.file, d.errf(tn, "triggers: after.playbook %q must be a playbook's metadata.name", t.After.Playbook))
		}
		if len(t.After.Status) == 0 {
			t.After.Status = []string{"completed"}
		}
		return t, errs.Err()
	}
}

func (d *decoder) triggerKeys(t *Trigger) keys {
	return keys{
		"webhook": {sRef("webhook_trigger", "A signed POST to the worker's /hooks/NAME starts a run, its JSON body the workload."), func(v *yaml.Node) error {
			t.Webhook = &WebhookTrigger{}
			return d.fields(v, "triggers: webhook", d.webhookTriggerKeys(t.Webhook))
		}},
		"after": {sRef("after_trigger", "A run of another playbook ending in one of the statuses starts a run."), func(v *yaml.Node) error {
			t.After = &AfterTrigger{}
			return d.fields(v, "triggers: after", d.afterTriggerKeys(t.After))
		}},
	}
}

func (d *decoder) webhookTriggerKeys(w *WebhookTrigger) keys {
	return keys{
		"name": {sName("The hook's name: POST /hooks/NAME."), func(v *yaml.Node) error { return d.str(v, "webhook.name", &w.Name) }},
		"secret": {jsonSchema{"type": "object", "required": []string{"secret"}, "additionalProperties": false, "description": "The worker's secret the body's HMAC-SHA256 is signed with: {secret: NAME}.",
			"properties": jsonSchema{"secret": jsonSchema{"type": "string", "pattern": secretName.String()}}}, func(v *yaml.Node) error {
			raw, err := d.value(v, "webhook.secret")
			if err != nil {
				return err
			}
			name, ok := SecretRef(raw)
			if !ok {
				return d.errf(v, "webhook.secret must be {secret: NAME}, the name of a file in the worker's secrets directory")
			}
			if err := CheckSecretName(name); err != nil {
				return d.errf(v, "webhook.%v", err)
			}
			w.Secret = name
			return nil
		}},
	}
}

func (d *decoder) afterTriggerKeys(a *AfterTrigger) keys {
	return keys{
		"playbook": {sName("The upstream playbook's metadata.name."), func(v *yaml.Node) error { return d.str(v, "after.playbook", &a.Playbook) }},
		"status": {jsonSchema{"type": "array", "items": jsonSchema{"enum": AfterStatuses}, "minItems": 1, "description": "The upstream run's statuses that start a run (default [completed])."}, func(v *yaml.Node) error {
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return d.errf(v, "after.status must be a list of statuses (%v)", AfterStatuses)
			}
			for _, sn := range v.Content {
				if !slices.Contains(AfterStatuses, sn.Value) {
					return d.errf(sn, "after.status %q is not how a run ends (%v)", sn.Value, AfterStatuses)
				}
				a.Status = append(a.Status, sn.Value)
			}
			return nil
		}},
	}
}
