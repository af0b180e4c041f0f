package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"

	"playbook/internal/store"
	"playbook/interpreter/contract"
)

// The bounds on the files a step hands on, checked before any is uploaded.
const (
	// MaxFileBytes bounds one output file.
	MaxFileBytes int64 = 1 << 30
	// MaxStepFileBytes bounds all of one attempt's output files.
	MaxStepFileBytes int64 = 2 << 30
	// MaxStepFiles bounds how many files one attempt hands on: their list
	// is part of the step's result, which a run's history carries.
	MaxStepFiles = 1000
)

// stepDir is the directory a process step runs in: its workdir (relative
// to the playbook's directory), else that directory.
func stepDir(in contract.StepInput) string {
	base := resolveBase(in.BaseDir)
	workdir, _ := in.Spec["workdir"].(string)
	return processDir(base, workdir)
}

// makeWorkdir makes sure dir, a step's working directory, is there: a
// relative workdir that is not yet is made (with its parents, as a
// container's working directory is), so that a loop's elements can each
// have their own (workdir: "parts/{{ item }}"); an absolute one is the
// worker's, and is not made.
func makeWorkdir(dir, workdir string) *contract.StepError {
	st, err := os.Stat(dir)
	switch {
	case err == nil && st.IsDir():
		return nil
	case err == nil:
		return &contract.StepError{Type: contract.ErrTool, Message: fmt.Sprintf("workdir %s is not a directory", dir)}
	case workdir == "" || filepath.IsAbs(workdir):
		return &contract.StepError{Type: contract.ErrTool, Message: fmt.Sprintf("workdir %s: %v", dir, unwrapPath(err))}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &contract.StepError{Type: contract.ErrTool, Message: fmt.Sprintf("workdir %s cannot be made: %v", dir, unwrapPath(err))}
	}
	return nil
}

// unwrapPath is a file system error without the path it names, which the
// message already gives.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// processDir is workdir resolved against base; base when empty.
func processDir(base, workdir string) string {
	if workdir == "" {
		return base
	}
	if filepath.IsAbs(workdir) {
		return workdir
	}
	return filepath.Join(base, workdir)
}

// artifactErr is a step's files failing it.
func artifactErr(format string, args ...any) *contract.StepError {
	return &contract.StepError{Type: contract.ErrArtifact, Message: fmt.Sprintf(format, args...)}
}

// storeFor is the worker's store, or the error of a step that needs one
// on a worker that has none.
func (a *Activities) storeFor() (store.Store, *contract.StepError) {
	if a.Store == nil {
		return nil, artifactErr("this worker has no store for step files: start it with --store (or PLAYBOOK_STORE)")
	}
	return a.Store, nil
}

// runWithFiles runs an attempt's tool between taking its input files and
// handing its output files on: a file that cannot be taken fails the
// attempt before its command starts, and one that cannot be handed on
// fails an attempt whose command succeeded.
func (a *Activities) runWithFiles(ctx context.Context, in contract.StepInput, run func() ToolResult) ToolResult {
	if err := a.takeInputs(ctx, in); err != nil {
		return ToolResult{Err: err}
	}
	o := run()
	if o.Err != nil {
		return o
	}
	files, err := a.handOn(ctx, in)
	if err != nil {
		return ToolResult{Err: err}
	}
	o.Files = files
	return o
}

// takeInputs downloads the attempt's input files into its working
// directory, each checked against its recorded size and sha256 before it
// takes its place: a file that does not match is not left there.
func (a *Activities) takeInputs(ctx context.Context, in contract.StepInput) *contract.StepError {
	if in.Files == nil || len(in.Files.Inputs) == 0 {
		return nil
	}
	st, stepErr := a.storeFor()
	if stepErr != nil {
		return stepErr
	}
	workdir, _ := in.Spec["workdir"].(string)
	if stepErr := makeWorkdir(stepDir(in), workdir); stepErr != nil {
		return stepErr
	}
	dir, err := filepath.EvalSymlinks(stepDir(in))
	if err != nil {
		return artifactErr("inputs: the step's working directory: %v", err)
	}
	for _, p := range slices.Sorted(maps.Keys(in.Files.Inputs)) {
		if err := download(ctx, st, dir, p, in.Files.Inputs[p]); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return artifactErr("inputs.files %s: %v (`playbook files gc` removes the files of runs that ended long ago; a retry given the workers' store, retry --store URL, runs the step that made it again)", p, err)
			}
			return artifactErr("inputs.files %s: %v", p, err)
		}
	}
	return nil
}

