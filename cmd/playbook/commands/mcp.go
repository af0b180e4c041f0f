package commands

import (
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"playbook/internal/mcpserver"
	"playbook/interpreter/contract"
	"playbook/worker"
)

func (a *app) mcpCommand() *cobra.Command {
	var (
		httpAddr, logDir, rootDir, storeURL string
		allowWrite                          bool
		allowOrigins, actFor                []string
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "serve the Model Context Protocol (stdio, or --http) so an AI agent can inspect runs, resolve pending_failed steps and decide approvals",
		Long: "Tools: list_runs, run_status, list_pending_failed, step_logs, list_files, validate_playbook,\n" +
			"test_playbook, and,\n" +
			"with --allow-write only, classify_step, approve_step, reject_step, retry_run, cancel_run, send_event\n" +
			"(each recorded in the run with who (mcp) and the reason). Connects to Temporal like\n" +
			"every command; it needs a\n" +
			"running server (no embedded one). With --http it listens on 127.0.0.1 by default and\n" +
			"refuses browser requests from other origins.",
		Args: noArgs,
		RunE: action(func(c *call) error {
			root, err := mcpserver.NewRoot(rootDir, "--root")
			if err != nil {
				return invalid(err)
			}
			if httpAddr != "" {
				if httpAddr, err = mcpserver.ListenAddress(httpAddr); err != nil {
					return invalid(err)
				}
			}
			for _, name := range actFor {
				if err := contract.CheckName("--act-for "+strconv.Quote(name), name); err != nil || name == "" {
					return invalidf("--act-for %q: give the name of a person, one line of printable text", name)
				}
			}
			for _, o := range allowOrigins {
				if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
					return invalidf("--allow-origin %q: give an origin, scheme://host:port, such as http://127.0.0.1:3000", o)
				}
			}
			st, err := openStore(c.ctx, storeURL)
			if err != nil {
				return err
			}
			conn, err := a.connectWith(c, false, quietLogs, storeClaims(st, storeURL))
			if err != nil {
				return err
			}
			defer conn.Close()
			if _, err := conn.client.CheckHealth(c.ctx, nil); err != nil {
				return fmt.Errorf("no Temporal server reachable (start one with `playbook dev`, or give --address): %w", err)
			}
			srv := mcpserver.New(mcpserver.Options{Client: conn.client, Namespace: conn.namespace, TaskQueue: a.conn.taskQueue, AllowWrite: allowWrite,
				LogDir: logDir, Root: root, ActFor: actFor, Store: st, Check: conn.checkCodec, LargeValues: conn.largeValues})
			ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return mcpserver.Serve(ctx, srv, httpAddr, allowOrigins, c.stderr)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&httpAddr, "http", "", "serve streamable HTTP on `HOST:PORT` (e.g. 127.0.0.1:8765) instead of stdio; a bare :PORT means 127.0.0.1:PORT")
	fs.BoolVar(&allowWrite, "allow-write", false, "enable classify_step, approve_step, reject_step, retry_run, cancel_run and send_event")
	fs.StringSliceVar(&actFor, "act-for", nil, "with --allow-write: approve_step and reject_step may decide as these `NAME`s (an approval's approvers), not only as mcp; repeatable")
	fs.StringSliceVar(&allowOrigins, "allow-origin", nil, "an `ORIGIN` (scheme://host:port) whose browser pages may call the HTTP server; repeatable")
	fs.StringVar(&logDir, "log-dir", worker.DefaultLogDir(), "the worker's log directory, for step logs")
	fs.StringVar(&storeURL, "store", worker.DefaultStore(), "the workers' store, for list_files: "+storeFlagUsage)
	fs.StringVar(&rootDir, "root", ".", "validate_playbook reads playbook files only under this `DIR` (symbolic links resolved), never special files")
	return cmd
}
