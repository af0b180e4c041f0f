package runs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec/expr"
)

// StoredFile is one of a run's files in its store, as `playbook files` and
// the MCP server's list_files give it.
type StoredFile struct {
	Step   string `json:"step"`
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	URI    string `json:"uri"`
}

// Files lists the files run's steps handed on (outputs.files); with step,
// that step's only (a loop's elements are STEP[INDEX]). With a client, they
// are the files the run recorded (its aggregate, as status gives it): those
// of a step a retry reused are where the earlier run put them, and a
// file's size and sha256 are the ones its step recorded. Without one, or
// for a run the server cannot tell of, and for a loop whose files list
// went with its truncated result, they are read from the store's keys
// under the run's workflow ID: of several attempts that uploaded a path,
// the newest.
func Files(ctx context.Context, c Client, st store.Store, run, step string) ([]StoredFile, error) {
	if err := store.CheckKey(run); err != nil {
		return nil, &RefusedError{Err: fmt.Errorf("run %q: %w", run, err)}
	}
	if c != nil {
		// A run the server cannot tell of (no longer known, its state
		// unreadable here) is listed from the store, as without a client.
		// An open run answers a query, which waits for a worker: without
		// one in a while, the store.
		sctx, cancel := context.WithTimeout(ctx, filesAskFor)
		status, err := StatusOf(sctx, c, run)
		cancel()
		switch {
		case err == nil && keepsFiles(status.Aggregate):
			return recordedFiles(ctx, st, run, step, status.Aggregate)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		// A compacted aggregate keeps no files, and a run Temporal ended
		// with no worker to tell its steps has none: the store has them.
	}
	return storedFiles(ctx, st, run, step, nil)
}

// keepsFiles tells whether agg lists its steps' files: not a compacted
// aggregate (its routine steps keep only status and attempts), nor the
// empty one of a run Temporal ended with no worker to tell its steps.
func keepsFiles(agg *contract.Aggregate) bool {
	return agg != nil && len(agg.Steps) > 0 && !agg.StepsCompacted
}

// filesAskFor bounds how long Files waits for the server's word on a run.
const filesAskFor = 10 * time.Second

// recordedFiles lists the files agg records, by step and path; a loop
// whose result is a stub lists its elements' files from the store.
func recordedFiles(ctx context.Context, st store.Store, run, step string, agg *contract.Aggregate) ([]StoredFile, error) {
	files := []StoredFile{}
	var cut []string
	for _, name := range slices.Sorted(maps.Keys(agg.Steps)) {
		if step != "" && name != step && !strings.HasPrefix(step, name+"[") {
			continue
		}
		s := agg.Steps[name]
		if _, stub := expr.TruncatedSize(s.Result); stub && len(s.Files) == 0 {
			cut = append(cut, name)
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(s.Files)) {
			f := s.Files[p]
			at, path := name, p
			if strings.HasPrefix(p, "[") {
				// A loop's element's file: [INDEX]/PATH.
				index, rest, _ := strings.Cut(p, "/")
				at, path = name+index, rest
			}
			if step != "" && at != step && !strings.HasPrefix(at, step+"[") {
				continue
			}
			files = append(files, StoredFile{Step: at, Path: path, Bytes: f.Bytes, SHA256: f.SHA256, URI: f.URI})
		}
	}
	if len(cut) > 0 {
		more, err := storedFiles(ctx, st, run, step, cut)
		if err != nil {
			return nil, err
		}
		files = append(files, more...)
	}
	return files, nil
}

// storedFiles lists run's files from the store's keys (RUN/STEP/PATH, or
// RUN/STEP@ATTEMPT/PATH), the newest of each step's path; only the steps
// of only, when given (a loop's elements are its own).
func storedFiles(ctx context.Context, st store.Store, run, step string, only []string) ([]StoredFile, error) {
	objs, err := st.List(ctx, run)
	if err != nil {
		return nil, err
	}
	type at struct{ step, path string }
	newest := map[at]store.Object{}
	for _, o := range objs {
		folder, path, _ := strings.Cut(strings.TrimPrefix(o.Key, run+"/"), "/")
		s, _, _ := strings.Cut(folder, "@")
		name, _, _ := strings.Cut(s, "[")
		if step != "" && s != step && !strings.HasPrefix(s, step+"[") {
			continue
		}
		if only != nil && !slices.Contains(only, name) {
			continue
		}
		k := at{s, path}
		if was, ok := newest[k]; !ok || o.Modified.After(was.Modified) {
			newest[k] = o
		}
	}
	files := []StoredFile{}
	for _, k := range slices.SortedFunc(maps.Keys(newest), func(a, b at) int {
		return strings.Compare(a.step+"\x00"+a.path, b.step+"\x00"+b.path)
	}) {
		o := newest[k]
		files = append(files, StoredFile{Step: k.step, Path: k.path, Bytes: o.Bytes, SHA256: o.SHA256, URI: st.URI(o.Key)})
	}
	return files, nil
}
