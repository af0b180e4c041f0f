package spec

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"playbook/interpreter/spec/expr"
)

// Concurrency is a playbook's `concurrency:` key: how many of its runs
// with the same key may run at once, and what a run that finds them all
// taken does.
type Concurrency struct {
	// Line is the line of the mapping, KeyLine of its key.
	Line, KeyLine int
	// Key is the text (a template of the workload) that groups runs; ""
	// groups every run of the playbook.
	Key string
	// Limit is how many runs of one key run at once; at least 1.
	Limit int
	// OnLimit is what a run does when Limit runs of its key run: one of
	// OnLimitPolicies (default OnLimitQueue).
	OnLimit string

	key *expr.Template
}

// What a run does when its key's limit is reached.
const (
	// OnLimitQueue waits, in the order the runs asked, for a slot.
	OnLimitQueue = "queue"
	// OnLimitFail ends the run failed, saying which runs hold the slots.
	OnLimitFail = "fail"
	// OnLimitCancelRunning cancels the oldest run holding a slot and takes it.
	OnLimitCancelRunning = "cancel_running"
)

// OnLimitPolicies are the values `on_limit` accepts.
var OnLimitPolicies = []string{OnLimitQueue, OnLimitFail, OnLimitCancelRunning}

// RenderKey is the run's key: the key rendered with the run's scope (its
// workload), or the key as written when it holds no template.
func (c *Concurrency) RenderKey(env map[string]any) (string, error) {
	return c.RenderKeyWith(env, 0)
}

// RenderKeyWith is RenderKey under the rules s (expr.Guarded).
func (c *Concurrency) RenderKeyWith(env map[string]any, s expr.Safety) (string, error) {
	if c.key == nil {
		return c.Key, nil
	}
	v, err := c.key.RenderWith(env, s)
	if err != nil {
		return "", fmt.Errorf("concurrency.key: %v", err)
	}
	return expr.Text(v), nil
}

func (d *decoder) concurrencyKeys(c *Concurrency) keys {
	return keys{
		"key": {sString("What groups the runs that share the limit: text, or a template of the workload (\"{{ workload.service }}\"); default: every run of the playbook."), func(v *yaml.Node) error {
			c.KeyLine = v.Line
			if err := d.str(v, "concurrency.key", &c.Key); err != nil {
				return err
			}
			if !expr.IsTemplate(c.Key) {
				return nil
			}
			t, err := expr.CompileTemplate(c.Key, expr.ScopeStep)
			if err != nil {
				return d.errf(v, "concurrency.key: %v", err)
			}
			for _, e := range t.Exprs() {
				if len(e.StepRefs) > 0 || e.ReadsAll["steps"] || e.ReadsRun {
					return d.errf(v, "concurrency.key %q may read only the workload: it is rendered before any step runs, once for the whole run", e.Source)
				}
			}
			c.key = t
			return nil
		}},
		"limit": {sInt("How many runs with the same key run at once (at least 1).", 1, 0), func(v *yaml.Node) error {
			if err := d.integer(v, "concurrency.limit", &c.Limit); err != nil {
				return err
			}
			if c.Limit < 1 {
				return d.errf(v, "concurrency.limit must be at least 1, not %d", c.Limit)
			}
			return nil
		}},
		"on_limit": {sEnum("What a run does when the limit is reached: queue (default: wait in order), fail (end failed at once) or cancel_running (cancel the oldest run holding a slot, and take it).", OnLimitPolicies...), func(v *yaml.Node) error {
			if !slices.Contains(OnLimitPolicies, v.Value) {
				return d.errf(v, "concurrency.on_limit must be queue, fail or cancel_running, not %q", v.Value)
			}
			c.OnLimit = v.Value
			return nil
		}},
	}
}

// concurrency decodes the `concurrency:` mapping.
func (d *decoder) concurrency(n *yaml.Node) (*Concurrency, error) {
	c := &Concurrency{Line: n.Line, OnLimit: OnLimitQueue}
	if err := d.fields(n, "concurrency", d.concurrencyKeys(c)); err != nil {
		return c, err
	}
	if c.Limit == 0 {
		return c, d.errf(n, "concurrency.limit is required: how many runs with the same key run at once")
	}
	return c, nil
}

// checkConcurrencyKey is the error of a key that reads a workload key the
// playbook does not declare, nil otherwise.
func (d *decoder) checkConcurrencyKey(pb *Playbook) error {
	c := pb.Concurrency
	if c == nil || c.key == nil || pb.brokenWorkload {
		return nil
	}
	for _, e := range c.key.Exprs() {
		for _, k := range e.WorkloadRefs {
			if _, ok := pb.Workload[k]; !ok {
				return &Error{File: d.file, Line: c.Line, Msg: fmt.Sprintf("concurrency.key reads workload.%s, which the workload does not declare", k)}
			}
		}
	}
	return nil
}
