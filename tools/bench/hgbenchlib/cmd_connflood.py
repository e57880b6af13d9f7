"""hgbench conn-flood: can one host keep DNS over TCP or /metrics from everyone else?"""

import argparse
import resource
import socket
import subprocess

from . import common, procs
from .procs import BenchError

HELP = """Can one host keep DNS over TCP or /metrics from everyone else? (docs/architecture.md
§5, connection admission). Starts the given hourglassd on loopback (no upstream is needed:
the queries are CH TXT, answered REFUSED by hourglassd itself), then:
  1. 2,000 idle TCP connections from 127.0.0.1 (allowed), 10 × `dig +tcp` meanwhile;
  2. the same from 127.0.0.2 with --allow 127.0.0.1/32 (disallowed);
  3. one scrape of /metrics from 127.0.0.2, outside --allow;
  4. 16 idle /metrics connections from 127.0.0.1, 3 scrapes meanwhile.
Prints how many of the ordinary requests were answered. Loopback only, bounded counts.
Uses BASE-PORT .. BASE-PORT+3."""

# version.bind CH TXT
QUERY = bytes.fromhex("1234010000010000000000000776657273696f6e0462696e640000100003")


def add_parser(sub):
    p = sub.add_parser("conn-flood", help="idle TCP and /metrics connections against admission",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("hourglassd", nargs="?", default="build/resolver/hourglassd")
    p.add_argument("base_port", nargs="?", type=common.int_range(1024, 65000, "BASE-PORT"),
                   default=25300, metavar="BASE-PORT")
    p.set_defaults(func=main, name="conn-flood")


def udp_answers(port):
    """Ready once it answers over UDP: every listener (metrics too) is bound before the
    loop runs, and no TCP connection is spent on the probe."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(0.1)
        u.sendto(QUERY, ("127.0.0.1", port))
        try:
            u.recv(512)
            return True
        except OSError:
            return False


def start(ps, binary, port, allow, extra=()):
    pid = ps.start("hourglassd", [binary, "--listen", f"127.0.0.1:{port}", "--upstream",
                                  "127.0.0.1:9", "--allow", allow, *common.HGD_DNSSEC_OFF,
                                  *common.hgd_test_zone(binary), *common.hgd_root(binary),
                                  *extra])
    if not procs.wait_until(lambda _: udp_answers(port), 100, 0, alive=lambda: ps.alive(pid)):
        raise BenchError(f"{binary} did not start on port {port}")
    return pid


def connect_from(src, port):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        return s
    except OSError:
        s.close()
        return None


def dig_tcp(port):
    try:
        r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+tcp", "+time=2", "+tries=1",
                            "version.bind", "CH", "TXT"], capture_output=True, text=True,
                           timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return "status: REFUSED" in r.stdout


def scrape(src, port):
    s = connect_from(src, port)
    if s is None:
        return False
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while len(data) < 1 << 24:
            b = s.recv(65536)
            if not b:
                break
            data += b
        return data.startswith(b"HTTP/1.1 200")
    except OSError:
        return False
    finally:
        s.close()


def tcp_flood(ps, binary, port, src, allow):
    pid = start(ps, binary, port, allow)
    held = []
    try:
        for _ in range(2000):
            s = connect_from(src, port)
            if s is not None:
                held.append(s)
        ok = sum(dig_tcp(port) for _ in range(10))
        print(f"2000 idle TCP connections from {src} (--allow {allow}): dig +tcp answered {ok}/10",
              flush=True)
    finally:
        for s in held:
            s.close()
        ps.stop(pid)


def metrics_flood(ps, binary, port, mport):
    pid = start(ps, binary, port, "127.0.0.1/32", ("--metrics", f"127.0.0.1:{mport}"))
    held = []
    try:
        print(f"scrape from 127.0.0.2 (outside --allow) answered: {scrape('127.0.0.2', mport)}")
        held = [s for s in (connect_from("127.0.0.1", mport) for _ in range(16)) if s]
        ok = sum(scrape("127.0.0.1", mport) for _ in range(3))
        print(f"{len(held)} idle /metrics connections from 127.0.0.1: scrapes answered {ok}/3")
    finally:
        for s in held:
            s.close()
        ps.stop(pid)


def main(a, ps):
    common.need("dig")
    common.need_binary(a.hourglassd, "cmake --build build --target hourglassd")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    print(f"# {a.hourglassd}", flush=True)
    tcp_flood(ps, a.hourglassd, a.base_port, "127.0.0.1", "127.0.0.0/8")
    tcp_flood(ps, a.hourglassd, a.base_port + 1, "127.0.0.2", "127.0.0.1/32")
    metrics_flood(ps, a.hourglassd, a.base_port + 2, a.base_port + 3)
