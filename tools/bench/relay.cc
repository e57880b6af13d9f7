// hg-bench-relay — the miss floor for tools/bench: a bare UDP relay, client -> upstream ->
// client, with the query ID remapped (a counter, not random: this is a measuring stick, not a
// resolver) and nothing parsed, cached or timed out. Both directions go through
// recvmmsg/sendmmsg. What it costs per query is the least any forwarder can spend on a miss.
//
// Usage: hg-bench-relay 127.0.0.1:LISTEN_PORT 127.0.0.1:UPSTREAM_PORT   (loopback only)
#include <poll.h>
#include <unistd.h>

#include <vector>

#include "base/bytes.h"
#include "tools/bench/bench_udp.h"

namespace {

using hg::bench::Batch;
using hg::bench::kBatch;

struct Pending {
  sockaddr_in client{};
  uint16_t client_id = 0;
  bool used = false;
};

Batch g_in;   // client queries, then relayed upstream in place
Batch g_out;  // upstream answers, then relayed to the clients in place

}  // namespace

int main(int argc, char** argv) {
  const auto listen = argc == 3 ? hg::bench::parse_loopback(argv[1]) : std::nullopt;
  const auto upstream = argc == 3 ? hg::bench::parse_loopback(argv[2]) : std::nullopt;
  if (!listen || !upstream || upstream->sin_port == 0) {
    std::fprintf(stderr,
                 "usage: hg-bench-relay 127.0.0.1:LISTEN_PORT 127.0.0.1:UPSTREAM_PORT "
                 "(loopback addresses only)\n");
    return 2;
  }
  const int cfd = hg::bench::open_udp(*listen, "listening");
  hg::bench::say_listening(cfd, "hg-bench-relay");
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int ufd = hg::bench::open_udp(any, "upstream");
  if (connect(ufd, reinterpret_cast<const sockaddr*>(&*upstream), sizeof *upstream) != 0) {
    std::perror("connect to the upstream");
    return 1;
  }
  std::vector<Pending> table(65536);
  uint16_t next_id = 0;
  volatile int* stop = hg::bench::install_stop_handler();
  unsigned long long relayed = 0;
  while (*stop == 0) {
    pollfd p[2] = {{cfd, POLLIN, 0}, {ufd, POLLIN, 0}};
    if (poll(p, 2, 500) <= 0) continue;
    if (p[0].revents & POLLIN) {  // client -> upstream
      g_in.arm_receive();
      const int n = recvmmsg(cfd, g_in.msg.data(), kBatch, MSG_DONTWAIT, nullptr);
      unsigned out = 0;
      for (int i = 0; i < n; ++i) {
        const auto s = static_cast<std::size_t>(i);
        const std::size_t len = g_in.msg[s].msg_len;
        if (len < 12) continue;
        uint8_t* q = g_in.buf[s].data();
        Pending& slot = table[next_id];  // overwrites one 65536 queries old: never answered
        slot = Pending{g_in.peer[s], hg::base::load_u16(q), true};
        hg::base::store_u16(q, next_id++);
        if (out != s) std::memcpy(g_in.buf[out].data(), q, len);
        g_in.arm_send(out, len, *upstream);
        g_in.msg[out].msg_hdr.msg_name = nullptr;  // connected socket
        g_in.msg[out].msg_hdr.msg_namelen = 0;
        ++out;
      }
      hg::bench::send_all(ufd, g_in.msg.data(), out);
    }
    if (p[1].revents & POLLIN) {  // upstream -> client
      g_out.arm_receive();
      const int n = recvmmsg(ufd, g_out.msg.data(), kBatch, MSG_DONTWAIT, nullptr);
      unsigned out = 0;
      for (int i = 0; i < n; ++i) {
        const auto s = static_cast<std::size_t>(i);
        const std::size_t len = g_out.msg[s].msg_len;
        if (len < 12) continue;
        uint8_t* a = g_out.buf[s].data();
        Pending& slot = table[hg::base::load_u16(a)];
        if (!slot.used) continue;
        slot.used = false;
        hg::base::store_u16(a, slot.client_id);
        if (out != s) std::memcpy(g_out.buf[out].data(), a, len);
        g_out.arm_send(out, len, slot.client);
        ++out;
      }
      hg::bench::send_all(cfd, g_out.msg.data(), out);
      relayed += out;
    }
  }
  std::fprintf(stderr, "hg-bench-relay: %llu answers relayed\n", relayed);
  close(cfd);
  close(ufd);
  return 0;
}
