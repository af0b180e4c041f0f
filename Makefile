# The README's two commands are `make example` and `make test`; .ci/run runs `make test`.
GO ?= go

.PHONY: build build-worker release docker-image example test test-cluster test-docker bench bench-cluster histories vet fuzz schema trace-screenshot

# What `playbook version` prints: the nearest tag (or the commit), and the
# commit, stamped into every binary built here.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
STAMP = -X playbook/cmd/playbook/commands.Version=$(VERSION) -X playbook/cmd/playbook/commands.Commit=$(COMMIT)
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
# The S3-compatible server make test-cluster builds and runs.
VERSITYGW_VERSION ?= v1.8.0
# The official temporal CLI: v1.5.1 is the newest whose module builds from
# the module proxy (later ones replace a nested module with a directory).
TEMPORAL_CLI_VERSION ?= v1.5.1

build:
	$(GO) build -ldflags='$(STAMP)' -o bin/playbook ./cmd/playbook

# The worker-only binary: no embedded Temporal server, no Web UI (no `dev`,
# and `run` needs a server configured). The container image's.
build-worker:
	CGO_ENABLED=0 $(GO) build -tags noserver -ldflags='-s -w $(STAMP)' -o bin/playbook-worker ./cmd/playbook

# Release artifacts in dist/: the full binary and the worker-only one for
# each of RELEASE_PLATFORMS, stamped with VERSION and COMMIT, and their
# SHA-256 checksums; then this machine's full binary says its version. A
# platform not built before compiles everything once (about ten minutes on
# two cores).
release:
	mkdir -p dist
	set -e; for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "building playbook $(VERSION) for $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags='-s -w $(STAMP)' -o dist/playbook-$(VERSION)-$$os-$$arch ./cmd/playbook; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -tags noserver -ldflags='-s -w $(STAMP)' -o dist/playbook-worker-$(VERSION)-$$os-$$arch ./cmd/playbook; \
	done
	cd dist && sha256sum playbook-$(VERSION)-* playbook-worker-$(VERSION)-* > playbook-$(VERSION).sha256
	cat dist/playbook-$(VERSION).sha256
	./dist/playbook-$(VERSION)-$$($(GO) env GOHOSTOS)-$$($(GO) env GOHOSTARCH) version

# The worker image, playbook-worker (docker/Dockerfile), from a binary built here.
docker-image:
	mkdir -p docker/bin
	CGO_ENABLED=0 $(GO) build -tags noserver -ldflags='-s -w $(STAMP)' -o docker/bin/playbook ./cmd/playbook
	docker build -t playbook-worker docker/

# Runs an example playbook on an embedded Temporal server (nothing to install).
example:
	$(GO) run ./cmd/playbook run playbooks/hello.yaml

# go vet and gofmt; staticcheck; and Temporal's workflowcheck over the
# generic workflow's call graph (interpreter/workflowcheck.yaml says which
# library calls are deterministic, and why). Both checkers come from the
# module proxy at the versions named here, outside go.mod.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
WORKFLOWCHECK ?= go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0
vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(WORKFLOWCHECK) -config interpreter/workflowcheck.yaml ./interpreter/playbookwf/...

# Unit, end-to-end and replay tests. The first build compiles the Temporal
# server (minutes on two cores); later runs take seconds to build. Installs
# Chromium where it is missing: a test opens the Web UI headless.
test: vet
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -race -count=1 -timeout 10m ./activities/ ./interpreter/... ./worker/
	$(GO) run ./cmd/playbook test playbooks/

# A real cluster on this machine (testsuite/cluster): PostgreSQL, Temporal's
# own server built at go.mod's version, three workers, crashes on purpose.
# Installs PostgreSQL where it is missing; needs no container engine. First
# validates docker/compose.yaml with docker-compose (installed where missing).
test-cluster:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update && apt-get install -y postgresql)
	@command -v docker-compose >/dev/null || (apt-get update && apt-get install -y docker-compose)
	docker-compose -f docker/compose.yaml config -q
	@# VersityGW, an S3-compatible server (Apache-2.0), from the module proxy:
	@# the store's contract and a split pipeline run against it.
	GOBIN=$(CURDIR)/bin/tools GOFLAGS= $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	PLAYBOOK_TEST_CLUSTER=1 PLAYBOOK_VERSITYGW=$(CURDIR)/bin/tools/versitygw $(GO) test -count=1 -v -timeout 30m ./testsuite/cluster/
	@# The official temporal CLI sends a wait_event run its event as
	@# OPERATIONS.md prints the command (it compiles a Temporal server: minutes).
	GOBIN=$(CURDIR)/bin/tools GOFLAGS=-mod=mod $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)
	TEMPORAL_CLI=$(CURDIR)/bin/tools/temporal $(GO) test -count=1 -v -run 'TestWaitEventFromTheTemporalCLI' ./testsuite/

# The worker image, proven: builds it (and its base image, locally, when no
# registry can be reached) and runs a playbook whose steps run in a container
# of it against a `playbook dev` on the host. Installs docker.io and
# mmdebstrap where missing and starts dockerd when no engine answers; exits
# non-zero, saying so, when none can be started.
test-docker:
	GO=$(GO) docker/test.sh

