"""A small DNS probe over UDP (what the scripts asked dig for): one A query to
127.0.0.1:port, one try, bounded by a timeout; the answer's RCODE and A addresses."""

import random
import socket
import struct


def build_query(name, qid, qtype=1, qclass=1):
    wire = b""
    for label in name.rstrip(".").split("."):
        raw = label.encode("ascii")
        if not 0 < len(raw) < 64:
            raise ValueError(f"bad label in {name!r}")
        wire += bytes([len(raw)]) + raw
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + wire + b"\0" + struct.pack(
        "!HH", qtype, qclass)


def _skip_name(msg, off):
    """Offset after the (possibly compressed) name at off; ValueError when malformed."""
    for _ in range(128):
        if off >= len(msg):
            raise ValueError("name runs past the end")
        n = msg[off]
        if n == 0:
            return off + 1
        if n & 0xC0 == 0xC0:
            if off + 2 > len(msg):
                raise ValueError("pointer runs past the end")
            return off + 2
        if n & 0xC0:
            raise ValueError("bad label type")
        off += 1 + n
    raise ValueError("name too long")


def parse_response(msg, qid):
    """(rcode, [dotted A addresses]) from a response with ID qid; ValueError when it is not
    one (short, another ID, not a response, malformed)."""
    if len(msg) < 12:
        raise ValueError("short message")
    rid, flags, qd, an, _, _ = struct.unpack("!HHHHHH", msg[:12])
    if rid != qid or not flags & 0x8000:
        raise ValueError("not the response to this query")
    off = 12
    for _ in range(qd):
        off = _skip_name(msg, off) + 4
    addrs = []
    for _ in range(an):
        off = _skip_name(msg, off)
        if off + 10 > len(msg):
            raise ValueError("record runs past the end")
        rtype, rclass, _, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        if off + rdlen > len(msg):
            raise ValueError("rdata runs past the end")
        if rtype == 1 and rclass == 1 and rdlen == 4:
            addrs.append(socket.inet_ntoa(msg[off:off + 4]))
        off += rdlen
    if off > len(msg):
        raise ValueError("runs past the end")
    return flags & 0xF, addrs


def query_a(port, name, timeout=1.0, host="127.0.0.1"):
    """(rcode, addresses) of one A query, or None when nothing (valid) came back in time."""
    qid = random.randrange(65536)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(build_query(name, qid), (host, port))
            msg = s.recv(4096)
        except OSError:
            return None
    try:
        return parse_response(msg, qid)
    except ValueError:
        return None


def answers(port, name, prefix="198.", timeout=1.0):
    """True when port answers name with an A record whose address starts with prefix."""
    r = query_a(port, name, timeout)
    return r is not None and any(a.startswith(prefix) for a in r[1])


def noerror(port, name, timeout=1.0):
    """True when port answers name with RCODE NOERROR."""
    r = query_a(port, name, timeout)
    return r is not None and r[0] == 0
