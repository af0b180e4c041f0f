package contract

import "time"

// Decisions on an approval step.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
	// DecisionApproved is the decision an approved step's result records.
	DecisionApproved = "approved"
)

// ApprovalDecision is the one argument of the `approval` Update: a person
// (or a program for one) approves or rejects a waiting approval step. It is
// recorded in the run's history as sent.
type ApprovalDecision struct {
	// Step is the approval step's name.
	Step string `json:"step"`
	// Decision is approve or reject.
	Decision string `json:"decision"`
	// Inputs are values for the step's declared inputs, checked against
	// their defaults' types; with approve only.
	Inputs map[string]any `json:"inputs,omitempty"`
	// By is who decides: one of the step's approvers when it names some.
	By string `json:"by,omitempty"`
	// Reason says why, recorded with the decision.
	Reason string `json:"reason,omitempty"`
}

// Waiting says that a running step waits for a person, since when, and
// what it asks.
type Waiting struct {
	// For is what the step waits for: "approval".
	For     string    `json:"for"`
	Since   time.Time `json:"since"`
	Message string    `json:"message,omitempty"`
}
