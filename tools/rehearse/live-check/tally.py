"""The live check's bookkeeping (tools/rehearse/live-check/run):

  tally.py split TAP ADDR=KIND... DIR@FROM,TO...
      copies each dnstap message of TAP whose query address is ADDR and whose query time is
      within FROM..TO (Unix seconds) into DIR/KIND.tap and DIR/all.tap (Frame Streams files
      with TAP's content type); writes their counts and first and last query times to
      DIR/counts.json and prints the counts. TAP may end mid-frame (its writer was killed).
  tally.py compare P1DIR P2DIR KIND... [--unmodelled KIND,...] [--tsv FILE]
      reads project's JSON of phase 1 (P1DIR/KIND.json and P1DIR/all.json, projected to TTL
      NEW) and the counts of phase 2 (P2DIR/counts.json, the TTL really at NEW); prints the
      table per resolver kind, the whole zone ("total", project on the whole trace) and the
      zone without the --unmodelled kinds ("modelled": the sums of the other kinds' rows,
      bands added end to end); one TSV line each to FILE.
  tally.py expect RATE NAMES OLD NEW SECONDS
      the renewal model's expected counts and noise for one TTL-obeying cache under load.py's
      demand (how the CI test's tolerances are set).

Counts are "over phase 1's span": phase 2's count is scaled by span1/span2, and a kind's own
projection (made over its own first-to-last query) by span1/span_kind.
"""
import json, math, os, struct, sys

MAX_FRAME = 1 << 20  # a dnstap message is at most a few KiB; anything larger is corrupt


def varint(b, i):
    v = s = 0
    while True:
        if i >= len(b) or s > 63:
            raise ValueError("truncated or overlong varint")
        c = b[i]; i += 1
        v |= (c & 0x7F) << s; s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field number, wire type, value) of one protobuf message; value is bytes for type 2."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, t = key >> 3, key & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 1:
            if i + 8 > len(b): raise ValueError("truncated fixed64")
            v = b[i:i + 8]; i += 8
        elif t == 5:
            if i + 4 > len(b): raise ValueError("truncated fixed32")
            v = b[i:i + 4]; i += 4
        elif t == 2:
            n, i = varint(b, i)
            if i + n > len(b): raise ValueError("truncated length-delimited field")
            v = b[i:i + n]; i += n
        else:
            raise ValueError(f"wire type {t} not in dnstap")
        yield f, t, v


def address_and_time(frame):
    """Message.query_address and query_time_sec + nsec (fields 4, 8, 9 of field 14) of a
    Dnstap frame; None for what is missing."""
    addr = sec = None; nsec = 0
    for f, t, v in fields(frame):
        if f == 14 and t == 2:
            for g, u, w in fields(v):
                if g == 4 and u == 2: addr = w
                elif g == 8 and u == 0: sec = w
                elif g == 9 and u == 5: nsec = struct.unpack("<I", w)[0]
    return addr, None if sec is None else sec + nsec / 1e9


def frames(path, partial=False):
    """(start control frame bytes, iterator of data frames) of a Frame Streams file."""
    data = open(path, "rb").read()
    if len(data) < 8 or struct.unpack_from(">I", data, 0)[0] != 0:
        raise ValueError(f"{path}: not a Frame Streams file (no START control frame)")
    n = struct.unpack_from(">I", data, 4)[0]
    if n > 512 or 8 + n > len(data):
        raise ValueError(f"{path}: bad START control frame length {n}")
    start = data[:8 + n]

    def it():
        i = 8 + n
        while i + 4 <= len(data):
            m = struct.unpack_from(">I", data, i)[0]; i += 4
            if m == 0:  # a control frame: STOP ends the stream
                return
            if m <= MAX_FRAME and i + m > len(data) and partial:
                return  # the writer was killed mid-frame: the trace ends before it
            if m > MAX_FRAME or i + m > len(data):
                raise ValueError(f"{path}: data frame of {m} bytes at offset {i - 4} runs past the end")
            yield data[i:i + m]; i += m
    return start, it()


def split(tap, args):
    kinds, outs = {}, []
    for a in args:
        if "=" in a:
            addr, _, kind = a.partition("=")
            kinds[bytes(int(x) for x in addr.split("."))] = kind
        else:
            d, _, w = a.partition("@")
            lo, _, hi = w.partition(",")
            outs.append((d, float(lo), float(hi)))
    if not kinds or not outs:
        raise ValueError("give ADDR=KIND and DIR@FROM,TO")
    names = list(kinds.values()) + ["all"]
    start, it = frames(tap, partial=True)
    files, counts = [], []
    for d, _, _ in outs:
        f = {k: open(os.path.join(d, k + ".tap"), "wb") for k in names}
        for x in f.values():
            x.write(start)
        files.append(f)
        counts.append({k: {"queries": 0, "first": None, "last": None} for k in names})
    for fr in it:
        addr, t = address_and_time(fr)
        k = kinds.get(addr)
        if k is None or t is None:  # the readiness probes (kdig from 127.0.0.9)
            continue
        for (d, lo, hi), f, count in zip(outs, files, counts):
            if not lo <= t <= hi:
                continue
            for kk in (k, "all"):
                f[kk].write(struct.pack(">I", len(fr)) + fr)
                c = count[kk]; c["queries"] += 1
                c["first"] = t if c["first"] is None else min(c["first"], t)
                c["last"] = t if c["last"] is None else max(c["last"], t)
    for (d, _, _), f, count in zip(outs, files, counts):
        for x in f.values():
            x.write(struct.pack(">III", 0, 4, 3))  # STOP
            x.close()
        json.dump(count, open(os.path.join(d, "counts.json"), "w"))
        print(f"{d}:", " ".join(f"{k}={c['queries']}" for k, c in count.items()))


