package contract

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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
	// OversizedBytes is set by the worker alone, in place of a decision
	// it received over twice MaxDecisionBytes: the decision's size, for
	// the validator to refuse it by. Such a decision never reaches the
	// history.
	OversizedBytes int `json:"oversized_bytes,omitempty"`
}

// Waiting says that a running step waits for a person, since when, and
// what it asks.
type Waiting struct {
	// For is what the step waits for: "approval".
	For     string    `json:"for"`
	Since   time.Time `json:"since"`
	Message string    `json:"message,omitempty"`
}

// MaxDecisionBytes bounds what a person sends a run: an approval decision
// as JSON (its step, by, reason and inputs), a classification's reason, by
// and result, a cancel or drain reason. The run refuses more in the
// Update's validator, before anything reaches its history; the CLI and MCP
// refuse it before sending.
const MaxDecisionBytes = 256 << 10

// MaxNameBytes bounds who decides (by, an approver's name).
const MaxNameBytes = 200

// CheckDecision tells why a decision cannot be taken whatever the run's
// state, or nil: its size as JSON over MaxDecisionBytes, by over
// MaxNameBytes, a control character in by or reason (they are printed on
// operators' terminals).
func CheckDecision(d ApprovalDecision) error {
	if d.OversizedBytes > 0 {
		return CheckSize("the decision", d.OversizedBytes)
	}
	if err := CheckName("by", d.By); err != nil {
		return err
	}
	if err := CheckLine("the reason", d.Reason); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("the decision is not JSON: %v", err)
	}
	return CheckSize("the decision", len(b))
}

// CheckSize refuses what a person sends over MaxDecisionBytes.
func CheckSize(what string, size int) error {
	if size > MaxDecisionBytes {
		return fmt.Errorf("%s is %d bytes, over the limit of %d (256 KiB) on what is sent to a run: nothing was sent", what, size, MaxDecisionBytes)
	}
	return nil
}

// CheckName refuses a person's name over MaxNameBytes or with a control
// character.
func CheckName(what, name string) error {
	if len(name) > MaxNameBytes {
		return fmt.Errorf("%s is %d bytes, over the limit of %d for a name", what, len(name), MaxNameBytes)
	}
	return CheckLine(what, name)
}

// CheckLine refuses a text with a control character (a newline, a tab,
// ESC, DEL, C1) or that is not UTF-8: names and reasons are one line of
// printable text.
func CheckLine(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not UTF-8 text", what)
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s holds a control character (%s at byte %d): give one line of printable text", what, strings.Trim(strconv.QuoteRune(r), "'"), i)
		}
	}
	return nil
}

// oversizedPrefix begins the text a worker puts in place of the first
// argument of an Update over its bound (OversizedMarker).
const oversizedPrefix = "\x00oversized:"

// OversizedMarker is what a worker gives an Update's validator in place of
// arguments of size bytes it would not take.
func OversizedMarker(size int) string { return oversizedPrefix + strconv.Itoa(size) }

// Oversized reads OversizedMarker: the size, and whether s is one.
func Oversized(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, oversizedPrefix))
	return n, err == nil && strings.HasPrefix(s, oversizedPrefix)
}
