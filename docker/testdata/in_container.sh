#!/bin/sh
# Fails unless it runs in the playbook-worker container, as its user, in the
# playbooks volume (mounted at the image's working directory).
set -eu
test -f /.dockerenv
test "$(id -un)" = playbook
test "$(pwd)" = /playbooks
bash -c 'echo "{\"user\": \"$(id -un)\", \"shell\": \"bash ${BASH_VERSION%%(*}\"}"'
