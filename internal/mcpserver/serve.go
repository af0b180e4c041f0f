// Package mcpserver is the MCP server (`playbook mcp`): tools an AI agent
// calls to inspect runs, resolve pending_failed steps, decide approvals,
// retry and cancel, each a front end on runs/ (the client side of a run),
// as the CLI is. It knows nothing of flags or exit codes: the CLI's mcp
// command parses them and calls New and Serve.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the version the MCP server reports.
const Version = "0.1.0"

// Serve serves srv on stdio, or on streamable HTTP at httpAddr (notes
// says where), until ctx ends.
func Serve(ctx context.Context, srv *mcp.Server, httpAddr string, allowOrigins []string, notes io.Writer) error {
	if httpAddr != "" {
		return serveHTTP(ctx, srv, httpAddr, allowOrigins, notes)
	}
	if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		return err
	}
	return nil
}

// ListenAddress checks --http: HOST:PORT, or :PORT for 127.0.0.1:PORT.
func ListenAddress(addr string) (string, error) {
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

// serveHTTP serves streamable HTTP until ctx ends.
func serveHTTP(ctx context.Context, srv *mcp.Server, addr string, origins []string, notes io.Writer) error {
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
