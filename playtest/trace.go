package playtest

import (
	"sync"

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

func workerOptions(t *tracer) worker.Options { return worker.Options{} }
