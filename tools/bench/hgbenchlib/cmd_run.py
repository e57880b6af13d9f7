"""hgbench run: hourglassd against its peers (Unbound, dnsmasq, dnsdist), side by side."""

import argparse
import os
import shutil
import signal
import subprocess
import time

from . import common, confs, dnsperf, procs, stats
from .procs import BenchError

HELP = """hourglassd against its peers (Unbound, dnsmasq, dnsdist), same machine, one run,
reported as ratios (docs/bench.md).

One authoritative upstream (knotd) on 127.0.0.1 serves bench.test.: ZONE_NAMES A records
(nI.bench.test., TTL 3600) plus a wildcard *.w.bench.test. Every forwarder is started on
its own loopback port, pinned to CPU 0 (one thread / default threads for dnsdist), its
cache warmed with one pass over HIT_NAMES names; dnsperf (pinned to CPU 1, knotd too)
then measures them one after the other, ROUNDS times, each round in a rotated order, the
others paused (SIGSTOP) during each measurement (PAUSE_OTHERS=0 leaves them running):
  hit   cache-hit throughput: dnsperf at full speed for HIT_SECONDS on the warm names
        (8 clients, 100 outstanding)
  lat   latency at a fixed rate every forwarder sustains (LAT_QPS, LAT_SECONDS), cache
        hits; p50/p99/p99.9 from dnsperf's per-query lines, per round and pooled over
        all LAT_ROUNDS rounds (the tail of a few thousand queries is mostly the host's:
        many short rounds in rotated order spread it over every server alike)
  miss  every query a new name (unique names under the wildcard), MISS_SECONDS: forwarder
        + upstream round trip; knotd shares CPU 1 with dnsperf
Each forwarder's CPU use over a run is read from /proc, so "qps per CPU-second" is given
too: it still compares the servers when dnsperf, not the server, is the limit.
Two floors run beside them, built from tools/bench: "floor" answers every query with a fixed
record (no cache, no parsing: the least a hit can cost on this machine) and "relay" passes
each query to knotd and the answer back with only the ID remapped (the least a miss can
cost). Their rows say how far each forwarder is from what the kernel alone costs.
A forwarder "base" is a second hourglassd, HGD_BASE=path (e.g. a build of the previous
commit), run the same way: a change's before and after in one run.
hourglassd runs with --dnssec off ("hourglass", "base": a forwarder's cost, no validation).
With --dnssec, knotd signs bench.test. itself (ECDSA P-256 SHA-256, algorithm 13, KSK and
ZSK, NSEC) and its DS (SHA-256, from keymgr) is the trust anchor of bench.test. for
"hourglass-validate" (hourglassd --dnssec validate --trust-anchor FILE) and
"unbound-validate" (the Unbound above with module-config "validator iterator" and the DS as
trust-anchor:); the default forwarders are then "hourglass-validate hourglass
unbound-validate". Every miss is then a signed wildcard answer with its NSEC proof; each
validating forwarder must answer a probe with AD before anything is measured, and a table of
CPU microseconds per hit and per miss, each divided by hourglass-validate's, is printed.
Percentiles are nearest-rank (hgbenchlib/stats.py).

Environment: ROUNDS HIT_SECONDS MISS_SECONDS LAT_SECONDS LAT_QPS LAT_ROUNDS PAUSE_OTHERS
HIT_NAMES ZONE_NAMES MISS_NAMES CLIENTS BASE_PORT FORWARDERS HGD_BASE BENCH_CXXFLAGS.
Needs root for apt-get (or everything installed already; then use --no-install).
Loopback only; no service is enabled or started; every process it starts is stopped by
its PID (also on Ctrl-C); every loop is bounded. Raw logs stay in the printed work dir."""

KNOWN = ("hourglass", "unbound", "dnsmasq", "dnsdist", "floor", "relay", "base",
         "hourglass-validate", "unbound-validate")
