"""Unit tests of hgbench's statistics, parsers, config writers and process handling. Fast,
no daemons, no network beyond one loopback UDP socket pair: python3 -m unittest."""

import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hgbenchlib import (cmd_callgrind, cmd_dot, cmd_lat, cmd_run, confs, dnsperf,  # noqa: E402
                        probe, procs, stats)

DNSPERF_OUT = """DNS Performance Testing Tool
Version 2.10.0

> NOERROR n1.bench.test. A 0.000149
> SERVFAIL n2.bench.test. A 0.002000
> NOERROR n3.bench.test. A 0.000120
[Status] Testing complete (time limit)

Statistics:

  Queries sent:         1000
  Queries completed:    990 (99.00%)
  Queries lost:         10 (1.00%)

  Response codes:       NOERROR 980 (98.99%), SERVFAIL 10 (1.01%)
  Average packet size:  request 24, response 40
  Run time (s):         1.000449
  Queries per second:   989.555756

  Average Latency (s):  0.000133 (min 0.000107, max 0.000163)
  Latency StdDev (s):   0.000023
"""


class Percentiles(unittest.TestCase):
    def test_nearest_rank_on_a_hundred_values(self):
        v = list(range(1, 101))  # 1..100
        self.assertEqual(stats.percentile(v, 0.5), 50)
        self.assertEqual(stats.percentile(v, 0.99), 99)
        self.assertEqual(stats.percentile(v, 0.999), 100)
        self.assertEqual(stats.percentile(v, 1.0), 100)
        self.assertEqual(stats.percentile(v, 0.001), 1)

    def test_rank_is_rounded_up_not_down(self):
        # 9,979 values: p99.9 is rank ceil(9969.021) = 9970, not 9969.
        v = list(range(1, 9980))
        self.assertEqual(stats.percentile(v, 0.999), 9970)
        # exact products are not pushed up by floating point (0.99 * 1000 = 990.0000000000001)
        self.assertEqual(stats.percentile(list(range(1, 1001)), 0.99), 990)
        self.assertEqual(stats.percentile(list(range(1, 20001)), 0.999), 19980)

    def test_small_and_empty(self):
        self.assertEqual(stats.percentile([7.0], 0.999), 7.0)
        self.assertEqual(stats.percentile([1, 2], 0.5), 1)
        self.assertIsNone(stats.percentile([], 0.5))
        for p in (0, -0.1, 1.5):
            with self.assertRaises(ValueError):
                stats.percentile([1], p)

    def test_latency_summary(self):
        lat = stats.Latency([0.5, 0.1, 0.3, 0.41, 0.2], slow_ms=0.4)
        self.assertEqual(lat.count, 5)
        self.assertEqual(lat.slow, 2)  # 0.41 and 0.5: over, not at, the threshold
        self.assertEqual(lat.fmt(0.5), "0.300")
        self.assertEqual(lat.fmt("max"), "0.500")
        empty = stats.Latency([])
        self.assertEqual((empty.fmt(0.99), empty.fmt("max"), empty.slow), ("-", "-", 0))


class Medians(unittest.TestCase):
    def test_median_averages_the_middle_pair(self):
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)
        self.assertEqual(stats.median([3, 1, 2]), 2)

    def test_median_low_and_median_row_pick_a_measured_value(self):
        self.assertEqual(stats.median_low([4, 1, 3, 2]), 2)
        rows = [{"r": 1, "q": 30}, {"r": 2, "q": 10}, {"r": 3, "q": 20}, {"r": 4, "q": 40}]
        self.assertEqual(stats.median_row(rows, lambda x: x["q"])["r"], 3)
        self.assertEqual(stats.median_row(rows[:3], lambda x: x["q"])["r"], 3)
        self.assertEqual(stats.median_row(rows[:1], lambda x: x["q"])["r"], 1)

    def test_median_of_printed_figures(self):
        self.assertEqual(cmd_dot.median_str(["10.5", "9.0", "100.25"]), "10.5")
        self.assertEqual(cmd_dot.median_str(["-", "-", "-"]), "-")
        self.assertEqual(cmd_dot.median_str([]), "-")


