"""hgbench dot-miss and dot-dnsdist: cache misses over DNS-over-TLS against plain UDP."""

import argparse
import os
import random
import shutil
import subprocess

from . import common, confs, dnsperf, probe, procs, stats
from .procs import BenchError

MISS_HELP = """Cache misses over a warm DNS-over-TLS connection against plain UDP, to the same
upstream, for hourglassd and for Unbound's own forward-tls-upstream (docs/dot.md).

All on loopback. One upstream, Unbound "U" (num-threads 1, pinned to CPU 1 with dnsperf),
serves every name under w.bench.test. from a redirect zone, on a plain port and on a TLS
port with a certificate for dns.test made here by a throwaway CA. Each forwarder in turn
(pinned to CPU 0, started alone, one warm-up query so its connection is open) gets:
  lat   dnsperf at a fixed LAT_QPS for LAT_SECONDS, every query a new name (a miss):
        p50/p99 (nearest rank) from dnsperf's per-query lines;
  miss  dnsperf at full speed (CLIENTS clients, 100 outstanding) for MISS_SECONDS, every
        query a new name: queries/s and the forwarder's CPU per answered query.
Forwarders: hg-udp (--upstream U plain), hg-dot (--upstream tls://U#dns.test), ub-udp and
ub-dot (Unbound forward-only, forward-tls-upstream for the latter). Environment: LAT_QPS
(2000), LAT_SECONDS (4), MISS_SECONDS (5), CLIENTS (8), ROUNDS (3), FORWARDERS. The table
gives the median round of each column. Every process started here is stopped by its PID;
every dnsperf run is bounded."""

DNSDIST_HELP = """Is the DoT latency of `hgbench dot-miss` the upstream's TLS serving or
hourglassd's? The same cache-miss measurement with a second, different DoT server in front
of the same upstream: dnsdist, answering on a plain UDP/TCP port and on a TLS port
(addTLSLocal), forwarding every query to the Unbound upstream of dot-miss (docs/dot.md).

All on loopback. Unbound "U" (num-threads 1) serves every name under w.bench.test. from a
redirect zone, plain and TLS; dnsdist "D" forwards its UDP frontend over UDP and its TLS
frontend over TCP to U's plain port. U, D and dnsperf are pinned to CPU 1, hourglassd
(one thread) to CPU 0. Each round measures, every query a new name (a miss):
  hg-udp, hg-dot  hourglassd with --upstream D plain / tls://D#dns.test: dnsperf at a fixed
                  LAT_QPS for LAT_SECONDS (p50/p99 from the per-query lines), then at full
                  speed (CLIENTS clients) for MISS_SECONDS (misses/s, hourglassd's CPU per
                  answered query);
  dd-udp, dd-tcp, dd-dot, ub-udp, ub-dot
                  dnsperf straight at D's UDP, TCP and TLS frontends and at U's plain and
                  TLS ports (-m udp/tcp/dot), at the same fixed rate: the servers' own time.
Environment: LAT_QPS, LAT_SECONDS, MISS_SECONDS, CLIENTS, ROUNDS, FORWARDERS, DIRECT.
Every process started here is stopped by its PID; every dnsperf run is bounded."""


