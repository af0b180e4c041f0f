package commands

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// An HTTP server where the gRPC frontend was expected (the Web UI's port)
// is named as such, not as gRPC's "frame too large".
func TestUnreachableSaysAnHTTPServerAnswered(t *testing.T) {
	for _, why := range []string{
		"connection error: desc = \"error reading server preface: http2: frame too large\"",
		"connection error: desc = \"error reading server preface: malformed HTTP response \\\"HTTP/1.0 400 Bad Request\\\"\"",
	} {
		err := unreachable(context.Background(), "127.0.0.1:8233", errors.New(why))
		require.EqualError(t, err, "cannot reach Temporal at 127.0.0.1:8233: an HTTP server answers there, not Temporal's gRPC frontend (the Web UI's port? the frontend's is 7233 by default, the UI's 8233)")
	}
}
