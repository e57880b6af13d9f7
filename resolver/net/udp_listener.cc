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
    outbox::send_all(reply_fd_, out_msgs, nout);
    if (static_cast<std::size_t>(n) < kBatch) return;
  }
}

}  // namespace hg::resolver
