package contract

import "fmt"

// LoopProgress counts a running loop step's elements; the workflow keeps it
// current for `status`, `run`'s progress and the Web UI (never in history).
type LoopProgress struct {
	Total     int `json:"total"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled,omitempty"`
	Running   int `json:"running"`
}

func (p LoopProgress) String() string {
	s := fmt.Sprintf("%d of %d elements done, %d failed, %d running", p.Done, p.Total, p.Failed, p.Running)
	if p.Cancelled > 0 {
		s += fmt.Sprintf(", %d cancelled", p.Cancelled)
	}
	return s
}

// Add counts finished elements' outcomes.
func (p *LoopProgress) Add(outcomes ...Outcome) {
	for _, o := range outcomes {
		switch {
		case o.Err == nil:
			p.Done++
		case o.Err.Type == ErrCancelled:
			p.Cancelled++
		default:
			p.Failed++
		}
	}
}
