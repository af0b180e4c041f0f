package spec

import (
	"time"

	"playbook/interpreter/spec/expr"

	"go.yaml.in/yaml/v3"
)

// Step is one node of the graph.
type Step struct {
	Name             string
	Line             int
	Desc             string
	Tool             *Tool // nil: a routing or join point that completes at once
	Timeout          time.Duration
	HeartbeatTimeout time.Duration
	Retry            *Retry // nil: the step runs once
	Next             []NextRule
	DependsOn        []string
	// dependsOnLines are the lines of DependsOn's names, for errors.
	dependsOnLines []int
	OnFailureRun   bool // `on_failure: run`: runs even when an upstream failed
	// OnCancelRun (`on_cancel: run`): a cleanup step, which runs after a
	// cancel, a drain or the run's deadline too, and is never cancelled.
	OnCancelRun    bool
	SuccessWhen    *expr.Expr // `end` only
	FailureHandler *FailureHandler
	Loop           *Loop
	// AllowFailure (`allow_failure: true`): the step's failure is a
	// warning: it does not fail the run nor stop what follows it.
	AllowFailure bool
	// Reads are the files the step declares it reads (`reads`), as written:
	// paths relative to the playbook's directory, or absolute. A run
	// records their digests; a retry runs the step again when one changed.
	Reads []string
	// failureHandlerRef is the name given in the file, resolved at validation.
	failureHandlerRef     string
	failureHandlerRefLine int
	// Injected is true for an `end` the file did not have.
	Injected bool
	// LostAttempts is how many attempts lost with their worker are retried,
	// counted apart from the retry block's attempts; 0 with `on_lost: fail`.
	LostAttempts int
	// lostAttempts is the step's own `lost_attempts`, nil: the playbook's.
	lostAttempts *int
	// Files are the files the step hands on and takes; nil: none.
	Files *Files
	// Queue is the task queue of the workers that run the step's activity
	// (`queue`, or the playbook's); "": the run's own.
	Queue string
	// Local (`local: true`, or the playbook's default for a step that runs
	// an activity): the step's attempts run as local activities, in the
	// workflow task of its run (local.go says what that gives up).
	Local bool
	// ownLocal is the step's own `local`, when it has the key.
	ownLocal bool
}

// Step returns the step with this name, or nil.
func (p *Playbook) Step(name string) *Step { return p.byName[name] }

func (d *decoder) stepNode(n *yaml.Node) (*Step, error) {
	d.step = ""
	s := &Step{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, "each item of workflow must be a mapping with a `step` key")
	}
	// The name comes first so that every later error can name the step.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "step" {
			if err := d.str(n.Content[i+1], "step", &s.Name); err != nil {
				return nil, err
			}
		}
	}
	if s.Name == "" {
		return nil, d.errf(n, "a step has no `step` name")
	}
	d.step = s.Name
	if !namePattern.MatchString(s.Name) {
		return nil, d.errf(n, "step name must match [a-z0-9][a-z0-9_-]*")
	}
	if d.stepTable == nil {
		d.stepTable = d.stepKeys(&d.stepAt)
	}
	d.stepAt = stepTarget{s: s}
	err := d.fields(n, "a step", d.stepTable)
	x := d.stepAt.x
	retries, retryDelay, retryNode, onFailureNode := x.retries, x.retryDelay, x.retryNode, x.onFailureNode
	onCancelNode, alwaysNode := x.onCancelNode, x.alwaysNode
	lostNode, onLostNode := x.lostNode, x.onLostNode
	if err != nil {
		// The step as far as it decoded: the graph keeps it, so that the
		// later checks of the file see every step (Playbook.broken).
		return s, err
	}
	if retries != nil || retryDelay != nil {
		if retryNode != nil {
			return s, d.errf(retryNode, "give either retry or retries/retry_delay, not both")
		}
		r := Retry{MaxAttempts: 1, Multiplier: 1}
		if retries != nil {
			r.MaxAttempts = *retries + 1
		}
		if retryDelay != nil {
			r.InitialDelay, r.MaxDelay = *retryDelay, *retryDelay
		} else {
			r.InitialDelay, r.MaxDelay = time.Second, time.Second
		}
		s.Retry = &r
	}
	if err := d.onLost(s, lostNode, onLostNode); err != nil {
		return s, err
	}
	if alwaysNode != nil && (onFailureNode != nil || onCancelNode != nil) {
		return s, d.errf(alwaysNode, "give either always or on_failure/on_cancel, not both (always: true is on_failure: run and on_cancel: run)")
	}
	d.refuseIgnored(s, x)
	if err := d.refusePauseKeys(s, n, x); err != nil {
		return s, err
	}
	if s.Loop != nil && s.Tool == nil {
		return s, d.errf(n, "loop needs a tool to run for each element")
	}
	if err := d.checkFiles(s, n); err != nil {
		return s, err
	}
	if s.Loop != nil && s.Tool.Kind == FailKind {
		d.refuse(n, "a fail step cannot run in a loop: it fails at once; route to it with a when in the next of the step before")
	}
	if s.Loop != nil && s.Tool.Kind == "playbook" {
		d.refuse(n, "a playbook tool cannot run in a loop: write the loop inside the sub-playbook, or list its runs as steps")
	}
	if s.Tool != nil && s.Tool.Kind == "playbook" && s.Retry != nil {
		return s, d.errf(n, "retry does not apply to a playbook step: the sub-playbook's own steps retry")
	}
	// An end that is not one is left out of the graph (validate puts in
	// the usual end), so that its arcs do not reach the other steps.
	if s.Name == EndStep {
		switch {
		case len(s.Next) > 0:
			return nil, d.errf(n, "end is the terminal step: it has no next")
		case len(s.DependsOn) > 0:
			return nil, d.errf(n, "end runs after every other step: it has no depends_on")
		case s.Retry != nil && s.Tool == nil:
			return nil, d.errf(n, "retry needs a tool")
		case onFailureNode != nil:
			return nil, d.errf(onFailureNode, "end always runs: on_failure does not apply to it")
		case x.allowFailureNode != nil:
			return nil, d.errf(x.allowFailureNode, "end decides the run: allow_failure does not apply to it (success_when decides which failures the run tolerates)")
		case onCancelNode != nil:
			return nil, d.errf(onCancelNode, "end always runs: on_cancel does not apply to it")
		case alwaysNode != nil:
			return nil, d.errf(alwaysNode, "end always runs: always does not apply to it")
		}
	}
	return s, nil
}