VALIDATING = ("hourglass-validate", "unbound-validate")  # need --dnssec (the signed zone)
OFFSET = {"hourglass": 1, "unbound": 2, "dnsmasq": 3, "dnsdist": 4, "floor": 5, "relay": 6,
          "base": 7, "hourglass-validate": 8, "unbound-validate": 9}
DEFAULT_FORWARDERS = "hourglass unbound dnsmasq dnsdist floor relay"
DNSSEC_FORWARDERS = "hourglass-validate hourglass unbound-validate"
# Debian 12 package -> a binary it provides.
PKG_BIN = {"dnsperf": "dnsperf", "unbound": "unbound", "dnsmasq-base": "dnsmasq",
           "dnsdist": "dnsdist", "knot": "knotd", "bind9-dnsutils": "dig"}


def add_parser(sub):
    p = sub.add_parser("run", help="hourglassd beside Unbound, dnsmasq, dnsdist: hit/lat/miss",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=common.int_range(1, 5, "--rounds"))
    p.add_argument("--lat-rounds", type=common.int_range(1, 30, "--lat-rounds"))
    p.add_argument("--hit-seconds", type=common.int_range(1, 60, "seconds"))
    p.add_argument("--miss-seconds", type=common.int_range(1, 60, "seconds"))
    p.add_argument("--no-miss", action="store_true")
    p.add_argument("--no-lat", action="store_true")
    p.add_argument("--no-install", action="store_true")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--forwarders", help='e.g. "hourglass unbound dnsmasq dnsdist floor relay"')
    p.add_argument("--base-port", type=common.int_range(1024, 65000, "--base-port"))
    p.add_argument("--dnssec", action="store_true",
                   help="bench.test. signed by knotd; validating forwarders (see above)")
    p.set_defaults(func=main, name="bench")


class Settings:
    def __init__(self, a):
        e = common.env_int
        self.rounds = a.rounds or e("ROUNDS", 3)
        self.hit_seconds = a.hit_seconds or e("HIT_SECONDS", 8)
        self.miss_seconds = a.miss_seconds or e("MISS_SECONDS", 5)
        self.lat_seconds = e("LAT_SECONDS", 4)
        self.lat_qps = e("LAT_QPS", 5000)
        self.lat_rounds = a.lat_rounds or e("LAT_ROUNDS", 0) or self.rounds
        self.pause_others = e("PAUSE_OTHERS", 1)
        self.hit_names = e("HIT_NAMES", 1000)
        self.zone_names = e("ZONE_NAMES", 10000)
        self.miss_names = e("MISS_NAMES", 1000000)
        self.clients = e("CLIENTS", 8)
        self.base_port = a.base_port or e("BASE_PORT", 35350)
        self.dnssec = bool(getattr(a, "dnssec", False))
        self.forwarders = (a.forwarders or os.environ.get("FORWARDERS")
                           or (DNSSEC_FORWARDERS if self.dnssec else DEFAULT_FORWARDERS)).split()
        self.do_miss, self.do_lat = not a.no_miss, not a.no_lat
        self.do_install, self.do_build = not a.no_install, not a.no_build
        if not 1 <= self.rounds <= 5:
            raise BenchError("--rounds must be 1..5")
        if not 1 <= self.lat_rounds <= 30:
            raise BenchError("--lat-rounds must be 1..30")
        if not 1 <= self.lat_seconds <= 60:
            raise BenchError("LAT_SECONDS must be 1..60")
        if not (1 <= self.hit_seconds <= 60 and 1 <= self.miss_seconds <= 60):
            raise BenchError("seconds must be 1..60")
        if self.hit_names > self.zone_names:
            raise BenchError("HIT_NAMES must be <= ZONE_NAMES")
        if not 1024 <= self.base_port <= 65000:
            raise BenchError("--base-port must be 1024..65000")
        common.need_cpus("server on CPU 0, dnsperf on CPU 1")
        for fw in self.forwarders:
            if fw == "base":
                b = os.environ.get("HGD_BASE", "")
                if not (b and os.access(b, os.X_OK)):
                    raise BenchError("forwarder 'base' needs HGD_BASE=path/to/an/other/hourglassd")
            elif fw not in KNOWN:
                raise BenchError(f"unknown forwarder '{fw}'")
            elif fw in VALIDATING and not self.dnssec:
                raise BenchError(f"forwarder '{fw}' needs --dnssec (a signed bench.test.)")


