package spec

import (
	"fmt"
	"regexp"

	"playbook/interpreter/spec/expr"

	"go.yaml.in/yaml/v3"
)

// MaxLoopItems bounds the elements of one loop: each is an activity, and
// the step's result holds one entry per element.
const MaxLoopItems = 100_000

// CheckLoopSize is the error for a loop over more than MaxLoopItems elements.
func CheckLoopSize(n int) error {
	if n > MaxLoopItems {
		return fmt.Errorf("loop gives %d elements, over the limit of %d elements per loop", n, MaxLoopItems)
	}
	return nil
}

// Loop runs a step's tool once per element of a list.
type Loop struct {
	In *expr.Expr // the list, evaluated when the step starts; or:
	// Items is a list written in the file.
	Items    []any
	Iterator string
	// Parallel runs up to MaxInFlight elements at once; otherwise one by one.
	Parallel    bool
	MaxInFlight int
}

// DefaultMaxInFlight bounds a parallel loop that sets no max_in_flight.
const DefaultMaxInFlight = 10

func (d *decoder) loop(n *yaml.Node) (*Loop, error) {
	l := &Loop{Iterator: "item", MaxInFlight: DefaultMaxInFlight}
	var mode string
	err := d.fields(n, "loop", d.loopKeys(l, &mode))
	if err != nil {
		return nil, err
	}
	if l.In == nil && l.Items == nil {
		return nil, d.errf(n, "loop needs in: the list to iterate (an expression, or a YAML list)")
	}
	if !l.Parallel {
		l.MaxInFlight = 1
	}
	return l, nil
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// loopKeys are the keys of `loop`.
func (d *decoder) loopKeys(l *Loop, mode *string) keys {
	return keys{
		"in": {jsonSchema{"description": "The list: an expression, or a YAML list.", "anyOf": []jsonSchema{{"type": "array"}, {"type": []string{"string", "number", "boolean"}}}}, func(v *yaml.Node) error {
			if v.Kind == yaml.SequenceNode {
				d.refuseTemplates(v, "a loop.in list", `write the list as an expression, e.g. in: "[workload.a, workload.b]"`)
				items, err := d.value(v, "loop.in")
				if err != nil {
					return err
				}
				l.Items = items.([]any)
				return nil
			}
			return d.expression(v, "loop.in", expr.ScopeStep, false, &l.In)
		}},
		"iterator": {sString("The name each element has in templates (default item)."), func(v *yaml.Node) error {
			if err := d.str(v, "loop.iterator", &l.Iterator); err != nil {
				return err
			}
			// `run` and `trigger` came into the scope later: a run in flight
			// may have an iterator of that name, which submissions now refuse.
			if l.Iterator == "run" || l.Iterator == "trigger" {
				d.refuse(v, "loop.iterator %q must be a new name (letters, digits, _)", l.Iterator)
			} else if !identifier.MatchString(l.Iterator) || expr.ScopeNames(expr.ScopeEnd)[l.Iterator] != nil || l.Iterator == "loop" {
				return d.errf(v, "loop.iterator %q must be a new name (letters, digits, _)", l.Iterator)
			}
			return nil
		}},
		"mode": {sEnum("One element at a time, or several at once (default sequential).", "sequential", "parallel"), func(v *yaml.Node) error {
			*mode = v.Value
			if *mode != "sequential" && *mode != "parallel" {
				return d.errf(v, "loop.mode must be sequential or parallel, not %q", *mode)
			}
			l.Parallel = *mode == "parallel"
			return nil
		}},
		"max_in_flight": {sInt("How many elements run at once in parallel mode (default 10).", 1, 0), func(v *yaml.Node) error {
			if err := d.integer(v, "loop.max_in_flight", &l.MaxInFlight); err != nil {
				return err
			}
			if l.MaxInFlight < 1 {
				return d.errf(v, "loop.max_in_flight must be at least 1")
			}
			return nil
		}},
	}
}