class Cpu(unittest.TestCase):
    STAT = ("1234 (hour glass) d) S 1 1234 1234 0 -1 4194624 500 0 0 0 "
            "250 75 0 0 20 0 3 0 100 1000000 300 18446744073709551615")

    def test_stat_fields_counted_after_the_last_parenthesis(self):
        self.assertEqual(stats.parse_stat(self.STAT), (250, 75))

    def test_own_process(self):
        t = stats.cpu_ticks(os.getpid())
        self.assertIsInstance(t, int)
        self.assertGreaterEqual(t, 0)
        self.assertIsNone(stats.cpu_ticks(2 ** 22 + 12345))  # above pid_max: never a process

    def test_proc_stat_cpu_line(self):
        text = ("cpu  1 1 1 1 1 1 1 1 0 0\n"
                "cpu0 100 10 50 800 20 5 5 10 0 0\n"
                "cpu1 1 2 3 4 5 6 7 8 0 0\n")
        self.assertEqual(stats.parse_cpu_line(text, 0), (180, 1000))
        self.assertEqual(stats.parse_cpu_line(text, 1), (27, 36))
        self.assertIsNone(stats.parse_cpu_line(text, 2))
        self.assertEqual(stats.busy_pct((180, 1000), (280, 1200)), 50.0)
        self.assertEqual(stats.busy_pct((180, 1000), (180, 1000)), 0.0)

    def test_rates(self):
        self.assertEqual(stats.cpu_pct(100, 150, 1.0, hz=100), 50.0)
        self.assertEqual(stats.cpu_pct(None, 150, 1.0, hz=100), 0.0)
        self.assertAlmostEqual(stats.us_per(100, 50000, hz=100), 20.0)
        self.assertEqual(stats.us_per(100, 0, hz=100), 0.0)
        self.assertEqual(stats.CLK_TCK, os.sysconf("SC_CLK_TCK"))


class Dnsperf(unittest.TestCase):
    def test_summary(self):
        r = dnsperf.Result(DNSPERF_OUT)
        self.assertEqual((r.sent, r.completed, r.lost), (1000, 990, 10))
        self.assertAlmostEqual(r.qps, 989.555756)
        self.assertAlmostEqual(r.avg_ms, 0.133)
        self.assertAlmostEqual(r.sd_ms, 0.023)
        self.assertEqual(r.noerror_count(), 980)
        self.assertEqual(r.noerror_pct(), 98.99)
        self.assertEqual(r.rcodes["SERVFAIL"], (10, 1.01))

    def test_unfinished_run_reads_as_zero(self):
        r = dnsperf.Result("dnsperf: cannot connect\n")
        self.assertEqual((r.completed, r.qps, r.noerror_pct()), (0, 0.0, 0.0))

    def test_per_query_lines(self):
        self.assertEqual([round(x, 3) for x in dnsperf.latencies_ms(DNSPERF_OUT)],
                         [0.149, 2.0, 0.12])
        self.assertEqual(len(dnsperf.latencies_ms(DNSPERF_OUT, rcode="NOERROR")), 2)


