"""hgbench miss-callgrind (callgrind, --strace, --cpu) and dnstap-callgrind: the cost of one
cache miss / hit counted rather than timed."""

import argparse
import glob
import os
import re

from . import common, confs, dnsperf, procs, stats
from .procs import BenchError

MISS_HELP = """User-space instructions per cache MISS of hourglassd, counted by valgrind's
callgrind: exact and (nearly) independent of the machine's load. Kernel work is not
counted; `hgbench run` gives the CPU time of a miss.

One upstream (knotd, 127.0.0.1:BASE_PORT) serves a wildcard *.w.bench.test. A. hourglassd
(--threads 1, 64 MiB cache) runs under callgrind; one pass of 2,000 names warms the process
(allocator, c-ares, timers), then the counters are zeroed (callgrind_control -z), dnsperf
sends MISSES queries at QPS, every one a name never asked before (so every query is a
miss: forwarded, parsed, normalised, cached, answered), and 2.5 s later the counters are
dumped. Instructions per miss = instructions of all threads / queries answered. Prints
the top functions of the worker, inclusive and self, per miss.

With --strace, hourglassd runs natively instead and `strace -c -f` is attached for the
measured run only: system calls per miss (the kernel's share, which callgrind misses).
With --cpu, hourglassd runs natively and its user and system CPU time over the measured
run (from /proc/PID/stat) is divided by the misses: kernel work included, but as noisy as
the machine's load.

Needs valgrind, dnsperf, knotd; HGD (default build-release/resolver/hourglassd);
CALLGRIND_EXTRA adds valgrind options. Loopback only; every process it starts is stopped
by its PID; every loop is bounded."""

DNSTAP_HELP = """User-space instructions per cache hit of hourglassd, with dnstap off and with
--dnstap FILE, counted by valgrind's callgrind: exact and independent of the machine's load
(kernel work is not counted; see `hgbench dnstap-cost` for CPU time).

One upstream (knotd, 127.0.0.1:BASE_PORT) serves bench.test. (1000 A records). For each
variant, hourglassd runs under callgrind (--threads 1, every thread counted: the worker
and, with dnstap, libfstrm's I/O thread); one pass over the names warms the cache, then
after 2 s (libfstrm's I/O thread flushes at least every second) the counters are zeroed,
dnsperf sends HITS queries at QPS, 2.5 s later the counters are dumped. Instructions per
hit = instructions of all threads / queries answered. With dnstap, also: the worker's
instructions inside the tapped query path minus QueryEngine::handle, and the I/O thread's.

Needs valgrind, dnsperf, knotd; HGD (default build-release/resolver/hourglassd).
Loopback only; every process it starts is stopped by its PID; every loop is bounded."""

WARM = 2000