def install_packages(s):
    missing = [p for p, b in PKG_BIN.items()
               if shutil.which(b) is None and not os.access(f"/usr/sbin/{b}", os.X_OK)]
    if not missing:
        return
    if not s.do_install:
        raise BenchError(f"missing packages: {' '.join(missing)} (run without --no-install, as root)")
    if os.geteuid() != 0:
        raise BenchError(f"missing packages {' '.join(missing)}: run as root to install them")
    print(f"bench: installing {' '.join(missing)} (no recommends, no services started)", flush=True)
    # policy-rc.d exiting 101 forbids every maintainer script to start a service.
    policy = "/usr/sbin/policy-rc.d"
    made_policy = not os.path.exists(policy)
    if made_policy:
        confs.write(policy, "#!/bin/sh\nexit 101\n")
        os.chmod(policy, 0o755)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log = "/tmp/hg-bench-apt.log"
    try:
        with open(log, "wb") as f:
            cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
            if subprocess.run(cmd, stdout=f, stderr=f, env=env).returncode != 0:
                subprocess.run(["apt-get", "update", "-q"], stdout=f, stderr=f, env=env)
                if subprocess.run(cmd, stdout=f, stderr=f, env=env).returncode != 0:
                    raise BenchError(f"apt-get install failed, see {log}")
    finally:
        if made_policy:
            os.unlink(policy)


def build(s):
    print("bench: building hourglassd and the floors (Release) in build-release/", flush=True)
    # GCC 12 at -O3 raises false -Wrestrict / -Wnull-dereference warnings inside libstdc++
    # that the project's -Werror turns into errors; BENCH_CXXFLAGS can keep them warnings.
    b = os.path.join(common.ROOT, "build-release")
    log = "/tmp/hg-bench-build.log"
    with open(log, "wb") as f:
        ok = subprocess.run(["cmake", "-S", common.ROOT, "-B", b, "-DCMAKE_BUILD_TYPE=Release",
                             "-DHG_TESTS=OFF",
                             f"-DCMAKE_CXX_FLAGS={os.environ.get('BENCH_CXXFLAGS', '')}"],
                            stdout=subprocess.DEVNULL, stderr=f).returncode == 0
        ok = ok and subprocess.run(["cmake", "--build", b, "--target", "hourglassd",
                                    "hg-bench-floor", "hg-bench-relay", "-j2"],
                                   stdout=f, stderr=f).returncode == 0
    if not ok:
        print(common.tail(log, 30), end="")
        raise BenchError(f"build failed, see {log}")


def port_free(port):
    out = procs.output(["ss", "-Hltun", f"( sport = :{port} )"])
    return out.strip() == ""


