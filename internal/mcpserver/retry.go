package mcpserver

import (
	"context"
	"errors"
	"path/filepath"

	"playbook/interpreter/contract"
	"playbook/runs"
	"playbook/submit"
)

// retryRequest is what the MCP tool retry_run asks: a new playbook
// from a file under the MCP root or as text (whose sub-playbooks are the earlier run's
// frozen ones), and workload values as `--set` gives them.
func retryRequest(ctx context.Context, c runs.Client, root Root, a retryArgs) (runs.RetryRequest, error) {
	req := runs.RetryRequest{Run: a.Run, From: a.From, Reason: a.Reason}
	if req.From == "" {
		req.From = a.Step
	}
	var err error
	if req.Overrides, err = submit.ReadOverrides("", a.Set); err != nil {
		return req, err
	}
	switch {
	case a.File != "" && a.Text != "":
		return req, errors.New("give file or text, not both")
	case a.File != "":
		pb, in, err := root.loadInput(a.File)
		if err != nil {
			return req, err
		}
		req.Playbook, req.Input, req.File = pb, &in, a.File
	case a.Text != "":
		before, err := runs.FrozenInput(ctx, c, a.Run)
		if err != nil {
			return req, toolError(a.Run, err)
		}
		// The text stands where the earlier run's file stood, so that its
		// relative paths mean what they meant.
		name := filepath.Join(before.BaseDir, filepath.Base(before.File))
		b, err := submit.LoadBundle(name, func(abs string) ([]byte, error) {
			if abs == name {
				return []byte(a.Text), nil
			}
			if text, ok := before.Files[abs]; ok {
				return []byte(text), nil
			}
			return nil, errors.New("not a sub-playbook of the earlier run")
		})
		if err != nil {
			return req, err
		}
		in := contract.Input{File: before.File, BaseDir: before.BaseDir, Source: a.Text}
		if len(b.Files) > 1 {
			in.Files = b.Files
		}
		req.Playbook, req.Input, req.File = b.Root, &in, "(text)"
	}
	return req, nil
}
