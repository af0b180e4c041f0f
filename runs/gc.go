package runs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"

	"playbook/internal/claims"
	"playbook/internal/store"
)

// Collected is what `playbook files gc` removes (or, dry, would) of one
// run: its files and its claims, and why.
type Collected struct {
	Run     string `json:"run"`
	Why     string `json:"why"`
	Objects int    `json:"objects"`
	Bytes   int64  `json:"bytes"`
}

// CollectFiles removes from st the files and claims of the runs that
// ended longer ago than age (by the server's close time) and of the runs
// the server no longer knows (its retention removed them) whose newest
// object is that old too; a run still open, or ended more recently, is
// kept. With dry, it removes nothing and says what it would. Runs come in
// the order of their IDs.
func CollectFiles(ctx context.Context, c Client, st store.Store, age time.Duration, now time.Time, dry bool) ([]Collected, error) {
	objs, err := st.List(ctx, "")
	if err != nil {
		return nil, err
	}
	type held struct {
		objects int
		bytes   int64
		newest  time.Time
	}
	byRun := map[string]*held{}
	for _, o := range objs {
		run, _, _ := strings.Cut(strings.TrimPrefix(o.Key, claims.Prefix+"/"), "/")
		h := byRun[run]
		if h == nil {
			h = &held{}
			byRun[run] = h
		}
		h.objects++
		h.bytes += o.Bytes
		if o.Modified.After(h.newest) {
			h.newest = o.Modified
		}
	}
	cutoff := now.Add(-age)
	var out []Collected
	for _, run := range slices.Sorted(maps.Keys(byRun)) {
		h := byRun[run]
		why := ""
		resp, err := c.DescribeWorkflowExecution(ctx, run, "")
		var missing *serviceerror.NotFound
		switch {
		case errors.As(err, &missing):
			if h.newest.Before(cutoff) {
				why = "the server no longer knows the run"
			}
		case err != nil:
			return out, fmt.Errorf("run %s: %w", run, err)
		default:
			closed := resp.GetWorkflowExecutionInfo().GetCloseTime()
			if closed != nil && closed.AsTime().Before(cutoff) {
				why = "it ended " + closed.AsTime().UTC().Format(time.RFC3339)
			}
		}
		if why == "" {
			continue
		}
		if !dry {
			for _, prefix := range []string{run, claims.Prefix + "/" + run} {
				if _, err := st.Delete(ctx, prefix); err != nil {
					return out, fmt.Errorf("run %s: %w", run, err)
				}
			}
		}
		out = append(out, Collected{Run: run, Why: why, Objects: h.objects, Bytes: h.bytes})
	}
	return out, nil
}

// ParseAge reads an age as Go writes a duration (36h, 90m) or in days
// (30d); it must be more than zero.
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not an age: give a duration more than zero, as 30d, 36h or 90m", s)
	}
	return d, nil
}