class Bench:
    def __init__(self, s, ps, work):
        self.s, self.ps, self.work = s, ps, work
        self.hgd = common.release("resolver/hourglassd")
        self.floor = common.release("tools/bench/hg-bench-floor")
        self.relay = common.release("tools/bench/hg-bench-relay")
        self.up = s.base_port
        self.port = {fw: s.base_port + OFFSET[fw] for fw in KNOWN}
        self.pid = {}
        self.rows = []  # dicts, one per measurement
        self.results = os.path.join(work, "results.tsv")
        self.hit_file = os.path.join(work, "hit.txt")
        self.anchor_file = os.path.join(work, "bench.test.ds")

    def argv(self, fw):
        p, up, w = self.port[fw], self.up, self.work
        if fw in ("hourglass", "base"):
            b = self.hgd if fw == "hourglass" else os.environ["HGD_BASE"]
            # Explicit: hourglassd validates by default, from the root's anchor, which the
            # bench's upstream (authoritative for bench.test. only) cannot serve.
            return [b, "--listen", f"127.0.0.1:{p}", "--upstream", f"127.0.0.1:{up}",
                    "--threads", "1", "--cache-size", "64MiB", *common.HGD_DNSSEC_OFF,
                    *common.hgd_test_zone(b), *common.hgd_root(b)]
        if fw == "hourglass-validate":
            return [self.hgd, "--listen", f"127.0.0.1:{p}", "--upstream", f"127.0.0.1:{up}",
                    "--threads", "1", "--cache-size", "64MiB", "--dnssec", "validate",
                    "--trust-anchor", self.anchor_file, *common.hgd_test_zone(self.hgd), *common.hgd_root(self.hgd)]
        if fw in ("unbound", "unbound-validate"):
            return ["unbound", "-d", "-c", f"{w}/{fw}.conf"]
        if fw == "dnsmasq":
            return ["dnsmasq", "-k", "-C", "/dev/null", "--no-resolv", "--no-hosts", "--no-poll",
                    "--user=root", f"--port={p}", "--listen-address=127.0.0.1",
                    "--bind-interfaces", f"--server=127.0.0.1#{up}", "--cache-size=10000",
                    f"--pid-file={w}/dnsmasq.pid", f"--log-facility={w}/dnsmasq.syslog"]
        if fw == "dnsdist":
            return ["dnsdist", "--supervised", "--disable-syslog", "-C", f"{w}/dnsdist.conf"]
        if fw == "floor":
            return [self.floor, f"127.0.0.1:{p}"]
        return [self.relay, f"127.0.0.1:{p}", f"127.0.0.1:{up}"]

    def start_forwarder(self, fw):
        log = os.path.join(self.work, f"{fw}.log")
        pid = self.ps.start(fw, self.argv(fw), log=log, cpu=0)
        self.pid[fw] = pid
        if not common.wait_answering(self.ps, pid, self.port[fw]):
            print(common.tail(log), end="")
            raise BenchError(f"{fw} did not answer on port {self.port[fw]}")

    def pause_others(self, fw, sig):
        for other in self.s.forwarders:
            if other != fw and not self.ps.signal(self.pid[other], sig):
                raise BenchError(f"{other} (PID {self.pid[other]}) is gone; its log: "
                                 f"{self.work}/{other}.log")

    def measure(self, rnd, test, fw, qf, *args):
        s = self.s
        out = os.path.join(self.work, f"{fw}.{test}.r{rnd}.dnsperf")
        load = stats.loadavg(1)
        # The other servers are paused while one is measured: idle, they still run timers
        # on CPU 0 (dnsdist's maintenance and health checks every second, Unbound's), and
        # those would land on whichever server is being measured.
        if s.pause_others:
            self.pause_others(fw, signal.SIGSTOP)
        pid = self.pid[fw]
        t0, c0a, c1a, s0 = stats.cpu_ticks(pid), stats.cpu_line(0), stats.cpu_line(1), time.monotonic()
        r = dnsperf.run(out, self.port[fw], qf, "-c", s.clients, "-t", "2", *args,
                        timeout=90, cpu=1)
        s1, t1, c0b, c1b = time.monotonic(), stats.cpu_ticks(pid), stats.cpu_line(0), stats.cpu_line(1)
        if s.pause_others:
            self.pause_others(fw, signal.SIGCONT)
        row = {"round": rnd, "fw": fw, "test": test, "qps": round(r.qps), "sent": r.sent,
               "completed": r.completed, "lost": r.lost, "noerr": f"{r.noerror_pct():.2f}",
               "avg": r.avg_ms, "sd": r.sd_ms, "p50": "-", "p99": "-", "p999": "-",
               "fwcpu": round(stats.cpu_pct(t0, t1, s1 - s0)),
               "cpu0": round(stats.busy_pct(c0a, c0b)), "cpu1": round(stats.busy_pct(c1a, c1b)),
               "load": load, "cpuus": stats.us_per((t1 or 0) - (t0 or 0), r.completed)}
        if test == "lat":
            lat = stats.Latency(dnsperf.latencies_ms(r.text))
            row["p50"], row["p99"], row["p999"] = lat.fmt(0.5), lat.fmt(0.99), lat.fmt(0.999)
        self.rows.append(row)
        with open(self.results, "a", encoding="ascii") as f:
            f.write("\t".join(f"{row[k]:.3f}" if k in ("avg", "sd", "cpuus") else str(row[k])
                              for k in COLUMNS) + "\n")
        p99 = f" p99 {row['p99']} ms" if row["p99"] != "-" else ""
        print(f"  {fw:<9} {test:<4} {row['qps']:>9} qps  lost {row['lost']:<6} NOERROR "
              f"{row['noerr']}%  avg {row['avg']:.3f} ms{p99}  {fw} cpu {row['fwcpu']}% "
              f"(cpu0 {row['cpu0']}%, cpu1 {row['cpu1']}%, load {load})", flush=True)

    def rotated(self, n):
        f = self.s.forwarders
        return [f[(i + n) % len(f)] for i in range(len(f))]


