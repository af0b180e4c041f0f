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
	// pythonResultLimit bounds what a python step's main returns, as JSON.
	pythonResultLimit = 1 << 20
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

// boundResult fails a successful attempt whose result would not fit in
// Temporal's payload limit, saying so, instead of letting the server
// reject the activity's completion.
func boundResult(o ToolResult) ToolResult {
	if o.Err != nil || o.Result == nil {
		return o
	}
	b, err := json.Marshal(o.Result)
	if err != nil {
		return failure(contract.ErrTool, "the step's result cannot be encoded as JSON: "+err.Error(), nil)
	}
	if len(b) > resultLimit {
		return failure(contract.ErrResultTooLarge, fmt.Sprintf("the step's result is %s, over the %s a result may take of Temporal's %s payload limit: write large outputs to a file and return its path",
			size(int64(len(b))), size(resultLimit), size(PayloadLimit)), map[string]any{"result_bytes": len(b)})
	}
	return o
}

// size is n bytes as messages say it (expr.FormatBytes).
func size(n int64) string { return expr.FormatBytes(int(n)) }
