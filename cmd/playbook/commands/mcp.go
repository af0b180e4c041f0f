package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"playbook/interpreter/contract"
	"playbook/worker"
)

// mcpVersion is the version the MCP server reports.
const mcpVersion = "0.1.0"

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
			"with --allow-write only, classify_step, approve_step, reject_step, retry_run, cancel_run\n" +
			"(each recorded in the run with who (mcp) and the reason). Connects to Temporal like\n" +
			"every command; it needs a\n" +
			"running server (no embedded one). With --http it listens on 127.0.0.1 by default and\n" +
			"refuses browser requests from other origins.",
		Args: noArgs,
		RunE: action(func(c *call) error {
			root, err := newFileRoot(rootDir, "--root")
			if err != nil {
				return invalid(err)
			}
			if httpAddr != "" {
				if httpAddr, err = mcpListenAddress(httpAddr); err != nil {
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
			return serveMCP(c, conn, &mcpTools{conn: conn, allowWrite: allowWrite, logDir: logDir, taskQueue: a.conn.taskQueue, root: root, actFor: actFor, store: st}, httpAddr, allowOrigins)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&httpAddr, "http", "", "serve streamable HTTP on `HOST:PORT` (e.g. 127.0.0.1:8765) instead of stdio; a bare :PORT means 127.0.0.1:PORT")
	fs.BoolVar(&allowWrite, "allow-write", false, "enable classify_step, approve_step, reject_step, retry_run and cancel_run")
	fs.StringSliceVar(&actFor, "act-for", nil, "with --allow-write: approve_step and reject_step may decide as these `NAME`s (an approval's approvers), not only as mcp; repeatable")
	fs.StringSliceVar(&allowOrigins, "allow-origin", nil, "an `ORIGIN` (scheme://host:port) whose browser pages may call the HTTP server; repeatable")
	fs.StringVar(&logDir, "log-dir", worker.DefaultLogDir(), "the worker's log directory, for step logs")
	fs.StringVar(&storeURL, "store", worker.DefaultStore(), "the workers' store, for list_files: "+storeFlagUsage)
	fs.StringVar(&rootDir, "root", ".", "validate_playbook reads playbook files only under this `DIR` (symbolic links resolved), never special files")
	return cmd
}

// serveMCP serves the tools on stdio, or on streamable HTTP at httpAddr,
// until the command is stopped.
func serveMCP(c *call, conn *connection, tools *mcpTools, httpAddr string, allowOrigins []string) error {
	if _, err := conn.client.CheckHealth(c.ctx, nil); err != nil {
		return fmt.Errorf("no Temporal server reachable (start one with `playbook dev`, or give --address): %w", err)
	}
	srv := newMCPServer(tools)
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if httpAddr != "" {
		return serveMCPHTTP(ctx, srv, httpAddr, allowOrigins, c.stderr)
	}
	if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		return err
	}
	return nil
}

// mcpListenAddress checks --http: HOST:PORT, or :PORT for 127.0.0.1:PORT.
func mcpListenAddress(addr string) (string, error) {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		return "", fmt.Errorf("--http %q: give HOST:PORT, such as 127.0.0.1:8765 (%v)", addr, unwrapAddrErr(err))
	}
	return addr, nil
}

func unwrapAddrErr(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

// serveMCPHTTP serves streamable HTTP until ctx ends.
func serveMCPHTTP(ctx context.Context, srv *mcp.Server, addr string, origins []string, notes interface{ Write([]byte) (int, error) }) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{Handler: checkOrigin(handler, origins), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(notes, "MCP server on http://%s (streamable HTTP)\n", l.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkOrigin refuses requests whose Origin header names another site, as
// the MCP specification asks: a page in the user's browser must not drive
// the server. Clients that are not browsers send no Origin. A request from
// the server's own origin, or one given with --allow-origin, is let through.
func checkOrigin(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !originAllowed(origin, r.Host, allowed) {
			slog.Debug("mcp: refused cross-origin request", "origin", origin)
			http.Error(w, fmt.Sprintf("Forbidden: origin %q may not call this MCP server (allow it with --allow-origin)", origin), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin, host string, allowed []string) bool {
	for _, a := range allowed {
		if strings.TrimRight(a, "/") == origin {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == host
}
