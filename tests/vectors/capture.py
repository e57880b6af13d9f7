#!/usr/bin/env python3
"""Captures the test vectors: sends hand-built queries to a local authoritative server (knotd
serving zone/hg.test.zone, see README.md) and saves each raw response as <name>.bin.

Usage: capture.py PORT   (run from tests/vectors/)
"""
import socket
import struct
import sys

PORT = int(sys.argv[1])
QUERIES = [
    # name, qname, qtype, edns, do, extra options
    ("a", "www.hg.test", 1, True, True, b""),
    ("aaaa", "www.hg.test", 28, True, True, b""),
    ("ns", "hg.test", 2, True, True, b""),
    ("cname", "chain.hg.test", 1, True, True, b""),
    ("ptr", "1.2.0.192.in-addr.arpa.hg.test", 12, True, True, b""),
    ("mx", "hg.test", 15, True, True, b""),
    ("txt", "txt.hg.test", 16, True, True, b""),
    ("txt_long", "long.hg.test", 16, True, True, b""),
    ("txt_empty", "empty.hg.test", 16, True, True, b""),
    ("srv", "_sip._udp.hg.test", 33, True, True, b""),
    ("soa", "hg.test", 6, True, True, b""),
    ("caa", "hg.test", 257, True, True, b""),
    ("unknown", "unk.hg.test", 65534, True, True, b""),
    ("unknown_empty", "unk0.hg.test", 65534, True, True, b""),
    ("nxdomain", "nope.hg.test", 1, True, True, b""),
    ("nodata", "www.hg.test", 15, True, True, b""),
    ("mixed_case", "MiXeD.cAsE.hg.test", 1, True, False, b""),
    ("no_edns", "www.hg.test", 1, False, False, b""),
    # 8 x 100-byte TXT over 512 bytes without EDNS: knot answers with TC=1.
    ("truncated", "big.hg.test", 16, False, False, b""),
    ("big", "big.hg.test", 16, True, True, b""),
    # NSID request (option 3, empty) and a client cookie (option 10, 8 bytes).
    ("nsid_cookie", "hg.test", 2, True, True,
     struct.pack("!HH", 3, 0) + struct.pack("!HH", 10, 8) + bytes(range(1, 9))),
]


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def build_query(qid, qname, qtype, edns, do, options):
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 1 if edns else 0)
    q = header + encode_name(qname) + struct.pack("!HH", qtype, 1)
    if edns:
        q += b"\0" + struct.pack("!HHIH", 41, 1232, 0x8000 if do else 0, len(options)) + options
    return q


def main():
    for i, (name, qname, qtype, edns, do, options) in enumerate(QUERIES):
        query = build_query(0x1234 + i, qname, qtype, edns, do, options)
        if i == 0:
            open("query_a.bin", "wb").write(query)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(2)
            s.sendto(query, ("127.0.0.1", PORT))
            resp, _ = s.recvfrom(65535)
        open(f"{name}.bin", "wb").write(resp)
        print(f"{name}.bin: {len(resp)} bytes")


if __name__ == "__main__":
    main()
