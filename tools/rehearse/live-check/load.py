# Poisson/Zipf clients for resolvers on loopback, bounded in time and count (200,000 queries):
#   load.py SECONDS RATE SEED PORT[,PORT...]
# Each resolver gets its own Poisson stream of RATE queries per second over 20 names
# n0..n19.live.test with Zipf(1) popularity; answers are read and dropped.
import random, socket, struct, sys, time
dur = float(sys.argv[1]); rate = float(sys.argv[2]); seed = int(sys.argv[3])
ports = [int(p) for p in sys.argv[4].split(",")]
names = [f"n{i}.live.test" for i in range(20)]
w = [1.0 / (i + 1) for i in range(20)]
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
for t, i in events[:200000]:
    now = time.monotonic() - start
    if t > now: time.sleep(t - now)
    s, p = socks[i]
    s.sendto(q(rng.choices(names, w)[0], rng.randrange(65536)), ("127.0.0.1", p)); sent += 1
    for s2, _ in socks:
        try:
            while True: s2.recv(4096)
        except BlockingIOError: pass
print("sent", sent)
