package commands

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/internal/codec"
	"playbook/internal/store"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/worker"
)

// localDevAddress is where `playbook dev` (and `temporal server start-dev`) listen.
const localDevAddress = "127.0.0.1:7233"

// quietLogs is a log level above every level the SDK uses.
const quietLogs = slog.LevelError + 4

// embeddedServer is the in-memory server `run` starts when none is
// configured (startEmbedded); a worker-only build has none.
type embeddedServer interface{ Stop() }

// connection is a client, plus the embedded server and worker it brought up.
type connection struct {
	client    client.Client
	namespace string
	embedded  embeddedServer
	worker    sdkworker.Worker
	closed    atomic.Bool
	// codec encrypts the client's payloads; nil without a key.
	codec *codec.AESGCM
	// profileCodec is the codec endpoint the envconfig profile names.
	profileCodec string
	// reach is what a command typed in another terminal adds to reach
	// this server and namespace, when the environment would not: the
	// --address and --namespace given, or the embedded server's address.
	// Printed in the command lines the CLI suggests.
	reach string
	// storeDir is the temporary store of an embedded run's worker, removed
	// with it.
	storeDir string
	// largeValues: the client keeps payloads over 256 KiB in the workers'
	// store, so the runs it starts do too (useClaims).
	largeValues bool
	// localDev: the server is the `playbook dev` found on this machine.
	localDev bool
}

// Close closes the connection, and stops the embedded server and worker it
// brought up; a second Close returns at once, even while the first goes on.
func (c *connection) Close() {
	if c.closed.Swap(true) {
		return
	}
	if c.worker != nil {
		c.worker.Stop()
	}
	if c.storeDir != "" {
		_ = os.RemoveAll(c.storeDir)
	}
	c.client.Close()
	if c.embedded != nil {
		c.embedded.Stop()
	}
}

// connect dials Temporal as envconfig says (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TLS and API key settings, profiles), with --address/--namespace on top.
// With embedOK and no server configured, it uses one listening on
// 127.0.0.1:7233, or else starts an embedded in-memory server and a worker,
// saying so on stderr.
func (a *app) connect(c *call, embedOK bool, logLevel slog.Level) (*connection, error) {
	return a.connectWith(c, embedOK, logLevel, nil)
}

// connectWith is connect with tune, when not nil, changing the client's
// options (its logger, its metrics) before it dials.
func (a *app) connectWith(c *call, embedOK bool, logLevel slog.Level, tune func(*client.Options)) (*connection, error) {
	settings, err := a.loadClientSettings()
	if err != nil {
		return nil, err
	}
	compress, err := parseCompression(a.conn.compression)
	if err != nil {
		return nil, err
	}
	opts := settings.opts
	if a.conn.given("address") {
		opts.HostPort = a.conn.address
	}
	if a.conn.given("namespace") {
		opts.Namespace = a.conn.namespace
	}
	keys, err := useCodec(&opts, "")
	if err != nil {
		return nil, invalid(err)
	}
	opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: logLevel})))
	if tune != nil {
		tune(&opts)
	}
	conn := &connection{codec: keys, profileCodec: settings.codecEndpoint}
	if a.conn.given("profile") {
		conn.reach += " --profile " + engine.ShellWord(a.conn.profile)
	}
	if a.conn.given("address") {
		conn.reach += " --address " + engine.ShellWord(opts.HostPort)
	}
	var embeddedStore store.Store
	if opts.HostPort == "" && embedOK {
		if listening(localDevAddress) {
			opts.HostPort = localDevAddress
			conn.localDev = true
		} else {
			dev, address, err := startEmbedded(opts.Namespace, a.embeddedPort)
			if err != nil {
				return nil, err
			}
			conn.embedded = dev
			opts.HostPort = address
			conn.reach += " --address " + engine.ShellWord(address)
			fmt.Fprintf(c.stderr, "No Temporal server configured: started an embedded in-memory one on %s for this run.\n", address)
			if embeddedStore, err = conn.embeddedStore(c.ctx); err != nil {
				conn.abandon()
				return nil, err
			}
		}
	}
	conn.useClaims(&opts, embeddedStore)
	if a.embeddedPort != 0 && conn.embedded == nil {
		return nil, invalidf("--embedded-port %d: this run uses the Temporal server at %s, not an embedded one", a.embeddedPort, opts.HostPort)
	}
	conn.namespace = opts.Namespace
	if a.conn.given("namespace") {
		conn.reach += " --namespace " + engine.ShellWord(opts.Namespace)
	}
	if conn.namespace == "" {
		conn.namespace = client.DefaultNamespace
	}
	worker.RefuseOversizedUpdates(&opts)
	opts.ConnectionOptions.GrpcCompression = compress.of(opts.HostPort)
	if conn.client, err = client.Dial(opts); err != nil {
		conn.abandon()
		return nil, unreachable(c.ctx, opts.HostPort, err)
	}
	if conn.embedded != nil {
		// The run ends with the embedded server: a step still running when
		// the command stops is stopped at once, not drained.
		conn.worker = worker.New(conn.client, worker.Options{TaskQueue: a.conn.taskQueue, DrainTimeout: time.Nanosecond, SecretsDir: os.Getenv("PLAYBOOK_SECRETS_DIR"), Store: embeddedStore, LargeValues: true})
		if err := conn.worker.Start(); err != nil {
			conn.Close()
			return nil, fmt.Errorf("embedded worker: %w", err)
		}
	}
	return conn, nil
}

