package interpreter

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Notify holds the webhooks told of the run's outcome after `end` decides.
type Notify struct {
	OnFailure string
	OnSuccess string
}

func (d *decoder) notify(n *yaml.Node, out *Notify) error {
	hook := func(event string, dst *string) func(v *yaml.Node) error {
		return func(v *yaml.Node) error {
			return d.fields(v, "notify."+event, map[string]func(v *yaml.Node) error{
				"webhook": func(v *yaml.Node) error {
					if err := d.str(v, "notify."+event+".webhook", dst); err != nil {
						return err
					}
					d.lines["notify."+event] = v.Line
					if IsTemplate(*dst) {
						if _, err := CompileTemplate(*dst, ScopeEnd); err != nil {
							return d.errf(v, "notify.%s.webhook: %v", event, err)
						}
						return nil
					}
					if !strings.HasPrefix(*dst, "http://") && !strings.HasPrefix(*dst, "https://") {
						return d.errf(v, "notify.%s.webhook must be an http:// or https:// URL, not %q", event, *dst)
					}
					return nil
				},
			})
		}
	}
	return d.fields(n, "notify", map[string]func(v *yaml.Node) error{
		"on_failure": hook("on_failure", &out.OnFailure),
		"on_success": hook("on_success", &out.OnSuccess),
	})
}
