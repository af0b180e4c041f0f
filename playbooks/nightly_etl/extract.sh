#!/bin/sh
# Pretends to download $BATCH rows from $URL; the first attempt hits a
# transient network error (exit 75), which retry_when retries.
set -e
mkdir -p "$WORKDIR"
if [ "$PLAYBOOK_ATTEMPT" = 1 ]; then echo "connection reset by $URL" >&2; exit 75; fi
seq 1 "$BATCH" > "$WORKDIR/rows.txt"
echo "{\"rows\": $BATCH, \"source\": \"$URL\"}"
