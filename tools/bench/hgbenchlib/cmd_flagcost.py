"""hgbench flag-cost and dnstap-cost: what a daemon flag costs per cache hit."""

import argparse
import os
import re
import subprocess

from . import common, confs, dnsperf, procs, stats
from .procs import BenchError

HELP = """What a daemon flag costs per cache hit: CPU time per answered query of hourglassd
without and with extra flags, same machine, same run, as a ratio.

One upstream (knotd, 127.0.0.1:BASE_PORT) serves bench.test. (1000 A records, TTL 3600).
Two hourglassd, both pinned to CPU 0 (all their threads): "off" on BASE_PORT+1 with the
common flags only, and the variant (--label, default "on") on BASE_PORT+2 with the FLAGs
after `--` added ("@WORK@" in them becomes the work dir). Both caches are warmed with one
pass over the names; then dnsperf (pinned to CPU 1) sends cache hits at full speed for
SECONDS to one and then the other, ROUNDS times, the order alternating each round. Each
daemon's CPU time (user + system, all threads) comes from /proc/PID/stat around each run;
CPU per hit = CPU seconds / queries answered. The medians of the rounds give the ratio.

  --ctl/--ctl-grep  after the rounds, print the variant's `hourglass-ctl ARGS` lines
                    matching RE (default: all) on one "== L daemon:" line
  --after-stop CMD  run CMD (bash, $WORK set) once both daemons have stopped
Example: hgbench flag-cost --label shadow --what shadow --ctl shadow -- \\
           --shadow-ttl bench.test=60
Needs dnsperf, knotd; builds hourglassd Release in build-release/ unless --no-build
(or give another binary: HGD=build/resolver/hourglassd CTL=build/tools/ctl/hourglass-ctl).
Loopback only; every process it starts is stopped by its PID; every loop is bounded."""

DNSTAP_HELP = """What --dnstap costs per cache hit: CPU time per answered query of hourglassd
with dnstap off and with --dnstap FILE, same machine, same run, as a ratio. This is
`hgbench flag-cost --label tap --what dnstap --ctl stats --ctl-grep '^dnstap' --
--dnstap @WORK@/hits.dnstap`, then the daemon's "dnstap closed" line and the file's size.
Needs dnsperf, knotd; builds hourglassd Release in build-release/ unless --no-build
(or give another binary: HGD=build/resolver/hourglassd CTL=build/tools/ctl/hourglass-ctl)."""

HIT_NAMES = 1000


def _common_args(p):
    p.add_argument("--rounds", type=common.int_range(1, 9, "--rounds"), default=5)
    p.add_argument("--seconds", type=common.int_range(1, 30, "--seconds"), default=6)
    p.add_argument("--base-port", type=common.int_range(1024, 65000, "--base-port"),
                   default=35450)
    p.add_argument("--no-build", action="store_true")


