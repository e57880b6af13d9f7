# shellcheck shell=bash
# tools/bench/procs.sh — sourced (not run) by the bench scripts that start servers: each
# process they start is recorded in STARTED (pid -> name), and only those are ever stopped,
# by their PID; and they wait for a server to answer on the wildcard zone of
# tools/bench/knot.sh before measuring it. Loopback only; every wait is bounded.

declare -A STARTED=()

# stop_pid PID: SIGTERM, up to 30 s for it to exit, then SIGKILL. A PID not in STARTED is
# left alone.
# shellcheck disable=SC2317  # also run from the callers' EXIT traps
stop_pid() {
  local pid=$1 i
  [[ -n ${STARTED[$pid]:-} ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  unset "STARTED[$pid]"
}

# stop_started: stop_pid for every process still in STARTED (for an EXIT trap).
# shellcheck disable=SC2317
stop_started() {
  local pid
  for pid in "${!STARTED[@]}"; do stop_pid "$pid"; done
}

# wildcard_answers PORT N: true when 127.0.0.1:PORT answers probeN.w.bench.test. A with the
# wildcard's address (198.18.0.1).
wildcard_answers() {
  dig @127.0.0.1 -p "$1" "probe$2.w.bench.test." A +short +tries=1 +time=2 2>/dev/null |
    grep -q '^198\.'
}

# wait_answering PID PORT: waits up to ~60 s for the process PID to answer on PORT (a new
# name each try, so a cache cannot answer for it); false if it exits or never answers.
wait_answering() {
  local i
  for ((i = 0; i < 120; i++)); do
    kill -0 "$1" 2>/dev/null || return 1
    wildcard_answers "$2" "$i" && return 0
    sleep 0.5
  done
  return 1
}
