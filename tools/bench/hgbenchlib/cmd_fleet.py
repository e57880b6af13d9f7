"""hgbench fleet: the fleet's (Redis L2) cost and benefit, on loopback."""

import argparse
import os
import shutil
import socket

from . import common, confs, dnsperf, probe, procs, stats
from .procs import BenchError

HELP = """The fleet's cost and benefit, on loopback (docs/bench.md § The fleet):
  hit   hourglassd without and with --redis, every query a cache hit (dnsperf, full speed):
        hits never touch Redis, so the two should differ by noise only;
  miss  a name missing locally, answered from Redis (instance B, after instance A put it
        there) against the same name answered by the upstream (an instance without Redis):
        dnsperf's latency at a fixed rate, and the daemon's CPU time per query;
  key   the same miss run by a pair with --fleet-key-file (prefix hk:): what authenticating
        every value costs per L2 miss (A, which stores) and per L2 hit (B, which verifies).
Upstream: knotd on 127.0.0.1:35360 serving NAMES A records; Redis on 127.0.0.1:35361;
hourglassd on 35362..35367. Environment: NAMES (11000), HIT_SECONDS (5), ROUNDS (3),
MISS_N (10000), MISS_QPS (2000). Every process started here is stopped by its PID (also on
error or Ctrl-C); every dnsperf run is bounded in time and count."""

UP, REDIS = 35360, 35361


def add_parser(sub):
    p = sub.add_parser("fleet", help="hits and misses with and without the Redis L2",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build_dir", nargs="?", default="build", metavar="BUILD-DIR",
                   help="needs BUILD-DIR/resolver/hourglassd (default: build)")
    p.set_defaults(func=main, name="fleet")


def redis_up():
    try:
        with socket.create_connection(("127.0.0.1", REDIS), timeout=0.5):
            return True
    except OSError:
        return False


def main(a, ps):
    os.chdir(common.ROOT)
    hg = os.path.join(a.build_dir, "resolver", "hourglassd")
    if not os.access(hg, os.X_OK):
        raise BenchError(f"no {hg}; build hourglassd first")
    for t in ("knotd", "redis-server", "redis-cli", "dnsperf"):
        if shutil.which(t) is None:
            raise BenchError(f"{t} missing (scripts/install-deps, dnsperf)")
    names = common.env_int("NAMES", 11000)
    hit_seconds = common.env_int("HIT_SECONDS", 5)
    rounds = common.env_int("ROUNDS", 3)
    miss_n = common.env_int("MISS_N", 10000)
    miss_qps = common.env_int("MISS_QPS", 2000)
    if not (1 <= rounds <= 10 and 1 <= hit_seconds <= 60 and 1000 + miss_n <= names
            and miss_qps >= 100):
        raise BenchError("ROUNDS 1..10, HIT_SECONDS 1..60, MISS_N at most NAMES - 1000, "
                         "MISS_QPS at least 100")
    common.in_work_dir(ps, "fleet-bench", False,
                       lambda work: _fleet(ps, work, hg, names, hit_seconds, rounds, miss_n,
                                           miss_qps))


def _fleet(ps, work, hg, names, hit_seconds, rounds, miss_n, miss_qps):
    common.start_knot(ps, work, UP, names=names, cpu1=False)
    rpid = ps.start("redis-server", ["redis-server", "--port", REDIS, "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir", work,
                                     "--logfile", f"{work}/redis.log"])
    if not procs.wait_until(lambda _: redis_up(), 40, 0.25, alive=lambda: ps.alive(rpid)):
        raise BenchError(f"redis-server did not start (see {work}/redis.log)")

    def start_hg(port, *args):
        log = f"{work}/hg-{port}.log"
        pid = ps.start(f"hourglassd {port}", [hg, "--listen", f"127.0.0.1:{port}", "--upstream",
                                              f"127.0.0.1:{UP}", *common.HGD_DNSSEC_OFF,
                                              *common.hgd_test_zone(hg), *common.hgd_root(hg), *args],
                       log=log)
        if not procs.wait_until(lambda _: probe.query_a(port, "n0.bench.test.") is not None,
                                40, 0.25, alive=lambda: ps.alive(pid)):
            print(common.tail(log), end="")
            raise BenchError(f"hourglassd on {port} did not answer")
        return pid
    redis = ["--redis", f"127.0.0.1:{REDIS}"]
    off = start_hg(35362)
    on = start_hg(35363, *redis)
    b = start_hg(35364, *redis)
    a = start_hg(35365, *redis)
    key = f"{work}/fleet.key"
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(os.urandom(32).hex())
    keyed = [*redis, "--redis-prefix", "hk:", "--fleet-key-file", key]
    kb = start_hg(35366, *keyed)
    ka = start_hg(35367, *keyed)
    hit, miss = f"{work}/hit.txt", f"{work}/miss.txt"
    dnsperf.write_names(hit, confs.numbered_names(1000))
    dnsperf.write_names(miss, confs.numbered_names(miss_n, start=1000))

    def run(port, pid, qfile, *args):
        """'qps avg_ms cpu_s queries' of one bounded dnsperf run."""
        t0 = stats.cpu_ticks(pid)
        r = dnsperf.run(f"{work}/last.dnsperf", port, qfile, *args, timeout=120)
        t1 = stats.cpu_ticks(pid)
        cpu = (t1 - t0) / stats.CLK_TCK if t0 is not None and t1 is not None else 0.0
        return f"{r.qps:.0f} {r.avg_ms:.3f} {cpu:.2f} {r.completed}"

    print(f"== load average at start: {common.loadavg3()}, {os.cpu_count()} CPUs")
    print("== warm-up: 1000 names on both", flush=True)
    run(35362, off, hit, "-n", 1, "-c", 4)
    run(35363, on, hit, "-n", 1, "-c", 4)
    print(f"== hits, {hit_seconds}s full speed per run, {rounds} rounds "
          "(qps avg_ms cpu_s queries)", flush=True)
    full = ["-l", hit_seconds, "-c", 8, "-q", 100]
    for r in range(1, rounds + 1):
        print(f"round {r}  redis off: {run(35362, off, hit, *full)}", flush=True)
        print(f"round {r}  redis on:  {run(35363, on, hit, *full)}", flush=True)
    once = ["-n", 1, "-Q", miss_qps, "-c", 4]
    print(f"== misses: {miss_n} names once each at {miss_qps} qps (qps avg_ms cpu_s queries)")
    print(f"A fills Redis (L2 miss, upstream): {run(35365, a, miss, *once)}", flush=True)
    print(f"B from Redis (L2 hit):             {run(35364, b, miss, *once)}", flush=True)
    print(f"no Redis, from upstream:           {run(35362, off, miss, *once)}", flush=True)
    print("== the same misses with --fleet-key-file (qps avg_ms cpu_s queries)")
    print(f"A fills Redis, values tagged:      {run(35367, ka, miss, *once)}", flush=True)
    print(f"B from Redis, tags verified:       {run(35366, kb, miss, *once)}", flush=True)
    sizes = [procs.output(["redis-cli", "-p", REDIS, "STRLEN", f"{p}:c:n1000.bench.test. 1 1 0"],
                          timeout=10).strip() for p in ("hg", "hk")]
    print(f"value bytes in Redis, without and with a key: {sizes[0]} {sizes[1]}")
    print(f"== load average at end: {common.loadavg3()}")
