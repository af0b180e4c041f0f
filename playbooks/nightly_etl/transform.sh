#!/bin/sh
# Doubles every row; the first attempt finds the disk not mounted (exit 10),
# which the flaky_io rule retries after its recovery script.
if [ ! -f "$WORKDIR/mounted" ]; then echo "stale mount" >&2; exit 10; fi
awk '{ print $1 * 2 }' "$WORKDIR/rows.txt" > "$WORKDIR/doubled.txt"
echo "{\"rows\": $(wc -l < "$WORKDIR/doubled.txt")}"
