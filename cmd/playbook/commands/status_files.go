package commands

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"playbook/runs"
)

// printFilesAndQueues lists, under a run's step table, the files its steps
// handed on (outputs.files) and, when a step runs on a queue other than the
// run's, the queue of each step; nothing when there are none.
func printFilesAndQueues(out io.Writer, st *runs.Status) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := false
	for _, name := range stepOrder(st.Aggregate, st.Playbook()) {
		files := st.Steps[name].Files
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			if !header {
				fmt.Fprintln(tw, "\nSTEP\tFILE\tBYTES\tSHA256")
				header = true
			}
			f := files[p]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", name, p, f.Bytes, f.SHA256)
		}
	}
	tw.Flush()
	if len(st.Queues) == 0 {
		return
	}
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSTEP\tQUEUE")
	for _, name := range stepOrder(st.Aggregate, st.Playbook()) {
		if q, ok := st.Queues[name]; ok {
			fmt.Fprintf(tw, "%s\t%s\n", name, q)
		}
	}
	tw.Flush()
}
