package interpreter

import (
	"fmt"
	"regexp"

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

// LoopItems evaluates a loop step's list against the run's current state.
func (r *Run) LoopItems(s *Step) ([]any, error) {
	return loopItems(s, r.Env())
}

// RenderLoop renders a loop step's tool once per element, with the
// iterator and `loop` ({index, length}) in scope.
func (r *Run) RenderLoop(s *Step, items []any) ([]map[string]any, error) {
	base := r.Env()
	specs := make([]map[string]any, len(items))
	for i := range items {
		spec, err := r.pb.RenderElement(s, base, items, i)
		if err != nil {
			return nil, err
		}
		specs[i] = spec
	}
	return specs, nil
}

// CombineLoop makes one step outcome of its elements' outcomes, in input
// order: the list of results when every element completed; otherwise the
// first failed element's error (elements cancelled because of it do not
// count), or a cancellation when elements were cancelled and none failed.
// The step's attempts are the most any element needed.
func CombineLoop(outcomes []Outcome) Outcome {
	combined := Outcome{Attempts: 0}
	results := make([]any, len(outcomes))
	var firstFailed, firstCancelled = -1, -1
	failed := 0
	for i, o := range outcomes {
		combined.Attempts = max(combined.Attempts, o.Attempts)
		for _, a := range o.AttemptErrors {
			a.Error.Message = fmt.Sprintf("%s: %s", elementLabel(i, len(outcomes)), a.Error.Message)
			combined.AttemptErrors = append(combined.AttemptErrors, a)
		}
		switch {
		case o.Err == nil:
			results[i] = o.Result
		case o.Err.Type == ErrCancelled:
			if firstCancelled < 0 {
				firstCancelled = i
			}
		default:
			failed++
			if firstFailed < 0 {
				firstFailed = i
			}
		}
	}
	switch {
	case firstFailed >= 0:
		o := outcomes[firstFailed]
		combined.Recovery = o.Recovery
		combined.Err = &StepError{Type: o.Err.Type,
			Message: fmt.Sprintf("%s failed: %s", elementLabel(firstFailed, len(outcomes)), o.Err.Message),
			Details: map[string]any{"index": firstFailed, "failed_elements": failed, "error": o.Err}}
	case firstCancelled >= 0:
		combined.Err = &StepError{Type: ErrCancelled, Message: "the loop was cancelled at " + elementLabel(firstCancelled, len(outcomes))}
	default:
		combined.Result = results
	}
	return combined
}

// elementLabel names a loop element as people count (1-based) and by its
// index (0-based, as in its activity ID `step[i]`, its log directory and
// loop.index): "element 2 of 4 (index 1)".
func elementLabel(i, n int) string {
	return fmt.Sprintf("element %d of %d (index %d)", i+1, n, i)
}

// LoopProgress counts a running loop step's elements; the workflow keeps it
// current for `status`, `run`'s progress and the Web UI (never in history).
type LoopProgress struct {
	Total     int `json:"total"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled,omitempty"`
	Running   int `json:"running"`
}

func (p LoopProgress) String() string {
	s := fmt.Sprintf("%d of %d elements done, %d failed, %d running", p.Done, p.Total, p.Failed, p.Running)
	if p.Cancelled > 0 {
		s += fmt.Sprintf(", %d cancelled", p.Cancelled)
	}
	return s
}

// Add counts finished elements' outcomes.
func (p *LoopProgress) Add(outcomes ...Outcome) {
	for _, o := range outcomes {
		switch {
		case o.Err == nil:
			p.Done++
		case o.Err.Type == ErrCancelled:
			p.Cancelled++
		default:
			p.Failed++
		}
	}
}

// SetLoopProgress records a running loop step's progress; it is dropped
// when the step ends.
func (r *Run) SetLoopProgress(step string, p LoopProgress) {
	if st := r.states[step]; st != nil && st.Status == StatusRunning {
		st.Loop = &p
	}
}

// Loop runs a step's tool once per element of a list.
type Loop struct {
	In *Expr // the list, evaluated when the step starts; or:
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
			return d.expression(v, "loop.in", ScopeStep, false, &l.In)
		}},
		"iterator": {sString("The name each element has in templates (default item)."), func(v *yaml.Node) error {
			if err := d.str(v, "loop.iterator", &l.Iterator); err != nil {
				return err
			}
			if !identifier.MatchString(l.Iterator) || ScopeNames(ScopeEnd)[l.Iterator] != nil || l.Iterator == "loop" {
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
