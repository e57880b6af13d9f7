// hg-bench-floor — the hit floor for tools/bench: a UDP server that answers every DNS query
// with one fixed A record (198.18.0.1, TTL 3600), through recvmmsg/sendmmsg, with no cache,
// no parsing beyond walking the question, no EDNS. What it costs per query is what the kernel
// and the loop cost on this machine; a caching server's hits can only come close to it.
//
// Usage: hg-bench-floor 127.0.0.1:PORT        (loopback only; stops on SIGTERM/SIGINT)
#include <poll.h>
#include <unistd.h>

#include "tools/bench/bench_udp.h"

namespace {

using hg::bench::Batch;
using hg::bench::kBatch;
using hg::bench::kMaxDatagram;

constexpr std::size_t kHeader = 12;
constexpr uint8_t kAnswer[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 198, 18, 0, 1};

/// Turns the query in buf[0..len) into the fixed answer in place; 0 if it is not a query with
/// exactly one well-formed question (then nothing is sent).
std::size_t answer(uint8_t* buf, std::size_t len) {
  if (len < kHeader + 5 || (buf[2] & 0x80) != 0 || buf[4] != 0 || buf[5] != 1) return 0;
  std::size_t at = kHeader;
  while (at < len && buf[at] != 0) {
    if ((buf[at] & 0xc0) != 0) return 0;  // no compression in a question we answer
    at += 1 + buf[at];
  }
  if (at + 5 > len || at + 5 + sizeof kAnswer > kMaxDatagram) return 0;
  at += 5;                                                // root label, type, class
  buf[2] = static_cast<uint8_t>(0x84 | (buf[2] & 0x01));  // QR, AA, RD copied
  buf[3] = 0x80;                                          // RA, NOERROR
  buf[6] = 0;
  buf[7] = 1;  // ANCOUNT
  buf[8] = buf[9] = buf[10] = buf[11] = 0;
  std::memcpy(buf + at, kAnswer, sizeof kAnswer);
  return at + sizeof kAnswer;
}

Batch g_batch;  // 256 KiB: static, not on the stack

}  // namespace

int main(int argc, char** argv) {
  const auto at = argc == 2 ? hg::bench::parse_loopback(argv[1]) : std::nullopt;
  if (!at) {
    std::fprintf(stderr, "usage: hg-bench-floor 127.0.0.1:PORT (a loopback address only)\n");
    return 2;
  }
  const int fd = hg::bench::open_udp(*at, "listening");
  hg::bench::say_listening(fd, "hg-bench-floor");
  volatile int* stop = hg::bench::install_stop_handler();
  unsigned long long answered = 0;
  while (*stop == 0) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 500) <= 0) continue;
    for (int round = 0; round < 8; ++round) {
      g_batch.arm_receive();
      const int n = recvmmsg(fd, g_batch.msg.data(), kBatch, MSG_DONTWAIT, nullptr);
      if (n <= 0) break;
      unsigned out = 0;
      for (int i = 0; i < n; ++i) {
        const auto s = static_cast<std::size_t>(i);
        const std::size_t size = answer(g_batch.buf[s].data(), g_batch.msg[s].msg_len);
        if (size == 0) continue;
        if (out != s) std::memcpy(g_batch.buf[out].data(), g_batch.buf[s].data(), size);
        g_batch.arm_send(out, size, g_batch.peer[s]);
        ++out;
      }
      hg::bench::send_all(fd, g_batch.msg.data(), out);
      answered += out;
      if (static_cast<std::size_t>(n) < kBatch) break;
    }
  }
  std::fprintf(stderr, "hg-bench-floor: %llu queries answered\n", answered);
  close(fd);
  return 0;
}
