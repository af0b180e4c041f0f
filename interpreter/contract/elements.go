package contract

import "sort"

// ElementReuse is what a retry reuses of a loop step that did not
// complete in the earlier run: the elements that completed there (matched
// by what they run), by their index in the new run's list, and their
// results. Its size is bounded whatever the loop's length: the indexes as
// spans, the results only while they fit the loop's result budget.
type ElementReuse struct {
	// Total is the length of the new run's list the spans index; a list
	// of another length reuses nothing.
	Total int `json:"total"`
	// Spans are the reused indexes, as sorted half-open [from, to) spans.
	Spans [][2]int `json:"spans"`
	// Results are the reused elements' results by index; nil with
	// Truncated, when they were over the loop's result budget (the step's
	// result is then a stub, as for any loop whose results are).
	Results   map[int]any `json:"results,omitempty"`
	Truncated bool        `json:"truncated,omitempty"`
	// Earlier names where the reused elements ran, for the stub.
	Earlier string `json:"earlier,omitempty"`
}

// Has tells whether element i is reused.
func (r *ElementReuse) Has(i int) bool {
	if r == nil {
		return false
	}
	k := sort.Search(len(r.Spans), func(k int) bool { return r.Spans[k][1] > i })
	return k < len(r.Spans) && r.Spans[k][0] <= i
}

// Count is how many elements are reused.
func (r *ElementReuse) Count() int {
	n := 0
	if r != nil {
		for _, s := range r.Spans {
			n += s[1] - s[0]
		}
	}
	return n
}

// SpansOf are the indexes where reused is true, as ElementReuse.Spans.
func SpansOf(reused []bool) [][2]int {
	var out [][2]int
	for i := 0; i < len(reused); i++ {
		if !reused[i] {
			continue
		}
		j := i
		for j < len(reused) && reused[j] {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}
