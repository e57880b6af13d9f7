# shellcheck shell=bash
# tools/bench/knot.sh — sourced (not run) by the bench scripts that start knotd as the
# upstream: the one knot.conf they use, the wildcard zone of the miss benchmarks, and the
# pinning of knotd's threads. Loopback only.

# knot_write_conf DIR PORT: DIR/knot.conf for one zone, bench.test., from DIR/bench.test.zone
# (the caller writes that), answering on 127.0.0.1@PORT with one UDP and one TCP worker.
knot_write_conf() {
  local dir=$1 port=$2
  mkdir -p "$dir/db"
  cat >"$dir/knot.conf" <<EOC
server:
    rundir: "$dir"
    listen: 127.0.0.1@$port
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "$dir/db"
log:
  - target: stderr
    any: warning
zone:
  - domain: bench.test.
    storage: "$dir"
    file: "bench.test.zone"
EOC
}

# knot_write_wildcard_zone DIR: DIR/bench.test.zone with a wildcard *.w.bench.test. A, so
# that every name under it is new to a cache (198.18.0.1 for all).
knot_write_wildcard_zone() {
  printf '%s\n' '$ORIGIN bench.test.' '$TTL 3600' '@ IN SOA ns hostmaster 1 3600 600 86400 3600' \
    '@ IN NS ns' 'ns IN A 198.18.255.53' '*.w IN A 198.18.0.1' >"$1/bench.test.zone"
}

# knot_pin_cpu1 PID: knotd pins each UDP worker to a CPU of its own choosing when it starts
# (worker 0 to CPU 0), whatever taskset it was started under; that would put the upstream on
# the server's CPU. Pins every thread of knotd PID back to CPU 1 (call it once knotd
# answers), and fails, naming the thread, if one is elsewhere after that.
knot_pin_cpu1() {
  local pid=$1 t
  taskset -a -p -c 1 "$pid" >/dev/null || return 1
  for t in /proc/"$pid"/task/*/status; do
    if [[ $(awk '/^Cpus_allowed_list:/ { print $2 }' "$t") != 1 ]]; then
      echo "knotd thread not on CPU 1 ($t)" >&2
      return 1
    fi
  done
}