def add_parser(sub):
    p = sub.add_parser("miss-callgrind", help="instructions (or syscalls, CPU) per cache miss",
                       description=MISS_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--misses", type=common.int_range(1000, 200000, "--misses"), default=10000)
    p.add_argument("--qps", type=int, default=1000)
    p.add_argument("--top", type=common.int_range(1, 200, "--top"), default=30)
    p.add_argument("--base-port", type=common.int_range(1024, 65000, "--base-port"),
                   default=35970)
    p.add_argument("--keep", action="store_true")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--strace", action="store_true")
    mode.add_argument("--cpu", action="store_true")
    p.set_defaults(func=miss_main, name="miss-callgrind")
    d = sub.add_parser("dnstap-callgrind", help="instructions per cache hit, dnstap off and on",
                       description=DNSTAP_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("--hits", type=common.int_range(1000, 200000, "--hits"), default=20000)
    d.add_argument("--qps", type=common.int_range(100, 10000, "--qps"), default=2000)
    d.add_argument("--base-port", type=common.int_range(1024, 65000, "--base-port"),
                   default=35960)
    d.add_argument("--keep", action="store_true")
    d.set_defaults(func=dnstap_main, name="dnstap-callgrind")


# ------------------------------------------------------------------ callgrind's files
def total_of(path):
    """The instruction count of a callgrind dump (its summary: or totals: line)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def thread_dumps(work, prefix):
    """{dump file: instructions} of every thread dump (PREFIX.PID.1-NN) in work."""
    out = {}
    for f in sorted(glob.glob(os.path.join(work, f"{prefix}.*.1-[0-9]*"))):
        t = total_of(f)
        if t is not None:
            out[f] = t
    return out


def annotate(path, inclusive):
    return procs.output(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                         "--threshold=100", path], timeout=120)


def top_functions(text, count, total, top):
    """'%8.0f  function' lines: the first `top` functions of a callgrind_annotate table,
    per query (count), leaving out the frames that hold (nearly) everything (main,
    Server::run)."""
    out, dashes = [], 0
    for line in text.splitlines():
        if re.fullmatch(r"-+", line):
            dashes += 1
            continue
        f = line.split()
        if dashes < 3 or not f or not re.fullmatch(r"[0-9,]+", f[0]) or len(out) >= top:
            continue
        c = int(f[0].replace(",", ""))
        if c >= total * 0.999:
            continue
        rest = " ".join(f[1:])
        rest = re.sub(r"^\( *[0-9.]+%\) *", "", rest)
        rest = re.sub(r" \[[^]]*\]$", "", rest)
        out.append(f"{c / count:8.0f}  {rest[:110]}")
    return out


def inclusive_of(text, pattern):
    """Inclusive instructions of the first function whose line matches pattern."""
    for line in text.splitlines():
        if re.search(pattern, line):
            try:
                return int(line.split()[0].replace(",", ""))
            except (ValueError, IndexError):
                return None
    return None


def strace_table(text, count):
    """System calls and errors per query from `strace -c` output. Its columns are right-
    aligned under the header (% time, seconds, usecs/call, calls, errors, syscall) and
    may be empty (errors; usecs/call on the total line of some versions): each figure is
    taken by where it ends, not by its place in the line."""
    out, ends = [], None
    for line in text.splitlines():
        if ends is None:
            if "calls" in line and "errors" in line:
                ends = {m.group(): m.end() for m in re.finditer(r"\S+", line)}
            continue
        f = line.split()
        if len(f) < 4 or not re.fullmatch(r"[0-9.]+", f[0]):
            continue
        at = {m.end(): m.group() for m in re.finditer(r"\S+", line)}
        calls, errs = at.get(ends["calls"], ""), at.get(ends["errors"], "0")
        if calls.isdigit() and errs.isdigit():
            out.append(f"  {f[-1]:<14} {int(calls) / count:6.2f} calls  "
                       f"{int(errs) / count:6.2f} errors")
    return out


# ------------------------------------------------------------------ miss-callgrind
def hgd_argv(hgd, port, up, *extra):
    return [hgd, "--listen", f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{up}", "--threads",
            "1", "--cache-size", "64MiB", *common.HGD_DNSSEC_OFF, *common.hgd_test_zone(hgd), *common.hgd_root(hgd),
            *extra]


def valgrind_argv(out_pattern):
    return ["valgrind", "--tool=callgrind", "--separate-threads=yes",
            *os.environ.get("CALLGRIND_EXTRA", "").split(), f"--callgrind-out-file={out_pattern}"]


def _answered(path, what):
    r = dnsperf.Result(dnsperf.read(path))
    if r.completed <= 0:
        raise BenchError(f"no answers{what} (see {path})")
    return r


def miss_main(a, ps):
    strace = a.strace or a.cpu
    # valgrind cannot go faster than ~5,000 queries/s; strace -c can (to see batches form).
    max_qps = 50000 if strace else 5000
    if not 100 <= a.qps <= max_qps:
        raise BenchError(f"--qps must be 100..{max_qps}")
    tools = ["dnsperf", "knotd"]
    if a.strace:
        tools.append("strace")
    elif not a.cpu:
        tools += ["valgrind", "callgrind_control", "callgrind_annotate"]
    common.need(*tools)
    hgd = common.hgd()
    common.need_binary(hgd)
    common.in_work_dir(ps, "miss-callgrind", a.keep, lambda work: _miss(a, ps, work, hgd),
                       "dumps")


def _miss(a, ps, work, hgd):
    up, port = a.base_port, a.base_port + 1
    common.start_knot(ps, work, up, wildcard="198.18.0.1", cpu1=False)
    warm, miss = f"{work}/warm.txt", f"{work}/miss.txt"
    dnsperf.write_names(warm, confs.numbered_names(WARM, "warm{}.w.bench.test. A"))
    dnsperf.write_names(miss, confs.numbered_names(a.misses, "m{}.w.bench.test. A"))
    log = f"{work}/hgd.log"
    print(f"== load at start: {common.loadavg3()}", flush=True)
    measured = ["-n", 1, "-c", 1, "-q", 20, "-Q", a.qps]
    bound = a.misses // a.qps + 60
    if a.strace or a.cpu:
        pid = ps.start("hourglassd", hgd_argv(hgd, port, up), log=log)
        if not common.wait_answering(ps, pid, port, common.wildcard_probe, 120, 0.5, timeout=2):
            raise BenchError(f"hourglassd did not answer (see {log})")
        dnsperf.run(f"{work}/warm.run", port, warm, "-n", 1, "-c", 1, "-q", 10, "-Q", 500,
                    timeout=120)
        spid = None
        if a.cpu:
            common.sleep(1)
            before = stats.cpu_ticks_split(pid)
        else:
            spid = ps.start("strace", ["strace", "-c", "-f", "-p", pid, "-o",
                                       f"{work}/strace.txt"])
            common.sleep(1)
        dnsperf.run(f"{work}/miss.run", port, miss, *measured, timeout=bound)
        common.sleep(1)
        if a.cpu:
            after = stats.cpu_ticks_split(pid)
        else:
            ps.interrupt(spid)
        ps.stop(pid, timeout=30)
        n = _answered(f"{work}/miss.run", "").completed
        if a.cpu:
            if before is None or after is None:
                raise BenchError("could not read hourglassd's CPU time")
            u, s = after[0] - before[0], after[1] - before[1]
            print(f"misses answered: {n}; CPU per miss: {stats.us_per(u + s, n):.1f} us "
                  f"(user {stats.us_per(u, n):.1f}, system {stats.us_per(s, n):.1f})")
        else:
            print(f"misses answered: {n}; system calls per miss (strace -c -f, measured run only):")
            for line in strace_table(dnsperf.read(f"{work}/strace.txt"), n):
                print(line)
        print(f"== load at end: {common.loadavg3()}")
        return
    pid = ps.start("hourglassd", valgrind_argv(f"{work}/cg.%p") + hgd_argv(hgd, port, up),
                   log=log)
    if not common.wait_answering(ps, pid, port, common.wildcard_probe, 120, 0.5, timeout=2):
        raise BenchError(f"hourglassd did not answer (see {log})")
    dnsperf.run(f"{work}/warm.run", port, warm, "-n", 1, "-c", 1, "-q", 10, "-Q", 500,
                timeout=120)
    common.sleep(1)
    procs.output(["callgrind_control", "-z", pid])
    dnsperf.run(f"{work}/miss.run", port, miss, *measured, timeout=bound)
    common.sleep(2.5)
    for f in glob.glob(f"{work}/cg.*"):
        os.unlink(f)
    procs.output(["callgrind_control", "-d", pid], timeout=120)
    ps.stop(pid, timeout=30)
    r = _answered(f"{work}/miss.run", "")
    n = r.completed
    dumps = thread_dumps(work, "cg")
    if not dumps:
        raise BenchError(f"no callgrind dump in {work} (see {log})")
    worker = max(dumps, key=dumps.get)
    total = sum(dumps.values())
    noerr = r.rcodes.get("NOERROR", ("?",))[0]
    print(f"misses answered: {n} (NOERROR {noerr}), {total / n:.0f} instructions per miss "
          f"(all threads), {dumps[worker] / n:.0f} on the worker")
    for title, incl in (("inclusive", True), ("self", False)):
        print(f"== worker, {title}, instructions per miss")
        for line in top_functions(annotate(worker, incl), n, dumps[worker], a.top):
            print(line)
    print(f"== load at end: {common.loadavg3()}")


# ------------------------------------------------------------------ dnstap-callgrind
def dnstap_main(a, ps):
    common.need("valgrind", "callgrind_control", "callgrind_annotate", "dnsperf", "knotd")
    hgd = common.hgd()
    common.need_binary(hgd)
    common.in_work_dir(ps, "dnstap-callgrind", a.keep, lambda work: _dnstap(a, ps, work, hgd),
                       "dumps")


def _dnstap(a, ps, work, hgd):
    up, port = a.base_port, a.base_port + 1
    common.start_knot(ps, work, up, names=1000, cpu1=False)
    hit = f"{work}/hit.txt"
    dnsperf.write_names(hit, confs.numbered_names(1000))
    print(f"== load at start: {common.loadavg3()}", flush=True)
    for v in ("off", "tap"):
        extra = ["--dnstap", f"{work}/hits.dnstap"] if v == "tap" else []
        log = f"{work}/{v}.log"
        pid = ps.start(v, valgrind_argv(f"{work}/cg.{v}.%p") + hgd_argv(hgd, port, up, *extra),
                       log=log)
        if not common.wait_answering(ps, pid, port, tries=120, interval=0.5, timeout=2):
            raise BenchError(f"hourglassd ({v}) did not answer (see {log})")
        dnsperf.run(f"{work}/{v}.warm", port, hit, "-n", 1, "-c", 1, "-q", 10, "-Q", 500,
                    timeout=120)
        common.sleep(2)
        procs.output(["callgrind_control", "-z", pid])
        dnsperf.run(f"{work}/{v}.run", port, hit, "-n", (a.hits + 999) // 1000, "-c", 1, "-q",
                    20, "-Q", a.qps, timeout=a.hits // a.qps + 60)
        common.sleep(2.5)
        for f in glob.glob(f"{work}/cg.{v}.*"):
            os.unlink(f)
        procs.output(["callgrind_control", "-d", pid], timeout=120)
        ps.stop(pid, timeout=30)
        n = _answered(f"{work}/{v}.run", f" in the {v} run").completed
        dumps = thread_dumps(work, f"cg.{v}")
        print(f"{v}: {n} hits answered, {sum(dumps.values()) / n:.0f} instructions per hit "
              "(all threads)")
        for f, t in dumps.items():
            print(f"  thread {f.rsplit('-', 1)[-1]}: {t / n:.0f} per hit")
        if v == "tap":
            for f in dumps:
                text = annotate(f, True)
                tapped = inclusive_of(text, r"on_query_tapped")
                if tapped is None:
                    continue
                handle = inclusive_of(text, r"QueryEngine::handle\(") or 0
                print(f"  worker: tapped path {tapped / n:.0f}, handle {handle / n:.0f}, dnstap "
                      f"on the worker {(tapped - handle) / n:.0f} per hit")
    print(f"== load at end: {common.loadavg3()}")
