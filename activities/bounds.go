package activities

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec/expr"
)

// Every read a step's output drives has a bound, named in the error a user
// sees when it is crossed.
const (
	// errorFileLimit bounds the file a process names in PLAYBOOK_ERROR_FILE.
	errorFileLimit = 64 << 10
	// pythonExceptionLimit bounds a python step's exception and traceback.
	pythonExceptionLimit = 256 << 10
	// bodyLimit bounds an http response body kept in a result: under
	// Temporal's payload limit, with room for the rest of the result.
	bodyLimit = 1 << 20
	// PayloadLimit is Temporal's default limit on one payload (2 MB); a
	// step's result must fit in it, with room for the output's other fields.
	PayloadLimit = 2 << 20
	resultLimit  = PayloadLimit - 64<<10
)

// readBounded reads a whole file of at most limit bytes; what names the
// file in the error when it is larger.
func readBounded(path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than its limit of %s", what, size(limit))
	}
	return b, nil
}

// largeValues says whether an attempt's result may be as large as
// contract.LargeValueBudget: its run keeps large values in its store, and
// so does this worker (its client keeps payloads over 256 KiB there).
func (a *Activities) largeValues(in contract.StepInput) bool { return in.LargeValues && a.LargeValues }

// valueLimit is what a result's one value (stdout parsed as JSON, a python
// step's return value) may take: 1 MiB, or contract.LargeValueBudget.
func valueLimit(large bool) int64 {
	if large {
		return contract.LargeValueBudget
	}
	return jsonLimit
}

// boundResult fails a successful attempt whose result would not fit in
// Temporal's payload limit (or, with large values, in
// contract.LargeValueBudget), saying so, instead of letting the server
// reject the activity's completion.
func boundResult(o ToolResult, large bool) ToolResult {
	if o.Err != nil || o.Result == nil {
		return o
	}
	b, err := json.Marshal(o.Result)
	if err != nil {
		return failure(contract.ErrTool, "the step's result cannot be encoded as JSON: "+err.Error(), nil)
	}
	if large {
		if len(b) > contract.LargeValueBudget+64<<10 {
			return failure(contract.ErrResultTooLarge, fmt.Sprintf("the step's result is %s, over the %s a value may take: write large outputs to files (outputs.files)",
				size(int64(len(b))), size(contract.LargeValueBudget)), map[string]any{"result_bytes": len(b)})
		}
		return o
	}
	if len(b) > resultLimit {
		what, fix := "", "hand large outputs on as files (outputs.files), or give the workers and the CLI a store (PLAYBOOK_STORE), and a result may take "+size(contract.LargeValueBudget)
		if r, ok := o.Result.(map[string]any); ok && httpResult(r) {
			// An http step writes no file: its JSON body is in the result
			// twice, as body and as json.
			what = " (its JSON body of " + size(int64(len(r["body"].(string)))) + " is in it twice, as body and as json)"
			fix = "give the workers and the CLI a store (PLAYBOOK_STORE), and a result may take " + size(contract.LargeValueBudget)
		}
		return failure(contract.ErrResultTooLarge, fmt.Sprintf("the step's result is %s%s, over the %s a result may take of Temporal's %s payload limit: %s",
			size(int64(len(b))), what, size(resultLimit), size(PayloadLimit), fix), map[string]any{"result_bytes": len(b)})
	}
	return o
}

// httpResult tells whether r is an http step's result whose body was
// JSON: a body string beside the value it parsed to.
func httpResult(r map[string]any) bool {
	_, isBody := r["body"].(string)
	_, hasStatus := r["status_code"]
	return isBody && hasStatus && r["json"] != nil
}

// size is n bytes as messages say it (expr.FormatBytes).
func size(n int64) string { return expr.FormatBytes(int(n)) }
