package commands

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
)

// auto compresses nothing on loopback and uses gzip, the SDK's default,
// elsewhere; gzip and none say so wherever the server is.
func TestGrpcCompressionByAddress(t *testing.T) {
	none, gz := &client.GrpcCompressionNone{}, &client.GrpcCompressionGzip{}
	for _, c := range []struct {
		flag, hostPort string
		want           client.GrpcCompression
	}{
		{"auto", "127.0.0.1:7233", none},
		{"auto", "127.8.9.10:7233", none},
		{"auto", "[::1]:7233", none},
		{"auto", "localhost:7233", none},
		{"auto", "LocalHost:7233", none},
		{"auto", "localhost.:7233", none},
		{"auto", "temporal.localhost:7233", none},
		{"auto", "", none}, // the SDK's default, localhost:7233
		{"auto", "temporal.example.com:7233", gz},
		{"auto", "10.0.0.7:7233", gz},
		{"auto", "my-ns.a1b2c.tmprl.cloud:7233", gz},
		{"auto", "localhost.example.com:7233", gz},
		{"gzip", "127.0.0.1:7233", gz},
		{"none", "temporal.example.com:7233", none},
	} {
		p, err := parseCompression(c.flag)
		require.NoError(t, err)
		require.IsType(t, c.want, p.of(c.hostPort), "%s %s", c.flag, c.hostPort)
	}
	_, err := parseCompression("brotli")
	require.EqualError(t, err, `--grpc-compression "brotli": give auto, gzip or none`)
}

// countingGzip is gRPC's gzip, counting the messages it compresses: the
// requests this process's clients send with gzip (and the answers the
// fake frontend compresses in turn).
type countingGzip struct {
	encoding.Compressor
	n *atomic.Int64
}

func (c countingGzip) Compress(w io.Writer) (io.WriteCloser, error) {
	c.n.Add(1)
	return c.Compressor.Compress(w)
}

type connectOnly struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (connectOnly) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// The CLI's requests to a server on loopback go uncompressed, and gzipped
// when --grpc-compression gzip says so.
func TestRequestsToLoopbackGoUncompressed(t *testing.T) {
	var compressed atomic.Int64
	encoding.RegisterCompressor(countingGzip{Compressor: encoding.GetCompressor(gzip.Name), n: &compressed})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// A frontend that lets a client connect and answers every other call
	// Unimplemented: the command's first request is sent.
	gs := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(gs, connectOnly{})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	for _, c := range []struct {
		flag       []string
		compresses bool
	}{
		{nil, false},
		{[]string{"--grpc-compression", "none"}, false},
		{[]string{"--grpc-compression", "gzip"}, true},
	} {
		compressed.Store(0)
		code, _, errOut := cli(t, append([]string{"list", "--address", lis.Addr().String()}, c.flag...)...)
		require.NotEqual(t, 0, code, errOut)
		require.Equal(t, c.compresses, compressed.Load() > 0, "%v: %d messages compressed; %s", c.flag, compressed.Load(), errOut)
	}
}
