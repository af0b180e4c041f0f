package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// WaitingApproval is an approval step waiting for a decision, as
// `playbook pending` lists it.
type WaitingApproval struct {
	Step    string    `json:"step"`
	Since   time.Time `json:"since"`
	Message string    `json:"message"`
	// Inputs are the declared inputs with their defaults (a default's type
	// is the input's type).
	Inputs map[string]any `json:"inputs"`
	// Types are the inputs' types (spec.InputType): a JSON answer
	// cannot tell the default 3 from 3.0.
	Types     map[string]string `json:"types"`
	Approvers []string          `json:"approvers,omitempty"`
	// Deadline is when the timeout decides (OnTimeout); nil: no timeout.
	Deadline  *time.Time `json:"deadline,omitempty"`
	OnTimeout string     `json:"on_timeout,omitempty"`
}

// AwaitApproval records that an approval step, started, now waits for a
// person; message is its rendered message.
func (r *Run) AwaitApproval(name, message string) {
	st := r.states[name]
	st.Waiting = &contract.Waiting{For: "approval", Since: r.now(), Message: message}
	r.emit(Event{Type: "step_waiting", Step: name, Message: "waiting for approval: " + message})
}

// AwaitTime records that a wait step waits until a time, for d: an event
// for `run`, `events` and the Web UI, so that a long wait says when it
// ends.
func (r *Run) AwaitTime(name string, until time.Time, d time.Duration) {
	r.emit(Event{Type: "step_waiting_until", Step: name, Message: fmt.Sprintf("waits until %s (%s)", until.UTC().Format(time.RFC3339), d),
		Data: map[string]any{"until": until.UTC().Format(time.RFC3339Nano)}})
}

// WaitsForPerson tells whether a step waits for a person's decision or for
// an event: the run's status is then `waiting`.
func (r *Run) WaitsForPerson() bool {
	for _, st := range r.ordered {
		if st.Waiting != nil {
			return true
		}
	}
	return false
}

// Approvals lists the approval steps waiting for a decision, in file order.
func (r *Run) Approvals() []WaitingApproval {
	out := []WaitingApproval{}
	for i, s := range r.pb.Steps {
		st := r.ordered[i]
		if st.Waiting == nil || s.Tool.Kind != "approval" {
			continue
		}
		a := s.Tool.Approval()
		w := WaitingApproval{Step: s.Name, Since: st.Waiting.Since, Message: st.Waiting.Message, Inputs: a.Inputs, Types: map[string]string{}, Approvers: a.Approvers}
		if w.Inputs == nil {
			w.Inputs = map[string]any{}
		}
		//workflowcheck:ignore order-free: fills a map
		for k, v := range w.Inputs {
			w.Types[k] = spec.InputType(v)
		}
		if a.Timeout > 0 {
			deadline := st.Waiting.Since.Add(a.Timeout)
			w.Deadline, w.OnTimeout = &deadline, a.OnTimeout
		}
		out = append(out, w)
	}
	return out
}

// CheckApproval tells why a decision cannot apply, or nil: the step must
// be an approval waiting for one, the decision approve or reject, the
// inputs declared and of their types, every required input given to an
// approve, and by one of the approvers when the step names some. The Update
// validator asks it; Decide does not check the required inputs, because
// validators do not run on replay and runs recorded before inputs could
// be required approved without them.
func (r *Run) CheckApproval(d contract.ApprovalDecision) error {
	if _, err := r.approvalInputs(d); err != nil {
		return err
	}
	if d.Decision != contract.DecisionApprove {
		return nil
	}
	if k := spec.MissingInput(r.pb.Step(d.Step).Tool.Approval().Inputs, d.Inputs); k != "" {
		return MissingInputError(k)
	}
	return nil
}

// MissingInputError says that an approve leaves out a required input.
func MissingInputError(name string) error {
	return fmt.Errorf("input %s is required (it has no default): give --set %s=VALUE", name, name)
}

func (r *Run) approvalInputs(d contract.ApprovalDecision) (map[string]any, error) {
	s := r.pb.Step(d.Step)
	switch {
	case s == nil:
		return nil, fmt.Errorf("no step %q in playbook %s", d.Step, r.pb.Name)
	case s.Tool == nil || s.Tool.Kind != "approval":
		return nil, fmt.Errorf("step %q is not an approval step", d.Step)
	case r.states[d.Step].Waiting == nil:
		return nil, fmt.Errorf("step %q is %s, not waiting for approval", d.Step, r.states[d.Step].Status)
	case d.Decision != contract.DecisionApprove && d.Decision != contract.DecisionReject:
		return nil, fmt.Errorf("decision %q: approve or reject", d.Decision)
	case d.Decision == contract.DecisionReject && len(d.Inputs) > 0:
		return nil, fmt.Errorf("inputs go with approve, not reject")
	}
	a := s.Tool.Approval()
	if len(a.Approvers) > 0 && !slices.Contains(a.Approvers, d.By) {
		by := d.By
		if by == "" {
			by = "no one named"
		}
		return nil, fmt.Errorf("%s is not an approver of step %q (approvers: %s)", by, d.Step, strings.Join(a.Approvers, ", "))
	}
	return spec.ConvertInputs(a.Inputs, nil, d.Inputs)
}

