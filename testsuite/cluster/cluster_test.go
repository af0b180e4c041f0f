// Package cluster proves playbook on a real Temporal cluster: PostgreSQL,
// Temporal's own server built from go.temporal.io/server at go.mod's
// version with its schema set up by Temporal's own SQL tool, three
// `playbook worker` processes, and crashes on purpose. `make test-cluster`
// runs it; it needs no container engine.
package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"playbook/internal/proctest"
	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// runs is how many runs the test submits.
const runs = 100

// quiet drops the SDK's log lines.
var quiet = quietlog.New()

func TestClusterSurvivesCrashes(t *testing.T) {
	if os.Getenv("PLAYBOOK_TEST_CLUSTER") == "" {
		t.Skip("the cluster test runs with `make test-cluster` (PLAYBOOK_TEST_CLUSTER=1)")
	}
	work := t.TempDir()
	built := time.Now()
	bins := buildBinaries(t, work)
	t.Logf("binaries built in %s", time.Since(built).Round(time.Millisecond))
	pgPort := startPostgres(t)
	setupSchema(t, bins, pgPort)

	srv := &temporalServer{bin: bins.server, dir: work, port: proctest.FreePort(t), pgPort: pgPort}
	srv.writeConfig(t)
	srv.start(t)
	t.Cleanup(srv.kill)
	address := srv.address()

	// `playbook setup` on a fresh cluster: the namespace and the search attributes.
	out, err := exec.Command(bins.playbook, "setup", "--address", address).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "Namespace default created")
	require.Contains(t, string(out), "(3 added)")

	marks := filepath.Join(work, "marks")
	require.NoError(t, os.WriteFile(marks, nil, 0o644))
	workers := make([]*exec.Cmd, 3)
	logDirs := make([]string, 3)
	for i := range workers {
		logDirs[i] = filepath.Join(work, fmt.Sprintf("worker-%d-logs", i))
		workers[i] = startWorker(t, bins.playbook, address, logDirs[i])
	}

	playbook, err := filepath.Abs("testdata/chaos.yaml")
	require.NoError(t, err)
	began := time.Now()
	submitted := submitRuns(t, bins.playbook, address, playbook, marks)
	require.Len(t, submitted, runs)
	t.Logf("%d runs submitted in %s", runs, time.Since(began).Round(time.Millisecond))

	// Crashes while steps run: a worker SIGKILLed, another asked to stop
	// (SIGTERM: it drains), and the server itself SIGKILLed and started
	// again on the same database. Replacements for both workers start, as
	// a supervisor would start them.
	proctest.WaitFor(t, "steps to be running", time.Minute, func() bool { return len(marksByStep(t, marks, "start")) >= 30 })
	require.NoError(t, workers[0].Process.Signal(syscall.SIGKILL))
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, workers[1].Process.Signal(syscall.SIGTERM))
	time.Sleep(time.Second)
	srv.kill()
	time.Sleep(time.Second)
	srv.start(t)
	for _, i := range []int{0, 1} {
		_ = workers[i].Wait()
		workers[i] = startWorker(t, bins.playbook, address, logDirs[i])
	}

	c, err := client.Dial(client.Options{HostPort: address, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	aggs := waitForRuns(t, c, submitted, 10*time.Minute)

	// Every run completed, and no completed step ran again: a process's
	// "done" marks beyond the first each match a lost attempt of it (the
	// worker died after the mark, before it reported), and no process
	// started more often than its step counts attempts.
	starts, done := marksByStep(t, marks, "start"), marksByStep(t, marks, "done")
	rerun, lost := 0, 0
	for id, agg := range aggs {
		require.Equal(t, contract.RunCompleted, agg.Status, "run %s: %s", id, failures(agg))
		for _, p := range processesOf(agg) {
			lost += p.lost
			n := done[p.key]
			require.GreaterOrEqual(t, n, 1, "%s completed without its mark", p.key)
			require.LessOrEqual(t, starts[p.key], p.attempts, "%s started more often than it counts attempts", p.key)
			if extra := n - 1; extra > p.lost {
				rerun += extra - p.lost
				t.Errorf("%s ran again: %d attempts, %d lost: %s; marks:\n%s", p.key, p.attempts, p.lost, p.records, marksOf(t, marks, p.key))
			}
		}
	}
	require.Zero(t, rerun, "completed steps ran again")

	// `playbook list` agrees: every run of the playbook is completed.
	var listed []struct {
		WorkflowID string `json:"workflow_id"`
		Status     string `json:"status"`
	}
	proctest.WaitFor(t, "list to show every run completed", time.Minute, func() bool {
		out := runPlaybook(t, bins.playbook, "list", "--address", address, "--playbook", "cluster-chaos", "--status", "completed", "--limit", "1000", "--json")
		require.NoError(t, json.Unmarshal([]byte(out), &listed))
		return len(listed) == runs
	})
	for _, r := range listed {
		require.Contains(t, aggs, r.WorkflowID)
	}

	wall := time.Since(began)
	t.Logf("wall time from the first submission %s", wall.Round(time.Millisecond))
	fmt.Printf("%d/%d runs completed, %d completed steps re-run, %d lost attempts retried, %.1f runs/s\n",
		len(aggs), runs, rerun, lost, float64(runs)/wall.Seconds())
}

// binaries are what the test builds: playbook, and Temporal's own server
// and SQL tool at the version in go.mod.
type binaries struct{ playbook, server, sqlTool string }

func buildBinaries(t *testing.T, dir string) binaries {
	b := binaries{
		playbook: filepath.Join(dir, "playbook"),
		server:   filepath.Join(dir, "temporal-server"),
		sqlTool:  filepath.Join(dir, "temporal-sql-tool"),
	}
	build(t, "", b.playbook, "playbook/cmd/playbook")
	tools := serverToolsModule(t)
	build(t, tools, b.server, "go.temporal.io/server/cmd/server")
	build(t, tools, b.sqlTool, "go.temporal.io/server/cmd/tools/sql")
	return b
}

func build(t *testing.T, moduleDir, out, pkg string) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if moduleDir != "" {
		cmd.Dir = moduleDir
		// The server's commands need modules playbook's own packages do not
		// (their CLI library among them): the tools module resolves them.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	}
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, msg)
}