// The values of --grpc-compression.
const (
	compressionAuto = "auto"
	compressionGzip = "gzip"
	compressionNone = "none"
)

// compression is how a client compresses its requests to Temporal, as
// --grpc-compression says (checked by parseCompression).
type compression string

func parseCompression(flag string) (compression, error) {
	switch flag {
	case compressionAuto, compressionGzip, compressionNone:
		return compression(flag), nil
	}
	return "", invalidf("--grpc-compression %q: give auto, gzip or none", flag)
}

// of is the compression of requests to the server at hostPort. auto
// compresses nothing on loopback (the embedded server, `playbook dev`, a
// server on this machine), where compressing and decompressing every
// request and answer costs both ends CPU and saves nothing, and uses
// gzip, the SDK's default, elsewhere.
func (c compression) of(hostPort string) client.GrpcCompression {
	if c == compressionNone || (c == compressionAuto && onLoopback(hostPort)) {
		return &client.GrpcCompressionNone{}
	}
	return &client.GrpcCompressionGzip{}
}

// onLoopback says whether hostPort names this machine by a loopback
// address or as localhost (or a name under it, RFC 6761); "" is the
// SDK's default, localhost:7233.
func onLoopback(hostPort string) bool {
	if hostPort == "" {
		hostPort = client.DefaultHostPort
	}
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listening(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// warnWithoutWorker says so when no worker has polled the task queue
// lately: the run would wait, silently, until one does.
// The same for each other queue pb's steps name (the embedded worker
// polls only the run's): its steps would wait.
func (c *connection) warnWithoutWorker(ctx context.Context, queue string, pb *spec.Playbook, out io.Writer) {
	if c.worker == nil {
		resp, err := c.client.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil && len(resp.GetPollers()) == 0 {
			fmt.Fprintf(out, "No worker is polling task queue %q: the run waits until one does (start one with `playbook worker`).\n", queue)
		}
	}
	for _, q := range runs.IdleQueues(ctx, c.client, pb, queue) {
		steps, wait := "step", "it waits"
		if len(q.Steps) > 1 {
			steps, wait = "steps", "they wait"
		}
		fmt.Fprintf(out, "No worker is polling task queue %q of %s %s: %s until one does (start one with `playbook worker --task-queue %s`).\n",
			q.Queue, steps, strings.Join(q.Steps, ", "), wait, q.Queue)
	}
}

// awaitPoller waits until the server lists a poller on the task queue, at
// most pollerWait.
func awaitPoller(ctx context.Context, c client.Client, queue string) {
	ctx, cancel := context.WithTimeout(ctx, pollerWait)
	defer cancel()
	for !runs.Polled(ctx, c, queue) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pollerWait bounds how long a worker that has started may take to be
// listed as a poller of its task queue.
const pollerWait = 10 * time.Second

// connected is the action of a command that talks to Temporal: it
// connects (a failure to is the command's error: exit 4 when the server is
// unreachable, else 1), runs do and closes the connection.
func (a *app) connected(do func(c *call, conn *connection) error) func(*cobra.Command, []string) error {
	return action(func(c *call) error { return a.withConnection(c, do) })
}

// withConnection connects, runs do and closes the connection.
func (a *app) withConnection(c *call, do func(c *call, conn *connection) error) error {
	conn, err := a.connect(c, false, quietLogs)
	if err != nil {
		return err
	}
	defer conn.Close()
	return do(c, conn)
}

// embeddedStore is the store of a one-shot embedded run's worker:
// $PLAYBOOK_STORE, else a temporary directory kept until the command ends
// (its files go with the in-memory server that ran it).
func (c *connection) embeddedStore(ctx context.Context) (store.Store, error) {
	if raw := os.Getenv("PLAYBOOK_STORE"); raw != "" {
		st, err := store.Open(ctx, raw)
		if err != nil {
			return nil, invalidf("PLAYBOOK_STORE: %v", err)
		}
		return st, nil
	}
	dir, err := os.MkdirTemp("", "playbook-store-")
	if err != nil {
		return nil, err
	}
	c.storeDir = dir
	return store.Open(ctx, "file://"+dir)
}
