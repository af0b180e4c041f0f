package cluster

// clusterConfig is the Temporal server's config: PostgreSQL for state and
// visibility, four history shards (a small self-hosted cluster), every
// service on a loopback port. Its placeholders, in order: PostgreSQL's port
// twice; the frontend's gRPC, membership and HTTP ports; matching's gRPC
// and membership ports; history's; the worker service's; the frontend's
// gRPC port again; the dynamic config file.
const clusterConfig = `
log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "127.0.0.1:%d"
        connectProtocol: tcp
        user: postgres
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    postgres-visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "127.0.0.1:%d"
        connectProtocol: tcp
        user: postgres
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:
    rpc:
      grpcPort: %d
      membershipPort: %d
      httpPort: %d
      bindOnIP: 127.0.0.1
  matching:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnIP: 127.0.0.1
  history:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnIP: 127.0.0.1
  worker:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnIP: 127.0.0.1
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:%d"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "%s"
  pollInterval: 10s
`

// clusterDynamicConfig is what docs/OPERATIONS.md recommends for a cluster
// with few history shards ("The server's settings on a small cluster").
const clusterDynamicConfig = `
history.transferProcessorMaxPollRPS:
  - value: 1000
history.timerProcessorMaxPollRPS:
  - value: 1000
history.timerProcessorMaxTimeShift:
  - value: 1ms
matching.numTaskqueueWritePartitions:
  - value: 1
matching.numTaskqueueReadPartitions:
  - value: 1
system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
`