// Decide applies a person's decision on a waiting approval step and
// returns the outcome the step settles with: approve completes it with
// {decision, inputs, by, reason, at}, the inputs merged over their
// defaults; reject fails it with error type rejected.
func (r *Run) Decide(d contract.ApprovalDecision) (contract.Outcome, error) {
	inputs, err := r.approvalInputs(d)
	if err != nil {
		return contract.Outcome{}, err
	}
	if d.By == "" {
		d.By = "anonymous"
	}
	return r.resolveApproval(d.Step, d.Decision, inputs, d.By, d.Reason), nil
}

// ApprovalTimedOut applies an approval step's on_timeout: approve
// completes it with the inputs' defaults, by "timeout"; reject fails it
// rejected; fail fails it with error type timeout.
func (r *Run) ApprovalTimedOut(name string) contract.Outcome {
	a := r.pb.Step(name).Tool.Approval()
	reason := fmt.Sprintf("no decision within %s", a.Timeout)
	switch a.OnTimeout {
	case spec.OnTimeoutApprove:
		return r.resolveApproval(name, contract.DecisionApprove, maps.Clone(a.Inputs), "timeout", reason)
	case spec.OnTimeoutReject:
		return r.resolveApproval(name, contract.DecisionReject, nil, "timeout", reason)
	}
	r.states[name].Waiting = nil
	r.emit(Event{Type: "step_timed_out", Step: name, Message: reason})
	return contract.Outcome{Attempts: 1, Err: &contract.StepError{Type: contract.ErrTimeout, Message: reason + " (on_timeout: fail)"}}
}

func (r *Run) resolveApproval(name, decision string, inputs map[string]any, by, reason string) contract.Outcome {
	at := r.now().UTC().Format(time.RFC3339)
	r.states[name].Waiting = nil
	data := map[string]any{"decision": decision, "by": by}
	word := contract.DecisionApproved
	if decision == contract.DecisionReject {
		word = "rejected"
	}
	msg := word + " by " + by + optional(": ", reason)
	if reason != "" {
		data["reason"] = reason
	}
	if decision == contract.DecisionReject {
		r.emit(Event{Type: "step_rejected", Step: name, Message: msg, Data: data})
		return contract.Outcome{Attempts: 1, Err: &contract.StepError{Type: contract.ErrRejected, Message: msg,
			Details: map[string]any{"by": by, "reason": reason, "at": at}}}
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	r.emit(Event{Type: "step_approved", Step: name, Message: msg, Data: data})
	return contract.Outcome{Attempts: 1, Result: map[string]any{"decision": contract.DecisionApproved, "inputs": inputs, "by": by, "reason": reason, "at": at}}
}

func optional(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// WaitingWebhook is notify.on_waiting's URL, rendered; "" when the
// playbook names none.
func (r *Run) WaitingWebhook() (string, error) {
	return r.renderWebhook(r.pb.Notify.OnWaiting)
}

// WaitingNotice is what notify.on_waiting posts when a step starts
// waiting for a person: the run, the step, its message, since when, and
// the commands that decide it.
// A wait_event step's notice says what it waits for and the command that
// sends the event.
func (r *Run) WaitingNotice(step string) map[string]any {
	w := r.states[step].Waiting
	notice := map[string]any{
		"event": "on_waiting", "playbook": r.pb.Name, "workflow_id": r.executionID, "step": step,
		"message": w.Message, "since": w.Since.UTC().Format(time.RFC3339),
	}
	if t := r.pb.Step(step).Tool; t.Kind == spec.WaitEventKind {
		notice["waiting_for"] = w.For
		notice["commands"] = []string{w.Message}
		return notice
	}
	notice["commands"] = ApprovalCommands(r.executionID, step, r.pb.Step(step).Tool.Approval())
	return notice
}

// ApprovalCommands are the command lines that approve and reject a waiting
// approval step, the inputs shown with their defaults, a required input
// with a placeholder (<name>) for the person to fill.
func ApprovalCommands(run, step string, a spec.Approval) []string {
	approve := "playbook approve " + run + " " + step
	for _, k := range slices.Sorted(maps.Keys(a.Inputs)) {
		if a.Inputs[k] == nil {
			// A required input is left for the person to fill: as
			// printed, the shell refuses the line (< and > redirect).
			approve += " --set " + k + "=<" + k + ">"
			continue
		}
		approve += " --set " + k + "=" + ShellWord(expr.Text(a.Inputs[k]))
	}
	by := ""
	if len(a.Approvers) > 0 {
		by = " --by " + ShellWord(a.Approvers[0])
	}
	return []string{approve + by, "playbook reject " + run + " " + step + " --reason '...'" + by}
}

// ClassifyCommand is the command line that classifies a pending_failed step.
func ClassifyCommand(run, step string) string {
	return "playbook classify " + run + " " + step + " retry|fail|skip"
}

// ShellWord quotes a word for a shell when it needs quotes: the command
// lines the engine and the CLI suggest are typed as printed.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/@=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