def add_parser(sub):
    for name, text, func, short in (
            ("dot-miss", MISS_HELP, miss_main, "cache misses over DoT vs UDP, hourglassd and Unbound"),
            ("dot-dnsdist", DNSDIST_HELP, dnsdist_main, "the DoT misses with dnsdist as the DoT server")):
        p = sub.add_parser(name, help=short, description=text,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("hourglassd", nargs="?", default="",
                       help="default: build-release/resolver/hourglassd, else build/")
        p.set_defaults(func=func, name=name)


class Settings:
    def __init__(self, a):
        self.hgd = a.hourglassd
        if not self.hgd:
            self.hgd = common.release("resolver/hourglassd")
            if not os.access(self.hgd, os.X_OK):
                self.hgd = os.path.join(common.ROOT, "build", "resolver", "hourglassd")
        if not os.access(self.hgd, os.X_OK):
            raise BenchError(f"no hourglassd at {self.hgd}")
        e = common.env_int
        self.lat_qps = e("LAT_QPS", 2000)
        self.lat_seconds = e("LAT_SECONDS", 4)
        self.miss_seconds = e("MISS_SECONDS", 5)
        self.clients = e("CLIENTS", 8)
        self.rounds = e("ROUNDS", 3)
        if not (1 <= self.rounds <= 10 and 1 <= self.lat_seconds <= 30
                and 1 <= self.miss_seconds <= 30 and 1 <= self.clients <= 64
                and 100 <= self.lat_qps <= 50000):
            raise BenchError("ROUNDS 1..10, LAT_SECONDS and MISS_SECONDS 1..30, CLIENTS 1..64, "
                             "LAT_QPS 100..50000")


def make_certs(work):
    """A throwaway CA and a certificate for dns.test signed by it (P-256)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    confs.write(f"{work}/ext", "subjectAltName=DNS:dns.test\n")
    for argv in (["openssl", "req", "-x509", *ec, "-keyout", f"{work}/ca.key", "-out",
                  f"{work}/ca.pem", "-days", "2", "-subj", "/CN=bench-CA"],
                 ["openssl", "req", *ec, "-keyout", f"{work}/server.key", "-out",
                  f"{work}/server.csr", "-subj", "/CN=dns.test"],
                 ["openssl", "x509", "-req", "-in", f"{work}/server.csr", "-CA", f"{work}/ca.pem",
                  "-CAkey", f"{work}/ca.key", "-CAcreateserial", "-out", f"{work}/server.pem",
                  "-days", "1", "-extfile", f"{work}/ext"]):
        if subprocess.run(argv, capture_output=True, timeout=60).returncode != 0:
            raise BenchError(f"{' '.join(argv[:3])} failed")


def wait_noerror(ps, pid, port, name, who):
    """Bounded poll (100 tries, 0.1 s apart) until port answers name with NOERROR."""
    if not procs.wait_until(lambda _: probe.noerror(port, name), 100, 0.1,
                            alive=lambda: ps.alive(pid)):
        raise BenchError(f"nothing answers on port {port} ({who})")


def names(path, prefix, count):
    dnsperf.write_names(path, (f"{prefix}{i}.w.bench.test A" for i in range(count)))


def p50_p99(text):
    lat = stats.Latency(dnsperf.latencies_ms(text, rcode="NOERROR"))
    return lat.fmt(0.5), lat.fmt(0.99)


def median_str(values):
    """The lower median of figures kept as printed ('-' counts as 0), as printed."""
    def num(v):
        try:
            return float(v)
        except ValueError:
            return 0.0
    return stats.median_row(values, num) if values else "-"


def tag(rnd, who):
    return f"r{rnd}-{who}-{random.randrange(32768)}"


class Runner:
    def __init__(self, s, ps, work):
        self.s, self.ps, self.work = s, ps, work

    def lat(self, label, port, mode, rnd, t):
        names(f"{self.work}/lat.txt", f"l{t}-", self.s.lat_qps * self.s.lat_seconds + 1000)
        r = dnsperf.run(f"{self.work}/{label}.lat.r{rnd}", port, f"{self.work}/lat.txt", "-n", 1,
                        "-l", self.s.lat_seconds, "-Q", self.s.lat_qps, "-c", 1, "-t", 2, "-v",
                        timeout=60, cpu=1, mode=mode)
        return p50_p99(r.text)

    def miss(self, label, port, pid, rnd, t):
        names(f"{self.work}/miss.txt", f"m{t}-", 400000)
        t0 = stats.cpu_ticks(pid)
        r = dnsperf.run(f"{self.work}/{label}.miss.r{rnd}", port, f"{self.work}/miss.txt", "-n",
                        1, "-l", self.s.miss_seconds, "-c", self.s.clients, "-t", 2, timeout=60,
                        cpu=1)
        t1 = stats.cpu_ticks(pid)
        cpu = stats.us_per(t1 - t0, r.completed) if None not in (t0, t1) else 0.0
        return f"{r.qps:.0f}", f"{cpu:.1f}", str(r.lost)


# ------------------------------------------------------------------ dot-miss
U_PLAIN, U_TLS, FW_PORT = 35470, 35471, 35472


def miss_main(a, ps):
    s = Settings(a)
    common.need("unbound", "dnsperf", "openssl", "taskset")
    work = common.work_dir("dot-miss")
    make_certs(work)
    confs.write(f"{work}/upstream.conf", confs.unbound_dot_upstream(
        work, U_PLAIN, U_TLS, f"{work}/server.key", f"{work}/server.pem"))
    for fw, tls, addr in (("ub-udp", False, f"127.0.0.1@{U_PLAIN}"),
                          ("ub-dot", True, f"127.0.0.1@{U_TLS}#dns.test")):
        confs.write(f"{work}/{fw}.conf",
                    confs.unbound_dot_forwarder(work, FW_PORT, addr, tls, f"{work}/ca.pem"))
    up = ps.start("unbound U", ["unbound", "-d", "-c", f"{work}/upstream.conf"],
                  log=f"{work}/upstream.log", cpu=1)
    wait_noerror(ps, up, U_PLAIN, "ready.w.bench.test", "the upstream")

    def argv(fw):
        if fw == "hg-udp":
            return [s.hgd, "--listen", f"127.0.0.1:{FW_PORT}", "--upstream",
                    f"127.0.0.1:{U_PLAIN}", "--threads", "1", *common.HGD_DNSSEC_OFF,
                    *common.hgd_test_zone(s.hgd), *common.hgd_root(s.hgd)]
        if fw == "hg-dot":
            return [s.hgd, "--listen", f"127.0.0.1:{FW_PORT}", "--upstream",
                    f"tls://127.0.0.1:{U_TLS}#dns.test", "--tls-ca-file", f"{work}/ca.pem",
                    "--threads", "1", *common.HGD_DNSSEC_OFF, *common.hgd_test_zone(s.hgd), *common.hgd_root(s.hgd)]
        if fw in ("ub-udp", "ub-dot"):
            return ["unbound", "-d", "-c", f"{work}/{fw}.conf"]
        raise BenchError(f"unknown forwarder {fw} in FORWARDERS")
    forwarders = os.environ.get("FORWARDERS", "hg-udp hg-dot ub-udp ub-dot").split()
    run = Runner(s, ps, work)
    rows = []
    with open(f"{work}/results.tsv", "w", encoding="ascii") as tsv:
        tsv.write("round\tforwarder\tqps\tcpu_us_per_miss\tp50_ms\tp99_ms\tlost\n")
        for rnd in range(1, s.rounds + 1):
            for fw in forwarders:
                pid = ps.start(fw, argv(fw), log=f"{work}/{fw}.log", cpu=0)
                wait_noerror(ps, pid, FW_PORT, f"warm-{fw}-{random.randrange(32768)}.w.bench.test",
                             fw)
                t = tag(rnd, fw)
                p50, p99 = run.lat(fw, FW_PORT, None, rnd, t)
                qps, cpu, lost = run.miss(fw, FW_PORT, pid, rnd, t)
                rows.append((fw, qps, cpu, p50, p99))
                tsv.write(f"{rnd}\t{fw}\t{qps}\t{cpu}\t{p50}\t{p99}\t{lost}\n")
                print(f"  round {rnd} {fw:<7} miss {qps:>7} qps, {cpu:>6} us CPU/miss, lost {lost}; "
                      f"at {s.lat_qps} qps: p50 {p50} ms p99 {p99} ms", flush=True)
                ps.stop(pid)
    print(f"\nmedian of {s.rounds} rounds (hourglassd {common.first_line([s.hgd, '--version'])}; "
          f"{common.first_line(['unbound', '-V'])})")
    print(f"| {'forwarder':<7} | {'miss qps':>9} | {'CPU/miss (us)':>13} | {'lat p50 ms':>11} | "
          f"{'lat p99 ms':>11} |")
    print("|---|---:|---:|---:|---:|")
    for fw in forwarders:
        col = [r[1:] for r in rows if r[0] == fw]
        m = [median_str([c[i] for c in col]) for i in range(4)]
        print(f"| {fw:<7} | {m[0]:>9} | {m[1]:>13} | {m[2]:>11} | {m[3]:>11} |")
    print(f"dot-miss: raw results in {work}/results.tsv, dnsperf outputs and logs in {work}")


# ------------------------------------------------------------------ dot-dnsdist
DU_PLAIN, DU_TLS, D_PLAIN, D_TLS, DFW_PORT = 35480, 35481, 35482, 35483, 35484


def dnsdist_main(a, ps):
    s = Settings(a)
    for b in ("unbound", "dnsdist", "dnsperf", "openssl", "taskset"):
        if shutil.which(b) is None:
            raise BenchError(f"needs {b} (dnsdist: apt-get install --no-install-recommends dnsdist)")
    forwarders = os.environ.get("FORWARDERS", "hg-udp hg-dot").split()
    direct = os.environ.get("DIRECT", "dd-udp dd-tcp dd-dot ub-udp ub-dot").split()
    paths = {"dd-udp": (D_PLAIN, "udp"), "dd-tcp": (D_PLAIN, "tcp"), "dd-dot": (D_TLS, "dot"),
             "ub-udp": (DU_PLAIN, "udp"), "ub-dot": (DU_TLS, "dot")}
    for d in direct:
        if d not in paths:
            raise BenchError(f"unknown path {d} in DIRECT")
    for fw in forwarders:
        if fw not in ("hg-udp", "hg-dot"):
            raise BenchError(f"unknown forwarder {fw} in FORWARDERS")
    work = common.work_dir("dot-dnsdist")
    make_certs(work)
    confs.write(f"{work}/upstream.conf", confs.unbound_dot_upstream(
        work, DU_PLAIN, DU_TLS, f"{work}/server.key", f"{work}/server.pem"))
    confs.write(f"{work}/dnsdist.conf", confs.dnsdist_dot_front(
        D_PLAIN, D_TLS, DU_PLAIN, f"{work}/server.pem", f"{work}/server.key"))
    up = ps.start("unbound U", ["unbound", "-d", "-c", f"{work}/upstream.conf"],
                  log=f"{work}/upstream.log", cpu=1)
    wait_noerror(ps, up, DU_PLAIN, "ready.w.bench.test", "the upstream")
    dd = ps.start("dnsdist D", ["dnsdist", "--supervised", "--disable-syslog", "-C",
                                f"{work}/dnsdist.conf"], log=f"{work}/dnsdist.log", cpu=1)
    wait_noerror(ps, dd, D_PLAIN, "ready-d.w.bench.test", "dnsdist")

    def argv(fw):
        if fw == "hg-udp":
            return [s.hgd, "--listen", f"127.0.0.1:{DFW_PORT}", "--upstream",
                    f"127.0.0.1:{D_PLAIN}", "--threads", "1", *common.HGD_DNSSEC_OFF,
                    *common.hgd_test_zone(s.hgd), *common.hgd_root(s.hgd)]
        return [s.hgd, "--listen", f"127.0.0.1:{DFW_PORT}", "--upstream",
                f"tls://127.0.0.1:{D_TLS}#dns.test", "--tls-ca-file", f"{work}/ca.pem",
                "--threads", "1", *common.HGD_DNSSEC_OFF, *common.hgd_test_zone(s.hgd), *common.hgd_root(s.hgd)]
    run = Runner(s, ps, work)
    rows = []
    with open(f"{work}/results.tsv", "w", encoding="ascii") as tsv:
        tsv.write("round\tpath\tqps\tcpu_us_per_miss\tp50_ms\tp99_ms\tlost\tload1\n")
        for rnd in range(1, s.rounds + 1):
            for fw in forwarders:
                pid = ps.start(fw, argv(fw), log=f"{work}/{fw}.log", cpu=0)
                wait_noerror(ps, pid, DFW_PORT,
                             f"warm-{fw}-{random.randrange(32768)}.w.bench.test", fw)
                t = tag(rnd, fw)
                p50, p99 = run.lat(fw, DFW_PORT, "udp", rnd, t)
                qps, cpu, lost = run.miss(fw, DFW_PORT, pid, rnd, t)
                load = stats.loadavg(1)
                rows.append((fw, qps, cpu, p50, p99, load))
                tsv.write(f"{rnd}\t{fw}\t{qps}\t{cpu}\t{p50}\t{p99}\t{lost}\t{load}\n")
                print(f"  round {rnd} {fw:<7} miss {qps:>7} qps, {cpu:>6} us CPU/miss, lost {lost}; "
                      f"at {s.lat_qps} qps: p50 {p50} ms p99 {p99} ms (load {load})", flush=True)
                ps.stop(pid)
            for d in direct:
                port, mode = paths[d]
                p50, p99 = run.lat(d, port, mode, rnd, tag(rnd, d))
                load = stats.loadavg(1)
                rows.append((d, "-", "-", p50, p99, load))
                tsv.write(f"{rnd}\t{d}\t-\t-\t{p50}\t{p99}\t-\t{load}\n")
                print(f"  round {rnd} {d:<7} at {s.lat_qps} qps: p50 {p50} ms p99 {p99} ms "
                      f"(load {load})", flush=True)
    print(f"\nmedian of {s.rounds} rounds (hourglassd {common.first_line([s.hgd, '--version'])}; "
          f"{common.first_line(['dnsdist', '--version'])}; {common.first_line(['unbound', '-V'])}); "
          f"{procs.output(['uptime']).strip()}")
    print(f"| {'path':<7} | {'miss qps':>9} | {'CPU/miss (us)':>13} | {'lat p50 ms':>11} | "
          f"{'lat p99 ms':>11} | {'load':>6} |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in forwarders + direct:
        col = [r[1:] for r in rows if r[0] == p]
        m = [median_str([c[i] for c in col]) for i in range(5)]
        print(f"| {p:<7} | {m[0]:>9} | {m[1]:>13} | {m[2]:>11} | {m[3]:>11} | {m[4]:>6} |")
    print(f"dot-dnsdist: raw results in {work}/results.tsv, dnsperf outputs and logs in {work}")
