// UdpListener: one UDP socket on the event loop. Datagrams are read in batches with
// recvmmsg; the answers the handler produces on the spot (cache hits, errors) go back in one
// sendmmsg per batch. Answers produced later (after an upstream query) go through the
// per-thread outbox (resolver/net/outbox.h).
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

#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"
#include "resolver/net/outbox.h"

namespace hg::resolver {

class UdpListener {
 public:
  /// Largest query we read; longer datagrams are dropped (a query is one question and an OPT).
  static constexpr std::size_t kMaxQuery = 4096;
  /// Room for one immediate answer (our advertised and maximum UDP answer size).
  static constexpr std::size_t kMaxAnswer = 1232;
  static constexpr std::size_t kBatch = 32;

  /// Handles one datagram; writes an immediate answer into `out` and returns its size, or
  /// returns 0 (no answer now: dropped, or it will be answered later through the outbox).
  using Handler = std::function<std::size_t(std::span<const uint8_t> query, const UdpPeer& peer,
                                            std::span<uint8_t> out)>;

  /// Binds `addr` with SO_REUSEPORT (several threads share a port, and a reply socket can
  /// join them: open_reply_sockets). `first_of_port`: the first of our sockets on `addr`, which
  /// checks that no other program holds the port. Returns the error text on failure
  /// (start-up only).
  static Checked<std::unique_ptr<UdpListener>> open(EventLoop& loop, const Endpoint& addr,
                                                    bool first_of_port, Handler handler);

  /// Sockets for sending the answers of the listeners `receivers` (every worker's socket on
  /// one address, in the order they were bound, none closed since), one per receiver, bound
  /// to the same address and port, never read and never in an epoll set.
  ///
  /// Why: each datagram the kernel frees after sending tells the sending socket's waiters
  /// that there is room again. A socket in an epoll set always has a waiter, so every answer
  /// sent from a listener takes the socket's wait-queue lock and runs epoll's callback (~4 %
  /// of a cache hit's CPU on loopback, docs/bench.md). A socket no one waits on skips that.
  /// One per worker, so that no socket's send accounting is written by two threads.
  ///
  /// So that no query is ever delivered to them, a classic BPF program is attached to the
  /// port's SO_REUSEPORT group first: it picks receivers[ID % n] by the DNS ID (the group's
  /// first n sockets), never a reply socket (they come after). Fails (the caller then keeps
  /// sending from the listeners) when the kernel refuses the program or a bind.
  static Checked<std::vector<int>> open_reply_sockets(const Endpoint& local,
                                                      std::span<const int> receivers);
  /// Sends answers through `fd` (from open_reply_sockets; owned by the caller, which keeps it
  /// open for as long as this listener) instead of the listening socket.
  void set_reply_socket(int fd) noexcept { reply_fd_ = fd; }
  ~UdpListener();
  UdpListener(const UdpListener&) = delete;
  UdpListener& operator=(const UdpListener&) = delete;

  /// The bound address (the kernel's port when 0 was asked).
  const Endpoint& local() const noexcept { return local_; }
  int fd() const noexcept { return fd_; }

  /// Stops reading (shutdown); the socket stays open for late answers until destruction.
  void pause();

 private:
  UdpListener(EventLoop& loop, int fd, Endpoint local, Handler handler);
  void on_readable();

  EventLoop& loop_;
  int fd_;
  int reply_fd_;  ///< where answers go out: fd_, or the reply socket
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
