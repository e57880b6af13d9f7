// Shared pieces of the two floor programs of tools/bench (hg-bench-floor, hg-bench-relay):
// a loopback-only address parser, a bound non-blocking UDP socket, and a batch of
// recvmmsg/sendmmsg buffers. Deliberately tiny: these programs exist to show what the kernel
// alone costs per datagram, so they must do nothing a DNS server could skip.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace hg::bench {

/// "127.0.0.1:5300" -> sockaddr_in (port 0: any free port, for a listening socket). Loopback
/// (127.0.0.0/8) only: a benchmark tool must never send traffic anywhere else.
inline std::optional<sockaddr_in> parse_loopback(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, text.substr(0, colon).c_str(), &a.sin_addr) != 1) return std::nullopt;
  if ((ntohl(a.sin_addr.s_addr) >> 24) != 127) return std::nullopt;
  char* end = nullptr;
  const unsigned long port = std::strtoul(text.c_str() + colon + 1, &end, 10);
  if (end == text.c_str() + colon + 1 || *end != '\0' || port > 65535) return std::nullopt;
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

/// A non-blocking UDP socket bound to `at` (port 0: any), with 4 MiB socket buffers as a
/// busy server would ask for. Exits with a message on failure (start-up only).
int open_udp(const sockaddr_in& at, const char* what);

/// Prints "PROGRAM: listening on 127.0.0.1:PORT" with the port the socket got (tests start
/// the floors on port 0 and read it back).
void say_listening(int fd, const char* program);

constexpr std::size_t kBatch = 64;
constexpr std::size_t kMaxDatagram = 4096;

/// kBatch datagram buffers with their headers, reset for receiving by arm_receive().
struct Batch {
  std::array<std::array<uint8_t, kMaxDatagram>, kBatch> buf{};
  std::array<sockaddr_in, kBatch> peer{};
  std::array<iovec, kBatch> iov{};
  std::array<mmsghdr, kBatch> msg{};

  void arm_receive() {
    for (std::size_t i = 0; i < kBatch; ++i) {
      iov[i] = {buf[i].data(), kMaxDatagram};
      std::memset(&msg[i], 0, sizeof msg[i]);
      msg[i].msg_hdr.msg_iov = &iov[i];
      msg[i].msg_hdr.msg_iovlen = 1;
      msg[i].msg_hdr.msg_name = &peer[i];
      msg[i].msg_hdr.msg_namelen = sizeof peer[i];
    }
  }
  /// Slot i to be sent: `len` bytes of buf[i] to `to`.
  void arm_send(std::size_t i, std::size_t len, const sockaddr_in& to) {
    peer[i] = to;
    iov[i] = {buf[i].data(), len};
    std::memset(&msg[i], 0, sizeof msg[i]);
    msg[i].msg_hdr.msg_iov = &iov[i];
    msg[i].msg_hdr.msg_iovlen = 1;
    msg[i].msg_hdr.msg_name = &peer[i];
    msg[i].msg_hdr.msg_namelen = sizeof peer[i];
  }
};

/// Sends msg[0..n) with sendmmsg; a full buffer drops the rest (a client retries).
void send_all(int fd, mmsghdr* msgs, unsigned n);

/// Stops the program's loop on SIGTERM/SIGINT; returns the flag the loop polls.
volatile int* install_stop_handler();

}  // namespace hg::bench