COLUMNS = ("round", "fw", "test", "qps", "sent", "completed", "lost", "noerr", "avg", "sd",
           "p50", "p99", "p999", "fwcpu", "cpu0", "cpu1", "load", "cpuus")
HEADER = ("round\tfw\ttest\tqps\tsent\tcompleted\tlost\tnoerror_pct\tavg_ms\tsd_ms\tp50_ms\t"
          "p99_ms\tp999_ms\tfw_cpu_pct\tcpu0_pct\tcpu1_pct\tload1\tcpu_us_per_query\n")


def efficiency(row):
    """Queries answered per CPU-second of the server (0 when its CPU use read as 0)."""
    return row["qps"] / (row["fwcpu"] / 100) if row["fwcpu"] > 0 else 0


def summary(rows, forwarders):
    """The tables: per server and test, the median round (by qps; by p99 for lat), the best
    round, every round, and hourglass / peer ratios."""
    out = []
    groups = {}
    for r in rows:
        groups.setdefault((r["fw"], r["test"]), []).append(r)

    def key(r):
        if r["test"] == "lat":
            return float(r["p99"]) if r["p99"] != "-" else 0.0
        return r["qps"]
    med = {k: stats.median_row(v, key) for k, v in groups.items()}
    w = max([9] + [len(fw) for fw in forwarders])  # the server column's width
    titles = {"hit": "cache hits, full speed (median round; best; all rounds)",
              "miss": "cache misses, every name new (median round; best; all rounds)",
              "lat": "latency of cache hits at a fixed rate (median round by p99)"}
    for test in ("hit", "miss", "lat"):
        if not any((fw, test) in med for fw in forwarders):
            continue
        out.append(f"\n{titles[test]}")
        if test == "lat":
            out.append(f"| {'server':<{w}} | {'qps':>7} | {'avg ms':>8} | {'p50 ms':>8} | "
                       f"{'p99 ms':>8} | {'p99.9 ms':>8} | {'lost':>6} | {'cpu %':>7} |")
            out.append("|" + "-" * (w + 2) + "|--------:|---------:|---------:|---------:|---------:|"
                       "-------:|--------:|")
        else:
            out.append(f"| {'server':<{w}} | {'qps':>8} | {'best':>8} | {'rounds':<24} | "
                       f"{'avg ms':>8} | {'lost':>6} | {'NOERR %':>7} | {'srv cpu':>7} | "
                       f"{'cpu0/cpu1':>9} | {'qps/cpu-s':>9} | {'hg/peer qps':>11} | "
                       f"{'hg/peer eff':>11} |")
            out.append("|" + "-" * (w + 2) + "|---------:|---------:|--------------------------|"
                       "---------:|-------:|--------:|--------:|----------:|----------:|"
                       "------------:|------------:|")
        h = med.get(("hourglass", test))
        for fw in forwarders:
            f = med.get((fw, test))
            if f is None:
                continue
            if test == "lat":
                out.append(f"| {fw:<{w}} | {f['qps']:>7} | {f['avg']:>8.3f} | {f['p50']:>8} | "
                           f"{f['p99']:>8} | {f['p999']:>8} | {f['lost']:>6} | "
                           f"{f['fwcpu']:>7} |")
                continue
            eff = efficiency(f)
            ratio = ratio_eff = "-"
            if h is not None and f["qps"] > 0:
                ratio = f"{h['qps'] / f['qps']:.2f}"
                if eff > 0:
                    ratio_eff = f"{efficiency(h) / eff:.2f}"
            rs = groups[(fw, test)]
            best = max(r["qps"] for r in rs)
            runs = "/".join(str(r["qps"]) for r in rs)
            cpus = f"{f['cpu0']}/{f['cpu1']}%"
            out.append(f"| {fw:<{w}} | {f['qps']:>8} | {best:>8} | {runs:<24} | {f['avg']:>8.3f} | "
                       f"{f['lost']:>6} | {f['noerr']:>7} | {f['fwcpu']:>6}% | {cpus:>9} | "
                       f"{eff:>9.0f} | {ratio:>11} | {ratio_eff:>11} |")
    return "\n".join(out) + "\n"