class Confs(unittest.TestCase):
    def test_knot_conf_and_zone(self):
        with tempfile.TemporaryDirectory() as d:
            conf = confs.write_knot(os.path.join(d, "knot"), 35350, names=3, wildcard="198.19.0.1")
            text = open(conf, encoding="ascii").read()
            self.assertIn("listen: 127.0.0.1@35350\n", text)
            self.assertIn(f'storage: "{d}/knot/db"', text)
            self.assertIn("udp-workers: 1", text)
            self.assertTrue(os.path.isdir(os.path.join(d, "knot", "db")))
            zone = open(os.path.join(d, "knot", "bench.test.zone"), encoding="ascii").read()
        self.assertTrue(zone.startswith("$ORIGIN bench.test.\n$TTL 3600\n"))
        self.assertIn("*.w IN A 198.19.0.1\n", zone)
        self.assertIn("n2 IN A 198.18.0.2\n", zone)
        self.assertNotIn("n3 ", zone)

    def test_zone_addresses_wrap_and_stay_valid(self):
        zone = confs.bench_zone(names=65537).splitlines()
        self.assertIn("n257 IN A 198.18.1.1", zone)
        self.assertIn("n65536 IN A 198.18.0.0", zone)
        self.assertFalse(any("*.w" in ln for ln in zone))
        self.assertEqual(sum(ln.startswith("n") and not ln.startswith("ns ") for ln in zone), 65537)

    def test_unbound_forwarder_forwards_to_loopback_only(self):
        text = confs.unbound_forwarder("/w", 35352, 35350)
        self.assertIn("port: 35352\n", text)
        self.assertIn("forward-addr: 127.0.0.1@35350\n", text)
        self.assertIn("num-threads: 1\n", text)
        self.assertIn("prefetch: no\n", text)
        self.assertIn('pidfile: "/w/unbound.pid"', text)

    def test_signed_knot_conf(self):
        plain = confs.knot_conf("/d", 35350)
        self.assertNotIn("dnssec", plain)
        self.assertNotIn("policy", plain)
        text = confs.knot_conf("/d", 35350, signed=True)
        self.assertIn("policy:\n  - id: bench-ecdsa\n    algorithm: ecdsap256sha256\n"
                      "    nsec3: off\nzone:\n", text)
        self.assertTrue(text.endswith('file: "bench.test.zone"\n    zonefile-sync: -1\n'
                                      "    journal-content: none\n    dnssec-signing: on\n"
                                      "    dnssec-policy: bench-ecdsa\n"))

    def test_ds_lines_from_keymgr(self):
        out = ("bench.test. DS 7109 13 2 8de4a301353b1173 26eec8ff\n"
               "bench.test. DS 7109 13 4 bfe81ca5c20b6e2b\n"
               "warning: something\n")
        self.assertEqual(confs.ds_lines(out), ["bench.test. DS 7109 13 2 8de4a301353b117326eec8ff"])
        self.assertEqual(confs.ds_lines(out, "4"), ["bench.test. DS 7109 13 4 bfe81ca5c20b6e2b"])
        self.assertEqual(confs.ds_lines("error: no keys\n"), [])

    def test_unbound_validating_forwarder_differs_only_in_validation(self):
        plain = confs.unbound_forwarder("/w", 35352, 35350)
        self.assertIn('module-config: "iterator"\n', plain)
        self.assertNotIn("trust-anchor", plain)
        text = confs.unbound_forwarder("/w", 35359, 35350, ["bench.test. DS 1 13 2 AB"],
                                       pidfile="unbound-validate.pid")
        self.assertIn('module-config: "validator iterator"\n', text)
        self.assertIn('trust-anchor: "bench.test. DS 1 13 2 AB"\n', text)
        self.assertIn('pidfile: "/w/unbound-validate.pid"', text)
        rest = [ln for ln in text.splitlines() if "trust-anchor" not in ln and "module" not in ln
                and "pidfile" not in ln and "port:" not in ln]
        same = [ln for ln in plain.splitlines() if "module" not in ln and "pidfile" not in ln
                and "port:" not in ln]
        self.assertEqual(rest, same)

    def test_unbound_dot_confs(self):
        up = confs.unbound_dot_upstream("/w", 35470, 35471, "/w/k", "/w/p")
        self.assertIn("interface: 127.0.0.1@35471\n", up)
        self.assertIn("tls-port: 35471\n", up)
        self.assertIn('local-data: "w.bench.test. 3600 IN A 192.0.2.1"', up)
        fw = confs.unbound_dot_forwarder("/w", 35472, "127.0.0.1@35471#dns.test", True, "/w/ca")
        self.assertIn("forward-tls-upstream: yes\n", fw)
        self.assertIn("forward-addr: 127.0.0.1@35471#dns.test\n", fw)
        self.assertIn(
            "forward-tls-upstream: no\n",
            confs.unbound_dot_forwarder("/w", 1, "127.0.0.1@2", False, "/w/ca"))

    def test_dnsdist_confs(self):
        text = confs.dnsdist_cache(35354, 35350)
        self.assertIn('setLocal("127.0.0.1:35354")', text)
        self.assertIn('newServer({address="127.0.0.1:35350"', text)
        self.assertIn('setSecurityPollSuffix("")', text)
        self.assertIn("getServer(0):setUp()", text)
        self.assertIn("newPacketCache(200000", text)
        front = confs.dnsdist_dot_front(1, 2, 3, "/p", "/k")
        self.assertIn('addTLSLocal("127.0.0.1:2", "/p", "/k", {provider="openssl"})', front)
        self.assertNotIn("PacketCache", front)

    def test_query_files(self):
        self.assertEqual(list(confs.numbered_names(2)), ["n0.bench.test. A", "n1.bench.test. A"])
        self.assertEqual(list(confs.numbered_names(1, "r1hg-{}.w.bench.test. A", start=5)),
                         ["r1hg-5.w.bench.test. A"])


