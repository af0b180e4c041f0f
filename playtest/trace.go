package playtest

import (
	"sync"
	"time"

	"go.temporal.io/sdk/worker"
)

// tracer records the commands the run's workflows issue.
type tracer struct {
	mu  sync.Mutex
	got []string
}

func (t *tracer) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string{}, t.got...)
}

// workerOptions are the test environment's: a loaded machine's first
// workflow task (the SDK and the expressions warming up) may take longer
// than the SDK's deadlock detector allows a real worker.
func workerOptions(t *tracer) worker.Options {
	return worker.Options{DeadlockDetectionTimeout: time.Minute}
}
