package spec

import "go.yaml.in/yaml/v3"

// DefaultLostAttempts is how many lost attempts of a step are retried when
// neither the step nor the playbook says.
const DefaultLostAttempts = 3

// lostAttempts reads a `lost_attempts` count: a whole number, 0 or more.
func (d *decoder) lostAttempts(v *yaml.Node, out *int) error {
	if err := d.integer(v, "lost_attempts", out); err != nil {
		return err
	}
	if *out < 0 {
		return d.errf(v, "lost_attempts must not be negative")
	}
	return nil
}

// onLost applies a step's `on_lost` and checks it and `lost_attempts` fit
// the step: `on_lost: fail` retries no lost attempt, and neither key means
// anything to a step that runs no activity of its own.
func (d *decoder) onLost(s *Step, lostNode, onLostNode *yaml.Node) error {
	if onLostNode != nil && onLostNode.Value == "fail" {
		if lostNode != nil && *s.lostAttempts > 0 {
			return d.errf(lostNode, "lost_attempts: %d contradicts on_lost: fail (a lost attempt fails the step)", *s.lostAttempts)
		}
		s.lostAttempts = new(int)
	}
	if s.lostAttempts != nil {
		s.LostAttempts = *s.lostAttempts
	}
	for i, n := range []*yaml.Node{lostNode, onLostNode} {
		key := []string{"lost_attempts", "on_lost"}[i]
		switch {
		case n == nil:
		case s.Tool == nil:
			return d.errf(n, "%s needs a tool", key)
		case s.Tool.Kind == "playbook":
			return d.errf(n, "%s does not apply to a playbook step: the sub-playbook's own steps retry their lost attempts", key)
		}
	}
	return nil
}
