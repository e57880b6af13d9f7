#include "resolver/net/udp_listener.h"

#include "resolver/net/bound_socket.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

namespace hg::resolver {

Checked<std::unique_ptr<UdpListener>> UdpListener::open(EventLoop& loop, const Endpoint& addr,
                                                        bool first_of_port, Handler handler) {
  auto sock = open_bound_socket(SOCK_DGRAM, addr, /*reuse_port=*/true, first_of_port);
  if (!sock) return Checked<std::unique_ptr<UdpListener>>::failure(sock.error());
  const int fd = sock->fd;
  const Endpoint local = sock->local;
  std::unique_ptr<UdpListener> l(new UdpListener(loop, fd, local, std::move(handler)));
  if (!loop.add_fd(fd, Interest::Read, [p = l.get()](FdEvents) { p->on_readable(); })) {
    return Checked<std::unique_ptr<UdpListener>>::failure(
        "cannot watch UDP socket " + addr.to_string() + ": " + std::strerror(errno));
  }
  l->watching_ = true;
  return l;
}

UdpListener::UdpListener(EventLoop& loop, int fd, Endpoint local, Handler handler)
    : loop_(loop),
      fd_(fd),
      reply_fd_(fd),
      local_(local),
      handler_(std::move(handler)),
      in_(kBatch),
      out_(kBatch),
      peers_(kBatch),
      in_msgs_(kBatch),
      in_iov_(kBatch) {
  for (std::size_t i = 0; i < kBatch; ++i) {
    in_iov_[i] = {in_[i].data(), kMaxQuery};
    std::memset(&in_msgs_[i], 0, sizeof in_msgs_[i]);
    in_msgs_[i].msg_hdr.msg_iov = &in_iov_[i];
    in_msgs_[i].msg_hdr.msg_iovlen = 1;
    in_msgs_[i].msg_hdr.msg_name = &peers_[i].addr;
    in_msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
  }
}

UdpListener::~UdpListener() {
  pause();
  ::close(fd_);
}

void UdpListener::pause() {
  if (watching_) loop_.remove_fd(fd_);
  watching_ = false;
}

namespace {

// ECONNREFUSED from a send on a connected (upstream) socket is the ICMP error of an earlier
// datagram, reported by this send instead of sending: both senders below try such a datagram
// once more, so that it still leaves and the refusal it draws reaches whoever reads the
// socket (c-ares, which then gives up on that server).
bool send_one(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept {
  const sockaddr* to = peer.addr_len != 0 ? peer.sa() : nullptr;  // 0: a connected socket
  ssize_t n = ::sendto(peer.fd, bytes.data(), bytes.size(), MSG_DONTWAIT, to, peer.addr_len);
  if (n < 0 && errno == ECONNREFUSED)
    n = ::sendto(peer.fd, bytes.data(), bytes.size(), MSG_DONTWAIT, to, peer.addr_len);
  return n == static_cast<ssize_t>(bytes.size());
}

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

// The datagrams a thread's loop iteration produces outside the listeners' own batches — the
// answers after upstream queries, one per c-ares callback (the upstream queries themselves
// leave at once, each from its own socket: resolver/upstream/upstream.cc) — gathered and sent at the
// iteration's end with one sendmmsg per socket instead of one sendto each. A datagram waits
// at most for the rest of its iteration.
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

bool UdpListener::send_later(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept {
  if (t_outbox.add(peer, bytes)) return true;
  return send_one(peer, bytes);
}

void UdpListener::send_held_now(int fd) noexcept {
  if (t_outbox.holds(fd)) t_outbox.flush();
}

Checked<std::vector<int>> UdpListener::open_reply_sockets(const Endpoint& local,
                                                          std::span<const int> receivers) {
  using R = Checked<std::vector<int>>;
  if (receivers.empty()) return R::failure("no listening sockets to answer for");
  const auto n = static_cast<uint32_t>(receivers.size());
  // A = the first two bytes of the UDP payload (the DNS ID; a datagram too short for it ends
  // the program with 0: the first socket); A %= n; the socket at index A.
  std::array<sock_filter, 3> code{{
      {BPF_LD | BPF_H | BPF_ABS, 0, 0, 0},
      {BPF_ALU | BPF_MOD | BPF_K, 0, 0, n},
      {BPF_RET | BPF_A, 0, 0, 0},
  }};
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  if (::setsockopt(receivers[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) != 0)
    return R::failure(std::string("cannot steer queries (SO_ATTACH_REUSEPORT_CBPF): ") +
                      std::strerror(errno));
  // Without reply sockets the program still picks among the receivers only.
  std::vector<int> fds;
  for (uint32_t i = 0; i < n; ++i) {
    auto sock = open_bound_socket(SOCK_DGRAM, local, /*reuse_port=*/true);
    if (!sock) {
      for (const int fd : fds)
        ::close(fd);
      return R::failure(sock.error());
    }
    fds.push_back(sock->fd);
  }
  return fds;
}

void UdpListener::on_readable() {
  mmsghdr* const in_msgs = in_msgs_.data();
  mmsghdr out_msgs[kBatch];
  iovec out_iov[kBatch];
  // Bounded: at most a few batches per readiness event, so one busy socket cannot starve the
  // rest of the loop (timers, TCP, upstream answers).
  for (int round = 0; round < 8; ++round) {
    int n = ::recvmmsg(fd_, in_msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return;  // EAGAIN, or an error the next readiness will report again
    unsigned nout = 0;
    for (int i = 0; i < n; ++i) {
      auto& m = in_msgs[i];
      // The kernel wrote this header's address length; the next call needs the full room.
      const socklen_t addr_len = m.msg_hdr.msg_namelen;
      m.msg_hdr.msg_namelen = sizeof(sockaddr_storage);
      if (m.msg_hdr.msg_flags & MSG_TRUNC) continue;  // longer than any sane query
      UdpPeer& peer = peers_[static_cast<std::size_t>(i)];
      peer.fd = reply_fd_;
      peer.addr_len = addr_len;
      const std::size_t size =
          handler_({in_[static_cast<std::size_t>(i)].data(), m.msg_len}, peer, out_[nout]);
      if (size == 0) continue;
      out_iov[nout] = {out_[nout].data(), size};
      std::memset(&out_msgs[nout], 0, sizeof out_msgs[nout]);
      out_msgs[nout].msg_hdr.msg_iov = &out_iov[nout];
      out_msgs[nout].msg_hdr.msg_iovlen = 1;
      out_msgs[nout].msg_hdr.msg_name = &peer.addr;
      out_msgs[nout].msg_hdr.msg_namelen = peer.addr_len;
      ++nout;
    }
    send_all(reply_fd_, out_msgs, nout);
    if (static_cast<std::size_t>(n) < kBatch) return;
  }
}

}  // namespace hg::resolver
