package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// retryExpr compiles a retry_when or stop_when as validation does.
func retryExpr(t *testing.T, src string) *expr.Expr {
	t.Helper()
	e, err := expr.CompileExpr(src, expr.ScopeRetry, true)
	require.NoError(t, err)
	return e
}

func TestDecideRetry(t *testing.T) {
	exit := func(n int) ToolResult {
		return ToolResult{Err: &contract.StepError{Type: "exit_code", Message: "x"}, ExitCode: &n}
	}
	ok := ToolResult{Result: map[string]any{"ready": false}}
	noAnswer := ToolResult{Err: &contract.StepError{Type: "http_error", Message: "connection refused"}}
	base := spec.Retry{MaxAttempts: 5, InitialDelay: time.Second, Multiplier: 2, MaxDelay: 5 * time.Second}
	with := func(f func(*spec.Retry)) spec.Retry { s := base; f(&s); return s }
	cases := []struct {
		name    string
		spec    spec.Retry
		attempt int
		o       ToolResult
		want    Decision
	}{
		{"no retry block: one attempt", spec.Retry{MaxAttempts: 1}, 1, exit(1), Decision{Recovery: "no_handler"}},
		{"failure retries with backoff", base, 1, exit(1), Decision{Retry: true, Delay: time.Second}},
		{"backoff doubles", base, 3, exit(1), Decision{Retry: true, Delay: 4 * time.Second}},
		{"backoff capped at max_delay", base, 4, exit(1), Decision{Retry: true, Delay: 5 * time.Second}},
		{"attempts spent", base, 5, exit(1), Decision{Why: "gave up after 5 attempts", Recovery: "no_handler"}},
		{"stop_when stops at once", with(func(s *spec.Retry) { s.StopWhen = retryExpr(t, "exit_code == 2") }), 1, exit(2), Decision{Why: "stop_when exit_code == 2 is true", Recovery: "no_handler"}},
		{"stop_when false retries", with(func(s *spec.Retry) { s.StopWhen = retryExpr(t, "exit_code == 2") }), 1, exit(3), Decision{Retry: true, Delay: time.Second}},
		{"retry_when false stops", with(func(s *spec.Retry) { s.RetryWhen = retryExpr(t, "exit_code in [75, 111]") }), 1, exit(1), Decision{Why: "retry_when exit_code in [75, 111] is false", Recovery: "no_handler"}},
		{"retry_when true retries", with(func(s *spec.Retry) { s.RetryWhen = retryExpr(t, "exit_code in [75, 111]") }), 1, exit(75), Decision{Retry: true, Delay: time.Second}},
		{"success without retry_when is done", base, 1, ok, Decision{}},
		{"retry_when true on success polls", with(func(s *spec.Retry) { s.RetryWhen = retryExpr(t, "success && !result.ready") }), 2, ok, Decision{Retry: true, Delay: 2 * time.Second}},
		{"polling gives up when attempts are spent", with(func(s *spec.Retry) { s.RetryWhen = retryExpr(t, "!result.ready") }), 5, ok, Decision{Why: "retry_when still true after 5 attempts"}},
		{"attempt is in scope", with(func(s *spec.Retry) { s.StopWhen = retryExpr(t, "attempt >= 2") }), 2, exit(1), Decision{Why: "stop_when attempt >= 2 is true", Recovery: "no_handler"}},
		{"error type is in scope", with(func(s *spec.Retry) { s.RetryWhen = retryExpr(t, "error.type == 'exit_code'") }), 1, exit(9), Decision{Retry: true, Delay: time.Second}},
		// A request that got no answer has no status: an ordering with it
		// is false, so a guarded retry_when retries the blip.
		{"no answer: the guard retries", with(func(s *spec.Retry) { s.RetryWhen = retryExpr(t, "status_code == nil or status_code >= 500") }), 1, noAnswer, Decision{Retry: true, Delay: time.Second}},
		{"no answer: an ordering is false", with(func(s *spec.Retry) { s.RetryWhen = retryExpr(t, "status_code >= 500") }), 1, noAnswer, Decision{Why: "retry_when status_code >= 500 is false", Recovery: "no_handler"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecideRetry(tc.spec, nil, tc.attempt, tc.o, nil, func() float64 { return 0.5 })
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDecideRetryJitter(t *testing.T) {
	block := spec.Retry{MaxAttempts: 3, InitialDelay: 2 * time.Second, Multiplier: 2, MaxDelay: time.Minute, Jitter: true}
	fail := ToolResult{Err: &contract.StepError{Type: "x"}}
	low, err := DecideRetry(block, nil, 1, fail, nil, func() float64 { return 0 })
	require.NoError(t, err)
	high, err := DecideRetry(block, nil, 1, fail, nil, func() float64 { return 0.999 })
	require.NoError(t, err)
	require.Equal(t, time.Second, low.Delay, "jitter factor 0.5")
	require.InDelta(t, float64(3*time.Second), float64(high.Delay), float64(10*time.Millisecond), "jitter factor just under 1.5")
}

func TestDecideRetryScopeReadsRun(t *testing.T) {
	block := spec.Retry{MaxAttempts: 3, InitialDelay: time.Second, Multiplier: 1, StopWhen: retryExpr(t, "workload.strict && steps.prev.status == 'failed'")}
	scope := map[string]any{"workload": map[string]any{"strict": true}, "steps": map[string]any{"prev": map[string]any{"status": "failed"}}}
	got, err := DecideRetry(block, nil, 1, ToolResult{Err: &contract.StepError{Type: "x"}}, scope, func() float64 { return 0 })
	require.NoError(t, err)
	require.False(t, got.Retry)
}

// A matched exit-code rule decides alone; a failure no rule matches goes to
// the retry block, and its outcome says no rule matched.
func TestDecideRetryWithExitCodeRules(t *testing.T) {
	handler := &spec.FailureHandler{Name: "io", Rules: []spec.ExitCodeRule{
		{MatchAll: true, MaxRetries: 0},
		{ExitCodes: []int{10, 11}, MaxRetries: 2, RecoveryScript: "./fix.sh"},
	}}
	onlyCodes := &spec.FailureHandler{Name: "io", Rules: []spec.ExitCodeRule{{ExitCodes: []int{10}, MaxRetries: 1}}}
	exit := func(n int) ToolResult {
		return ToolResult{Err: &contract.StepError{Type: "exit_code"}, ExitCode: &n}
	}
	noRetry := spec.Retry{MaxAttempts: 1}
	retryBlock := spec.Retry{MaxAttempts: 4, InitialDelay: time.Second, Multiplier: 1, StopWhen: retryExpr(t, "exit_code == 3")}
	cases := []struct {
		name     string
		spec     spec.Retry
		handler  *spec.FailureHandler
		attempt  int
		o        ToolResult
		retry    bool
		recovery string
		rule     int // index in handler.Rules, -1 for none
	}{
		{"specific code wins over an earlier catch-all", noRetry, handler, 1, exit(10), true, "retried", 1},
		{"retries while attempt <= max_retries", noRetry, handler, 2, exit(11), true, "retried", 1},
		{"then gives up", noRetry, handler, 3, exit(10), false, "max_retries_exceeded", 1},
		{"catch-all matches other codes", noRetry, handler, 1, exit(7), false, "max_retries_exceeded", 0},
		{"no matching rule, no retry block", noRetry, onlyCodes, 1, exit(7), false, "no_matching_rule", -1},
		{"no matching rule falls to the retry block", retryBlock, onlyCodes, 1, exit(7), true, "", -1},
		{"retry block's stop_when still applies to unmatched codes", retryBlock, onlyCodes, 1, exit(3), false, "no_matching_rule", -1},
		{"a rule ignores the retry block's stop_when", spec.Retry{MaxAttempts: 1, StopWhen: retryExpr(t, "true")}, onlyCodes, 1, exit(10), true, "retried", 0},
		{"no exit code matches no rule", noRetry, handler, 1, ToolResult{Err: &contract.StepError{Type: "execution_timeout"}}, false, "no_matching_rule", -1},
		{"engine errors are never retried", retryBlock, handler, 1, ToolResult{Err: &contract.StepError{Type: "template_error"}}, false, "error", -1},
		{"no handler", noRetry, nil, 1, exit(10), false, "no_handler", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DecideRetry(tc.spec, tc.handler, tc.attempt, tc.o, nil, func() float64 { return 0.5 })
			require.NoError(t, err)
			require.Equal(t, tc.retry, d.Retry)
			require.Equal(t, tc.recovery, d.Recovery)
			if tc.rule < 0 {
				require.Nil(t, d.Rule)
			} else {
				require.Equal(t, &tc.handler.Rules[tc.rule], d.Rule)
			}
		})
	}
}

func TestWithLostAttempts(t *testing.T) {
	failed := contract.AttemptRecord{Attempt: 2, Error: contract.StepError{Type: "exit_code"}}
	got := contract.WithLostAttempts([]contract.AttemptRecord{failed}, 1, 3)
	require.Len(t, got, 3)
	require.Equal(t, []int{1, 2, 3}, []int{got[0].Attempt, got[1].Attempt, got[2].Attempt})
	require.Equal(t, "heartbeat_timeout", got[0].Error.Type, "attempt 1 left no record: it was lost")
	require.Equal(t, failed, got[1])
	require.Empty(t, contract.WithLostAttempts(nil, 1, 0), "a first attempt has nothing before it")
}

// A retry budget stops the retry that would run past it, and says so.
func TestRetryBudget(t *testing.T) {
	retry := Decision{Retry: true, Delay: 500 * time.Millisecond}
	require.Equal(t, retry, withinBudget(retry, 0, time.Hour, 9), "no budget")
	require.Equal(t, retry, withinBudget(retry, 2*time.Second, 1900*time.Millisecond, 3), "not spent yet")
	require.Equal(t, Decision{Why: "retry budget of 2s spent after 6 attempts", Recovery: contract.RecoveryNoHandler}, withinBudget(retry, 2*time.Second, 2100*time.Millisecond, 6))
	byRule := Decision{Retry: true, Delay: time.Second, Recovery: contract.RecoveryRetried, Rule: &spec.ExitCodeRule{MaxRetries: 9}}
	require.Equal(t, Decision{Why: "retry budget of 2s spent after 1 attempt", Recovery: contract.RecoveryMaxRetriesExceeded, Rule: byRule.Rule}, withinBudget(byRule, 2*time.Second, 3*time.Second, 1))
	done := Decision{Why: "gave up after 5 attempts"}
	require.Equal(t, done, withinBudget(done, time.Second, time.Hour, 5), "a decision not to retry stays")
}

// A retry_when that reads past a stub (a stdout's json over its limit)
// fails saying the value was cut, rather than read null and stop
// polling; one that reads the stub's own fields reads them.
func TestRetryWhenReadingPastAStub(t *testing.T) {
	block := spec.Retry{MaxAttempts: 5, InitialDelay: time.Second, Multiplier: 2, MaxDelay: 5 * time.Second}
	cut := ToolResult{Result: map[string]any{"exit_code": 0, "stdout": "{", "json": expr.Truncated(2<<20, 1<<20, "the step's stdout log")}}
	block.RetryWhen = retryExpr(t, "result.json.state == 'pending'")
	_, err := DecideRetry(block, nil, 1, cut, nil, func() float64 { return 0.5 })
	require.ErrorContains(t, err, "reads state of a value that was cut")
	block.RetryWhen = retryExpr(t, "result.json.truncated")
	d, err := DecideRetry(block, nil, 1, cut, nil, func() float64 { return 0.5 })
	require.NoError(t, err)
	require.True(t, d.Retry)
}