def response(qid, name, addrs, rcode=0, compress=True):
    q = probe.build_query(name, qid)
    msg = bytearray(q)
    struct.pack_into("!HHHH", msg, 2, 0x8180 | rcode, 1, len(addrs), 0)
    for a in addrs:
        owner = b"\xc0\x0c" if compress else q[12:-4]
        msg += owner + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(a)
    return bytes(msg)


class Probe(unittest.TestCase):
    def test_query_wire(self):
        q = probe.build_query("n0.bench.test.", 0x1234)
        self.assertEqual(q[:12], bytes.fromhex("123401000001000000000000"))
        self.assertEqual(q[12:], b"\x02n0\x05bench\x04test\x00\x00\x01\x00\x01")
        with self.assertRaises(ValueError):
            probe.build_query("a..b", 1)

    def test_answers_compressed_and_not(self):
        for c in (True, False):
            msg = response(7, "x.w.bench.test.", ["198.18.0.1", "10.0.0.1"], compress=c)
            self.assertEqual(probe.parse_response(msg, 7), (0, ["198.18.0.1", "10.0.0.1"]))
        self.assertEqual(probe.parse_response(response(7, "a.", [], rcode=3), 7), (3, []))

    def test_hostile_responses_are_refused(self):
        good = response(7, "x.test.", ["198.18.0.1"])
        two_answers = good[:6] + b"\x00\x02" + good[8:]  # claims an answer it lacks
        for bad in (good[:11], good[:-1], good[:-5], two_answers):
            with self.assertRaises(ValueError):
                probe.parse_response(bad, 7)
        with self.assertRaises(ValueError):  # another ID
            probe.parse_response(good, 8)
        with self.assertRaises(ValueError):  # a query, not a response
            probe.parse_response(probe.build_query("x.", 7), 7)
        loop = bytearray(good)  # the answer's owner points at itself
        at = len(probe.build_query("x.test.", 7))
        loop[at:at + 2] = struct.pack("!H", 0xC000 | at)
        self.assertEqual(probe.parse_response(bytes(loop), 7), (0, ["198.18.0.1"]))

    def test_one_round_trip_on_loopback(self):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as srv:
            srv.bind(("127.0.0.1", 0))
            port = srv.getsockname()[1]

            def serve():
                data, peer = srv.recvfrom(512)
                qid = struct.unpack("!H", data[:2])[0]
                srv.sendto(response(qid, "n0.bench.test.", ["198.18.0.0"]), peer)
            t = threading.Thread(target=serve)
            t.start()
            self.assertTrue(probe.answers(port, "n0.bench.test.", timeout=5))
            t.join(5)
        self.assertIsNone(probe.query_a(port, "n0.bench.test.", timeout=0.05))


