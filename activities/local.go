package activities

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"playbook/interpreter/contract"
)

// A local step's attempts run as Temporal local activities (StepInput.Local),
// which have no heartbeat details to carry the attempt log from one attempt
// to the next. Temporal's local retries run in the worker that ran the
// attempt before, inside the same workflow task, so the log waits for them
// here, by run, step and local activity. A retry past that (a delay over
// spec.LocalRetryWithin) is a new local activity, which the run gives the
// log (LocalAttempts.Failed); a worker that dies loses its logs with the
// attempts themselves, which the workflow task's retry runs again from the
// first.
var localLogs = struct {
	sync.Mutex
	m map[string]localLog
}{m: map[string]localLog{}}

type localLog struct {
	failed []contract.AttemptRecord
	kept   time.Time
}

// staleLocalLog is how long a log no attempt came back for is kept: its
// workflow task was given up (the run went to another worker), and the
// run's next attempt starts there from its own first.
const staleLocalLog = time.Hour

func localKey(in contract.StepInput) string {
	return in.WorkflowID + "\x00" + in.RunID + "\x00" + in.Step + "\x00" + strconv.Itoa(in.PriorAttempts) + "\x00" + strconv.Itoa(in.Local.Before)
}

// localAttempts is the attempt log a local step's attempt starts from:
// what the run gave its local activity, then what the local retries before
// it in this worker left. A first attempt starts afresh: a log kept from a
// workflow task given up is not its own.
func localAttempts(ctx context.Context, in contract.StepInput) contract.AttemptLog {
	log := contract.AttemptLog{Failed: append([]contract.AttemptRecord(nil), in.Local.Failed...)}
	localLogs.Lock()
	defer localLogs.Unlock()
	key := localKey(in)
	if activity.GetInfo(ctx).Attempt == 1 {
		delete(localLogs.m, key)
		return log
	}
	if l, ok := localLogs.m[key]; ok {
		log.Failed = l.failed
	}
	return log
}

// keepLocalAttempts keeps a local step's log for its next local retry;
// with retry false the step's local activity is over and its log goes.
func keepLocalAttempts(in contract.StepInput, log contract.AttemptLog, retry bool) {
	localLogs.Lock()
	defer localLogs.Unlock()
	key := localKey(in)
	if !retry {
		delete(localLogs.m, key)
		return
	}
	now := time.Now()
	if len(localLogs.m) >= 1000 {
		for k, l := range localLogs.m {
			if now.Sub(l.kept) > staleLocalLog {
				delete(localLogs.m, k)
			}
		}
	}
	localLogs.m[key] = localLog{failed: log.Failed, kept: now}
}
