#!/usr/bin/env bash
# The two floors of tools/bench answer real dig queries: hg-bench-floor with its fixed record,
# hg-bench-relay by passing the query on (here: to the floor) and the answer back under the
# client's own ID (dig rejects an answer whose ID does not match). Both refuse an address
# outside loopback. Usage: bench_floors_test.sh FLOOR RELAY
set -euo pipefail
floor=$1 relay=$2
work=$(mktemp -d)
pids=()
# shellcheck source=tests/support/shell_kit.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/shell_kit.sh"
cleanup() {
  stop_pids
  rm -rf "$work"
}
trap cleanup EXIT
"$floor" 127.0.0.1:0 2>"$work/floor.log" &
pids+=($!)
fp=$(port_of "$work/floor.log")
"$relay" 127.0.0.1:0 "127.0.0.1:$fp" 2>"$work/relay.log" &
pids+=($!)
rp=$(port_of "$work/relay.log")
for port in "$fp" "$rp"; do
  out=$(dig @127.0.0.1 -p "$port" probe.example. A +tries=2 +time=2 +noedns)
  grep -q 'status: NOERROR' <<<"$out" || { echo "port $port: $out"; exit 1; }
  grep -qE '^probe\.example\.\s+3600\s+IN\s+A\s+198\.18\.0\.1$' <<<"$out" ||
    { echo "port $port: $out"; exit 1; }
done
if "$floor" 192.0.2.1:53 2>/dev/null; then echo "the floor accepted a non-loopback address"; exit 1; fi
if "$relay" 127.0.0.1:0 192.0.2.1:53 2>/dev/null; then echo "the relay accepted a non-loopback upstream"; exit 1; fi
echo "floors ok: floor on $fp, relay on $rp"
