// UdpListener: one UDP socket on the event loop. Datagrams are read in batches with
// recvmmsg; the answers the handler produces on the spot (cache hits, errors) go back in one
// sendmmsg per batch. Answers produced later (after an upstream query) are sent with
// send_later(), which any thread may call (a UDP send is atomic per datagram): they leave at
// the end of that thread's loop iteration, one sendmmsg for all of them.
//
// Knows nothing of DNS beyond "a datagram in, maybe a datagram out".
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "resolver/endpoint.h"
#include "resolver/event_loop.h"

namespace hg::resolver {

/// Where a UDP answer goes: the socket it arrived on and the client's address.
struct UdpPeer {
  int fd = -1;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  const sockaddr* sa() const noexcept { return reinterpret_cast<const sockaddr*>(&addr); }
};

class UdpListener {
 public:
  /// Largest query we read; longer datagrams are dropped (a query is one question and an OPT).
  static constexpr std::size_t kMaxQuery = 4096;
  /// Room for one immediate answer (our advertised and maximum UDP answer size).
  static constexpr std::size_t kMaxAnswer = 1232;
  static constexpr std::size_t kBatch = 32;

  /// Handles one datagram; writes an immediate answer into `out` and returns its size, or
  /// returns 0 (no answer now: dropped, or it will be answered later via send_later).
  using Handler = std::function<std::size_t(std::span<const uint8_t> query, const UdpPeer& peer,
                                            std::span<uint8_t> out)>;

  /// Binds `addr` (SO_REUSEPORT when `reuse_port`, so several threads can share a port).
  /// Returns the error text on failure (start-up only).
  static Checked<std::unique_ptr<UdpListener>> open(EventLoop& loop, const Endpoint& addr,
                                                    bool reuse_port, Handler handler);
  ~UdpListener();
  UdpListener(const UdpListener&) = delete;
  UdpListener& operator=(const UdpListener&) = delete;

  /// The bound address (the kernel's port when 0 was asked).
  const Endpoint& local() const noexcept { return local_; }
  int fd() const noexcept { return fd_; }

  /// Sends one answer at the end of this thread's current loop iteration, together with the
  /// others the iteration produced (one sendmmsg per socket); outside of an iteration, now.
  /// The bytes are copied. For answers produced after an upstream query.
  /// A peer with `addr_len` 0 is a connected socket (an upstream's): the datagram goes to the
  /// address it is connected to.
  static bool send_later(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept;
  /// Sends what send_later() holds for this thread now, if any of it is for socket `fd`. For
  /// a socket about to be closed: its number could otherwise be reused before the end of
  /// the iteration.
  static void send_held_now(int fd) noexcept;

  /// Stops reading (shutdown); the socket stays open for late answers until destruction.
  void pause();

 private:
  UdpListener(EventLoop& loop, int fd, Endpoint local, Handler handler);
  void on_readable();

  EventLoop& loop_;
  int fd_;
  Endpoint local_;
  Handler handler_;
  bool watching_ = false;
  // Batch buffers, reused for every recvmmsg/sendmmsg.
  std::vector<std::array<uint8_t, kMaxQuery>> in_;
  std::vector<std::array<uint8_t, kMaxAnswer>> out_;
  std::vector<UdpPeer> peers_;
  // recvmmsg's headers, pointing at in_ and peers_: set up once, and after each call only
  // the address lengths the kernel overwrote are reset (the rest is left as it was).
  std::vector<mmsghdr> in_msgs_;
  std::vector<iovec> in_iov_;
};

}  // namespace hg::resolver