def compare(p1dir, p2dir, kinds, unmodelled, tsv):
    load = lambda d, k: json.load(open(os.path.join(d, k + ".json")))
    a1, n2 = load(p1dir, "all"), load(p2dir, "counts")
    s1 = a1["trace"]["duration_s"]
    s2 = n2["all"]["last"] - n2["all"]["first"]
    if s1 <= 0 or s2 <= 0:
        raise ValueError("a phase's trace spans no time")
    rows = []
    for k in kinds + ["total"]:
        j1 = a1 if k == "total" else load(p1dir, k)
        c = j1["candidates"][0]
        f = s1 / j1["trace"]["duration_s"] if j1["trace"]["duration_s"] > 0 else 0
        proj, lo, hi = c["queries"] * f, c["queries_lo"] * f, c["queries_hi"] * f
        real = n2["all" if k == "total" else k]["queries"] * s1 / s2
        share = {n: v["share"] for n, v in j1["classes"].items()}
        rows.append([k, j1["observed"], real, proj, lo, hi, share,
                     j1["max_caches_behind_one_address"]])
    if unmodelled:
        kept = [r for r in rows[:-1] if r[0] not in unmodelled]
        rows.append(["modelled"] + [sum(r[i] for r in kept) for i in range(1, 6)] + [{}, 0])
    for r in rows:
        k, q1, real, proj, lo, hi = r[:6]
        r[6:6] = [100 * (proj - real) / real if real else float("nan"), lo <= real <= hi]
    new_ttl = a1["candidates"][0]["ttl"]
    print(f"\n{'kind':<18} {'queries at OLD':>14} {'real at ' + str(new_ttl) + ' s':>12} "
          f"{'projected':>10} {'band':>17} {'error':>8}  {'in band':<7}  classes (share of phase-1 queries)")
    for k, q1, real, proj, lo, hi, err, inside, share, caches in rows:
        cls = " ".join(f"{n} {100 * v:.0f}%" for n, v in share.items() if v >= 0.005)
        if caches > 1: cls += f" (≤{caches} caches/address)"
        print(f"{k:<18} {q1:>14} {real:>12.0f} {proj:>10.0f} {f'[{lo:.0f}, {hi:.0f}]':>17} "
              f"{err:>+7.1f}%  {'yes' if inside else 'no':<7}  {cls}")
    if tsv:
        with open(tsv, "w") as f:
            f.write("kind\tqueries_old\treal_new\tprojected_new\tlo\thi\terror_pct\tinside\n")
            for k, q1, real, proj, lo, hi, err, inside, _, _ in rows:
                f.write(f"{k}\t{q1}\t{real:.1f}\t{proj:.1f}\t{lo:.1f}\t{hi:.1f}\t{err:.2f}\t"
                        f"{int(inside)}\n")


def expect(rate, names, old, new, secs):
    """Per name i, λ = RATE·(1/(i+1))/H: a TTL-T cache's misses are a renewal process with
    cycle T + Exp(λ), mean μ = T + 1/λ, variance 1/λ², so N ≈ D/μ with Var N ≈ D·σ²/μ³.
    The projection D/(NEW − OLD + D/N₁) moves with phase 1's N₁ by (μ₁/μ₂)² (delta method)."""
    h = sum(1 / (i + 1) for i in range(names))
    m1 = m2 = v2 = vp = 0.0
    for i in range(names):
        lam = rate / h / (i + 1)
        mu1, mu2 = old + 1 / lam, new + 1 / lam
        m1 += secs / mu1; m2 += secs / mu2
        v2 += secs / (lam * lam * mu2 ** 3)
        vp += (mu1 / mu2) ** 4 * secs / (lam * lam * mu1 ** 3)
    sd = math.sqrt(v2 + vp)
    print(f"one cache: {m1:.0f} queries at TTL {old}, {m2:.0f} at TTL {new} over {secs} s; "
          f"sd of the real count {math.sqrt(v2):.1f}, of the projection {math.sqrt(vp):.1f}; "
          f"projected − real: sd {sd:.1f} = {100 * sd / m2:.1f}% "
          f"(Poisson would be {100 * math.sqrt(1 / m1 + 1 / m2):.1f}%)")


def main(a):
    try:
        if len(a) >= 3 and a[0] == "split":
            return split(a[1], a[2:])
        if len(a) >= 3 and a[0] == "compare":
            opt = {"--tsv": None, "--unmodelled": ""}
            for o in opt:
                if o in a:
                    i = a.index(o); opt[o] = a[i + 1]; a = a[:i] + a[i + 2:]
            unmodelled = [k for k in opt["--unmodelled"].split(",") if k]
            return compare(a[1], a[2], a[3:], unmodelled, opt["--tsv"])
        if len(a) == 6 and a[0] == "expect":
            return expect(float(a[1]), int(a[2]), float(a[3]), float(a[4]), float(a[5]))
    except (ValueError, OSError, KeyError, IndexError) as e:
        sys.exit(f"tally.py {a[0]}: {e}")
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
