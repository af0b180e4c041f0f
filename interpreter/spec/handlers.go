package spec

import "go.yaml.in/yaml/v3"

// FailureHandler is a named set of exit-code rules. It travels to the
// activity as is (StepInput.Handler).
type FailureHandler struct {
	Name  string         `json:"name"`
	Line  int            `json:"-"`
	Rules []ExitCodeRule `json:"rules"`
}

// ExitCodeRule retries a process step whose exit code it matches.
type ExitCodeRule struct {
	ExitCodes      []int  `json:"exit_codes,omitempty"`
	MatchAll       bool   `json:"match_all_exit_codes,omitempty"`
	MaxRetries     int    `json:"max_retries"`
	RecoveryScript string `json:"recovery_script,omitempty"`
	// RecoveryScriptLine is recovery_script's line in the file, for the
	// submission's errors; never sent.
	RecoveryScriptLine int `json:"-"`
}

// DefaultMaxRetries is an exit-code rule's max_retries when it gives none.
const DefaultMaxRetries = 3

func (d *decoder) handlers(n *yaml.Node) (map[string]*FailureHandler, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, d.errf(n, "failure_handlers must be a list of {name, rules}")
	}
	out := map[string]*FailureHandler{}
	for _, hn := range n.Content {
		h := &FailureHandler{Line: hn.Line}
		var rulesNode *yaml.Node
		err := d.fields(hn, "a failure handler", d.handlerKeys(h, &rulesNode))

		if err != nil {
			return nil, err
		}
		if h.Name == "" {
			return nil, d.errf(hn, "a failure handler has no name")
		}
		if prev := out[h.Name]; prev != nil {
			return nil, d.errf(hn, "failure handler %q defined twice (first at line %d)", h.Name, prev.Line)
		}
		if rulesNode == nil || rulesNode.Kind != yaml.SequenceNode || len(rulesNode.Content) == 0 {
			return nil, d.errf(hn, "failure handler %q needs a list of rules", h.Name)
		}
		for _, rn := range rulesNode.Content {
			r := ExitCodeRule{MaxRetries: DefaultMaxRetries}
			var codesNode *yaml.Node
			err := d.fields(rn, "an exit-code rule", d.exitCodeRuleKeys(&r, &codesNode))

			if err != nil {
				return nil, err
			}
			if (codesNode == nil) == !r.MatchAll {
				return nil, d.errf(rn, "an exit-code rule needs either exit_codes or match_all_exit_codes: true")
			}
			h.Rules = append(h.Rules, r)
		}
		out[h.Name] = h
	}
	return out, nil
}

// handlerKeys are the keys of a failure handler; rulesNode receives its
// rules, read after.
func (d *decoder) handlerKeys(h *FailureHandler, rulesNode **yaml.Node) keys {
	return keys{
		"name": {sString("The name steps give in failure_handler."), func(v *yaml.Node) error { return d.str(v, "failure handler name", &h.Name) }},
		"rules": {jsonSchema{"type": "array", "minItems": 1, "items": jsonSchema{"$ref": "#/$defs/exit_code_rule"}, "description": "The exit-code rules, first match wins."},
			func(v *yaml.Node) error { *rulesNode = v; return nil }},
	}
}

// exitCodeRuleKeys are the keys of an exit-code rule.
func (d *decoder) exitCodeRuleKeys(r *ExitCodeRule, codesNode **yaml.Node) keys {
	return keys{
		"exit_codes": {jsonSchema{"type": "array", "items": jsonSchema{"type": "integer", "minimum": 1, "maximum": 255}, "minItems": 1, "description": "The exit codes the rule matches (1 to 255)."}, func(v *yaml.Node) error {
			*codesNode = v
			if v.Kind != yaml.SequenceNode {
				return d.errf(v, "exit_codes must be a list of numbers")
			}
			if len(v.Content) == 0 {
				d.refuse(v, "exit_codes is empty: the rule could never match; list exit codes, or write match_all_exit_codes: true")
			}
			for _, c := range v.Content {
				var code int
				if err := d.integer(c, "exit_codes", &code); err != nil {
					return err
				}
				if code < 1 || code > 255 {
					d.refuse(c, "exit code %d could never match: a failed process exits with 1 to 255", code)
				}
				r.ExitCodes = append(r.ExitCodes, code)
			}
			return nil
		}},
		"match_all_exit_codes": {sBool("true: the rule matches every non-zero exit code."), func(v *yaml.Node) error {
			return d.boolean(v, "match_all_exit_codes", &r.MatchAll)
		}},
		"max_retries": {sInt("How many times a matching failure is retried (default 3).", 0, MaxAttempts-1), func(v *yaml.Node) error {
			if err := d.integer(v, "max_retries", &r.MaxRetries); err != nil {
				return err
			}
			if r.MaxRetries < 0 {
				return d.errf(v, "max_retries must not be negative")
			}
			d.checkAttempts(v, "max_retries", r.MaxRetries+1)
			return nil
		}},
		"recovery_script": {sString("A shell script run before the retry."), func(v *yaml.Node) error {
			d.refuseTemplates(v, "recovery_script", "the script reads PLAYBOOK_RUN_ID, PLAYBOOK_STEP, PLAYBOOK_ATTEMPT, PLAYBOOK_RETURN_CODE and PLAYBOOK_LOG_DIR")
			r.RecoveryScriptLine = v.Line
			return d.str(v, "recovery_script", &r.RecoveryScript)
		}},
	}
}

// MatchRule finds the exit-code rule for a code: a rule listing the code
// wins over a match_all_exit_codes rule, whatever their order.
func MatchRule(rules []ExitCodeRule, code int) *ExitCodeRule {
	var catchAll *ExitCodeRule
	for i := range rules {
		for _, c := range rules[i].ExitCodes {
			if c == code {
				return &rules[i]
			}
		}
		if rules[i].MatchAll && catchAll == nil {
			catchAll = &rules[i]
		}
	}
	return catchAll
}
