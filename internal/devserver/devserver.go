// Package devserver is the embedded Temporal server: the one `playbook dev`
// runs, the in-memory one `run` starts when no server is configured, and the
// test suite's. It links the whole Temporal server and Web UI, so only the
// commands that start it import it, and the worker-only build (-tags
// noserver) leaves those out.
package devserver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// Options configure an embedded Temporal server: frontend, history,
// matching and worker services in this process over SQLite, plus the Web UI.
type Options struct {
	// Required: the IP every service binds to (loopback for the dev server).
	IP string

	// Optional: the frontend gRPC port; default a free port.
	Port int
	// Optional: the Web UI port; default no UI.
	UIPort int
	// Optional: the SQLite file holding all state; default in memory, gone on Stop.
	DBFile string
	// Optional: the namespace to create; default "default".
	Namespace string
	// Optional: the server's log level (debug, info, warn, error); default
	// fatal: the server's own logs stay out of the user's terminal (an
	// error it logs on a client hanging up is noise there) unless asked for.
	LogLevel string
	// Optional: the Web UI's Codec Endpoint (a `playbook codec-server`
	// URL), through which the browser decodes payloads; default none.
	CodecEndpoint string
	// Optional: the search attributes registered with the namespace
	// (playbook's own are runs.SearchAttributes(), which the caller gives:
	// the server knows nothing of the workflow); default none.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Optional: keep Temporal's stock queue poll rates, timer precision and
	// task queue partitions instead of the tuned ones (see tunedSettings);
	// default false. For measuring what the tuning gains.
	StockSettings bool
}

// Server is a running embedded Temporal server.
type Server struct {
	server temporal.Server
	ui     *uiserver.Server
	// Address is the frontend's host:port, ready for a client.
	Address string
	// UIAddress is the Web UI's host:port, empty without a UI.
	UIAddress string
	Namespace string
}

// Start validates the options, starts the server and returns once
// its frontend accepts connections.
func Start(o Options) (*Server, error) {
	if o.IP == "" {
		return nil, errors.New("dev server: missing IP")
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.LogLevel == "" {
		o.LogLevel = "fatal"
	}
	// Every port is held (listened on) from the moment it is chosen or
	// checked until just before its service binds it: a port picked free
	// and let go at once could be handed to the next pick, this server's
	// own or another process's, in the seconds the server takes to start.
	var serverPorts, uiPorts heldPorts
	defer serverPorts.release()
	defer uiPorts.release()
	var err error
	if o.Port, err = serverPorts.hold(o.IP, o.Port, "port"); err != nil {
		return nil, err
	}
	if o.UIPort != 0 {
		if _, err := uiPorts.hold(o.IP, o.UIPort, "UI port"); err != nil {
			return nil, err
		}
	}
	conf, err := o.buildConfig(&serverPorts)
	if err != nil {
		return nil, err
	}
	onePartition, err := o.singleReadPartition()
	if err != nil {
		return nil, err
	}
	serverPorts.release() // the services listen as they are built
	server, err := temporal.NewServer(o.buildServerOptions(conf, onePartition)...)
	if err != nil {
		return nil, fmt.Errorf("dev server: %w", err)
	}
	if err := server.Start(); err != nil {
		return nil, fmt.Errorf("dev server: %w", err)
	}
	d := &Server{server: server, Address: hostPort(o.IP, o.Port), Namespace: o.Namespace}
	if o.UIPort != 0 {
		d.ui = o.buildUIServer()
		d.UIAddress = hostPort(o.IP, o.UIPort)
		uiErr := make(chan error, 1)
		uiPorts.release()
		go func() { uiErr <- d.ui.Start() }()
		if err := waitListening(d.UIAddress, uiErr); err != nil {
			server.Stop()
			return nil, fmt.Errorf("dev server: web UI on %s: %w", d.UIAddress, err)
		}
	}
	return d, nil
}

// Stop stops the UI and the server; an in-memory database is gone after it.
func (d *Server) Stop() {
	if d.ui != nil {
		d.ui.Stop()
	}
	d.server.Stop()
}

func (o Options) buildUIServer() *uiserver.Server {
	return uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                o.IP,
		Port:                o.UIPort,
		TemporalGRPCAddress: hostPort(o.IP, o.Port),
		EnableUI:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		Codec:               uiconfig.Codec{Endpoint: o.CodecEndpoint, IncludeCredentials: o.CodecEndpoint != ""},
		HideLogs:            true,
		DisableNewsFetch:    true, // the machine may have no network beyond loopback
	}))
}

