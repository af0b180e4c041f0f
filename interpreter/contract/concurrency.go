package contract

import (
	"crypto/sha256"
	"encoding/hex"
)

// A playbook's concurrency limit (`concurrency:`) is kept by one
// coordinator workflow per playbook and key (docs/INTERNALS.md,
// "Concurrency limits"). A run asks it for a slot with the AcquireSlot
// activity, which sends the coordinator's UpdateSlot update, starting the
// coordinator if none runs; a run that waits is told by SignalSlotGranted.

// CoordinatorWorkflowName is the workflow type of a key's coordinator.
const CoordinatorWorkflowName = "PlaybookConcurrency"

// AcquireSlotName is the activity that asks a key's coordinator for a slot.
const AcquireSlotName = "AcquireSlot"

// WatchHolderName is the coordinator's activity that returns when a run
// holding a slot has ended, in whatever way.
const WatchHolderName = "WatchHolder"

// UpdateSlot asks a coordinator for a slot (a SlotRequest); it answers a
// SlotAnswer.
const UpdateSlot = "slot"

// SignalSlotGranted tells a queued run that it holds a slot now.
const SignalSlotGranted = "slot_granted"

// SignalSlotLeave tells a coordinator that a queued run no longer waits
// (it was cancelled): a SlotRequest naming it.
const SignalSlotLeave = "slot_leave"

// QuerySlots asks a coordinator for its Slots.
const QuerySlots = "slots"

// SlotRequest is a run asking for a slot of its key.
type SlotRequest struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Playbook   string `json:"playbook"`
	Key        string `json:"key"`
	Limit      int    `json:"limit"`
	OnLimit    string `json:"on_limit"`
	// TaskQueue is where the coordinator runs when this request starts it:
	// the asking run's own queue.
	TaskQueue string `json:"task_queue"`
}

// SameRun tells whether r and o are the same run.
func (r SlotRequest) SameRun(o SlotRequest) bool {
	return r.WorkflowID == o.WorkflowID && r.RunID == o.RunID
}

// SlotAnswer is a coordinator's answer to a SlotRequest.
type SlotAnswer struct {
	// Granted: the run holds a slot and goes on.
	Granted bool `json:"granted"`
	// Refused says why the run may not run (on_limit: fail); "" otherwise.
	Refused string `json:"refused,omitempty"`
	// Holders are the workflow IDs of the runs holding the slots, when the
	// run was not granted one.
	Holders []string `json:"holders,omitempty"`
	// Position is the run's place in the queue, 1 first, when it waits.
	Position int `json:"position,omitempty"`
}

// Slots is a coordinator's state: the runs holding its key's slots and
// those waiting, in order. It is what a coordinator continues as new
// with, and what QuerySlots answers.
type Slots struct {
	Playbook string        `json:"playbook"`
	Key      string        `json:"key"`
	Limit    int           `json:"limit"`
	Holders  []SlotRequest `json:"holders"`
	Queue    []SlotRequest `json:"queue"`
}

// QueuedRun, in an open run's aggregate, says that it waits for a slot of
// its concurrency key.
type QueuedRun struct {
	Key         string `json:"key"`
	Limit       int    `json:"limit"`
	Coordinator string `json:"coordinator"`
	// Holders are the workflow IDs of the runs holding the slots, and
	// Position the run's place in the queue (1 first), as the coordinator
	// last said.
	Holders  []string `json:"holders"`
	Position int      `json:"position"`
}

// CoordinatorID is the workflow ID of the coordinator of playbook's key:
// the key is hashed, so that any text makes a workflow ID of bounded size.
func CoordinatorID(playbook, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "concurrency:" + playbook + ":" + hex.EncodeToString(sum[:8])
}
