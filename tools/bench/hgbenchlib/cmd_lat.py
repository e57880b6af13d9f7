"""hgbench lat-sched and lat-together: where the slowest cache hits lose their time."""

import argparse
import shutil

from . import common, confs, dnsperf, procs, stats
from .procs import BenchError

SCHED_HELP = """Where do the slowest cache hits lose their time: in the server, or before the
query ever reaches it? Runs one server (hourglassd or the fixed-answer floor) on CPU 0 at a
fixed rate of cache hits from dnsperf on CPU 1, records the scheduler's events with
`perf sched record -a` (perf itself on CPU 1: it disturbs the client side, not the
server), and prints for CPU 0, beside dnsperf's count of slow queries:
  - how long the server ever waited to run once woken (sch delay) and ran at once (in a VM
    both include time the host took the virtual CPU away, which the guest cannot see);
  - how often CPU 0 sat idle for longer than the slow-query threshold at this rate, i.e.
    no query arrived for that long: a stall on the client's side (or the VM's), not the
    server's;
  - the server's own time per batch: from each recvmmsg that returned queries to the
    sendmmsg of their answers (both servers answer that way), its median, its 99.9th
    percentile (nearest rank) and its longest: the part of a query's latency that is the
    server's work;
  - how often the server was preempted while it had work (runnable, switched out), for
    how long, and by whom.
Needs perf (sched tracepoints), dnsperf, knotd; the Release builds of hourglassd and
hg-bench-floor in build-release/ (cmake --build build-release). Loopback only; every
process it starts is stopped by its PID; every loop is bounded."""

TOGETHER_HELP = """Cache-hit latency of hourglassd, the fixed-answer floor and dnsdist measured at
the same time, so that every stall of the machine (or of the host under a VM) falls on all
of them alike. `hgbench run` measures the servers one after the other: there the p99.9 of a
5,000 qps test is decided by whichever server happened to be running when the host took the
CPU away, and the peers swap ranks from run to run.

All servers run on CPU 0 (`taskset -c 0`), each with a warm cache of 1,000 names; each
gets its own dnsperf on CPU 1 at --qps hits/s, all started together, for --seconds, in
--rounds rounds. knotd (the upstream, for the warm-up only) shares CPU 1. Prints p50, p99,
p99.9 (nearest rank), the slowest answer and the answers over --slow-ms per server and
round, then pooled over the rounds.
Needs dnsperf, knotd (and dnsdist when it is listed); the Release builds of hourglassd and
hg-bench-floor in build-release/ (cmake --build build-release). Loopback only; every
process it starts is stopped by its PID; every loop is bounded."""


