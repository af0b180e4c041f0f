#!/bin/sh
# make test-docker: builds the worker image and runs one playbook whose steps
# run in a container of it, against a `playbook dev` server on the host.
# Installs docker.io and mmdebstrap where missing (apt, as root), starts
# dockerd when no engine answers, builds the base image locally when absent
# (docker/base-image.sh), and stops everything it started.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
say() { echo "test-docker: $*"; }
fail() { say "FAIL: $*" >&2; exit 1; }

tmp=$(mktemp -d)
dockerd_pid= dev_pid= container=
cleanup() {
	[ -n "$container" ] && docker rm -f "$container" >/dev/null 2>&1 || true
	[ -n "$dev_pid" ] && kill "$dev_pid" 2>/dev/null && wait "$dev_pid" 2>/dev/null || true
	if [ -n "$dockerd_pid" ]; then
		say "stopping the dockerd it started (pid $dockerd_pid)"
		kill "$dockerd_pid" 2>/dev/null || true
		while kill -0 "$dockerd_pid" 2>/dev/null; do sleep 0.5; done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The engine.
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || fail "docker.io and mmdebstrap are missing and installing them needs root"
	say "installing docker.io and mmdebstrap"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io mmdebstrap >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || fail "no Docker engine answers and starting dockerd needs root"
	say "no Docker engine answers: starting dockerd (log in $tmp/dockerd.log)"
	dockerd >"$tmp/dockerd.log" 2>&1 &
	dockerd_pid=$!
	i=0
	until docker info >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 60 ] || ! kill -0 "$dockerd_pid" 2>/dev/null; then
			tail -5 "$tmp/dockerd.log" >&2
			dockerd_pid=
			fail "no Docker engine could be started on this machine: dockerd exited or did not answer within 30s (its last lines above)"
		fi
		sleep 0.5
	done
fi

# The images.
docker/base-image.sh
say "building the worker-only binary and the image playbook-worker"
mkdir -p docker/bin
CGO_ENABLED=0 $GO build -tags noserver -ldflags='-s -w' -o docker/bin/playbook ./cmd/playbook
docker build -q --network host -t playbook-worker docker/ >/dev/null
say "image playbook-worker: $(docker image inspect -f '{{.Size}}' playbook-worker) bytes"

# A server on the host, on a free port; its own worker polls another task
# queue, so that only the container's worker can run the playbook's steps.
$GO build -o "$tmp/playbook" ./cmd/playbook
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$tmp/playbook" dev --db :memory: --port "$port" --ui-port 0 --task-queue host-only >"$tmp/dev.log" 2>&1 &
dev_pid=$!
i=0
until grep -q "Worker on task queue" "$tmp/dev.log"; do
	i=$((i + 1))
	if [ $i -gt 120 ] || ! kill -0 "$dev_pid" 2>/dev/null; then
		cat "$tmp/dev.log" >&2
		fail "playbook dev did not start"
	fi
	sleep 0.5
done

container=playbook-test-docker-$$
docker run -d --name "$container" --network host \
	-e TEMPORAL_ADDRESS="127.0.0.1:$port" -e TEMPORAL_NAMESPACE=default \
	-v "$PWD/docker/testdata:/playbooks:ro" \
	playbook-worker --task-queue docker-test >/dev/null
i=0
until docker logs "$container" 2>&1 | grep -q "Started Worker"; do
	i=$((i + 1))
	if [ $i -gt 60 ] || [ "$(docker inspect -f '{{.State.Running}}' "$container")" != true ]; then
		docker logs "$container" 2>&1 | tail -20 >&2
		fail "the worker container did not start polling"
	fi
	sleep 0.5
done
say "worker container $container polls task queue docker-test; running docker/testdata/in_container.yaml"
if ! TEMPORAL_CONFIG_FILE="$tmp/none.toml" "$tmp/playbook" run --address "127.0.0.1:$port" --task-queue docker-test \
	--json docker/testdata/in_container.yaml >"$tmp/run.json" 2>"$tmp/run.err"; then
	cat "$tmp/run.err" "$tmp/run.json" >&2
	docker logs "$container" 2>&1 | tail -20 >&2
	fail "the playbook did not complete in the container"
fi
report=$(python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); print(a["status"] + ": " + a["steps"]["report"]["result"])' "$tmp/run.json") ||
	{ cat "$tmp/run.json" >&2; fail "no report in the run's aggregate"; }
say "run $report"
echo "$report" | grep -q "^completed: playbook ran bash [0-9.]* and python 3\.[0-9.]* in the container$" ||
	fail "the run's report does not show the container's user, bash and python"
say "ok: the playbook's steps ran in the playbook-worker container"
docker stop -t 60 "$container" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$container")
[ "$code" = 0 ] || { docker logs "$container" 2>&1 | tail -20 >&2; fail "the worker container exited $code on docker stop, not 0"; }
say "ok: docker stop drained the worker (exit 0)"
