# The README's two commands are `make example` and `make test`; .ci/run runs `make test`.
GO ?= go

.PHONY: build example test test-cluster bench histories vet fuzz

build:
	$(GO) build -o bin/playbook ./cmd/playbook

# Runs an example playbook on an embedded Temporal server (nothing to install).
example:
	$(GO) run ./cmd/playbook run playbooks/hello.yaml

vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

# Unit, end-to-end and replay tests. The first build compiles the Temporal
# server (minutes on two cores); later runs take seconds to build.
test: vet
	$(GO) test -count=1 -timeout 20m ./...

# A real cluster on this machine (testsuite/cluster): PostgreSQL, Temporal's
# own server built at go.mod's version, three workers, crashes on purpose.
# Installs PostgreSQL where it is missing; needs no container engine.
test-cluster:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update && apt-get install -y postgresql)
	PLAYBOOK_TEST_CLUSTER=1 $(GO) test -count=1 -v -timeout 30m ./testsuite/cluster/

# Speed: playbooks against hand-written workflows doing the same work, on
# one embedded server (and the hand-written chain on stock settings); one
# line per figure, medians of three rounds. A few minutes on two cores.
bench:
	$(GO) test -run '^$$' -bench Speed -benchtime 1x -timeout 30m ./testsuite/

# Re-records the checked-in histories that the replay tests replay.
histories:
	rm -f testsuite/testdata/histories/*.json
	$(GO) test -count=1 -skip 'TestReplay' ./testsuite/ -update

# Searches for inputs that panic the parser and validator, for FUZZTIME.
FUZZTIME ?= 2m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./interpreter/
