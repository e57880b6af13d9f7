# shellcheck shell=bash
# The shell tests' kit (source this file): what a test script does with the helper servers
# it starts in the background.

# port_of LOG: the port a loopback test server started on port 0 (hg-bench-floor,
# hg-bench-relay) printed in its "listening on 127.0.0.1:PORT" line in LOG. Waits for it by
# polling, 5 s at most (LOG may not exist yet when the server was just put in the
# background); prints the port, or says what is missing and returns 1.
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

# stop_pids: ends every process whose PID is in the caller's `pids` array (SIGTERM, then
# waits for it); for the script's EXIT trap. PIDs already gone are passed over.
stop_pids() {
  local p
  # shellcheck disable=SC2154  # pids is the caller's
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
