package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"playbook/internal/store"
	"playbook/runs"
	"playbook/worker"
)

// filesCommand lists a run's files in the store; `files get` fetches one.
// Both ask the server, when there is one, for the files the run recorded
// (runs.Files); else they read the store, which keeps a run's files by
// its ID.
func (a *app) filesCommand() *cobra.Command {
	var (
		storeURL string
		out      printer
	)
	cmd := &cobra.Command{
		Use:   "files RUN [STEP]",
		Short: "list the files a run's steps handed on (outputs.files), from the run's store",
		Long: "Lists each file a step of RUN handed on, with its size and sha256; a loop's\n" +
			"elements are STEP[INDEX]. With STEP, that step's files only. With a server\n" +
			"(--address, TEMPORAL_ADDRESS, a profile, or a playbook dev on this machine)\n" +
			"they are the files the run recorded, those a retry reused included; without\n" +
			"one, or for a run it no longer knows, those the store keeps under RUN.",
		Args: oneOrTwoArgs("the RUN (workflow ID), and a STEP if you like"),
		RunE: action(func(c *call) error {
			st, err := openStore(c.ctx, storeURL)
			if err != nil {
				return err
			}
			run := c.args[0]
			if err := store.CheckKey(run); err != nil {
				return invalidf("RUN %q: %v", run, err)
			}
			step := ""
			if len(c.args) == 2 {
				step = c.args[1]
			}
			files, err := a.runFiles(c, st, run, step)
			if err != nil {
				return err
			}
			if len(files) == 0 && !out.json {
				fmt.Fprintf(c.stdout, "No files for %s in %s.\n", strings.Join(c.args, " "), storeURL)
				return nil
			}
			return out.print(c.stdout, files, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "STEP\tPATH\tBYTES\tSHA256")
				for _, f := range files {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", f.Step, f.Path, f.Bytes, f.SHA256)
				}
				tw.Flush()
			})
		}),
	}
	cmd.Flags().StringVar(&storeURL, "store", worker.DefaultStore(), storeFlagUsage)
	out.flag(cmd.Flags(), "print the files as JSON: step, path, bytes, sha256, uri")
	cmd.AddCommand(a.filesGetCommand(), a.filesGCCommand())
	return cmd
}

// runFiles lists run's files (runs.Files), as the server tells when one is
// known, else from the store.
func (a *app) runFiles(c *call, st store.Store, run, step string) ([]runs.StoredFile, error) {
	server := a.knownServer(c)
	defer server.close()
	var client runs.Client
	if conn := server.get(); conn != nil {
		client = conn.client
	}
	return runs.Files(c.ctx, client, st, run, step)
}

func (a *app) filesGetCommand() *cobra.Command {
	var storeURL, output string
	cmd := &cobra.Command{
		Use:   "get RUN STEP PATH",
		Short: "fetch one of a run's files: to stdout, or to a file with -o",
		Long: "The file's size and sha256 are checked as it is fetched: a file that does not\n" +
			"match what its step recorded (with a server) or what the store recorded is an\n" +
			"error, and -o then leaves no file.",
		Args: exactArgs(3, "the RUN, the STEP (a loop's element: STEP[INDEX]) and the file's PATH"),
		RunE: action(func(c *call) error {
			st, err := openStore(c.ctx, storeURL)
			if err != nil {
				return err
			}
			run, step, path := c.args[0], c.args[1], c.args[2]
			if key := store.Join(c.args...); store.CheckKey(key) != nil || key != strings.Join(c.args, "/") {
				return invalidf("%s %s %s is not a stored file's name", run, step, path)
			}
			files, err := a.runFiles(c, st, run, step)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(files, func(f runs.StoredFile) bool { return f.Step == step && f.Path == path })
			if i < 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("no file %s of step %s in run %s (see `playbook files %s %s`)", path, step, run, run, step), whole: true}
			}
			want := files[i]
			key, err := store.KeyOf(st, want.URI)
			if err != nil {
				return &exitError{code: exitFailed, err: fmt.Errorf("file %s of step %s: %v; give the store it is in (--store)", path, step, err), whole: true}
			}
			body, obj, err := st.Get(c.ctx, key)
			if errors.Is(err, store.ErrNotFound) {
				return &exitError{code: exitFailed, err: fmt.Errorf("file %s of step %s in run %s is not in the store any more, at %s (files gc, or a lifecycle rule, removed it?)", path, step, run, want.URI), whole: true}
			}
			if err != nil {
				return err
			}
			defer body.Close()
			// What the step recorded, not what the store says of the object now.
			obj.Bytes, obj.SHA256 = want.Bytes, want.SHA256
			if output == "" || output == "-" {
				return copyChecked(c.stdout, body, obj)
			}
			tmp, err := os.CreateTemp(filepath.Dir(output), ".playbook-files-*")
			if err != nil {
				return invalidf("-o %s: %v", output, err)
			}
			defer os.Remove(tmp.Name())
			err = copyChecked(tmp, body, obj)
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), output); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "Wrote %s (%d bytes).\n", output, obj.Bytes)
			return nil
		}),
	}
	cmd.Flags().StringVar(&storeURL, "store", worker.DefaultStore(), storeFlagUsage)
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the file to `FILE` instead of stdout")
	return cmd
}

