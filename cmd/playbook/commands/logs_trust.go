package commands

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
)

// logsHostsEnv lists the workers `playbook logs` sends PLAYBOOK_LOGS_TOKEN
// to, besides loopback: HOST or HOST:PORT, comma-separated.
const logsHostsEnv = "PLAYBOOK_LOGS_HOSTS"

// logsTrust says which workers get the logs token. Where an attempt
// logged is read from the run's history, which whoever can write to the
// namespace can shape: the token goes only to loopback and to the hosts
// the user named (--trust-logs-host, PLAYBOOK_LOGS_HOSTS), never to any
// URL a history names.
type logsTrust struct {
	hosts []string
	// notes is where a token held back is said.
	notes io.Writer
}

func newLogsTrust(flag []string, notes io.Writer) logsTrust {
	t := logsTrust{notes: notes}
	for _, h := range append(flag, strings.Split(os.Getenv(logsHostsEnv), ",")...) {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			t.hosts = append(t.hosts, h)
		}
	}
	return t
}

// trusts says whether the worker serving at base (http://HOST:PORT) may
// get the token.
func (t logsTrust) trusts(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return true
	}
	for _, h := range t.hosts {
		if h == host || h == strings.ToLower(u.Host) {
			return true
		}
	}
	return false
}

// token is the logs token for the worker at base: "" when there is none,
// or when base is not trusted, which is said on notes.
func (t logsTrust) token(base string) string {
	token := os.Getenv(logsTokenEnv)
	if token == "" || t.trusts(base) {
		return token
	}
	fmt.Fprintf(t.notes, "Not sending %s to %s: that worker is not trusted (trust it with --trust-logs-host %s or %s).\n",
		logsTokenEnv, base, hostOf(base), logsHostsEnv)
	return ""
}

func hostOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Hostname()
	}
	return base
}
