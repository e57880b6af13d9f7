"""Statistics of the bench: median, percentiles and CPU accounting, each defined once.

Percentile (nearest rank): the p-quantile of N sorted values is the value at rank
ceil(p * N) (1-based, at least 1): the smallest value with at least p of all values at or
below it. p99 of 1,000 latencies is the 990th smallest, p99.9 of 20,000 the 19,980th.
Median: statistics.median (the mean of the two middle values when N is even);
median_low: the lower middle value (a value that was measured, e.g. the "median round").
CPU time of a process: utime + stime of /proc/PID/stat (all its threads), in clock ticks
of os.sysconf("SC_CLK_TCK").
"""

import math
import os
import statistics

CLK_TCK = os.sysconf("SC_CLK_TCK")


def percentile(sorted_values, p):
    """Nearest-rank percentile of already sorted values, 0 < p <= 1; None when empty."""
    if not 0 < p <= 1:
        raise ValueError(f"percentile {p} is not in (0, 1]")
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, math.ceil(p * n - 1e-9))  # 1e-9: 0.99 * 1000 is 990.0000000000001
    return sorted_values[rank - 1]


def median(values):
    return statistics.median(values)


def median_low(values):
    return statistics.median_low(values)


def median_row(rows, key):
    """The row whose key is the lower median of the keys (a real round, all its columns)."""
    ordered = sorted(rows, key=key)
    return ordered[(len(ordered) - 1) // 2]


class Latency:
    """Latencies in ms: count, p50/p99/p99.9/max and how many exceed a threshold."""

    def __init__(self, values_ms, slow_ms=0.4):
        self.values = sorted(values_ms)
        self.count = len(self.values)
        self.slow_ms = slow_ms
        self.slow = sum(1 for v in self.values if v > slow_ms)

    def p(self, q):
        return percentile(self.values, q)

    @property
    def max(self):
        return self.values[-1] if self.values else None

    def fmt(self, q):
        """The percentile as '%.3f', or '-' when there is no value."""
        v = self.p(q) if q != "max" else self.max
        return "-" if v is None else f"{v:.3f}"


def parse_stat(text):
    """(utime, stime) in clock ticks from the text of /proc/PID/stat. The command name (in
    parentheses, field 2) may hold spaces and ')': fields are counted after the last ')'."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    return int(rest[11]), int(rest[12])


def cpu_ticks(pid):
    """utime + stime of PID in clock ticks; None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            u, s = parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None
    return u + s


def cpu_ticks_split(pid):
    """(utime, stime) of PID in clock ticks; None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None


def parse_cpu_line(text, cpu):
    """(busy, total) jiffies of CPU number cpu from the text of /proc/stat. busy = user +
    nice + system + irq + softirq + steal; total = busy + idle + iowait."""
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == f"cpu{cpu}":
            v = [int(x) for x in f[1:9]] + [0] * max(0, 9 - len(f))
            user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
            busy = user + nice + system + irq + softirq + steal
            return busy, busy + idle + iowait
    return None


def cpu_line(cpu):
    with open("/proc/stat", encoding="ascii") as f:
        return parse_cpu_line(f.read(), cpu)


def busy_pct(before, after):
    """How busy a CPU was between two cpu_line readings, in percent (0 when no time passed)."""
    if before is None or after is None:
        return 0.0
    d = after[1] - before[1]
    return 100.0 * (after[0] - before[0]) / d if d > 0 else 0.0


def cpu_pct(ticks_before, ticks_after, seconds, hz=CLK_TCK):
    """A process's CPU time over a wall time, in percent of one CPU."""
    if ticks_before is None or ticks_after is None or seconds <= 0:
        return 0.0
    return 100.0 * (ticks_after - ticks_before) / hz / seconds


def us_per(ticks, count, hz=CLK_TCK):
    """CPU microseconds per item: ticks / hz / count (0 when count is 0)."""
    return 1e6 * ticks / hz / count if count else 0.0


def loadavg(n=1):
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:n])