class Callgrind(unittest.TestCase):
    ANNOTATE = """--------------------------------------------------------------------------------
Profile data file 'cg.1.1-01' (creator: callgrind-3.19.0)
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                 file:function
--------------------------------------------------------------------------------
1,000,000 (100.0%)  ???:main [/build/hourglassd]
  600,000 (60.00%)  resolver/query/query_engine.cc:hg::QueryEngine::handle(int) [/build/hourglassd]
  200,000 (20.00%)  ???:on_query_tapped [/build/hourglassd]
   50,000 ( 5.00%)  ???:memcpy [/usr/lib/libc.so.6]
"""

    def test_top_functions_leave_out_the_frames_of_everything(self):
        lines = cmd_callgrind.top_functions(self.ANNOTATE, 1000, 1000000, 2)
        self.assertEqual(lines, [
            "     600  resolver/query/query_engine.cc:hg::QueryEngine::handle(int)",
            "     200  ???:on_query_tapped"])

    def test_inclusive_of(self):
        self.assertEqual(cmd_callgrind.inclusive_of(self.ANNOTATE, r"on_query_tapped"), 200000)
        self.assertEqual(cmd_callgrind.inclusive_of(self.ANNOTATE, r"QueryEngine::handle\("),
                         600000)
        self.assertIsNone(cmd_callgrind.inclusive_of(self.ANNOTATE, r"nothing_here"))

    def test_total_of_a_dump(self):
        with tempfile.TemporaryDirectory() as d:
            confs.write(f"{d}/cg.42.1-01", "version: 1\ncmd: x\nsummary: 123456\n")
            confs.write(f"{d}/cg.42.1-02", "version: 1\ntotals: 44\n")
            confs.write(f"{d}/cg.42", "summary: 9\n")  # not a thread dump
            dumps = cmd_callgrind.thread_dumps(d, "cg")
        self.assertEqual(sorted(dumps.values()), [44, 123456])

    def test_strace_table(self):
        # strace 6: usecs/call on the total line too; older ones leave it (and errors) blank
        text = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 60.00    0.006000           3      2000           sendmmsg
 40.00    0.004000           1      4000      1000 recvmmsg
