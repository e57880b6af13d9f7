#include "resolver/net/outbox.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "resolver/net/event_loop.h"

namespace hg::resolver::outbox {

// ECONNREFUSED from a send on a connected (upstream) socket is the ICMP error of an earlier
// datagram, reported by this send instead of sending: both senders below try such a datagram
// once more, so that it still leaves and the refusal it draws reaches whoever reads the
// socket (c-ares, which then gives up on that server).
namespace {
bool send_one(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept {
  const sockaddr* to = peer.addr_len != 0 ? peer.sa() : nullptr;  // 0: a connected socket
  ssize_t n = ::sendto(peer.fd, bytes.data(), bytes.size(), MSG_DONTWAIT, to, peer.addr_len);
  if (n < 0 && errno == ECONNREFUSED)
    n = ::sendto(peer.fd, bytes.data(), bytes.size(), MSG_DONTWAIT, to, peer.addr_len);
  return n == static_cast<ssize_t>(bytes.size());
}
}  // namespace

// Sends msgs[0, n) on fd with as few sendmmsg calls as the kernel allows. A full send buffer
// drops the rest (those clients retry); a datagram refused for itself (EPERM, EINVAL...) is
// skipped and the others still go; a refused one is tried once more (above).
void send_all(int fd, mmsghdr* msgs, unsigned n) noexcept {
  bool retried = false;
  for (unsigned sent = 0; sent < n;) {
    const int k = ::sendmmsg(fd, msgs + sent, n - sent, MSG_DONTWAIT);
    if (k > 0) {
      sent += static_cast<unsigned>(k);
      retried = false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else if (errno == ECONNREFUSED && !retried) {
      retried = true;
    } else {
      ++sent;
      retried = false;
    }
  }
}

namespace {

// The datagrams a thread's loop iteration produces outside the listeners' own batches — the
// answers after upstream queries, one per c-ares callback (the upstream queries themselves
// leave at once, each from its own socket: resolver/upstream/upstream_sockets.cc) — gathered and
// sent at the iteration's end with one sendmmsg per socket instead of one sendto each. A datagram
// waits at most for the rest of its iteration.
class Outbox {
 public:
  static constexpr std::size_t kMax = 64;             // answers; then flushed at once
  static constexpr std::size_t kBytes = kMax * 1232;  // reserved: no allocation per answer

  Outbox() {
    items_.reserve(kMax);
    bytes_.reserve(kBytes);
  }

  // False when the answer cannot wait (no loop iteration on this thread, or no memory for
  // it): then the caller sends it now.
  bool add(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept {
    EventLoop* loop = EventLoop::current();
    if (loop == nullptr) return false;
    if (bytes_.size() + bytes.size() > kBytes) flush();
    if (bytes.size() > kBytes) return false;
    try {
      if (items_.empty()) loop->at_iteration_end([this] { flush(); });
    } catch (...) {
      return false;
    }
    items_.push_back(Item{peer, bytes_.size(), bytes.size()});
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    if (items_.size() == kMax) flush();
    return true;
  }

  bool holds(int fd) const noexcept {
    return std::any_of(items_.begin(), items_.end(),
                       [fd](const Item& it) { return it.peer.fd == fd; });
  }

  void flush() noexcept {
    const std::size_t n = items_.size();
    for (std::size_t i = 0; i < n; ++i) {
      Item& it = items_[i];
      iov_[i] = {bytes_.data() + it.offset, it.size};
      std::memset(&msgs_[i], 0, sizeof msgs_[i]);
      msgs_[i].msg_hdr.msg_iov = &iov_[i];
      msgs_[i].msg_hdr.msg_iovlen = 1;
      msgs_[i].msg_hdr.msg_name = it.peer.addr_len != 0 ? &it.peer.addr : nullptr;
      msgs_[i].msg_hdr.msg_namelen = it.peer.addr_len;
    }
    // One sendmmsg per run of answers on the same socket (usually one run: one listener).
    for (std::size_t from = 0; from < n;) {
      std::size_t to = from + 1;
      while (to < n && items_[to].peer.fd == items_[from].peer.fd)
        ++to;
      send_all(items_[from].peer.fd, msgs_.data() + from, static_cast<unsigned>(to - from));
      from = to;
    }
    items_.clear();
    bytes_.clear();
  }

 private:
  struct Item {
    UdpPeer peer;
    std::size_t offset;
    std::size_t size;
  };
  std::vector<Item> items_;
  std::vector<uint8_t> bytes_;
  std::array<mmsghdr, kMax> msgs_{};
  std::array<iovec, kMax> iov_{};
};

thread_local Outbox t_outbox;

}  // namespace

bool send_later(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept {
  if (t_outbox.add(peer, bytes)) return true;
  return send_one(peer, bytes);
}

void send_held_now(int fd) noexcept {
  if (t_outbox.holds(fd)) t_outbox.flush();
}

}  // namespace hg::resolver::outbox