// download writes the stored file ref to rel under dir.
func download(ctx context.Context, st store.Store, dir, rel string, ref contract.FileRef) error {
	key, err := store.KeyOf(st, ref.URI)
	if err != nil {
		return err
	}
	if filepath.IsAbs(filepath.FromSlash(rel)) || slices.Contains(strings.Split(rel, "/"), "..") {
		return fmt.Errorf("%s is not a path inside the step's working directory", rel)
	}
	target := filepath.Join(dir, filepath.FromSlash(rel))
	// The directories on the way are made only under one that is inside
	// the working directory: a symlink out of it is refused before
	// anything is made beyond it.
	existing := filepath.Dir(target)
	for {
		if _, err := os.Lstat(existing); err == nil || existing == dir {
			break
		}
		existing = filepath.Dir(existing)
	}
	if err := within(dir, existing); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if err := within(dir, filepath.Dir(target)); err != nil {
		return err
	}
	body, _, err := st.Get(ctx, key)
	if err != nil {
		return err
	}
	defer body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(target), ".playbook-download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(body, ref.Bytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n > ref.Bytes {
		// Read no further than one byte past what was recorded.
		return fmt.Errorf("%s holds more than the %d bytes recorded: not used", ref.URI, ref.Bytes)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != ref.Bytes || sum != ref.SHA256 {
		return fmt.Errorf("%s holds %d bytes of sha256 %s, not the %d bytes of sha256 %s recorded: not used", ref.URI, n, sum, ref.Bytes, ref.SHA256)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// within refuses a path whose real location is not under dir (a real
// path): a symlink that points out of the working directory.
func within(dir, p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(dir, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("is %s, outside the step's working directory (a symlink out of it?)", real)
	}
	return nil
}

// output is one file to hand on.
type output struct {
	rel, real string
	bytes     int64
}

// handOn uploads the attempt's output files to the run's store, under
// RUN/STEP/PATH (a loop's element: STEP[INDEX]), and returns them by
// path. Every file is found and checked first (inside the working
// directory, a regular file, within the limits): one that is not fails
// the attempt with nothing uploaded. A file whose upload fails takes the
// ones uploaded before it away again.
func (a *Activities) handOn(ctx context.Context, in contract.StepInput) (map[string]contract.FileRef, *contract.StepError) {
	if in.Files == nil || len(in.Files.Outputs) == 0 {
		return nil, nil
	}
	st, stepErr := a.storeFor()
	if stepErr != nil {
		return nil, stepErr
	}
	dir, err := filepath.EvalSymlinks(stepDir(in))
	if err != nil {
		return nil, artifactErr("outputs: the step's working directory: %v", err)
	}
	outs, stepErr := findOutputs(dir, in.Files.Outputs)
	if stepErr != nil {
		return nil, stepErr
	}
	files := map[string]contract.FileRef{}
	var done []string
	folder := in.Step + attemptMark(ctx)
	for _, o := range outs {
		key := store.Join(in.WorkflowID, folder, o.rel)
		ref, err := upload(ctx, st, key, o)
		if err != nil {
			for _, k := range done {
				_, _ = st.Delete(context.WithoutCancel(ctx), k)
			}
			return nil, artifactErr("outputs.files %s: %v", o.rel, err)
		}
		done = append(done, key)
		files[o.rel] = ref
	}
	return files, nil
}

// attemptMark is what sets an attempt's files apart from those of every
// other attempt of the step, "@" and a token of the activity's run, ID and
// attempt (none outside an activity): a lost attempt that goes on
// uploading after another attempt completed the step writes beside the
// files that attempt recorded, not over them, and its clean-up removes
// only its own; so does a later run with the same workflow ID (its
// files under the same RUN/STEP), whose earlier run's files a retry may
// reuse. The files a step handed on are the ones its result records;
// `playbook files` lists those. Step names hold no "@".
func attemptMark(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	info := activity.GetInfo(ctx)
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%s/%d", info.WorkflowExecution.ID, info.WorkflowExecution.RunID, info.ActivityID, info.Attempt)))
	return "@" + hex.EncodeToString(sum[:6])
}

// findOutputs lists the files the patterns name under dir, each checked.
func findOutputs(dir string, patterns []string) ([]output, *contract.StepError) {
	var outs []output
	seen := map[string]bool{}
	var total int64
	for _, pat := range patterns {
		matches, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pat)))
		if err != nil {
			return nil, artifactErr("outputs.files %s: %v", pat, err)
		}
		if len(matches) == 0 {
			return nil, artifactErr("outputs.files %s: no such file in the step's working directory %s", pat, dir)
		}
		for _, m := range matches {
			rel, err := filepath.Rel(dir, m)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
				return nil, artifactErr("outputs.files %s: %s leaves the step's working directory", pat, m)
			}
			rel = filepath.ToSlash(rel)
			if seen[rel] {
				continue
			}
			seen[rel] = true
			if len(seen) > MaxStepFiles {
				return nil, artifactErr("outputs.files: the step hands on more than %d files, the limit for one step (at %s): nothing uploaded; hand on an archive of them", MaxStepFiles, rel)
			}
			if err := within(dir, m); err != nil {
				return nil, artifactErr("outputs.files %s: %s %v: nothing uploaded", pat, rel, err)
			}
			real, _ := filepath.EvalSymlinks(m)
			fi, err := os.Stat(real)
			if err != nil {
				return nil, artifactErr("outputs.files %s: %v", rel, err)
			}
			if !fi.Mode().IsRegular() {
				return nil, artifactErr("outputs.files %s: %s is not a regular file: nothing uploaded", pat, rel)
			}
			if fi.Size() > MaxFileBytes {
				return nil, artifactErr("outputs.files %s: %s is %d bytes, over the limit of %d bytes for one file: nothing uploaded", pat, rel, fi.Size(), MaxFileBytes)
			}
			total += fi.Size()
			if total > MaxStepFileBytes {
				return nil, artifactErr("outputs.files: the step's files are over %d bytes, the limit for one step (at %s): nothing uploaded", MaxStepFileBytes, rel)
			}
			outs = append(outs, output{rel: rel, real: real, bytes: fi.Size()})
		}
	}
	return outs, nil
}

// upload hashes the file, then puts it with its digest: the store refuses
// it if it changed in between.
func upload(ctx context.Context, st store.Store, key string, o output) (contract.FileRef, error) {
	f, err := os.Open(o.real)
	if err != nil {
		return contract.FileRef{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return contract.FileRef{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return contract.FileRef{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := st.Put(ctx, key, f, n, sum); err != nil {
		var mismatch *store.Mismatch
		if errors.As(err, &mismatch) {
			return contract.FileRef{}, fmt.Errorf("changed while it was uploaded: %v", err)
		}
		return contract.FileRef{}, err
	}
	return contract.FileRef{URI: st.URI(key), Bytes: n, SHA256: sum}, nil
}