------ ----------- ----------- --------- --------- ----------------
100.00    0.010000           1      6000      1000 total
100.00    0.010000                  6000           total
"""
        self.assertEqual(cmd_callgrind.strace_table(text, 1000), [
            "  sendmmsg         2.00 calls    0.00 errors",
            "  recvmmsg         4.00 calls    1.00 errors",
            "  total            6.00 calls    1.00 errors",
            "  total            6.00 calls    0.00 errors"])
        self.assertEqual(cmd_callgrind.strace_table("no table here\n", 1000), [])


class Sched(unittest.TestCase):
    def test_timehist(self):
        text = ("hdr\nhdr\nhdr\n"
                "  100.000 [0000]  hourglassd[77/77]  0.000  0.200  0.050\n"
                "  100.001 [0000]  <idle>  0.000  0.000  0.900\n"
                "  100.002 [0000]  kworker/0:1[12]  0.000  0.000  0.300\n")
        lines = cmd_lat.timehist_summary(text, 77, 0.4)
        self.assertIn("server: 1 times on CPU 0; waited to run at most 0.200 ms once woken (1 "
                      "times over 0.1 ms)", lines[0])
        self.assertIn("idle for more than 0.4 ms: 1 times", lines[1])
        self.assertIn("1 times, 0.3 ms in all (kworker/0:1 0.3 ms)", lines[2])

    def test_batches_and_preemption(self):
        text = ("77 100.000000: syscalls:sys_exit_recvmmsg: 0x4\n"
                "77 100.000100: syscalls:sys_enter_sendmmsg: fd: 0x00000003\n"
                "77 100.001000: syscalls:sys_exit_recvmmsg: 0x0\n"
                "77 100.002000: syscalls:sys_enter_sendmmsg: fd: 0x00000003\n"
                "0 100.003000: sched:sched_switch: prev_comm=hourglassd prev_pid=77 "
                "prev_prio=120 prev_state=R+ ==> next_comm=ksoftirqd/0 next_pid=9 next_prio=120\n"
                "0 100.003500: sched:sched_switch: prev_comm=ksoftirqd/0 prev_pid=9 "
                "prev_prio=120 prev_state=S ==> next_comm=hourglassd next_pid=77 next_prio=120\n")
        spans, line = cmd_lat.script_summary(text, 77)
        self.assertEqual([round(s, 3) for s in spans], [0.1])
        self.assertEqual(line, "preempted while runnable: 1 times, 0.5 ms in all, longest "
                               "0.500 ms (by ksoftirqd/0 1)")


class RunTable(unittest.TestCase):
    def row(self, rnd, fw, test, qps, fwcpu, p99="-"):
        return {"round": rnd, "fw": fw, "test": test, "qps": qps, "sent": qps, "completed": qps,
                "lost": 0, "noerr": "100.00", "avg": 1.0, "sd": 0.1, "p50": "-", "p99": p99,
                "p999": "-", "fwcpu": fwcpu, "cpu0": 90, "cpu1": 99, "load": "1.00"}

    def test_median_round_best_and_ratios(self):
        rows = [self.row(1, "hourglass", "hit", 100, 50), self.row(2, "hourglass", "hit", 300, 50),
                self.row(3, "hourglass", "hit", 200, 50), self.row(1, "unbound", "hit", 100, 100)]
        text = cmd_run.summary(rows, ["hourglass", "unbound"])
        lines = [ln for ln in text.splitlines() if ln.startswith("| hourglass")
                 or ln.startswith("| unbound")]
        self.assertTrue(lines[0].startswith("| hourglass |      200 |      300 | 100/300/200 "))
        # hourglass 200 qps at 50 % CPU = 400 per CPU-second; unbound 100 at 100 % = 100
        self.assertIn("|       400 |        1.00 |        1.00 |", lines[0])
        self.assertIn("|       100 |        2.00 |        4.00 |", lines[1])
        self.assertNotIn("cache misses", text)

    def test_cpu_per_query_against_the_validating_hourglass(self):
        rows = []
        for rnd, (v, o, u) in enumerate([(10, 5, 30), (12, 6, 20), (11, 7, 25)], 1):
            for fw, us in (("hourglass-validate", v), ("hourglass", o), ("unbound-validate", u)):
                rows.append(dict(self.row(rnd, fw, "miss", 1000, 50), cpuus=us))
        rows.append(dict(self.row(1, "hourglass-validate", "hit", 1000, 50), cpuus=2.0))
        rows.append(dict(self.row(1, "hourglass", "hit", 1000, 50), cpuus=3.0))
        text = cmd_run.cpu_per_query(rows, ["hourglass-validate", "hourglass", "unbound-validate"])
        lines = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
                 for ln in text.splitlines() if ln.startswith("| ") and "server" not in ln}
        self.assertEqual(lines["hourglass-validate"],
                         ["2.00", "2.00", "1.00", "11.00", "10.00/12.00/11.00", "1.00"])
        self.assertEqual(lines["hourglass"], ["3.00", "3.00", "1.50", "6.00", "5.00/6.00/7.00", "0.55"])
        self.assertEqual(lines["unbound-validate"], ["-", "-", "-", "25.00", "30.00/20.00/25.00", "2.27"])

    def test_dig_flags(self):
        self.assertEqual(cmd_run.dig_flags(";; flags: qr rd ra ad; QUERY: 1, ANSWER: 2"),
                         ["qr", "rd", "ra", "ad"])
        self.assertNotIn("ad", cmd_run.dig_flags(";; flags: qr aa rd; QUERY: 1, ANSWER: 1"))

    def test_validating_forwarders_need_the_signed_zone(self):
        class A:
            rounds = lat_rounds = hit_seconds = miss_seconds = base_port = None
            no_miss = no_lat = no_install = no_build = False
            forwarders, dnssec = "hourglass unbound-validate", False
        with self.assertRaises(procs.BenchError):
            cmd_run.Settings(A())
        A.dnssec = True
        self.assertEqual(cmd_run.Settings(A()).forwarders, ["hourglass", "unbound-validate"])
        A.forwarders = None
        self.assertEqual(cmd_run.Settings(A()).forwarders,
                         ["hourglass-validate", "hourglass", "unbound-validate"])


class Processes(unittest.TestCase):
    def test_stop_escalates_to_kill_within_the_bound(self):
        with tempfile.TemporaryDirectory() as d:
            ps = procs.Procs("test")
            log = os.path.join(d, "child.log")
            code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                    "print('ready', flush=True); time.sleep(60)")
            pid = ps.start("stubborn", [sys.executable, "-c", code], log=log)
            self.assertTrue(procs.wait_until(
                lambda _: "ready" in open(log, encoding="ascii").read(), 200, 0.05))
            t0 = time.monotonic()
            rc = ps.stop(pid, timeout=0.3)
            self.assertEqual(rc, -signal.SIGKILL)
            self.assertLess(time.monotonic() - t0, 10)
            self.assertFalse(ps.alive(pid))
            self.assertEqual(ps.started, {})

    def test_a_stop_cut_short_by_a_signal_is_finished_by_stop_all(self):
        ps = procs.Procs("test")
        pid = ps.start("sleeper", ["sleep", "60"])
        popen = ps.started[pid][1]
        real_wait = popen.wait

        def interrupted_wait(timeout=None):
            popen.wait = real_wait
            raise procs.Interrupted(signal.SIGINT)
        popen.wait = interrupted_wait
        with self.assertRaises(procs.Interrupted):
            ps.stop(pid)
        self.assertIn(pid, ps.started)  # still known: not yet reaped
        ps.stop_all()
        self.assertEqual(ps.started, {})
        self.assertIsNotNone(popen.returncode)

    def test_only_started_processes_are_signalled(self):
        ps = procs.Procs("test")
        self.assertIsNone(ps.stop(os.getpid()))
        self.assertFalse(ps.signal(os.getpid(), signal.SIGCONT))

    def test_cleanup_stops_everything_on_error_and_reports_it(self):
        ps = procs.Procs("test")
        with self.assertRaises(SystemExit) as e:
            with ps:
                pid = ps.start("sleeper", ["sleep", "60"])
                self.assertTrue(ps.alive(pid))
                raise procs.BenchError("something broke")
        self.assertEqual(e.exception.code, 1)
        self.assertEqual(ps.started, {})
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_wait_until_is_bounded_and_stops_when_the_process_exits(self):
        calls = []
        self.assertFalse(procs.wait_until(lambda i: calls.append(i), 3, 0))
        self.assertEqual(calls, [0, 1, 2])
        self.assertFalse(procs.wait_until(lambda i: True, 3, 0, alive=lambda: False))
        self.assertTrue(procs.wait_until(lambda i: i == 1, 3, 0))

    def test_run_is_bounded(self):
        t0 = time.monotonic()
        self.assertIsNone(procs.run(["sleep", "30"], timeout=0.2))
        self.assertLess(time.monotonic() - t0, 10)
        with self.assertRaises(procs.BenchError):
            procs.run(["/nonexistent/program"])


if __name__ == "__main__":
    unittest.main()