func (o Options) buildServerOptions(conf *config.Config, onePartition bool) []temporal.ServerOption {
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, svc := range []primitives.ServiceName{primitives.FrontendService, primitives.MatchingService, primitives.HistoryService, primitives.WorkerService} {
		hosts[svc] = static.SingleLocalHost(hostPort(o.IP, conf.Services[string(svc)].RPC.GRPCPort))
	}
	dyn := dynamicconfig.StaticClient{
		// A small host cache is plenty for one developer, and keeps memory low.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8096,
		// `run` polls a query while it follows a run; the default visibility rate is too low for tests.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	}
	if !o.StockSettings {
		for k, v := range tunedSettings(onePartition) {
			dyn[k] = v
		}
	}
	// Schedules (`playbook schedule`): the frontend serves their RPCs and the
	// worker service runs the scheduler. Both are on by default in this
	// server version; they are set here so that a changed default cannot
	// silently stop schedules. Intervals down to 1s (the server's fixed
	// minimum) need nothing more.
	dyn[dynamicconfig.FrontendEnableSchedules.Key()] = true
	dyn[dynamicconfig.WorkerEnableScheduler.Key()] = true
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: o.LogLevel, Format: "console"}))
	return []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dyn),
	}
}

func (o Options) buildConfig(ports *heldPorts) (*config.Config, error) {
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = o.IP
	sqlConf, err := o.buildSQLConfig()
	if err != nil {
		return nil, err
	}
	conf.Persistence.DefaultStore = "sqlite"
	conf.Persistence.VisibilityStore = "sqlite"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: sqlConf}}
	httpPort, err := ports.hold(o.IP, 0, "HTTP port")
	if err != nil {
		return nil, err
	}
	const clusterName = "active"
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled:                true,
			InitialFailoverVersion: 1,
			RPCAddress:             hostPort(o.IP, o.Port),
			HTTPAddress:            hostPort(o.IP, httpPort),
			ClusterID:              "playbook-dev",
		}},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		var svc config.Service
		svc.RPC.BindOnIP = o.IP
		if name == "frontend" {
			svc.RPC.GRPCPort, svc.RPC.HTTPPort = o.Port, httpPort
		} else if svc.RPC.GRPCPort, err = ports.hold(o.IP, 0, name+" port"); err != nil {
			return nil, err
		}
		conf.Services[name] = svc
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = hostPort(o.IP, o.Port)
	return &conf, nil
}

func (o Options) buildSQLConfig() (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	if o.DBFile == "" {
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = "playbook-" + strconv.Itoa(rand.IntN(1<<30))
	} else {
		// WAL with synchronous=normal commits without an fsync per
		// transaction (an fsync-bound file costs ~20 ms a step): a crash of
		// the process loses nothing, a crash of the OS or a power cut may
		// lose the last transactions before the WAL's checkpoint.
		conf.ConnectAttributes = map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"}
		conf.DatabaseName = o.DBFile
	}
	// The SQLite plugin lays out a memory database itself; a file gets its
	// schema here, once, when it does not exist yet.
	if o.DBFile != "" {
		if _, err := os.Stat(o.DBFile); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Dir(o.DBFile)); err != nil {
				return nil, fmt.Errorf("dev server: database directory: %w", err)
			}
			if err := sqliteschema.SetupSchema(conf); err != nil {
				return nil, fmt.Errorf("dev server: database schema: %w", err)
			}
		}
	}
	ns, err := sqliteschema.NewNamespaceConfig("active", o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("dev server: namespace: %w", err)
	}
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return nil, fmt.Errorf("dev server: namespace: %w", err)
	}
	return conf, nil
}

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// PortInUseError is a port another process listens on, found before the
// server would fail to bind it (its logger ends the process then): Which
// is "port" (the frontend's) or "UI port".
type PortInUseError struct {
	Which   string
	Address string
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("dev server: %s %s is in use (another playbook dev or Temporal server?)", e.Which, e.Address)
}

// heldPorts are ports listened on, so that nobody else is given them,
// until release lets them go for the services that bind them.
type heldPorts []net.Listener

// hold listens on ip:port, or on a port the kernel chooses when port is
// 0, and returns the port held.
func (h *heldPorts) hold(ip string, port int, which string) (int, error) {
	l, err := net.Listen("tcp", hostPort(ip, port))
	switch {
	case err != nil && port != 0:
		return 0, &PortInUseError{Which: which, Address: hostPort(ip, port)}
	case err != nil:
		return 0, fmt.Errorf("dev server: no free port on %s: %w", ip, err)
	}
	*h = append(*h, l)
	return l.Addr().(*net.TCPAddr).Port, nil
}

// release lets every held port go; a second call does nothing.
func (h *heldPorts) release() {
	for _, l := range *h {
		_ = l.Close()
	}
	*h = nil
}

// waitListening returns once addr accepts connections, or the server failed.
func waitListening(addr string, failed <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-failed:
			return err
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("not listening after 30s")
}