def cpu_per_query(rows, forwarders, ref="hourglass-validate"):
    """CPU microseconds per answered query (the server's utime + stime over dnsperf's completed
    queries) for hits and misses: per server the median of its rounds, every round, and the
    median divided by ref's (> 1: the server costs more than ref)."""
    out = [f"\nCPU per query (us: server CPU time / queries answered; median of the rounds, "
           f"every round; / ref: the median over {ref}'s)",
           f"| {'server':<18} | {'hit us':>7} | {'hit rounds':<20} | {'/ ref':>6} | "
           f"{'miss us':>7} | {'miss rounds':<20} | {'/ ref':>6} |",
           "|--------------------|--------:|----------------------|-------:|--------:|"
           "----------------------|-------:|"]
    med = {}
    for fw in forwarders:
        for test in ("hit", "miss"):
            v = [r["cpuus"] for r in rows if r["fw"] == fw and r["test"] == test]
            if v:
                med[(fw, test)] = (stats.median(v), v)
    for fw in forwarders:
        cells = []
        for test in ("hit", "miss"):
            m = med.get((fw, test))
            if m is None:
                cells += ["-", "-", "-"]
                continue
            r = med.get((ref, test))
            ratio = f"{m[0] / r[0]:.2f}" if r and r[0] > 0 else "-"
            cells += [f"{m[0]:.2f}", "/".join(f"{x:.2f}" for x in m[1]), ratio]
        out.append(f"| {fw:<18} | {cells[0]:>7} | {cells[1]:<20} | {cells[2]:>6} | "
                   f"{cells[3]:>7} | {cells[4]:<20} | {cells[5]:>6} |")
    return "\n".join(out) + "\n"


def ad_flag(port, name):
    """Whether 127.0.0.1:port answers an A query for name (DO set, one try) with AD; None
    when it does not answer."""
    text = procs.output(["dig", "+dnssec", "+time=2", "+tries=1", "-p", str(port),
                         "@127.0.0.1", name, "A"], timeout=10)
    for line in text.splitlines():
        if line.startswith(";; flags:"):
            return "ad" in dig_flags(line)
    return None


def dig_flags(line):
    """The header flags of dig's ";; flags: qr rd ra ad; QUERY: 1, ..." line."""
    return line.split(":", 1)[1].split(";")[0].split()


