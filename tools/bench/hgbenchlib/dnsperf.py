"""dnsperf: query files, runs, and its output read into numbers (its summary block and the
per-query lines of -v)."""

import re

from . import procs


def write_names(path, names):
    with open(path, "w", encoding="ascii") as f:
        for n in names:
            f.write(n)
            f.write("\n")


class Result:
    """dnsperf's summary: sent, completed, lost, qps, avg_ms, sd_ms, rcodes {name: (count,
    pct)}. Missing figures are 0 (a run that did not finish)."""

    def __init__(self, text):
        self.text = text or ""
        self.sent = self._int(r"Queries sent:\s+(\d+)")
        self.completed = self._int(r"Queries completed:\s+(\d+)")
        self.lost = self._int(r"Queries lost:\s+(\d+)")
        self.qps = self._float(r"Queries per second:\s+([\d.]+)")
        self.avg_ms = self._float(r"Average Latency \(s\):\s+([\d.]+)") * 1000
        self.sd_ms = self._float(r"Latency StdDev \(s\):\s+([\d.]+)") * 1000
        self.rcodes = {}
        m = re.search(r"Response codes:\s+(.*)", self.text)
        if m:
            for name, count, pct in re.findall(r"([A-Z]+) (\d+) \(([\d.]+)%\)", m.group(1)):
                self.rcodes[name] = (int(count), float(pct))

    def _int(self, pattern):
        m = re.search(pattern, self.text)
        return int(m.group(1)) if m else 0

    def _float(self, pattern):
        m = re.search(pattern, self.text)
        return float(m.group(1)) if m else 0.0

    def noerror_pct(self):
        return self.rcodes.get("NOERROR", (0, 0.0))[1]

    def noerror_count(self):
        return self.rcodes.get("NOERROR", (0, 0.0))[0]


def latencies_ms(text, rcode=None):
    """The latency of every per-query line ("> RCODE name type seconds") in ms, optionally
    only those with RCODE rcode."""
    out = []
    for line in (text or "").splitlines():
        if line.startswith("> "):
            f = line.split()
            if rcode is not None and f[1] != rcode:
                continue
            try:
                out.append(float(f[-1]) * 1000)
            except ValueError:
                pass
    return out


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def run(out, port, datafile, *args, timeout, cpu=None, mode=None):
    """One dnsperf run against 127.0.0.1:port, its output in the file out; returns Result.
    Bounded by timeout (seconds); a run that fails or times out gives what it printed."""
    argv = ["dnsperf"]
    if mode:
        argv += ["-m", mode]
    argv += ["-s", "127.0.0.1", "-p", port, "-d", datafile, *args]
    procs.run(argv, out=out, timeout=timeout, cpu=cpu)
    return Result(read(out))
