# shellcheck shell=bash
# port_of LOG: for the shell tests, the port a loopback test server started on port 0
# (hg-bench-floor, hg-bench-relay) printed in its "listening on 127.0.0.1:PORT" line in LOG.
# Waits for it by polling, 5 s at most (LOG may not exist yet when the server was just put in
# the background); prints the port, or says what is missing and returns 1. Source this file.
port_of() {
  local i p
  for ((i = 0; i < 50; i++)); do
    p=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$1" 2>/dev/null || true)
    [[ -n $p ]] && { echo "$p"; return 0; }
    sleep 0.1
  done
  echo "no 'listening on' line in $1" >&2
  return 1
}
