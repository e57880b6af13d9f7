# Poisson/Zipf clients for resolvers on loopback, bounded in time and count (400,000 queries):
#   load.py SECONDS RATE SEED PORT[,PORT...] [NAMES=20]
# Each resolver gets its own Poisson stream of RATE queries per second over NAMES names
# n0..n{NAMES-1}.live.test with Zipf(1) popularity (name i is asked with weight 1/(i+1));
# answers are read and dropped.
import random, socket, struct, sys, time
dur = float(sys.argv[1]); rate = float(sys.argv[2]); seed = int(sys.argv[3])
ports = [int(p) for p in sys.argv[4].split(",")]
count = int(sys.argv[5]) if len(sys.argv) > 5 else 20
if not (1 <= count <= 10000 and 0 < rate <= 1000 and 0 < dur <= 86400):
    sys.exit("load.py: NAMES 1..10000, RATE 0..1000 q/s, SECONDS 0..86400")
names = [f"n{i}.live.test" for i in range(count)]
w = [1.0 / (i + 1) for i in range(count)]
def q(name, qid):
    h = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    b = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    return h + b + struct.pack(">HH", 1, 1)
rng = random.Random(seed)
socks = []
for p in ports:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setblocking(False); socks.append((s, p))
events = []
for i, (s, p) in enumerate(socks):
    t = rng.expovariate(rate)
    while t < dur:
        events.append((t, i)); t += rng.expovariate(rate)
events.sort()
start = time.monotonic(); sent = 0
for t, i in events[:400000]:
    now = time.monotonic() - start
    if t > now: time.sleep(t - now)
    s, p = socks[i]
    s.sendto(q(rng.choices(names, w)[0], rng.randrange(65536)), ("127.0.0.1", p)); sent += 1
    for s2, _ in socks:
        try:
            while True: s2.recv(4096)
        except BlockingIOError: pass
print("sent", sent, "late by", f"{time.monotonic() - start - dur:+.1f} s" if events else "0 s")