// stepKeysState is what a step's keys leave for the checks made once all
// of them are read.
type stepKeysState struct {
	retries                  *int
	retryDelay               *time.Duration
	retryNode, onFailureNode *yaml.Node
	onCancelNode, alwaysNode *yaml.Node
	lostNode, onLostNode     *yaml.Node
	timeoutNode              *yaml.Node
	allowFailureNode         *yaml.Node
	retriesNode              *yaml.Node // retries or retry_delay
	heartbeatNode            *yaml.Node
	localNode                *yaml.Node
}

// stepTarget is where the step table's decoders write: the step being
// read, and what its keys leave. The table is made once per file and
// pointed at each step in turn (stepNode): making it again for every step,
// schema fragments and all, cost more than reading the step.
type stepTarget struct {
	s *Step
	x stepKeysState
}

// stepKeys are the keys of a step.
func (d *decoder) stepKeys(t *stepTarget) keys {
	return keys{
		"step": {sName("The step's name: [a-z0-9][a-z0-9_-]*, at most 180 bytes; `end` is the terminal step."), func(*yaml.Node) error { return nil }},
		"desc": {sString("What the step does."), func(v *yaml.Node) error {
			d.refuseTemplates(v, "desc", "it says what the step does, as shown in the Web UI")
			return d.str(v, "desc", &t.s.Desc)
		}},
		"tool": {sRef("tool", "What the step runs; none: a routing or join point."), func(v *yaml.Node) (err error) { t.s.Tool, err = d.tool(v); return err }},
		"timeout": {sDuration("How long one attempt may run."), func(v *yaml.Node) error {
			t.x.timeoutNode = v
			return d.duration(v, "timeout", &t.s.Timeout)
		}},
		"heartbeat_timeout": {sDuration("How long an attempt may go without a heartbeat."), func(v *yaml.Node) error {
			t.x.heartbeatNode = v
			return d.duration(v, "heartbeat_timeout", &t.s.HeartbeatTimeout)
		}},
		"retry": {jsonSchema{"description": "true (3 attempts), a number of attempts, or a retry policy.", "anyOf": []jsonSchema{
			{"type": "boolean"}, {"type": "integer", "minimum": 1, "maximum": MaxAttempts}, {"$ref": "#/$defs/retry"},
		}}, func(v *yaml.Node) (err error) { t.x.retryNode = v; t.s.Retry, err = d.retry(v); return err }},
		"retries": {sInt("How many times a failed attempt is retried (instead of retry).", 0, MaxAttempts-1), func(v *yaml.Node) error {
			t.x.retries, t.x.retriesNode = new(int), v
			if err := d.integer(v, "retries", t.x.retries); err != nil {
				return err
			}
			if *t.x.retries < 0 {
				return d.errf(v, "retries must not be negative")
			}
			d.checkAttempts(v, "retries", *t.x.retries+1)
			return nil
		}},
		"retry_delay": {sDuration("The delay between retries (with retries)."), func(v *yaml.Node) error {
			t.x.retryDelay, t.x.retriesNode = new(time.Duration), v
			return d.duration(v, "retry_delay", t.x.retryDelay)
		}},
		"next": {jsonSchema{"description": "The steps that follow: a name, a list of names, or when/then items closed by an optional else.", "anyOf": []jsonSchema{
			sStepRef(), {"$ref": "#/$defs/next_item"},
			{"type": "array", "items": jsonSchema{"anyOf": []jsonSchema{sStepRef(), {"$ref": "#/$defs/next_item"}}}},
		}}, func(v *yaml.Node) (err error) { t.s.Next, err = d.next(v); return err }},
		"depends_on": {sStepRefs("Steps that must end before this one starts."), func(v *yaml.Node) (err error) {
			t.s.DependsOn, err = d.names(v, "depends_on", &t.s.dependsOnLines)
			return err
		}},
		"on_failure": {sEnum("run: the step runs even when a step it waits for failed (default skip).", "run", "skip"), func(v *yaml.Node) error {
			t.x.onFailureNode = v
			if v.Value != "run" && v.Value != "skip" {
				return d.errf(v, "on_failure must be run or skip, not %q", v.Value)
			}
			t.s.OnFailureRun = v.Value == "run"
			return nil
		}},
		"allow_failure": {sBool("true: the step's failure is a warning: its dependants run as after a completed step, and a run whose only failures are such steps ends completed_with_warnings."), func(v *yaml.Node) error {
			t.x.allowFailureNode = v
			return d.boolean(v, "allow_failure", &t.s.AllowFailure)
		}},
		"reads": {jsonSchema{"description": "Files the step reads (paths relative to the playbook's directory): a retry runs the step again when one of them changed.", "type": "array", "items": jsonSchema{"type": "string", "minLength": 1}}, func(v *yaml.Node) error {
			return d.reads(v, &t.s.Reads)
		}},
		"on_cancel": {sEnum("run: a cleanup step; it runs after a cancel, a drain or the run's deadline too, once the other steps have settled, and is never cancelled.", "run"), func(v *yaml.Node) error {
			t.x.onCancelNode = v
			if v.Value != "run" {
				return d.errf(v, "on_cancel must be run (leave it out for a step a cancel skips), not %q", v.Value)
			}
			t.s.OnCancelRun = true
			return nil
		}},
		"always": {sBool("true: the step runs whatever happens upstream or to the run (on_failure: run and on_cancel: run)."), func(v *yaml.Node) error {
			t.x.alwaysNode = v
			var always bool
			if err := d.boolean(v, "always", &always); err != nil {
				return err
			}
			t.s.OnFailureRun, t.s.OnCancelRun = always, always
			return nil
		}},
		"success_when": {sString("end only: the expression that decides whether the run succeeded."), func(v *yaml.Node) error {
			if t.s.Name != EndStep {
				return d.errf(v, "success_when belongs on the end step only")
			}
			return d.expression(v, "success_when", expr.ScopeEnd, true, &t.s.SuccessWhen)
		}},
		"loop": {sRef("loop", "Runs the tool once per element of a list."), func(v *yaml.Node) (err error) { t.s.Loop, err = d.loop(v); return err }},
		"failure_handler": {sString("The name of a failure handler of failure_handlers."), func(v *yaml.Node) error {
			t.s.failureHandlerRefLine = v.Line
			return d.str(v, "failure_handler", &t.s.failureHandlerRef)
		}},
		"lost_attempts": {sInt("How many attempts lost with their worker are retried (default: the playbook's).", 0, 0), func(v *yaml.Node) error {
			t.x.lostNode, t.s.lostAttempts = v, new(int)
			return d.lostAttempts(v, t.s.lostAttempts)
		}},
		"outputs": {sRef("outputs", "The files the step produces, uploaded to the run's store after a successful attempt."), func(v *yaml.Node) error {
			return d.fields(v, "outputs", d.outputKeys(t.s.stepFiles()))
		}},
		"inputs": {sRef("inputs", "The stored files the step needs, downloaded into its working directory before it starts."), func(v *yaml.Node) error {
			return d.fields(v, "inputs", d.inputKeys(t.s.stepFiles()))
		}},
		"queue": {sQueue("The task queue of the workers that run the step (default: the playbook's queue, else the run's)."), func(v *yaml.Node) error {
			return d.queue(v, &t.s.Queue)
		}},
		"local": {sBool("true: the step runs as a local activity, in its run's workflow task: no round trip through the server, a timeout of at most 5s (the default), no heartbeats (default: the playbook's local)."), func(v *yaml.Node) error {
			t.x.localNode = v
			return d.boolean(v, "local", &t.s.ownLocal)
		}},
		"on_lost": {sEnum("fail: an attempt lost with its worker fails the step (default retry).", "retry", "fail"), func(v *yaml.Node) error {
			t.x.onLostNode = v
			if v.Value != "retry" && v.Value != "fail" {
				return d.errf(v, "on_lost must be retry or fail, not %q", v.Value)
			}
			return nil
		}},
	}
}

// ToolScope is the scope of a step's tool templates, with the names a loop
// adds (its iterator and `loop`).
func ToolScope(s *Step) (expr.Scope, []string) {
	scope := expr.ScopeStep
	if s.Name == EndStep {
		scope = expr.ScopeEnd
	}
	if s.Loop != nil {
		return scope, []string{s.Loop.Iterator, "loop"}
	}
	return scope, nil
}
