package activities

import (
	"fmt"
	"math"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// ToolResult is what one attempt of a tool produced.
type ToolResult struct {
	Result     any
	Err        *contract.StepError // nil on success
	ExitCode   *int
	StatusCode *int
	// Files are the files a successful attempt handed on, by path.
	Files map[string]contract.FileRef
}

// Decision says whether to run another attempt, and after how long.
type Decision struct {
	Retry bool
	Delay time.Duration
	// Why explains a stop, for the step's error message.
	Why string
	// Recovery is the failure handler's outcome (see contract.Recovery*).
	Recovery string
	// Rule is the exit-code rule that matched, if one did.
	Rule *spec.ExitCodeRule
}

// DecideRetry applies the contract's rule after attempt (1-based) produced o.
// A failure with an exit code that a failure handler's rule matches is the
// rule's alone: it retries while attempt <= max_retries. Any other failure
// goes to the retry block: stop when attempts are spent, when stop_when
// holds, or when retry_when is given and does not hold. On a success, retry
// only while retry_when holds (polling). random returns a number in [0, 1)
// for jitter.
func DecideRetry(block spec.Retry, handler *spec.FailureHandler, attempt int, o ToolResult, scope map[string]any, random func() float64) (Decision, error) {
	if o.Err != nil {
		if contract.IsEngineError(o.Err.Type) {
			return Decision{Recovery: contract.RecoveryError}, nil
		}
		if handler != nil && o.ExitCode != nil {
			if rule := spec.MatchRule(handler.Rules, *o.ExitCode); rule != nil {
				if attempt <= rule.MaxRetries {
					return Decision{Retry: true, Delay: backoff(block, attempt, random), Recovery: contract.RecoveryRetried, Rule: rule}, nil
				}
				why := fmt.Sprintf("exit code %d: %s gave up after %d retries", *o.ExitCode, handler.Name, rule.MaxRetries)
				if rule.MaxRetries == 0 {
					why = fmt.Sprintf("exit code %d: %s allows no retry", *o.ExitCode, handler.Name)
				}
				return Decision{Recovery: contract.RecoveryMaxRetriesExceeded, Rule: rule, Why: why}, nil
			}
		}
	}
	d, err := decideByRetryBlock(block, attempt, o, scope, random)
	if o.Err != nil && !d.Retry {
		d.Recovery = contract.RecoveryNoHandler
		if handler != nil {
			d.Recovery = contract.RecoveryNoMatchingRule
		}
	}
	return d, err
}

func decideByRetryBlock(block spec.Retry, attempt int, o ToolResult, scope map[string]any, random func() float64) (Decision, error) {
	// The expressions' scope is built only for a block that has one: most
	// attempts are of steps without retry_when or stop_when.
	var env map[string]any
	rules := expr.NullOrderings | expr.NullMembers
	eval := func(e *expr.Expr) (bool, error) {
		if e == nil {
			return false, nil
		}
		if env == nil {
			env = retryEnv(scope, attempt, o)
			// Reading past a value cut to a stub (a stdout's json over
			// its limit) is an error that says so, not null.
			if expr.HoldsStub(env, 10) {
				rules |= expr.Guarded
			}
		}
		return e.EvalBoolWith(env, rules)
	}
	retryWhen, err := eval(block.RetryWhen)
	if err != nil {
		return Decision{}, fmt.Errorf("retry_when %w", err)
	}
	spent := attempt >= max(block.MaxAttempts, 1)
	if o.Err == nil {
		switch {
		case !retryWhen:
			return Decision{}, nil
		case spent:
			return Decision{Why: fmt.Sprintf("retry_when still true after %d attempts", attempt)}, nil
		}
		return Decision{Retry: true, Delay: backoff(block, attempt, random)}, nil
	}
	if spent {
		if block.MaxAttempts > 1 {
			return Decision{Why: fmt.Sprintf("gave up after %d attempts", attempt)}, nil
		}
		return Decision{}, nil
	}
	stop, err := eval(block.StopWhen)
	if err != nil {
		return Decision{}, fmt.Errorf("stop_when %w", err)
	}
	switch {
	case stop:
		return Decision{Why: "stop_when " + block.StopWhen.Source + " is true"}, nil
	case block.RetryWhen != nil && !retryWhen:
		return Decision{Why: "retry_when " + block.RetryWhen.Source + " is false"}, nil
	}
	return Decision{Retry: true, Delay: backoff(block, attempt, random)}, nil
}

// backoff is min(initial * multiplier^(attempt-1), max), times a factor in
// [0.5, 1.5) with jitter. Without a retry block it is immediate.
func backoff(block spec.Retry, attempt int, random func() float64) time.Duration {
	d := float64(block.InitialDelay) * math.Pow(max(block.Multiplier, 1), float64(attempt-1))
	if block.MaxDelay > 0 {
		d = math.Min(d, float64(block.MaxDelay))
	}
	if block.Jitter {
		d *= 0.5 + random()
	}
	// Temporal reads a zero delay as "use the policy's"; keep ours.
	return max(time.Duration(d), time.Millisecond)
}

// retryEnv is what retry_when and stop_when see.
func retryEnv(scope map[string]any, attempt int, o ToolResult) map[string]any {
	env := make(map[string]any, len(scope)+6)
	for k, v := range scope {
		env[k] = v
	}
	for _, k := range []string{"workload", "steps", "playbook"} {
		if env[k] == nil {
			env[k] = map[string]any{}
		}
	}
	if env["execution_id"] == nil {
		env["execution_id"] = ""
	}
	env["attempt"] = attempt
	env["success"] = o.Err == nil
	env["result"] = o.Result
	env["error"] = nil
	if o.Err != nil {
		env["error"] = map[string]any{"type": o.Err.Type, "message": o.Err.Message}
	}
	env["exit_code"], env["status_code"] = nil, nil
	if o.ExitCode != nil {
		env["exit_code"] = *o.ExitCode
	}
	if o.StatusCode != nil {
		env["status_code"] = *o.StatusCode
	}
	return env
}

// withinBudget stops retrying once the step's retry budget (max_duration)
// is spent: the attempts and the delays between them, since the first
// attempt was scheduled, have run past it.
func withinBudget(d Decision, budget, elapsed time.Duration, attempts int) Decision {
	if !d.Retry || budget <= 0 || elapsed <= budget {
		return d
	}
	// Given up as when the attempts are spent: a rule's retries as
	// exceeded, the retry block's with no handler left (so that
	// pending_failed still takes the step).
	d.Recovery = contract.RecoveryNoHandler
	if d.Rule != nil {
		d.Recovery = contract.RecoveryMaxRetriesExceeded
	}
	d.Retry, d.Delay = false, 0
	d.Why = fmt.Sprintf("retry budget of %s spent after %d %s", budget, attempts, map[bool]string{true: "attempt", false: "attempts"}[attempts == 1])
	return d
}
