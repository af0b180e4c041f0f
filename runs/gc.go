package runs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"

	"playbook/internal/claims"
	"playbook/internal/codec"
	"playbook/internal/store"
	"playbook/interpreter/contract"
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
// the server no longer knows (its retention removed it) whose newest
// object is that old too; a run still open, or ended more recently, is
// kept. So is a run another run still needs: a sub-playbook's child
// (RUN.STEP) while a run above it is kept, and a run whose files a kept
// retry may reuse (its memo names them) with its children. With dry, it removes nothing and
// says what it would. Runs come in the order of their IDs. unread are
// warnings: retries that count whose memo this client cannot read
// (encrypted with a key it lacks), and so what they reuse.
func CollectFiles(ctx context.Context, c Client, namespace string, st store.Store, age time.Duration, now time.Time, dry bool) (out []Collected, unread []string, err error) {
	objs, err := st.List(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	type held struct {
		objects  int
		bytes    int64
		newest   time.Time
		prefixes []string
	}
	byRun := map[string]*held{}
	for _, o := range objs {
		run, prefix := ownerOf(o.Key)
		h := byRun[run]
		if h == nil {
			h = &held{}
			byRun[run] = h
		}
		if !slices.Contains(h.prefixes, prefix) {
			h.prefixes = append(h.prefixes, prefix)
		}
		h.objects++
		h.bytes += o.Bytes
		if o.Modified.After(h.newest) {
			h.newest = o.Modified
		}
	}
	cutoff := now.Add(-age)
	k := keeper{c: c, namespace: namespace, cutoff: cutoff, ended: map[string]ending{}}
	defer func() { unread = k.unread }()
	for _, run := range slices.Sorted(maps.Keys(byRun)) {
		h := byRun[run]
		e, err := k.ending(ctx, run)
		if err != nil {
			return out, nil, err
		}
		why := ""
		switch {
		case e.unknown:
			if h.newest.Before(cutoff) {
				why = "the server no longer knows the run"
			}
		case !e.open && e.closed.Before(cutoff):
			why = "it ended " + e.closed.UTC().Format(time.RFC3339)
		}
		if why == "" {
			continue
		}
		if needed, err := k.needed(ctx, run); err != nil || needed {
			if err != nil {
				return out, nil, err
			}
			continue
		}
		if !dry {
			for _, prefix := range h.prefixes {
				if _, err := st.Delete(ctx, prefix); err != nil {
					return out, nil, fmt.Errorf("run %s: %w", run, err)
				}
			}
		}
		out = append(out, Collected{Run: run, Why: why, Objects: h.objects, Bytes: h.bytes})
	}
	return out, nil, nil
}

// ownerOf is the run (its workflow ID) an object's key belongs to, and
// the prefix under which that run's objects of its kind are kept: a
// file's RUN/..., a claim's _claims/RUN/..., where RUN is escaped as a
// path segment (claims.Key).
func ownerOf(key string) (run, prefix string) {
	if rest, ok := strings.CutPrefix(key, claims.Prefix+"/"); ok {
		seg, _, _ := strings.Cut(rest, "/")
		run, err := url.PathUnescape(seg)
		if err != nil {
			run = seg
		}
		return run, claims.Prefix + "/" + seg
	}
	run, _, _ = strings.Cut(key, "/")
	return run, run
}

// ending is what the server says of a run: unknown, open, or closed when.
type ending struct {
	unknown, open bool
	closed        time.Time
}

// keeper answers, for files gc, whether a run still counts: whether it
// is open or ended after cutoff, and whether a run that counts needs its
// objects.
type keeper struct {
	c         Client
	namespace string
	cutoff    time.Time
	ended     map[string]ending
	// reused are the runs whose files the runs that count reuse, each
	// with the first run found reusing them; read once, when first asked.
	reused map[string]string
	// unread say which runs that count could not be read.
	unread []string
}

func (k *keeper) ending(ctx context.Context, run string) (ending, error) {
	if e, ok := k.ended[run]; ok {
		return e, nil
	}
	var e ending
	resp, err := k.c.DescribeWorkflowExecution(ctx, run, "")
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		e.unknown = true
	case err != nil:
		return e, fmt.Errorf("run %s: %w", run, err)
	default:
		if closed := resp.GetWorkflowExecutionInfo().GetCloseTime(); closed != nil {
			e.closed = closed.AsTime()
		} else {
			e.open = true
		}
	}
	k.ended[run] = e
	return e, nil
}

// counts says whether a run is open or ended after the cutoff.
func (k *keeper) counts(ctx context.Context, run string) (bool, error) {
	e, err := k.ending(ctx, run)
	return err == nil && !e.unknown && (e.open || !e.closed.Before(k.cutoff)), err
}

// needed says whether a run that is old enough to go is still needed: a
// run above it (a sub-playbook's child is RUN.STEP, its parent's history
// holds its claims and reads its files) counts, or a run that counts
// reuses its files, or those of a run above it (a retry, whose memo names
// the runs it may read from).
func (k *keeper) needed(ctx context.Context, run string) (bool, error) {
	for i := strings.LastIndexByte(run, '.'); i > 0; i = strings.LastIndexByte(run[:i], '.') {
		if counts, err := k.counts(ctx, run[:i]); err != nil || counts {
			return counts, err
		}
	}
	if k.reused == nil {
		if err := k.readReuses(ctx); err != nil {
			return false, err
		}
	}
	// The runs a retry reuses, and their sub-playbooks' children.
	for i := len(run); i > 0; i = strings.LastIndexByte(run[:i], '.') {
		if _, reused := k.reused[run[:i]]; reused {
			return true, nil
		}
	}
	return false, nil
}

// readReuses finds the runs whose files the playbook runs that count
// (open, or ended after the cutoff) may reuse: the retry chain a retry
// that reuses work keeps in its memo (contract.MemoRetryChain), which the
// list of runs carries. (A retry started before retries kept it has none.)
func (k *keeper) readReuses(ctx context.Context) error {
	k.reused = map[string]string{}
	query := fmt.Sprintf("WorkflowType = '%s' AND (ExecutionStatus = 'Running' OR CloseTime >= '%s')", contract.WorkflowName, k.cutoff.UTC().Format(time.RFC3339Nano))
	infos, err := Executions(ctx, k.c, k.namespace, query, -1)
	if err != nil {
		return fmt.Errorf("listing the runs that count, to keep the files they reuse: %w", err)
	}
	dc, err := PayloadConverter()
	if err != nil {
		return err
	}
	for _, info := range infos {
		p := info.GetMemo().GetFields()[contract.MemoRetryChain]
		if p == nil {
			continue
		}
		id := info.GetExecution().GetWorkflowId()
		var chain []string
		if err := dc.FromPayload(p, &chain); err != nil {
			if !codec.Unreadable(err) {
				return fmt.Errorf("run %s: reading the runs it reuses: %w", id, err)
			}
			// A run encrypted with a key this client lacks: what it reuses
			// is not known here, and so not kept for it.
			k.unread = append(k.unread, fmt.Sprintf("run %s reuses work of earlier runs, and its memo is encrypted with a key this client lacks (%s): their files were not kept for it; give files gc the workers' key", id, codec.Why(err)))
			continue
		}
		for _, run := range chain {
			if _, ok := k.reused[run]; !ok {
				k.reused[run] = id
			}
		}
	}
	return nil
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