// serverToolsModule is a module of its own for building Temporal's server
// commands with the versions playbook's go.mod selects (so the build cache
// serves what the embedded server already compiled), without making
// playbook's go.mod require what only those commands import.
func serverToolsModule(t *testing.T) string {
	dir := t.TempDir()
	mod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	sum, err := os.ReadFile("../../go.sum")
	require.NoError(t, err)
	mod = []byte(strings.Replace(string(mod), "module playbook", "module playbook/servertools", 1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), mod, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tools.go"), []byte(`//go:build tools

package servertools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
`), 0o644))
	return dir
}

// startPostgres runs a throwaway PostgreSQL on a spare loopback port. It
// runs as the postgres user: initdb refuses to run as root.
func startPostgres(t *testing.T) int {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Fatal("no PostgreSQL server binaries under /usr/lib/postgresql (make test-cluster installs the postgresql package)")
	}
	sort.Strings(bins)
	binDir := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "playbook-cluster-pg")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	asPostgres := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() != 0 {
			return exec.Command(filepath.Join(binDir, name), args...)
		}
		require.NoError(t, exec.Command("chown", "postgres:postgres", dir).Run())
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(binDir, name)}, args...)...)
	}
	data := filepath.Join(dir, "data")
	out, err := asPostgres("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8").CombinedOutput()
	require.NoError(t, err, "initdb:\n%s", out)
	port := proctest.FreePort(t)
	pg := asPostgres("postgres", "-D", data, "-p", fmt.Sprint(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "fsync=on")
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	require.NoError(t, err)
	pg.Stdout, pg.Stderr = logFile, logFile
	require.NoError(t, pg.Start())
	t.Cleanup(func() {
		// runuser does not pass signals on: pg_ctl stops the server itself.
		_ = asPostgres("pg_ctl", "-D", data, "stop", "-m", "fast").Run()
		_ = pg.Wait()
	})
	proctest.WaitFor(t, "PostgreSQL to accept connections", 30*time.Second, func() bool { return proctest.Listening(fmt.Sprintf("127.0.0.1:%d", port)) })
	return port
}

// setupSchema creates Temporal's two databases and their schema with
// Temporal's own SQL tool and the schema files of the server module.
func setupSchema(t *testing.T, b binaries, pgPort int) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server").Output()
	require.NoError(t, err)
	schema := filepath.Join(strings.TrimSpace(string(out)), "schema", "postgresql", "v12")
	for db, dir := range map[string]string{"temporal": "temporal", "temporal_visibility": "visibility"} {
		base := []string{"--plugin", "postgres12", "--ep", "127.0.0.1", "-p", fmt.Sprint(pgPort), "-u", "postgres", "--db", db}
		for _, args := range [][]string{
			{"create-database"},
			{"setup-schema", "-v", "0.0"},
			{"update-schema", "-d", filepath.Join(schema, dir, "versioned")},
		} {
			msg, err := exec.Command(b.sqlTool, append(base, args...)...).CombinedOutput()
			require.NoError(t, err, "temporal-sql-tool %s %v:\n%s", db, args, msg)
		}
	}
}

// temporalServer is Temporal's own server on PostgreSQL, all four services
// in one process on loopback ports.
type temporalServer struct {
	bin, dir     string
	port, pgPort int
	mu           sync.Mutex
	cmd          *exec.Cmd
}

func (s *temporalServer) address() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

func (s *temporalServer) configFile() string { return filepath.Join(s.dir, "temporal.yaml") }

// writeConfig writes the server's config and dynamic config. The dynamic
// config is what docs/OPERATIONS.md recommends for a cluster with few history
// shards: without it, the history service reads its task queues at most 20
// times a second per shard, and each step waits ~45 ms for it.
func (s *temporalServer) writeConfig(t *testing.T) {
	dyn := filepath.Join(s.dir, "dynamicconfig.yaml")
	require.NoError(t, os.WriteFile(dyn, []byte(clusterDynamicConfig), 0o644))
	ports := map[string]int{}
	for _, svc := range []string{"frontend-http", "history", "matching", "worker"} {
		ports[svc] = proctest.FreePort(t)
	}
	// Membership ports are kept in a smallint column of the SQL schema:
	// they must stay below 32768, where the kernel's free ports do not.
	for _, svc := range []string{"frontend-m", "history-m", "matching-m", "worker-m"} {
		ports[svc] = lowFreePort(t)
	}
	conf := fmt.Sprintf(clusterConfig, s.pgPort, s.pgPort,
		s.port, ports["frontend-m"], ports["frontend-http"],
		ports["matching"], ports["matching-m"],
		ports["history"], ports["history-m"],
		ports["worker"], ports["worker-m"],
		s.port, dyn)
	require.NoError(t, os.WriteFile(s.configFile(), []byte(conf), 0o644))
}

func (s *temporalServer) start(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, "--config-file", s.configFile(), "--allow-no-auth", "start")
	logFile, err := os.OpenFile(filepath.Join(s.dir, "temporal-server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	s.cmd = cmd
	proctest.WaitFor(t, "the Temporal server to serve", time.Minute, func() bool {
		c, err := client.Dial(client.Options{HostPort: s.address(), Logger: quiet})
		if err != nil {
			return false
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err == nil
	})
}

// kill SIGKILLs the server: a crash, not a shutdown.
func (s *temporalServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

func startWorker(t *testing.T, bin, address, logDir string) *exec.Cmd {
	cmd := exec.Command(bin, "worker", "--address", address, "--log-dir", logDir)
	logFile, err := os.OpenFile(logDir+".out", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// submitRuns submits the runs with `playbook run --detach`, a few at a
// time, and returns their workflow IDs.
func submitRuns(t *testing.T, bin, address, playbook, marks string) []string {
	ids := make([]string, runs)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("chaos-%03d", i)
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := exec.Command(bin, "run", "--address", address, "--detach", "--id", id, "--set", "marks="+marks, playbook).CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("run %s: %v\n%s", id, err, out)
			}
		}(ids[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return ids
}

// waitForRuns waits until every run closed and returns their aggregates;
// a failed or cancelled run's aggregate is its error's details.
func waitForRuns(t *testing.T, c client.Client, ids []string, limit time.Duration) map[string]*contract.Aggregate {
	aggs := map[string]*contract.Aggregate{}
	deadline := time.Now().Add(limit)
	for _, id := range ids {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var agg contract.Aggregate
			err := c.GetWorkflow(ctx, id, "").Get(ctx, &agg)
			cancel()
			var appErr *temporal.ApplicationError
			var canErr *temporal.CanceledError
			switch {
			case err == nil:
			case errors.As(err, &appErr) && appErr.HasDetails():
				require.NoError(t, appErr.Details(&agg))
			case errors.As(err, &canErr) && canErr.HasDetails():
				require.NoError(t, canErr.Details(&agg))
			default:
				if time.Now().After(deadline) {
					t.Fatalf("run %s still open after %s: %v", id, limit, err)
				}
				time.Sleep(time.Second)
				continue
			}
			aggs[id] = &agg
			break
		}
	}
	return aggs
}

// failures says why a run did not complete: each failed step's error.
func failures(agg *contract.Aggregate) string {
	var out []string
	for _, name := range agg.FailedSteps {
		if st := agg.Steps[name]; st != nil && st.Error != nil {
			out = append(out, name+": "+st.Error.Type+": "+st.Error.Message)
		}
	}
	return strings.Join(out, "; ")
}

// process is one process a run ran: its mark key "RUN STEP", and how many
// attempts it had, how many of them lost.
type process struct {
	key            string
	attempts, lost int
	records        string // its attempt records, for a failure's message
}

// processesOf lists the processes of a run of testdata/chaos.yaml: its
// shell steps, each element of its loop `each` (attempt records of an
// element say "element I+1 of N (index I): ..."), and the steps of its
// sub-playbook `sub`, whose aggregate is the step's result.
func processesOf(agg *contract.Aggregate) []process {
	var out []process
	for name, st := range agg.Steps {
		switch name {
		case spec.EndStep:
		case "sub":
			b, _ := json.Marshal(st.Result)
			var child contract.Aggregate
			if json.Unmarshal(b, &child) == nil {
				out = append(out, processesOf(&child)...)
			}
		case "each":
			elements, _ := st.Result.([]any)
			for i := range elements {
				prefix := fmt.Sprintf("element %d of %d (index %d): ", i+1, len(elements), i)
				p := process{key: fmt.Sprintf("%s %s[%d]", agg.WorkflowID, name, i), attempts: st.Attempts, records: fmt.Sprint(st.AttemptErrors)}
				for _, a := range st.AttemptErrors {
					if isLost(a) && strings.HasPrefix(a.Error.Message, prefix) {
						p.lost++
					}
				}
				out = append(out, p)
			}
		default:
			p := process{key: agg.WorkflowID + " " + name, attempts: st.Attempts, records: fmt.Sprint(st.AttemptErrors)}
			for _, a := range st.AttemptErrors {
				if isLost(a) {
					p.lost++
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// isLost says whether an attempt was lost with its worker (killed, or
// stopped past its drain timeout), not failed by the step itself.
func isLost(a contract.AttemptRecord) bool { return a.Lost }

// marksByStep counts the marks of a kind, by "RUN STEP". A mark line is
// "KIND RUN STEP ATTEMPT"; a loop's elements share their step's name
// (each writes its own mark: the count is per element below).
func marksByStep(t *testing.T, file, kind string) map[string]int {
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 4 && fields[0] == kind {
			counts[fields[1]+" "+fields[2]]++
		}
	}
	return counts
}

// marksOf is every mark line of a process.
func marksOf(t *testing.T, file, key string) string {
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1]+" "+f[2] == key {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func runPlaybook(t *testing.T, bin string, args ...string) string {
	var out []byte
	var err error
	// A server that was just started may still be loading namespaces.
	for try := 0; try < 10; try++ {
		out, err = exec.Command(bin, args...).CombinedOutput()
		if err == nil {
			return string(out)
		}
		time.Sleep(2 * time.Second)
	}
	require.NoError(t, err, "playbook %v:\n%s", args, out)
	return string(out)
}

// lowFreePort finds a free loopback port below 32768.
func lowFreePort(t *testing.T) int {
	for port := 20000 + rand.IntN(10000); port < 32768; port++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port below 32768")
	return 0
}