// copyChecked copies a stored object and checks its size and, where the
// store recorded it, its sha256.
func copyChecked(w io.Writer, r io.Reader, obj store.Object) error {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), r)
	if err != nil {
		return err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if n != obj.Bytes || (obj.SHA256 != "" && sum != obj.SHA256) {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: %d bytes of sha256 %s arrived, not what was recorded (%d bytes, %s)", obj.Key, n, sum, obj.Bytes, obj.SHA256), whole: true}
	}
	return nil
}

func (a *app) filesGCCommand() *cobra.Command {
	var (
		storeURL, olderThan string
		dry                 bool
		out                 printer
	)
	cmd := &cobra.Command{
		Use:   "gc --older-than AGE",
		Short: "remove the stored files and large values of runs that ended longer ago than AGE, and of runs the server no longer knows",
		Long: "Asks the server when each run the store holds ended: a run that ended longer\n" +
			"ago than AGE (30d, 36h, 90m), or that the server no longer knows (its\n" +
			"retention removed it) and whose newest file is that old, loses its files and\n" +
			"claims; a run still open is kept, and so is what a kept run needs (a\n" +
			"sub-playbook child's objects while its parent is kept, the files a kept\n" +
			"retry reuses). --dry-run removes nothing and says what it would.",
		Args: exactArgs(0, "no argument (the store is --store)"),
		RunE: a.connected(func(c *call, conn *connection) error {
			age, err := runs.ParseAge(olderThan)
			if err != nil {
				return invalidf("--older-than: %v", err)
			}
			st, err := openStore(c.ctx, storeURL)
			if err != nil {
				return err
			}
			removed, unread, err := runs.CollectFiles(c.ctx, conn.client, conn.namespace, st, age, time.Now(), dry)
			if err != nil {
				return err
			}
			for _, w := range unread {
				fmt.Fprintf(c.stderr, "Warning: %s.\n", w)
			}
			verb := "Removed"
			if dry {
				verb = "Would remove (dry run: nothing removed)"
			}
			return out.print(c.stdout, removed, func(w io.Writer) {
				if len(removed) == 0 {
					fmt.Fprintf(w, "Nothing to remove in %s: no run there ended more than %s ago.\n", storeURL, olderThan)
					return
				}
				var objects int
				var bytes int64
				for _, r := range removed {
					objects, bytes = objects+r.Objects, bytes+r.Bytes
				}
				fmt.Fprintf(w, "%s %s (%d bytes) of %s from %s:\n", verb, countOf(objects, "object"), bytes, countOf(len(removed), "run"), storeURL)
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tOBJECTS\tBYTES\tWHY")
				for _, r := range removed {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.Run, r.Objects, r.Bytes, r.Why)
				}
				tw.Flush()
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&storeURL, "store", worker.DefaultStore(), storeFlagUsage)
	fs.StringVar(&olderThan, "older-than", "", "remove what runs that ended longer ago than `AGE` kept (30d, 36h, 90m)")
	fs.BoolVar(&dry, "dry-run", false, "remove nothing; say what would be removed")
	out.flag(fs, "print what was removed as JSON: run, why, objects, bytes")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}
