package engine

import (
	"playbook/interpreter/contract"
	"playbook/interpreter/spec/expr"
)

// Raised is the error a fail step raises, from its rendered fields: its
// type, its message (a value that is not a string as JSON text; by
// default, that the step raised it) and its details, as a tool's failure
// carries them.
func Raised(step string, toolSpec map[string]any) *contract.StepError {
	typ, _ := toolSpec["type"].(string) // a plain identifier: Parse checked it
	msg := "raised by step " + step
	if m, ok := toolSpec["message"]; ok && m != nil {
		msg = expr.Text(m)
	}
	return &contract.StepError{Type: typ, Message: msg, Details: toolSpec["details"]}
}
