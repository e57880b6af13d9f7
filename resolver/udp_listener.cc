#include "resolver/udp_listener.h"

#include "resolver/bound_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hg::resolver {

Checked<std::unique_ptr<UdpListener>> UdpListener::open(EventLoop& loop, const Endpoint& addr,
                                                        bool reuse_port, Handler handler) {
  auto sock = open_bound_socket(SOCK_DGRAM, addr, reuse_port);
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
      local_(local),
      handler_(std::move(handler)),
      in_(kBatch),
      out_(kBatch),
      peers_(kBatch) {}

UdpListener::~UdpListener() {
  pause();
  ::close(fd_);
}

void UdpListener::pause() {
  if (watching_) loop_.remove_fd(fd_);
  watching_ = false;
}

bool UdpListener::send_to(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept {
  ssize_t n = ::sendto(peer.fd, bytes.data(), bytes.size(), MSG_DONTWAIT, peer.sa(), peer.addr_len);
  return n == static_cast<ssize_t>(bytes.size());
}

void UdpListener::on_readable() {
  mmsghdr in_msgs[kBatch];
  iovec in_iov[kBatch];
  mmsghdr out_msgs[kBatch];
  iovec out_iov[kBatch];
  // Bounded: at most a few batches per readiness event, so one busy socket cannot starve the
  // rest of the loop (timers, TCP, upstream answers).
  for (int round = 0; round < 8; ++round) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      in_iov[i] = {in_[i].data(), kMaxQuery};
      std::memset(&in_msgs[i], 0, sizeof in_msgs[i]);
      in_msgs[i].msg_hdr.msg_iov = &in_iov[i];
      in_msgs[i].msg_hdr.msg_iovlen = 1;
      in_msgs[i].msg_hdr.msg_name = &peers_[i].addr;
      in_msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    }
    int n = ::recvmmsg(fd_, in_msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return;  // EAGAIN, or an error the next readiness will report again
    unsigned nout = 0;
    for (int i = 0; i < n; ++i) {
      auto& m = in_msgs[i];
      if (m.msg_hdr.msg_flags & MSG_TRUNC) continue;  // longer than any sane query
      UdpPeer& peer = peers_[static_cast<std::size_t>(i)];
      peer.fd = fd_;
      peer.addr_len = m.msg_hdr.msg_namelen;
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
    for (unsigned sent = 0; sent < nout;) {
      int k = ::sendmmsg(fd_, out_msgs + sent, nout - sent, MSG_DONTWAIT);
      if (k > 0) {
        sent += static_cast<unsigned>(k);
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        break;  // a full send buffer drops the rest; those clients will retry
      } else {
        ++sent;  // this one datagram was refused (EPERM, EINVAL...): skip it, send the others
      }
    }
    if (static_cast<std::size_t>(n) < kBatch) return;
  }
}

}  // namespace hg::resolver
