"""What the subcommands share: the tree's paths, argument checks, the work directory, the
upstream knotd (started, answering, pinned), and small readings of the machine."""

import argparse
import os
import shutil
import subprocess
import tempfile
import time

from . import confs, probe, procs
from .procs import BenchError

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"


# hourglassd validates by default, from the root's trust anchor; the benches' upstreams serve
# bench.test. (or w.bench.test.) only, so every bench says what it measures: no validation.
HGD_DNSSEC_OFF = ("--dnssec", "off")

_HAS_NO_SPECIAL = {}


def hgd_test_zone(binary):
    """("--no-special-zone", "test") for a `binary` that has the flag: the benches' zones are
    below test., which hourglassd otherwise answers NXDOMAIN itself (RFC 6761 §6.2), as the
    benches' Unbound needs `local-zone: "test." nodefault`. An older binary (HGD_BASE) sends
    test. upstream anyway and gets nothing."""
    if binary not in _HAS_NO_SPECIAL:
        try:
            out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=20,
                                 check=False).stdout
        except OSError:
            out = ""
        _HAS_NO_SPECIAL[binary] = "--no-special-zone" in out
    return ("--no-special-zone", "test") if _HAS_NO_SPECIAL[binary] else ()


_ROOT_FLAGS = {}


def hgd_root(binary):
    """("--allow-root",) when the benches run as root and `binary` has the flag: hourglassd
    refuses to stay root without it (or --user); an older HGD_BASE build has no such flag."""
    if os.geteuid() != 0:
        return ()
    if binary not in _ROOT_FLAGS:
        try:
            out = subprocess.run([binary, "--help"], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _ROOT_FLAGS[binary] = ("--allow-root",) if "--allow-root" in out else ()
    return _ROOT_FLAGS[binary]


def release(path):
    """A file in build-release/ (where `run` and `flag-cost` build)."""
    return os.path.join(ROOT, "build-release", path)


def hgd(default=None):
    """$HGD, else the given default, else build-release/resolver/hourglassd."""
    return os.environ.get("HGD") or default or release("resolver/hourglassd")


def need(*tools):
    for t in tools:
        if shutil.which(t) is None:
            raise BenchError(f"needs {t}")


def need_binary(path, hint="cmake --build build-release --target hourglassd"):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BenchError(f"{path} not built ({hint})")


def need_cpus(what):
    if (os.cpu_count() or 1) < 2:
        raise BenchError(f"needs 2 CPUs ({what})")


def int_range(lo, hi, name):
    """An argparse type: an integer lo..hi, or the error the scripts gave."""
    def parse(text):
        if not text.isdigit() or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be {lo}..{hi}")
        return int(text)
    return parse


def env_int(name, default):
    v = os.environ.get(name, "")
    if v == "":
        return default
    if not v.isdigit():
        raise BenchError(f"{name} must be a number, got '{v}'")
    return int(v)


def ms_value(text):
    try:
        v = float(text)
    except ValueError:
        v = -1
    if v < 0 or not text.replace(".", "", 1).isdigit():
        raise argparse.ArgumentTypeError("must be a number of milliseconds")
    return v


def work_dir(name):
    return tempfile.mkdtemp(prefix=f"hg-{name}.", dir="/tmp")


def in_work_dir(ps, name, keep, body, what="outputs"):
    """Runs body(work) in a new work dir. Afterwards (also on an error) stops every process
    `ps` started, and removes the dir unless `keep`, in which case it says where it is."""
    work = work_dir(name)
    try:
        return body(work)
    finally:
        ps.stop_all()
        if keep:
            print(f"{name}: {what} kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def loadavg3():
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def first_line(argv):
    return (procs.output(argv).splitlines() or ["?"])[0]


def wait_answering(ps, pid, port, name="n0.bench.test.", tries=40, interval=0.25,
                   prefix="198.", timeout=1.0):
    """Polls 127.0.0.1:port for an A answer to name (a callable i -> name gives a new
    name each try, so a cache cannot answer for it) until it comes, the process exits or
    tries run out (at most tries * (interval + timeout) seconds)."""
    def check(i):
        n = name(i) if callable(name) else name
        return probe.answers(port, n, prefix, timeout)
    return procs.wait_until(check, tries, interval, alive=lambda: ps.alive(pid))


def wildcard_probe(i):
    return f"probe{i}.w.bench.test."


def pin_cpu1(pid):
    """knotd pins each UDP worker to a CPU of its own choosing when it starts (worker 0 to
    CPU 0), whatever taskset it was started under; that would put the upstream on the
    server's CPU. Pins every thread of PID back to CPU 1 and fails, naming the thread, if
    one is elsewhere after that."""
    r = subprocess.run(["taskset", "-a", "-p", "-c", "1", str(pid)], capture_output=True)
    if r.returncode != 0:
        raise BenchError("could not keep knotd on CPU 1")
    for tid in os.listdir(f"/proc/{pid}/task"):
        status = f"/proc/{pid}/task/{tid}/status"
        with open(status, encoding="ascii", errors="replace") as f:
            allowed = [ln.split()[1] for ln in f if ln.startswith("Cpus_allowed_list:")]
        if allowed != ["1"]:
            raise BenchError(f"could not keep knotd on CPU 1 (thread {status} on {allowed})")


def start_knot(ps, work, port, names=0, wildcard=None, cpu1=True, probe_name=None,
               signed=False):
    """knotd serving bench.test. (names numbered A records, optionally the wildcard) on
    127.0.0.1:port from WORK/knot, pinned to CPU 1 when cpu1; waits until it answers (when
    signed, knotd signs the zone before it serves it: confs.knot_conf). Returns its PID."""
    conf = confs.write_knot(os.path.join(work, "knot"), port, names, wildcard, signed)
    log = os.path.join(work, "knotd.log")
    pid = ps.start("knotd", ["knotd", "-c", conf], log=log, cpu=1 if cpu1 else None)
    if probe_name is None:
        probe_name = "n0.bench.test." if names else wildcard_probe
    if not wait_answering(ps, pid, port, probe_name, tries=120, interval=0.25):
        raise BenchError(f"knotd did not answer (see {log})")
    if cpu1:
        pin_cpu1(pid)
    return pid


def knot_ds(work):
    """The DS lines (SHA-256) of the signed bench.test. of start_knot(..., signed=True), from
    keymgr; BenchError when there are none."""
    conf = os.path.join(work, "knot", "knot.conf")
    lines = confs.ds_lines(procs.output(["keymgr", "-c", conf, "bench.test.", "ds"]))
    if not lines:
        raise BenchError(f"keymgr gave no DS for bench.test. (knot.conf: {conf})")
    return lines


def tail(path, n=20):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def sleep(seconds):
    """A pause that is part of a measurement's method (e.g. to let timers fire), not a
    wait for readiness."""
    time.sleep(seconds)