def lat_pooled(rows, forwarders, lat_rounds, work):
    """The latency of every query of every round, pooled per server: with 5,000 qps the
    p99.9 of one 4-second round is its 20th slowest query, and one stall of the host
    decides it."""
    w = max([9] + [len(fw) for fw in forwarders])  # the server column's width
    out = [f"\nlatency of cache hits, all {lat_rounds} rounds pooled (slow: over 0.4 ms; "
           "p99.9 per round in order)",
           f"| {'server':<{w}} | {'queries':>8} | {'p50 ms':>8} | {'p99 ms':>8} | {'p99.9 ms':>8} | "
           f"{'max ms':>8} | {'slow':>6} | {'p99.9 by round':<40} |",
           "|" + "-" * (w + 2) + "|---------:|---------:|---------:|---------:|---------:|"
           "-------:|------------------------------------------|"]
    for fw in forwarders:
        values = []
        for r in range(1, lat_rounds + 1):
            values += dnsperf.latencies_ms(dnsperf.read(os.path.join(work, f"{fw}.lat.r{r}.dnsperf")))
        lat = stats.Latency(values)
        if lat.count == 0:
            continue
        by_round = "/".join(r["p999"] for r in rows if r["fw"] == fw and r["test"] == "lat")
        out.append(f"| {fw:<{w}} | {lat.count:>8} | {lat.fmt(0.5):>8} | {lat.fmt(0.99):>8} | "
                   f"{lat.fmt(0.999):>8} | {lat.fmt('max'):>8} | {lat.slow:>6} | {by_round:<40} |")
    return "\n".join(out) + "\n"


LEGEND = """
qps: dnsperf's queries/s in the median round (its other columns too; best: the best round);
srv cpu: the server's CPU time / wall time (100% = all of CPU 0);
cpu0/cpu1: how busy each CPU was in total (other users of the machine included);
qps/cpu-s: queries answered per CPU-second of the server; hg/peer qps and hg/peer eff:
hourglass divided by the peer (> 1: hourglass better). When cpu1 is ~100% and srv cpu is
well under 100%, dnsperf is the limit, not the server: compare qps/cpu-s then.
floor answers everything with one fixed record (its "miss" row is a hit too): the hit floor.
relay forwards everything to knotd untouched (its "hit" row is a miss too): the miss floor.
"""


def versions(b, s):
    tree = procs.output(["git", "-C", common.ROOT, "describe", "--always", "--dirty"]).strip() or "?"
    if not s.do_build:
        tree += " now; --no-build: binary built earlier"
    lines = [f"hourglassd: {common.first_line([b.hgd, '--version'])} (Release, tree {tree})",
             f"unbound:    {common.first_line(['unbound', '-V'])}",
             f"dnsmasq:    {common.first_line(['dnsmasq', '--version']).split('  Copyright')[0]}",
             f"dnsdist:    {common.first_line(['dnsdist', '--version'])}",
             f"knotd:      {common.first_line(['knotd', '--version'])}",
             "floor, relay: tools/bench/floor.cc, relay.cc (Release, same tree)"]
    if "base" in s.forwarders:
        base = os.environ["HGD_BASE"]
        lines.append(f"base:       {base} ({common.first_line([base, '--version'])})")
    v = [ln for ln in procs.output(["dnsperf", "-h"]).splitlines() if ln.startswith("Version")]
    lines.append(f"dnsperf:    {v[0] if v else '?'}")
    return "\n".join(lines)


