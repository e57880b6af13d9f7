"""Every config and zone file the bench writes, once: knotd's (knot.conf and the bench.test.
zone), Unbound's (the forwarder of `run`, the DoT upstream and forwarders of dot-miss and
dot-dnsdist), dnsdist's (the packet-cache forwarder, the DoT front). Loopback only. The
functions return text; write() puts it in a file."""

import os


def write(path, text):
    os.makedirs(os.path.dirname(str(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    return path


# ------------------------------------------------------------------------- knotd
# The signing policy of `run --dnssec`: knotd signs bench.test. itself with one ECDSA P-256
# SHA-256 (algorithm 13) KSK and one ZSK, denial of existence by NSEC.
KNOT_POLICY = "bench-ecdsa"
KNOT_POLICY_LINES = ("algorithm: ecdsap256sha256", "nsec3: off")


def knot_conf(directory, port, signed=False):
    """knotd serving bench.test. from DIRECTORY/bench.test.zone on 127.0.0.1@port with one
    UDP, one TCP and one background worker; its database in DIRECTORY/db. With signed, knotd
    signs the zone itself (KNOT_POLICY; its keys in DIRECTORY/db/keys, `keymgr -c CONF
    bench.test. ds` gives the DS) and never writes the signed zone back to the file."""
    d = str(directory)
    policy = zone_signing = ""
    if signed:
        policy = "policy:\n  - id: " + KNOT_POLICY + "\n" + "".join(
            f"    {line}\n" for line in KNOT_POLICY_LINES)
        zone_signing = ("    zonefile-sync: -1\n    journal-content: none\n"
                        f"    dnssec-signing: on\n    dnssec-policy: {KNOT_POLICY}\n")
    return f"""server:
    rundir: "{d}"
    listen: 127.0.0.1@{port}
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "{d}/db"
log:
  - target: stderr
    any: warning
{policy}zone:
  - domain: bench.test.
    storage: "{d}"
    file: "bench.test.zone"
{zone_signing}"""


def bench_zone(names=0, wildcard=None):
    """The bench.test. zone (TTL 3600): n0..n{names-1} A 198.18.(i/256 mod 256).(i mod 256),
    and, when wildcard is an address, *.w.bench.test. A wildcard (every name under it is new
    to a cache)."""
    lines = ["$ORIGIN bench.test.", "$TTL 3600",
             "@ IN SOA ns hostmaster 1 3600 600 86400 3600",
             "@ IN NS ns", "ns IN A 198.18.255.53"]
    if wildcard:
        lines.append(f"*.w IN A {wildcard}")
    lines += [f"n{i} IN A 198.18.{(i // 256) % 256}.{i % 256}" for i in range(names)]
    return "\n".join(lines) + "\n"


def write_knot(directory, port, names=0, wildcard=None, signed=False):
    """DIRECTORY/knot.conf, DIRECTORY/bench.test.zone and DIRECTORY/db; the conf's path."""
    os.makedirs(os.path.join(str(directory), "db"), exist_ok=True)
    write(os.path.join(str(directory), "bench.test.zone"), bench_zone(names, wildcard))
    return write(os.path.join(str(directory), "knot.conf"), knot_conf(directory, port, signed))


def ds_lines(keymgr_output, digest_type="2"):
    """The DS records of `keymgr ... ds` output ("bench.test. DS 12345 13 2 HEX"), those of
    the given digest type only, as zone-file lines: a trust anchor file for hourglassd and
    Unbound's trust-anchor: lines."""
    out = []
    for line in keymgr_output.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1] == "DS" and f[4] == digest_type and f[0].endswith("."):
            out.append(f"{f[0]} DS {f[2]} {f[3]} {f[4]} {''.join(f[5:])}")
    return out


# ------------------------------------------------------------------------- Unbound
_UNBOUND_QUIET = """    do-daemonize: no
    username: ""
    chroot: ""
    use-syslog: no
    logfile: ""
    verbosity: 0
    num-threads: 1
    do-ip6: no
    access-control: 127.0.0.0/8 allow
    do-not-query-localhost: no
    module-config: "iterator"
    local-zone: "test." nodefault
"""


def unbound_forwarder(work, port, upstream_port, anchors=(), pidfile="unbound.pid"):
    """Unbound as `run` measures it: one thread on 127.0.0.1:port, forward-only to
    127.0.0.1@upstream_port, no hardening that would add upstream queries, no prefetch.
    With anchors (DS lines), it validates from them: module-config "validator iterator" and
    one trust-anchor: per line, every other setting the same (val-* at their defaults)."""
    quiet = _UNBOUND_QUIET
    if anchors:
        quiet = quiet.replace('module-config: "iterator"', 'module-config: "validator iterator"')
        quiet += "".join(f'    trust-anchor: "{a}"\n' for a in anchors)
    return f"""server:
    interface: 127.0.0.1
    port: {port}
    directory: "{work}"
    pidfile: "{work}/{pidfile}"
{quiet}    harden-dnssec-stripped: no
    harden-glue: no
    harden-below-nxdomain: no
    harden-referral-path: no
    qname-minimisation: no
    aggressive-nsec: no
    prefetch: no
    msg-cache-size: 64m
    rrset-cache-size: 128m
remote-control:
    control-enable: no
forward-zone:
    name: "."
    forward-addr: 127.0.0.1@{upstream_port}
"""


def unbound_dot_upstream(work, plain_port, tls_port, key, pem):
    """The DoT benches' upstream: every name under w.bench.test. answered 192.0.2.1 (a
    redirect zone), on a plain port and on a TLS port with the given key and certificate."""
    return f"""server:
    interface: 127.0.0.1@{plain_port}
    interface: 127.0.0.1@{tls_port}
    tls-port: {tls_port}
    tls-service-key: "{key}"
    tls-service-pem: "{pem}"
    directory: "{work}"
    pidfile: ""
{_UNBOUND_QUIET}    so-reuseport: no
    prefetch: no
    incoming-num-tcp: 64
    local-zone: "w.bench.test." redirect
    local-data: "w.bench.test. 3600 IN A 192.0.2.1"
remote-control:
    control-enable: no
"""


def unbound_dot_forwarder(work, port, upstream, tls, ca):
    """Unbound forward-only on 127.0.0.1@port to upstream ("127.0.0.1@P" or, with tls,
    "127.0.0.1@P#dns.test"), forward-tls-upstream as tls, trusting the CA file ca."""
    return f"""server:
    interface: 127.0.0.1@{port}
    directory: "{work}"
    pidfile: ""
    tls-cert-bundle: "{ca}"
    msg-cache-size: 64m
    rrset-cache-size: 128m
{_UNBOUND_QUIET}    so-reuseport: no
    prefetch: no
    incoming-num-tcp: 64
remote-control:
    control-enable: no
forward-zone:
    name: "."
    forward-tls-upstream: {"yes" if tls else "no"}
    forward-addr: {upstream}
"""


# ------------------------------------------------------------------------- dnsdist
def dnsdist_cache(port, upstream_port):
    """dnsdist answering on 127.0.0.1:port from a 200,000-entry packet cache, forwarding to
    127.0.0.1:upstream_port; no security polling (it would query the outside), the backend
    up by hand (no health checks: a bench may pause dnsdist, and a missed check must not
    mark the backend down)."""
    return f"""setSecurityPollSuffix("")
setLocal("127.0.0.1:{port}")
setACL({{"127.0.0.0/8"}})
newServer({{address="127.0.0.1:{upstream_port}", checkName="bench.test.", checkType="SOA"}})
getServer(0):setUp()
pc = newPacketCache(200000, {{maxTTL=86400}})
getPool(""):setCache(pc)
"""


def dnsdist_dot_front(plain_port, tls_port, upstream_port, pem, key):
    """dnsdist in front of the DoT upstream: a plain UDP/TCP frontend and a TLS frontend,
    no packet cache (every query goes to the upstream), no security polling, the backend
    up by hand, idle client connections kept 10 s."""
    return f"""setSecurityPollSuffix("")
setLocal("127.0.0.1:{plain_port}")
addTLSLocal("127.0.0.1:{tls_port}", "{pem}", "{key}", {{provider="openssl"}})
setACL({{"127.0.0.0/8"}})
setTCPRecvTimeout(10)
newServer({{address="127.0.0.1:{upstream_port}"}})
getServer(0):setUp()
"""


# ------------------------------------------------------------------------- query files
def numbered_names(count, fmt="n{}.bench.test. A", start=0):
    return (fmt.format(i) for i in range(start, start + count))
