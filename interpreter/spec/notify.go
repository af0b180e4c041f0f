package spec

import (
	"net/url"
	"strings"

	"playbook/interpreter/spec/expr"

	"go.yaml.in/yaml/v3"
)

// Notify holds the webhooks told of the run's outcome after `end` decides,
// and the one told when a step starts waiting for a person.
type Notify struct {
	OnFailure string
	OnSuccess string
	OnWaiting string
}

func (d *decoder) notify(n *yaml.Node, out *Notify) error {
	return d.fields(n, "notify", d.notifyKeys(out))
}

// notifyKeys are the keys of `notify`: an event each.
func (d *decoder) notifyKeys(out *Notify) keys {
	hook := func(event, desc string, dst *string) key {
		return key{sRef("webhook", desc), func(v *yaml.Node) error {
			return d.fields(v, "notify."+event, d.webhookKeys(event, dst))
		}}
	}
	return keys{
		"on_failure": hook("on_failure", "The webhook told when the run fails.", &out.OnFailure),
		"on_success": hook("on_success", "The webhook told when the run succeeds.", &out.OnSuccess),
		"on_waiting": hook("on_waiting", "The webhook told when a step starts waiting: for a person (an approval) or for an event (wait_event).", &out.OnWaiting),
	}
}

// webhookKeys are the keys of one event of `notify`.
func (d *decoder) webhookKeys(event string, dst *string) keys {
	return keys{
		"webhook": {sString("An http:// or https:// URL (a template may build it) that receives the aggregate as JSON."), func(v *yaml.Node) error {
			if err := d.str(v, "notify."+event+".webhook", dst); err != nil {
				return err
			}
			d.lines["notify."+event] = v.Line
			if expr.IsTemplate(*dst) {
				if _, err := expr.CompileTemplate(*dst, expr.ScopeEnd); err != nil {
					return d.errf(v, "notify.%s.webhook: %v", event, err)
				}
				return nil
			}
			if !strings.HasPrefix(*dst, "http://") && !strings.HasPrefix(*dst, "https://") {
				return d.errf(v, "notify.%s.webhook must be an http:// or https:// URL, not %q", event, *dst)
			}
			if u, err := url.Parse(*dst); err != nil || u.Host == "" {
				d.refuse(v, "notify.%s.webhook %q names no host", event, *dst)
			}
			return nil
		}},
	}
}
