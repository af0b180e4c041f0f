package contract

import (
	"fmt"
	"sort"
)

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
	// Files are the files the reused elements handed on, by index and
	// path, at the earlier run's keys: the loop's files list them as
	// [INDEX]/PATH as if the elements had run again.
	Files map[int]map[string]FileRef `json:"files,omitempty"`
	// Earlier names where the reused elements ran, for the stub.
	Earlier string `json:"earlier,omitempty"`
	// Kept says, in a loop driver's input, that the run which started the
	// driver keeps the reused results (in its own input) and puts them
	// into the loop's result itself, so that its history carries them
	// once: the driver counts them done and their ResultBytes against the
	// loop's result budget, and returns null in their places.
	Kept        bool `json:"kept,omitempty"`
	ResultBytes int  `json:"result_bytes,omitempty"`
}

// Carried is what a loop driver's input carries of r when the run that
// starts the driver keeps the results (Kept): the spans, and the size of
// the results they stand for.
func (r *ElementReuse) Carried() *ElementReuse {
	c := &ElementReuse{Total: r.Total, Spans: r.Spans, Truncated: r.Truncated, Earlier: r.Earlier, Kept: true}
	if !r.Truncated {
		//workflowcheck:ignore order-free: a sum
		for i := range r.Results {
			n, _ := EncodedSize(r.Results[i])
			c.ResultBytes += n + 1 // and its comma in the list
		}
	}
	return c
}

// FillIn puts the reused results into a loop's result list of r.Total
// elements, in their places; any other result is left as it is (a stub,
// when the results were over the loop's budget).
func (r *ElementReuse) FillIn(result any) any {
	list, ok := result.([]any)
	if r == nil || !ok || len(list) != r.Total {
		return result
	}
	//workflowcheck:ignore order-free: places each result at its index
	for i, v := range r.Results {
		if i >= 0 && i < len(list) {
			list[i] = v
		}
	}
	return list
}

// FillInFiles adds the reused elements' files to a loop's files
// ([INDEX]/PATH, as CombineLoop names them).
func (r *ElementReuse) FillInFiles(files map[string]FileRef) map[string]FileRef {
	if r == nil {
		return files
	}
	//workflowcheck:ignore order-free: fills a map by path
	for i, fs := range r.Files {
		//workflowcheck:ignore order-free: fills a map by path
		for p, f := range fs {
			if files == nil {
				files = map[string]FileRef{}
			}
			files[fmt.Sprintf("[%d]/%s", i, p)] = f
		}
	}
	return files
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
