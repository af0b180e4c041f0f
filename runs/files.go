package runs

import (
	"context"
	"fmt"
	"strings"

	"playbook/internal/store"
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

// Files lists the files run's steps handed on (outputs.files), from the
// run's store; with step, that step's only (a loop's elements are
// STEP[INDEX]). It does not ask Temporal: the store keeps a run's files by
// its workflow ID.
func Files(ctx context.Context, st store.Store, run, step string) ([]StoredFile, error) {
	if err := store.CheckKey(run); err != nil {
		return nil, &RefusedError{Err: fmt.Errorf("run %q: %w", run, err)}
	}
	objs, err := st.List(ctx, run)
	if err != nil {
		return nil, err
	}
	files := []StoredFile{}
	for _, o := range objs {
		s, path, _ := strings.Cut(strings.TrimPrefix(o.Key, run+"/"), "/")
		if step != "" && s != step && !strings.HasPrefix(s, step+"[") {
			continue
		}
		files = append(files, StoredFile{Step: s, Path: path, Bytes: o.Bytes, SHA256: o.SHA256, URI: st.URI(o.Key)})
	}
	return files, nil
}