# Speed: first 20 cases of the examples' tests as `playbook test` runs them
# (s/suite: the goal is under 2 s, with no server); validating and settling
# long chains in the core (seconds); then
# playbooks against hand-written workflows doing the same work, on one
# embedded server (and the hand-written chain on stock settings), one line
# per figure, medians of five rounds; then loops of 100,000 elements (noop,
# shell true, with its logs on disk and on tmpfs, local shell true, and
# the same loop hand-written, of activities on the SDK's defaults and on a
# worker set as playbook's, and of local activities); and the MB/s of
# handing a 100 MB file from one step to the next through the local store
# and, when make test-cluster has built VersityGW (bin/tools/versitygw),
# through that S3 server (else the line says it was skipped). About 40
# minutes on two cores; HUGE_LOOP=10000 shortens the last part.
HUGE_LOOP ?= 100000
bench:
	$(GO) test -run '^$$' -bench '^BenchmarkTwentyCases$$' -benchtime 3x ./internal/playtest/
	$(GO) test -run '^$$' -bench '^Benchmark(ValidateChain|SettleChain)$$' -benchtime 3x ./submit/ ./interpreter/engine/
	$(GO) test -run '^$$' -bench Speed -benchtime 1x -timeout 30m ./testsuite/
	$(GO) test -run '^$$' -bench TracingChain -benchtime 1x -timeout 30m ./testsuite/
	$(GO) test -run '^$$' -bench HugeLoops -benchtime 1x -timeout 60m ./testsuite/ -huge-loop=$(HUGE_LOOP)
	PLAYBOOK_VERSITYGW=$$(ls $(CURDIR)/bin/tools/versitygw 2>/dev/null) $(GO) test -run '^$$' -bench '^BenchmarkFileHandOff$$' -benchtime 3x ./activities/

# The screenshot of a failing run's trace in OPERATIONS.md
# (docs/img/trace.png), taken by TestTraceInAViewer from a real Jaeger:
# PLAYBOOK_JAEGER names a Jaeger all-in-one binary (v1; JAEGER_VERSION's
# cmd/all-in-one built from its module, bin/jaeger-all-in-one below) and
# PLAYBOOK_JAEGER_UI the Jaeger UI's built files (the jaeger-ui project's
# packages/jaeger-ui/build, as its `npm run build` writes them: no package
# of the npm registry ships them). Not part of `make test`.
JAEGER_VERSION ?= v1.76.0
PLAYBOOK_JAEGER ?= $(CURDIR)/bin/jaeger-all-in-one
trace-screenshot:
	test -x "$(PLAYBOOK_JAEGER)" || $(MAKE) bin/jaeger-all-in-one
	test -d "$(PLAYBOOK_JAEGER_UI)" || { echo "PLAYBOOK_JAEGER_UI names no directory of the Jaeger UI's built files" >&2; exit 2; }
	PLAYBOOK_JAEGER="$(PLAYBOOK_JAEGER)" PLAYBOOK_JAEGER_UI="$(PLAYBOOK_JAEGER_UI)" PLAYBOOK_TRACE_SCREENSHOT=$(CURDIR)/docs/img/trace.png \
		$(GO) test -count=1 -run '^TestTraceInAViewer$$' -v ./testsuite/

# Jaeger's module has replace directives, which `go install` refuses: it is
# built as its own main module, from a copy of its download.
bin/jaeger-all-in-one:
	set -e; src=$$($(GO) mod download -json github.com/jaegertracing/jaeger@$(JAEGER_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	tmp=$$(mktemp -d); cp -r "$$src/." "$$tmp"; chmod -R u+w "$$tmp"; \
	(cd "$$tmp" && GOTOOLCHAIN=local $(GO) build -o $(CURDIR)/bin/jaeger-all-in-one ./cmd/all-in-one); rm -rf "$$tmp"

# Throughput on a real cluster: the one `make test-cluster` starts
# (testsuite/cluster: PostgreSQL, Temporal's own server at go.mod's
# version, three `playbook worker` processes) and three workers of a
# hand-written twin; prints runs/s of 200 concurrent 5-step runs and ms/step
# of a 50-step chain, playbook beside hand-written, with the machine's
# cores and load (TestClusterBench; docs/INTERNALS.md reads the figures),
# the medians of BENCH_ROUNDS rounds.
# Installs PostgreSQL where it is missing. Neither `make test` nor `make
# test-cluster` runs it.
BENCH_ROUNDS ?= 3
bench-cluster:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update && apt-get install -y postgresql)
	PLAYBOOK_BENCH_CLUSTER=1 PLAYBOOK_BENCH_ROUNDS=$(BENCH_ROUNDS) $(GO) test -count=1 -v -run '^TestClusterBench$$' -timeout 60m ./testsuite/cluster/

# Rewrites docs/playbook.schema.json from the parser's tables (`playbook
# schema`); TestSchemaFileIsUpToDate fails until it is.
schema:
	$(GO) run ./cmd/playbook schema > docs/playbook.schema.json

# Records the named runs' histories into a new folder of the replay corpus,
# testsuite/testdata/histories/v<N+1>: the corpus only grows, and every
# history in it replays in `make test` (docs/VERSIONING.md).
histories:
	$(GO) test -count=1 -skip 'TestReplay' ./testsuite/ -update

# Searches for inputs that panic the parser and validator, for FUZZTIME.
FUZZTIME ?= 2m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./submit/