def add_parser(sub):
    p = sub.add_parser("lat-sched", help="scheduler view of the slowest cache hits (perf)",
                       description=SCHED_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", choices=("hourglass", "floor"), default="hourglass")
    p.add_argument("--seconds", type=common.int_range(2, 120, "--seconds"), default=10)
    p.add_argument("--qps", type=common.int_range(100, 50000, "--qps"), default=5000)
    p.add_argument("--slow-ms", type=common.ms_value, default=0.4)
    p.add_argument("--base-port", type=common.int_range(1024, 65000, "--base-port"),
                   default=36600)
    p.add_argument("--keep", action="store_true")
    p.set_defaults(func=sched_main, name="lat-sched")
    t = sub.add_parser("lat-together", help="cache-hit latency of several servers at once",
                       description=TOGETHER_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--servers", default="hourglass floor dnsdist")
    t.add_argument("--seconds", type=common.int_range(2, 120, "--seconds"), default=20)
    t.add_argument("--rounds", type=common.int_range(1, 10, "--rounds"), default=3)
    t.add_argument("--qps", type=common.int_range(100, 20000, "--qps"), default=5000)
    t.add_argument("--slow-ms", type=common.ms_value, default=0.4)
    t.add_argument("--base-port", type=common.int_range(1024, 65000, "--base-port"),
                   default=36800)
    t.add_argument("--keep", action="store_true")
    t.set_defaults(func=together_main, name="lat-together")


def start_server(ps, kind, work, port, up, hgd, floor, log):
    if kind == "hourglass":
        argv = [hgd, "--listen", f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{up}",
                "--threads", "1", "--cache-size", "64MiB", *common.HGD_DNSSEC_OFF,
                *common.hgd_test_zone(hgd), *common.hgd_root(hgd)]
    elif kind == "floor":
        argv = [floor, f"127.0.0.1:{port}"]
    else:
        conf = confs.write(f"{work}/dnsdist.conf", confs.dnsdist_cache(port, up))
        argv = ["dnsdist", "--supervised", "--disable-syslog", "-C", conf]
    pid = ps.start(kind, argv, log=log, cpu=0)
    if not common.wait_answering(ps, pid, port, common.wildcard_probe, 120, 0.5, timeout=2):
        raise BenchError(f"{kind} did not answer (see {log})")
    return pid


# ------------------------------------------------------------------ lat-sched
def timehist_summary(text, pid, slow):
    """The three lines about CPU 0 from `perf sched timehist --cpu 0` (columns: time, cpu,
    task[tid/pid], wait time, sch delay, run time, in ms)."""
    runs = late = idle = others = 0
    maxd = maxr = other_ms = 0.0
    who = {}
    for ln in text.splitlines()[3:]:
        f = ln.split()
        if len(f) < 6:
            continue
        try:
            delay, run = float(f[4]), float(f[5])
        except ValueError:
            continue
        task = f[2]
        if f"[{pid}]" in task or f"/{pid}]" in task:
            runs += 1
            maxd, maxr = max(maxd, delay), max(maxr, run)
            late += delay > 0.1
        elif task.startswith("<idle>"):
            idle += run > slow
        elif run > 0.05:
            others += 1
            other_ms += run
            name = task.split("[", 1)[0]
            who[name] = who.get(name, 0.0) + run
    lines = [f"server: {runs} times on CPU 0; waited to run at most {maxd:.3f} ms once woken "
             f"({late} times over 0.1 ms), ran at most {maxr:.3f} ms at once",
             f"CPU 0 idle for more than {slow:g} ms: {idle} times (no query arrived: the stall "
             "was before the server)"]
    tail = ""
    if others:
        tail = " (" + ", ".join(f"{w} {ms:.1f} ms" for w, ms in who.items()) + ")"
    lines.append(f"other tasks on CPU 0 for over 0.05 ms at once: {others} times, "
                 f"{other_ms:.1f} ms in all{tail}")
    return lines


def script_summary(text, pid):
    """(batch spans in ms, preemption line) from `perf script -F tid,time,event,trace`: each
    recvmmsg of pid that returned queries to its next sendmmsg; each switch-out while
    runnable (prev_state R or R+) to its next switch-in."""
    spans, pre, pre_ms, pre_max, whom = [], 0, 0.0, 0.0, {}
    t_in = out_at = 0.0
    by = ""
    spid = str(pid)
    for ln in text.splitlines():
        f = ln.split()
        if len(f) < 3:
            continue
        try:
            t = float(f[1].rstrip(":"))
        except ValueError:
            continue
        ev = f[2]
        if ev == "syscalls:sys_exit_recvmmsg:" and f[0] == spid:
            ret = f[-1]  # hex; errors are 0xffff...
            if ret != "0x0" and len(ret) < 10:
                t_in = t
        elif ev == "syscalls:sys_enter_sendmmsg:" and f[0] == spid and t_in > 0:
            spans.append((t - t_in) * 1000)
            t_in = 0.0
        elif ev == "sched:sched_switch:":
            if f"prev_pid={pid} " in ln and ("prev_state=R " in ln or "prev_state=R+ " in ln):
                out_at = t
                by = ln.split("next_comm=", 1)[-1].split(" ", 1)[0]
            elif out_at > 0 and f"next_pid={pid} " in ln:
                d = (t - out_at) * 1000
                pre += 1
                pre_ms += d
                pre_max = max(pre_max, d)
                whom[by] = whom.get(by, 0) + 1
                out_at = 0.0
    tail = (" (by " + ", ".join(f"{w} {n}" for w, n in whom.items()) + ")") if pre else ""
    return spans, (f"preempted while runnable: {pre} times, {pre_ms:.1f} ms in all, longest "
                   f"{pre_max:.3f} ms{tail}")


def sched_main(a, ps):
    common.need_cpus("server on CPU 0, dnsperf and knotd on CPU 1")
    common.need("perf", "dnsperf", "knotd", "taskset")
    hgd, floor = common.hgd(), common.release("tools/bench/hg-bench-floor")
    common.need_binary(hgd if a.server == "hourglass" else floor, "cmake --build build-release")
    common.in_work_dir(ps, "lat-sched", a.keep, lambda work: _sched(a, ps, work, hgd, floor))


def _sched(a, ps, work, hgd, floor):
    up, port = a.base_port, a.base_port + 1
    common.start_knot(ps, work, up, wildcard="198.18.0.1")
    pid = start_server(ps, a.server, work, port, up, hgd, floor, f"{work}/server.log")
    hit = f"{work}/hit.txt"
    dnsperf.write_names(hit, confs.numbered_names(1000, "h{}.w.bench.test. A"))
    dnsperf.run(f"{work}/warm.run", port, hit, "-n", 1, "-c", 1, "-q", 10, timeout=60)
    print(f"== {a.server} on CPU 0, {a.qps} hits/s for {a.seconds}s; load at start: "
          f"{common.loadavg3()}", flush=True)
    perf = ps.start("perf", ["perf", "sched", "record", "-a", "-o", f"{work}/sched.data", "-e",
                             "syscalls:sys_exit_recvmmsg", "-e", "syscalls:sys_enter_sendmmsg",
                             "--", "sleep", a.seconds + 1], log=f"{work}/perf.log", cpu=1)
    common.sleep(0.5)
    r = dnsperf.run(f"{work}/lat.run", port, hit, "-c", 1, "-q", 20, "-Q", a.qps, "-l",
                    a.seconds, "-v", timeout=a.seconds + 30, cpu=1)
    if ps.wait(perf, 60) is None:
        ps.stop(perf)
    lat = stats.Latency(dnsperf.latencies_ms(r.text), a.slow_ms)
    if lat.count == 0:
        raise BenchError(f"no answers (see {work}/lat.run)")
    print(f"dnsperf: {lat.count} answers, {lat.slow} over {a.slow_ms:g} ms "
          f"({100 * lat.slow / lat.count:.3f} %), slowest {lat.max:.3f} ms")
    th = procs.output(["perf", "sched", "timehist", "--cpu", "0", "-i", f"{work}/sched.data"],
                      timeout=300)
    for line in timehist_summary(th, pid, a.slow_ms):
        print(line)
    sc = procs.output(["perf", "script", "-i", f"{work}/sched.data", "-F",
                       "tid,time,event,trace"], timeout=300)
    spans, preempt = script_summary(sc, pid)
    if spans:
        s = stats.Latency(spans)
        print(f"server work per batch (recvmmsg .. sendmmsg): {s.count} batches, p50 "
              f"{s.fmt(0.5)} ms, p99.9 {s.fmt(0.999)} ms, longest {s.fmt('max')} ms")
    else:
        print("server work per batch: none seen (perf recorded no recvmmsg/sendmmsg of it)")
    print(preempt)
    print(f"== load at end: {common.loadavg3()}")


# ------------------------------------------------------------------ lat-together
def together_main(a, ps):
    servers = a.servers.split()
    if not 1 <= len(servers) <= 3:
        raise BenchError("--servers takes one to three of: hourglass floor dnsdist")
    for s in servers:
        if s not in ("hourglass", "floor", "dnsdist"):
            raise BenchError(f"unknown server '{s}' in --servers (hourglass, floor or dnsdist)")
    common.need_cpus("servers on CPU 0, dnsperf and knotd on CPU 1")
    common.need("dnsperf", "knotd", "taskset")
    if "dnsdist" in servers and shutil.which("dnsdist") is None:
        raise BenchError("needs dnsdist (apt-get install --no-install-recommends dnsdist), or "
                         "leave it out of --servers")
    hgd, floor = common.hgd(), common.release("tools/bench/hg-bench-floor")
    for b in (hgd, floor):
        common.need_binary(b, "cmake --build build-release")
    common.in_work_dir(ps, "lat-together", a.keep,
                       lambda work: _together(a, ps, work, servers, hgd, floor))


ROW = "{:<10} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}"


def _together(a, ps, work, servers, hgd, floor):
    up = a.base_port
    common.start_knot(ps, work, up, wildcard="198.18.0.1")
    hit = f"{work}/hit.txt"
    dnsperf.write_names(hit, confs.numbered_names(1000, "h{}.w.bench.test. A"))
    port = {}
    for i, s in enumerate(servers, 1):
        port[s] = up + i
        start_server(ps, s, work, port[s], up, hgd, floor, f"{work}/{s}.log")
        dnsperf.run(f"{work}/{s}.warm", port[s], hit, "-n", 1, "-c", 1, "-q", 10, timeout=60)
    print(f"== {' '.join(servers)} together on CPU 0, each at {a.qps} hits/s, {a.rounds} x "
          f"{a.seconds}s; load at start: {common.loadavg3()}")
    print(ROW.format("server", "round", "queries", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
                     "slow"), flush=True)
    pooled = {s: [] for s in servers}
    for r in range(1, a.rounds + 1):
        clients = {}
        for s in servers:
            argv = ["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", port[s], "-d", hit,
                    "-c", 8, "-t", 2, "-l", a.seconds, "-Q", a.qps, "-v"]
            clients[s] = ps.start(f"dnsperf {s}", argv, log=f"{work}/{s}.r{r}")
        for s, c in clients.items():
            if ps.wait(c, a.seconds + 30) is None:
                ps.stop(c)
        for s in servers:
            v = dnsperf.latencies_ms(dnsperf.read(f"{work}/{s}.r{r}"))
            pooled[s] += v
            lat = stats.Latency(v, a.slow_ms)
            print(ROW.format(s, r, lat.count, lat.fmt(0.5), lat.fmt(0.99), lat.fmt(0.999),
                             lat.fmt("max"), lat.slow), flush=True)
    print(f"== pooled over the rounds (slow: over {a.slow_ms:g} ms); load at end: "
          f"{common.loadavg3()}")
    for s in servers:
        lat = stats.Latency(pooled[s], a.slow_ms)
        print(ROW.format(s, "all", lat.count, lat.fmt(0.5), lat.fmt(0.99), lat.fmt(0.999),
                         lat.fmt("max"), lat.slow))
