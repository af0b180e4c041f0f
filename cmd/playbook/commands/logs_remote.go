package commands

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// remoteLogTimeout bounds a worker's silence while one log is fetched from it.
const remoteLogTimeout = 30 * time.Second

// serverKnown says whether `playbook logs` has a server to ask: one is
// configured, or `playbook dev` listens on its usual address.
func (a *app) serverKnown() bool {
	s, err := a.loadClientSettings()
	return a.conn.given("address") || (err == nil && s.opts.HostPort != "") || listening(localDevAddress)
}

// knownServer is the server a command that works without one (logs,
// files) asks when one is known (serverKnown): connected at the first ask
// and kept for the next, so that a command connects once at most.
type knownServer struct {
	a     *app
	c     *call
	conn  *connection
	asked bool
}

// knownServer is the command's knownServer; close it when done.
func (a *app) knownServer(c *call) *knownServer { return &knownServer{a: a, c: c} }

// get is the connection, nil when no server is known or it cannot be
// reached.
func (s *knownServer) get() *connection {
	if !s.asked {
		s.asked = true
		if s.a.serverKnown() {
			if conn, err := s.a.connect(s.c, false, quietLogs); err == nil {
				s.conn = conn
			}
		}
	}
	return s.conn
}

func (s *knownServer) close() {
	if s.conn != nil {
		s.conn.Close()
	}
}

// printRemoteLogs prints attempt n's stdout and stderr, fetched from the
// worker that ran it, as the local logs are printed; the logs token goes
// only to a worker trust trusts.
func printRemoteLogs(c *call, trust logsTrust, logsAt, run, runID, step string, n int) error {
	token := trust.token(logsAt)
	for _, stream := range []string{"stdout", "stderr"} {
		u := fmt.Sprintf("%s/logs/%s/%s/%d/%s", logsAt, url.PathEscape(run), url.PathEscape(step), n, stream)
		if runID != "" {
			// An earlier run of the ID; without it the worker serves the latest.
			u += "?run_id=" + url.QueryEscape(runID)
		}
		if err := copyLog(c.ctx, c.stdout, fmt.Sprintf("== attempt %d %s (%s) ==\n", n, stream, u), u, token); err != nil {
			return err
		}
	}
	return nil
}

// copyLog writes header, then the log at u as it arrives, ending with a
// newline: a log may be larger than memory, and take longer than
// remoteLogTimeout to copy. The timeout bounds the worker's silence: until
// it answers, and between two reads. token, when not empty, is sent.
func copyLog(ctx context.Context, w io.Writer, header, u, token string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	silence := time.AfterFunc(remoteLogTimeout, cancel)
	defer silence.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return copyStream(w, header, u, resp.Body, func() { silence.Reset(remoteLogTimeout) })
}