def add_parser(sub):
    p = sub.add_parser("flag-cost", help="CPU per cache hit with FLAGS against without",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common_args(p)
    p.add_argument("--label", default="on")
    p.add_argument("--what", default="")
    p.add_argument("--ctl", default="", metavar="ARGS")
    p.add_argument("--ctl-grep", default="", metavar="RE")
    p.add_argument("--after-stop", default="", metavar="CMD")
    p.add_argument("flags", nargs=argparse.REMAINDER, metavar="-- FLAG...")
    p.set_defaults(func=main, name="flag-cost")
    d = sub.add_parser("dnstap-cost", help="CPU per cache hit with --dnstap FILE against without",
                       description=DNSTAP_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _common_args(d)
    d.set_defaults(func=dnstap_main, name="dnstap-cost")


def dnstap_main(a, ps):
    a.label, a.what, a.ctl, a.ctl_grep = "tap", "dnstap", "stats", "^dnstap"
    a.after_stop = None
    a.flags = ["--dnstap", "@WORK@/hits.dnstap"]

    def after(work):
        try:
            with open(f"{work}/tap.log", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if "dnstap closed" in line:
                        print(line, end="")
        except OSError:
            pass
        try:
            size = os.stat(f"{work}/hits.dnstap").st_size
        except OSError:
            size = "?"
        print(f"== dnstap file: {size} bytes")
    run(a, ps, after)


def main(a, ps):
    run(a, ps, None)


def run(a, ps, after):
    name = a.name
    flags = list(a.flags)
    if flags and flags[0] == "--":
        flags = flags[1:]
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,15}", a.label) or a.label == "off":
        raise BenchError("--label must be 1..16 of a-z 0-9 _ - starting with a letter, not 'off'")
    if not flags:
        raise BenchError("give the variant's flags after -- (see --help)")
    common.need_cpus("daemons on CPU 0, dnsperf on CPU 1")
    common.need("dnsperf", "knotd")
    hgd = common.hgd()
    ctl = os.environ.get("CTL") or common.release("tools/ctl/hourglass-ctl")
    if not a.no_build:
        print(f"{name}: building hourglassd (Release) in build-release/", flush=True)
        b = common.release("")
        targets = ["hourglassd"] + (["hourglass-ctl"] if a.ctl else [])
        log = f"/tmp/hg-{name}-build.log"
        with open(log, "wb") as f:
            ok = subprocess.run(["cmake", "-S", common.ROOT, "-B", b, "-DCMAKE_BUILD_TYPE=Release",
                                 "-DHG_TESTS=OFF"], stdout=subprocess.DEVNULL,
                                stderr=f).returncode == 0
            ok = ok and subprocess.run(["cmake", "--build", b, "--target", *targets, "-j2"],
                                       stdout=f, stderr=f).returncode == 0
        if not ok:
            print(common.tail(log), end="")
            raise BenchError("build failed")
    common.need_binary(hgd)

    work = common.work_dir(name)
    print(f"{name}: work dir {work}", flush=True)
    up = a.base_port
    variants = ["off", a.label]
    port = {"off": up + 1, a.label: up + 2}
    common.start_knot(ps, work, up, names=HIT_NAMES)
    pid = {}
    for v in variants:
        extra = [f.replace("@WORK@", work) for f in flags] if v != "off" else []
        # --dnssec off in both, unless the flags under test are --dnssec ones themselves
        if not any(f.startswith("--dnssec") for f in flags):
            extra = [*common.HGD_DNSSEC_OFF, *extra]
        log = f"{work}/{v}.log"
        pid[v] = ps.start(v, [hgd, "--listen", f"127.0.0.1:{port[v]}", "--upstream",
                              f"127.0.0.1:{up}", "--threads", "1", "--cache-size", "64MiB",
                              "--control", f"{work}/{v}.ctl", *common.hgd_test_zone(hgd), *common.hgd_root(hgd), *extra],
                    log=log, cpu=0)
        if not common.wait_answering(ps, pid[v], port[v]):
            raise BenchError(f"hourglassd ({v}) did not answer (see {log})")
    hit = f"{work}/hit.txt"
    dnsperf.write_names(hit, confs.numbered_names(HIT_NAMES))
    for v in variants:
        dnsperf.run(f"{work}/{v}.warm", port[v], hit, "-n", 1, "-c", 1, "-q", 20, timeout=60,
                    cpu=1)

    print(f"== machine: {os.cpu_count()} CPUs, {common.cpu_model()}")
    print(f"== load at start: {common.loadavg3()}", flush=True)
    rows = {v: [] for v in variants}
    with open(f"{work}/results.tsv", "w", encoding="ascii") as tsv:
        tsv.write("round\tvariant\tqps\tcompleted\tcpu_s\tus_per_hit\n")
        for r in range(1, a.rounds + 1):
            order = ["off", a.label] if r % 2 else [a.label, "off"]
            for v in order:
                t0 = stats.cpu_ticks(pid[v])
                res = dnsperf.run(f"{work}/{v}.r{r}", port[v], hit, "-c", 8, "-q", 100, "-l",
                                  a.seconds, timeout=a.seconds + 30, cpu=1)
                t1 = stats.cpu_ticks(pid[v])
                if t0 is None or t1 is None:
                    raise BenchError(f"hourglassd ({v}) is gone (see {work}/{v}.log)")
                cpu = (t1 - t0) / stats.CLK_TCK
                us = stats.us_per(t1 - t0, res.completed)
                rows[v].append((res.qps, us))
                line = f"{r}\t{v}\t{res.qps:.0f}\t{res.completed}\t{cpu:.2f}\t{us:.3f}"
                print(line, flush=True)
                tsv.write(line + "\n")
    print(f"== load at end: {common.loadavg3()}")
    if a.ctl:
        out = procs.output([ctl, "--socket", f"{work}/{a.label}.ctl", *a.ctl.split()], timeout=10)
        lines = [ln for ln in out.splitlines() if re.search(a.ctl_grep or ".", ln)]
        report = " ".join(lines) + " " if lines else f"no hourglass-ctl at {ctl}"
        print(f"== {a.label} daemon: {report}")
    for v in variants:
        ps.stop(pid[v])
    if a.after_stop:
        subprocess.run(["bash", "-c", a.after_stop], env=dict(os.environ, WORK=work))
    if after:
        after(work)
    what = a.what or a.label
    uo = stats.median([u for _, u in rows["off"]])
    qo = stats.median([q for q, _ in rows["off"]])
    ut = stats.median([u for _, u in rows[a.label]])
    qt = stats.median([q for q, _ in rows[a.label]])
    print(f"\nmedian of {a.rounds} rounds: {what} off {uo:.3f} us CPU per hit ({qo:.0f} qps), "
          f"{what} on {ut:.3f} us ({qt:.0f} qps)")
    if uo > 0:
        print(f"CPU per hit, on / off: {ut / uo:.3f} ({100 * (ut / uo - 1):+.1f}%)")
    else:
        print("CPU per hit, on / off: - (no CPU time measured for off)")
    print(f"{name}: raw results {work}/results.tsv")
