package commands

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"playbook/runs"
)

// unreachable explains a failed dial in the user's terms: a host that does
// not resolve says so (gRPC's own words are "no children to pick from"),
// and with no server configured it says where runs of the embedded server
// went.
func unreachable(ctx context.Context, configured string, err error) error {
	addr := configured
	if addr == "" {
		addr = client.DefaultHostPort
	}
	msg := fmt.Sprintf("cannot reach Temporal at %s: %v", addr, err)
	if host, _, splitErr := net.SplitHostPort(addr); splitErr == nil && net.ParseIP(host) == nil {
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var dnsErr *net.DNSError
		if _, lerr := net.DefaultResolver.LookupHost(lctx, host); errors.As(lerr, &dnsErr) && dnsErr.IsNotFound {
			msg = fmt.Sprintf("cannot reach Temporal at %s: host %s does not resolve", addr, host)
		}
	}
	if strings.Contains(err.Error(), "frame too large") || strings.Contains(err.Error(), "malformed HTTP response") {
		// An HTTP server (the Web UI, a metrics endpoint) answered gRPC.
		msg = fmt.Sprintf("cannot reach Temporal at %s: an HTTP server answers there, not Temporal's gRPC frontend (the Web UI's port? the frontend's is 7233 by default, the UI's 8233)", addr)
	}
	if configured == "" {
		msg = fmt.Sprintf("cannot reach Temporal at %s: no server listens there and none is configured (--address, TEMPORAL_ADDRESS, a profile).\n"+
			"Runs on the embedded in-memory server that `playbook run` starts when no server is configured end with that command;\n"+
			"start `playbook dev` in another terminal and run playbooks there to look at them afterwards.", addr)
	}
	return &runs.UnreachableError{Msg: msg}
}
