package contract

// The types a step's error carries (StepError.Type). Users match them in
// retry_when and stop_when, and the retry decision reads them: spell them
// through these names only.
const (
	// ErrTool: the engine could not run the tool (bad spec, no python3,
	// no log directory). No rule or retry applies.
	ErrTool = "tool_error"
	// ErrTemplate: a template of the tool did not render.
	ErrTemplate = "template_error"
	// ErrExpression: retry_when, stop_when or a loop's `in` did not evaluate.
	ErrExpression = "expression_error"
	// ErrExitCode: a process exited with a code other than 0.
	ErrExitCode = "exit_code"
	// ErrHTTP: an http request got no answer, or one too large.
	ErrHTTP = "http_error"
	// ErrHTTPStatus: an http answer had a status the step does not expect.
	ErrHTTPStatus = "http_status"
	// ErrPythonException: a python step's main raised.
	ErrPythonException = "python_exception"
	// ErrResultTooLarge: a result does not fit Temporal's payload limit.
	ErrResultTooLarge = "result_too_large"
	// ErrInputTooLarge: a step's rendered input (an activity's or a child's)
	// is over PayloadBudget; the workflow does not start it.
	ErrInputTooLarge = "input_too_large"
	// ErrRetryWhen: a success that retry_when keeps polling.
	ErrRetryWhen = "retry_when"
	// ErrExecutionTimeout: an attempt ran past its timeout.
	ErrExecutionTimeout = "execution_timeout"
	// ErrHeartbeatTimeout: an attempt was lost: its worker stopped
	// heartbeating, or could not reach the server.
	ErrHeartbeatTimeout = "heartbeat_timeout"
	// ErrWorkerStopped: an attempt was lost with its worker, which stopped.
	ErrWorkerStopped = "worker_stopped"
	// ErrCancelled is the error type of a step whose activity was cancelled.
	ErrCancelled = "cancelled"
	// ErrTimeout: the step was cancelled, or never classified, because the
	// run's deadline (the playbook's timeout) passed; its status is
	// cancelled. Or an approval step's own timeout passed with no decision,
	// with on_timeout: fail; its status is failed.
	ErrTimeout = "timeout"
	// ErrPlaybookFailed: a sub-playbook ended failed.
	ErrPlaybookFailed = "playbook_failed"
	// ErrPlaybookError: a sub-playbook could not run.
	ErrPlaybookError = "playbook_error"
	// ErrActivity: an activity failed with no step error of its own.
	ErrActivity = "activity_error"
	// ErrRejected: a person rejected an approval step (or its timeout did,
	// with on_timeout: reject).
	ErrRejected = "rejected"
	// ErrLoop: a batch of a loop's elements could not be started.
	ErrLoop = "loop_error"
	// ErrArtifact: a step's files could not be handed on or taken: an
	// output missing, over its limit or outside the working directory, a
	// download whose digest is not the one recorded, the store out of reach.
	ErrArtifact = "artifact_error"
)

// BuiltinErrorTypes are the error types above, which the engine gives:
// a fail step raises an error of a type of its own, so that a condition
// matching it can tell it from them.
var BuiltinErrorTypes = []string{ErrTool, ErrTemplate, ErrExpression, ErrExitCode, ErrHTTP, ErrHTTPStatus,
	ErrPythonException, ErrResultTooLarge, ErrInputTooLarge, ErrRetryWhen, ErrExecutionTimeout,
	ErrHeartbeatTimeout, ErrTimeout, ErrWorkerStopped, ErrCancelled, ErrPlaybookFailed, ErrPlaybookError, ErrActivity, ErrRejected, ErrLoop, ErrArtifact}

// IsEngineError tells whether an error type is a failure the engine caused
// or could not judge: no exit-code rule or retry applies to it.
func IsEngineError(typ string) bool {
	switch typ {
	case ErrExpression, ErrTemplate, ErrTool:
		return true
	}
	return false
}
