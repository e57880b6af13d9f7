"""tools/rehearse/live-check/tally.py split on traces made here: messages go to their source's
file and phase window, a trace cut mid-frame (knotd killed) ends cleanly, and corrupt input
(a frame length past the end, a truncated varint, a file that is not Frame Streams) stops
with a message naming the problem instead of a traceback.

    live_tally_test.py TALLY_PY
"""
import json, os, struct, subprocess, sys, tempfile

tally = sys.argv[1]


def varint(v):
    out = b""
    while True:
        b = v & 0x7F; v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def message(addr, t):
    """A Dnstap frame: AUTH_QUERY (type 1) from addr at Unix time t."""
    m = field(1, 0, varint(1)) + field(4, 2, bytes(int(x) for x in addr.split(".")))
    m += field(8, 0, varint(int(t))) + field(9, 5, struct.pack("<I", int((t % 1) * 1e9)))
    return field(15, 0, varint(1)) + field(14, 2, m)


def trace(frames, stop=True):
    ctype = b"protobuf:dnstap.Dnstap"
    start = struct.pack(">II", 2, 1) + struct.pack(">I", len(ctype)) + ctype
    out = struct.pack(">II", 0, len(start)) + start
    for f in frames:
        out += struct.pack(">I", len(f)) + f
    return out + (struct.pack(">III", 0, 4, 3) if stop else b"")


def run(*args):
    return subprocess.run([sys.executable, tally, *args], capture_output=True, text=True)


failures = 0


def expect(cond, what):
    global failures
    print(("ok:   " if cond else "FAIL: ") + what)
    failures += not cond


with tempfile.TemporaryDirectory() as d:
    frames = [message("127.0.0.1", 100.5), message("127.0.0.2", 101.0), message("127.0.0.9", 102),
              message("127.0.0.1", 150.25), message("127.0.0.2", 200.0)]
    tap = os.path.join(d, "t.tap")
    # Cut inside the last frame: as a killed writer leaves it.
    data = trace(frames, stop=False)
    open(tap, "wb").write(data[:-3])
    for p in ("p1", "p2"):
        os.mkdir(os.path.join(d, p))
    r = run("split", tap, "127.0.0.1=a", "127.0.0.2=b", f"{d}/p1@100,120", f"{d}/p2@140,300")
    expect(r.returncode == 0, f"split of a trace cut mid-frame succeeds ({r.stderr.strip()})")
    c1 = json.load(open(f"{d}/p1/counts.json"))
    c2 = json.load(open(f"{d}/p2/counts.json"))
    expect((c1["a"]["queries"], c1["b"]["queries"], c1["all"]["queries"]) == (1, 1, 2),
           f"window 1: a=1 b=1 all=2, the unknown source left out: {c1}")
    expect((c2["a"]["queries"], c2["b"]["queries"]) == (1, 0),
           f"window 2: a=1, and b's last frame (cut) not counted: {c2}")
    expect(abs(c2["a"]["first"] - 150.25) < 1e-6, "query times read from the message")
    # The written files are Frame Streams again: split reads its own output.
    os.mkdir(f"{d}/p3")
    r = run("split", f"{d}/p1/all.tap", "127.0.0.1=a", f"{d}/p3@0,1e10")
    expect(r.returncode == 0 and json.load(open(f"{d}/p3/counts.json"))["a"]["queries"] == 1,
           "the written trace reads back")

    def refused(name, blob, needle):
        path = os.path.join(d, name)
        open(path, "wb").write(blob)
        r = run("split", path, "127.0.0.1=a", f"{d}/p3@0,1e10")
        expect(r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr,
               f"{name}: refused with '{needle}' ({r.stderr.strip()})")

    refused("overlong.tap", trace([])[:-12] + struct.pack(">I", 1 << 30) + b"x" * 10,
            "runs past the end")
    refused("varint.tap", trace([field(14, 2, b"\x22\xff\xff")]), "truncated")
    refused("notfstrm.tap", b"\x01\x02\x03\x04hello", "not a Frame Streams file")
    refused("empty.tap", b"", "not a Frame Streams file")
    refused("wiretype.tap", trace([b"\x0f"]), "wire type")

sys.exit(1 if failures else 0)