def main(a, ps):
    s = Settings(a)
    install_packages(s)
    if s.do_build:
        build(s)
    work = common.work_dir("bench")
    b = Bench(s, ps, work)
    for path in (b.hgd, b.floor, b.relay):
        common.need_binary(path, "run without --no-build")
    print(f"bench: work dir {work}", flush=True)
    for p in [b.up] + [b.port[fw] for fw in KNOWN]:
        if not port_free(p):
            raise BenchError(f"port {p} is in use; pick --base-port")

    common.start_knot(ps, work, b.up, names=s.zone_names, wildcard="198.19.0.1",
                      signed=s.dnssec)
    dnsperf.write_names(b.hit_file, confs.numbered_names(s.hit_names))
    confs.write(f"{work}/unbound.conf", confs.unbound_forwarder(work, b.port["unbound"], b.up))
    if s.dnssec:
        anchors = common.knot_ds(work)
        confs.write(b.anchor_file, "\n".join(anchors) + "\n")
        confs.write(f"{work}/unbound-validate.conf", confs.unbound_forwarder(
            work, b.port["unbound-validate"], b.up, anchors, pidfile="unbound-validate.pid"))
        print(f"== bench.test. signed by knotd (policy: {', '.join(confs.KNOT_POLICY_LINES)}); "
              f"trust anchor: {'; '.join(anchors)}", flush=True)
    confs.write(f"{work}/dnsdist.conf", confs.dnsdist_cache(b.port["dnsdist"], b.up))

    print(f"== machine: {os.cpu_count()} CPUs, {common.cpu_model()}")
    print(f"== kernel:  {os.uname().release}")
    print(f"== uptime at start: {procs.output(['uptime']).strip()}")
    v = versions(b, s)
    print(v)
    confs.write(f"{work}/versions.txt", v + "\n")
    print(f"== settings: rounds {s.rounds}, hit {s.hit_seconds}s on {s.hit_names} names, lat "
          f"{s.lat_qps} qps {s.lat_seconds}s × {s.lat_rounds} rounds, miss {s.miss_seconds}s, "
          f"{s.clients} dnsperf clients, zone {s.zone_names} names"
          f"{', signed (--dnssec)' if s.dnssec else ''}", flush=True)
    with open(b.results, "w", encoding="ascii") as f:
        f.write(HEADER)

    # All forwarders run at once (the others paused while one is measured) and are measured
    # one after the other, round after round, each round in a rotated order: a change in the
    # machine's load then falls on every server alike instead of on whoever ran at that moment.
    for fw in s.forwarders:
        b.start_forwarder(fw)
        if s.dnssec:
            ad = ad_flag(b.port[fw], f"ad-probe.{fw}.w.bench.test.")
            said = {True: "with AD", False: "without AD", None: "no answer"}[ad]
            print(f"bench: {fw}: a wildcard name asked with DO: answered {said}", flush=True)
            if fw in VALIDATING and ad is not True:
                raise BenchError(f"{fw} does not validate bench.test. (no AD; see {work}/{fw}.log)")
        # warm: one pass over the hit names, one client, few outstanding
        warm = os.path.join(work, f"{fw}.warm.dnsperf")
        r = dnsperf.run(warm, b.port[fw], b.hit_file, "-n", 1, "-c", 1, "-q", 20, "-t", 2,
                        timeout=60, cpu=1)
        if r.completed != s.hit_names:
            print(f"bench: warning: warm pass on {fw} did not complete every query (see {warm})",
                  flush=True)
    for rnd in range(1, s.rounds + 1):
        order = b.rotated(rnd - 1)
        print(f"== round {rnd}, cache hits: {' '.join(order)} ", flush=True)
        for fw in order:
            b.measure(rnd, "hit", fw, b.hit_file, "-l", s.hit_seconds)
    if s.do_lat:
        for rnd in range(1, s.lat_rounds + 1):
            order = b.rotated(rnd - 1)
            print(f"== round {rnd}, latency at {s.lat_qps} qps: {' '.join(order)} ", flush=True)
            for fw in order:
                b.measure(rnd, "lat", fw, b.hit_file, "-l", s.lat_seconds, "-Q", s.lat_qps, "-v")
    if s.do_miss:  # last: it fills the caches with a million names each
        for rnd in range(1, s.rounds + 1):
            order = b.rotated(rnd - 1)
            print(f"== round {rnd}, cache misses: {' '.join(order)} ", flush=True)
            for fw in order:
                miss = os.path.join(work, "miss.txt")
                dnsperf.write_names(miss, confs.numbered_names(
                    s.miss_names, f"r{rnd}{fw}-{{}}.w.bench.test. A"))
                b.measure(rnd, "miss", fw, miss, "-l", s.miss_seconds, "-n", 1)
                os.unlink(miss)
    for fw in s.forwarders:
        ps.stop(b.pid[fw], timeout=5)
    print(f"== uptime at end: {procs.output(['uptime']).strip()}")

    text = summary(b.rows, s.forwarders)
    if s.dnssec:
        text += cpu_per_query(b.rows, s.forwarders)
    if s.do_lat:
        text += lat_pooled(b.rows, s.forwarders, s.lat_rounds, work)
    print(text, end="")
    confs.write(f"{work}/summary.txt", text)
    print(LEGEND)
    print(f"bench: raw results {b.results}; dnsperf outputs and server logs in {work}")
