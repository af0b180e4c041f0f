package interpreter

import (
	"encoding/json"
	"fmt"
)

// MarshalJSON writes an expression as its source: compiled programs do not
// travel; the side that reads one compiles it again (see Retry).
func (e *Expr) MarshalJSON() ([]byte, error) { return json.Marshal(e.Source) }

// UnmarshalJSON reads a retry block sent to an activity and compiles its
// expressions, as validation did, where the attempt runs.
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
		out       **Expr
	}{{"retry_when", raw.RetryWhen, &r.RetryWhen}, {"stop_when", raw.StopWhen, &r.StopWhen}} {
		if x.src == "" {
			continue
		}
		e, err := CompileExpr(x.src, ScopeRetry, true)
		if err != nil {
			return fmt.Errorf("retry.%s %w", x.name, err)
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
