package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"playbook/interpreter/spec/expr"

	"go.yaml.in/yaml/v3"
)

// Retry is a step's retry policy, defaults applied. It travels to the
// activity as is (StepInput.Retry); its expressions as their source.
type Retry struct {
	MaxAttempts  int           `json:"max_attempts,omitempty"`
	InitialDelay time.Duration `json:"initial_delay,omitempty"`
	Multiplier   float64       `json:"backoff_multiplier,omitempty"`
	MaxDelay     time.Duration `json:"max_delay,omitempty"`
	Jitter       bool          `json:"jitter,omitempty"`
	RetryWhen    *expr.Expr    `json:"retry_when,omitempty"`
	StopWhen     *expr.Expr    `json:"stop_when,omitempty"`
	// MaxDuration, when set, stops retrying once the attempts and the
	// delays between them, from the first attempt's scheduling, have run
	// past it.
	MaxDuration time.Duration `json:"max_duration,omitempty"`
}

// DefaultRetry is what `retry: true` means.
func DefaultRetry() Retry {
	return Retry{MaxAttempts: 3, InitialDelay: time.Second, Multiplier: 2, MaxDelay: 60 * time.Second, Jitter: true}
}

// UnmarshalJSON reads a retry block sent to an activity and compiles its
// expressions, as validation did, where the attempt runs. One that does not
// compile here (a worker older than the submitter) does not fail the
// decoding, which would fail a loop batch's workflow task or retry the
// activity blindly: evaluating it is the step's expression_error.
func (r *Retry) UnmarshalJSON(b []byte) error {
	type fields Retry // the same fields, without this method
	var raw struct {
		fields
		RetryWhen string `json:"retry_when,omitempty"`
		StopWhen  string `json:"stop_when,omitempty"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*r = Retry(raw.fields)
	for _, x := range []struct {
		name, src string
		out       **expr.Expr
	}{{"retry_when", raw.RetryWhen, &r.RetryWhen}, {"stop_when", raw.StopWhen, &r.StopWhen}} {
		if x.src == "" {
			continue
		}
		e, err := expr.CompileExpr(x.src, expr.ScopeRetry, true)
		if err != nil {
			e = expr.BrokenExpr(x.src, expr.ScopeRetry, fmt.Errorf("%q does not compile on this worker: %s", x.src, expr.FirstLine(err.Error())))
		}
		*x.out = e
	}
	return nil
}

// RetryBlock is the retry block an attempt of the step follows: one
// attempt when the step has none.
func (s *Step) RetryBlock() Retry {
	if s.Retry == nil {
		return Retry{MaxAttempts: 1}
	}
	return *s.Retry
}

func (d *decoder) retry(n *yaml.Node) (*Retry, error) {
	r := DefaultRetry()
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!bool":
			var on bool
			_ = n.Decode(&on)
			if !on {
				return nil, nil
			}
			return &r, nil
		case "!!int":
			if err := d.integer(n, "retry", &r.MaxAttempts); err != nil {
				return nil, err
			}
			if r.MaxAttempts < 1 {
				return nil, d.errf(n, "retry: attempts must be at least 1")
			}
			d.checkAttempts(n, "retry", r.MaxAttempts)
			return &r, nil
		}
		return nil, d.errf(n, "retry must be true, a whole number of attempts, or a mapping, not %s", asWritten(n))
	}
	err := d.fields(n, "retry", d.retryKeys(&r))
	if err != nil {
		return nil, err
	}
	if r.MaxDelay < r.InitialDelay {
		return nil, d.errf(n, "retry.max_delay (%s) is shorter than retry.initial_delay (%s)", r.MaxDelay, r.InitialDelay)
	}
	return &r, nil
}

// retryKeys are the keys of a `retry` mapping.
func (d *decoder) retryKeys(r *Retry) keys {
	exprKey := func(name, desc string, out **expr.Expr) key {
		return key{sString(desc), func(v *yaml.Node) error {
			return d.expression(v, "retry."+name, expr.ScopeRetry, true, out)
		}}
	}
	return keys{
		"max_attempts": {sInt("How many attempts in all, the first included (default 3).", 1, MaxAttempts), func(v *yaml.Node) error {
			if err := d.integer(v, "retry.max_attempts", &r.MaxAttempts); err != nil {
				return err
			}
			if r.MaxAttempts < 1 {
				return d.errf(v, "retry.max_attempts must be at least 1")
			}
			d.checkAttempts(v, "retry.max_attempts", r.MaxAttempts)
			return nil
		}},
		"initial_delay": {sDuration("The delay before the first retry (default 1s)."), func(v *yaml.Node) error { return d.duration(v, "retry.initial_delay", &r.InitialDelay) }},
		"max_delay":     {sDuration("The longest delay between attempts (default 60s)."), func(v *yaml.Node) error { return d.duration(v, "retry.max_delay", &r.MaxDelay) }},
		"backoff_multiplier": {jsonSchema{"type": "number", "minimum": 1, "description": "What each delay is multiplied by (default 2)."}, func(v *yaml.Node) error {
			if v.Decode(&r.Multiplier) != nil || r.Multiplier < 1 {
				return d.errf(v, "retry.backoff_multiplier must be a number >= 1, not %q", v.Value)
			}
			if math.IsNaN(r.Multiplier) || math.IsInf(r.Multiplier, 0) {
				// The retry policy travels as JSON, which has no such number.
				d.refuse(v, "retry.backoff_multiplier must be a finite number, not %s", v.Value)
			}
			return nil
		}},
		"jitter": {sBool("Spread the delays at random (default true)."), func(v *yaml.Node) error { return d.boolean(v, "retry.jitter", &r.Jitter) }},
		"max_duration": {sDuration("A retry budget: no more attempts once the attempts and the delays between them have run past it (default none)."), func(v *yaml.Node) error {
			if err := d.duration(v, "retry.max_duration", &r.MaxDuration); err != nil {
				return err
			}
			if r.MaxDuration <= 0 {
				return d.errf(v, "retry.max_duration must be longer than 0s")
			}
			return nil
		}},
		"retry_when": exprKey("retry_when", "Retry only when this expression holds.", &r.RetryWhen),
		"stop_when":  exprKey("stop_when", "Stop retrying when this expression holds.", &r.StopWhen),
	}
}
