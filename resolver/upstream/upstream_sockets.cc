// Upstream implementation, the sockets: every UDP attempt goes out on a socket of its own,
// connected to its server, so from a port of its own that only the server can reach
// (docs/upstream.md, "A port per query"), and only what read_attempt() accepts there answers
// it. The sockets are kept for the next attempt with their port given up (at most
// kMaxIdlePorts idle per address family), all within one socket budget for the process.
#include <ares.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "resolver/upstream/upstream.h"
#include "resolver/upstream/upstream_parts.h"

namespace hg::resolver {

using upstream_limits::kMaxIdlePorts;
using upstream_limits::kReadsPerWake;

namespace {

// Attempt sockets open in the process (every worker's Upstream), against the budget.
std::atomic<int> g_attempt_sockets{0};

int process_socket_budget() {
  static const int budget = [] {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 32768;
    return static_cast<int>(std::clamp<rlim_t>(r.rlim_cur / 2, 64, rlim_t{1} << 20));
  }();
  return budget;
}

// Whether a datagram read from an attempt's socket came from the server's address and port.
// The socket is connected to the server, so the kernel has already checked; this stays as a
// second line (it costs a comparison).
bool from_server(const Endpoint& server, const sockaddr_storage& from, socklen_t len) {
  if (server.family() == AF_INET) {
    if (from.ss_family != AF_INET || len < static_cast<socklen_t>(sizeof(sockaddr_in)))
      return false;
    const auto& f = reinterpret_cast<const sockaddr_in&>(from);
    return f.sin_port == server.v4().sin_port && f.sin_addr.s_addr == server.v4().sin_addr.s_addr;
  }
  if (from.ss_family != AF_INET6 || len < static_cast<socklen_t>(sizeof(sockaddr_in6)))
    return false;
  const auto& f = reinterpret_cast<const sockaddr_in6&>(from);
  return f.sin6_port == server.v6().sin6_port &&
         std::memcmp(&f.sin6_addr, &server.v6().sin6_addr, sizeof(in6_addr)) == 0;
}

// Empties a socket's error queue (IP_RECVERR): what is queued there keeps the socket
// reporting EPOLLERR. Bounded, like every read of an attempt's socket.
void drain_error_queue(int fd) {
  uint8_t data[64];
  uint8_t control[512];
  for (int i = 0; i < kReadsPerWake; ++i) {
    iovec iov{data, sizeof data};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0 && errno != EINTR) return;
  }
}

}  // namespace

void Upstream::read_attempt(Attempt& a) {
  Query& q = *a.query;
  Server& s = *a.server;
  ++q.busy;
  for (int i = 0; i < kReadsPerWake && a.port != nullptr; ++i) {
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = recvfrom(a.port->fd, rxbuf_.data(), rxbuf_.size(), 0,
                               reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      drain_error_queue(a.port->fd);
      // An ICMP error for this attempt's datagram (port or host unreachable, ...): this
      // attempt failed; the others, on their own sockets, are not touched.
      if (a.outstanding) {
        on_answer(&a, ARES_ECONNREFUSED, {});
      } else {
        close_attempt_socket(a);
      }
      break;
    }
    if (!from_server(s.endpoint, from, from_len)) {
      bump(s.stats->dropped_wrong_source);  // cannot happen on a connected socket
      continue;
    }
    const std::span<uint8_t> d(rxbuf_.data(), static_cast<std::size_t>(n));
    if (!accept_datagram(a, d)) continue;
    if (a.truncated) {
      // The port is given up now; the attempt goes on over TCP, through c-ares.
      close_attempt_socket(a);
      send_tcp(a);
    } else {
      on_answer(&a, ARES_SUCCESS, d);  // ends the attempt and closes this socket
    }
    break;
  }
  --q.busy;
  rearm_timer_if_needed(s);
  release_if_done(&q);
  retire_if_idle(s);
}

bool Upstream::socket_live(const OpenSocket& o) const noexcept {
  // by_id_ holds only attempts not ended yet, so a match is a live attempt that still
  // holds the socket (whichever Query it belongs to now).
  const Attempt* a = by_id_[o.id];
  return a == o.attempt && a->port == o.port;
}

bool Upstream::make_socket_room(Server& s, int family) {
  auto& mine = idle_ports(family);
  auto& other = idle_ports(family == AF_INET6 ? AF_INET : AF_INET6);
  if (!mine.empty()) return true;
  const int budget = options_.max_sockets > 0 ? options_.max_sockets : process_socket_budget();
  while (!open_sockets_.empty() && !socket_live(open_sockets_.front()))
    open_sockets_.pop_front();
  if (g_attempt_sockets.load(std::memory_order_relaxed) < budget) return true;
  if (!other.empty()) {  // an idle socket of the other family makes way for a new one
    close_port(other.back());
    return true;
  }
  // At the budget (a flood of names that never get an answer, each holding its copies'
  // sockets for the query's lifetime): the oldest attempt of this worker gives its socket
  // up. Its answer, if it ever comes, then hits a closed port; its query retransmits.
  while (!open_sockets_.empty()) {
    const OpenSocket o = open_sockets_.front();
    open_sockets_.pop_front();
    if (!socket_live(o)) continue;
    close_attempt_socket(*o.attempt);  // idle now on its family's list, or closed
    bump(s.stats->sockets_reclaimed);
    // One of the other family makes way for a new one of ours (the list may be empty: a
    // socket whose disconnect failed was closed, which freed its place in the budget).
    if (mine.empty() && !other.empty()) close_port(other.back());
    return true;
  }
  return false;  // the other workers hold them all
}

Upstream::PortSocket* Upstream::take_port(int family) {
  auto& idle = idle_ports(family);
  if (!idle.empty()) {
    PortSocket* p = idle.back();
    idle.pop_back();
    return p;
  }
  const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  // With RECVERR, ICMP errors for its datagrams are reported as the socket's error
  // (ECONNREFUSED etc.) and in its error queue, which read_attempt() empties.
  const int on = 1;
  if ((family == AF_INET6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on)
                          : setsockopt(fd, IPPROTO_IP, IP_RECVERR, &on, sizeof on)) != 0) {
    close(fd);
    return nullptr;
  }
  auto owned = std::make_unique<PortSocket>(PortSocket{fd, family, ports_.size(), nullptr});
  PortSocket* p = owned.get();
  if (!loop_.add_fd(fd, Interest::Read, [this, p](FdEvents) { on_port_readable(*p); })) {
    close(fd);
    return nullptr;
  }
  ports_.push_back(std::move(owned));
  ++sockets_opened_;
  g_attempt_sockets.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void Upstream::close_port(PortSocket* p) {
  auto& idle = idle_ports(p->family);
  if (auto it = std::find(idle.rbegin(), idle.rend(), p); it != idle.rend())
    idle.erase(std::next(it).base());
  g_attempt_sockets.fetch_sub(1, std::memory_order_relaxed);
  loop_.forget_fd(p->fd);  // close() takes it out of epoll: one system call fewer
  close(p->fd);
  const std::size_t i = p->index;
  if (i + 1 != ports_.size()) {
    ports_[i] = std::move(ports_.back());
    ports_[i]->index = i;
  }
  ports_.pop_back();  // destroys *p
}

void Upstream::on_port_readable(PortSocket& p) {
  if (p.attempt != nullptr) {
    read_attempt(*p.attempt);
    return;
  }
  // Idle: a datagram that came in before its attempt gave the port up (a late duplicate).
  // Nothing can arrive once it is disconnected, so this ends; but never spin on it.
  for (int i = 0; i < kReadsPerWake; ++i) {
    if (recv(p.fd, rxbuf_.data(), rxbuf_.size(), 0) < 0 && errno != EINTR) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) drain_error_queue(p.fd);
      return;
    }
  }
  close_port(&p);
}

void Upstream::close_attempt_socket(Attempt& a) {
  PortSocket* p = a.port;
  if (p == nullptr) return;
  a.port = nullptr;
  p->attempt = nullptr;
  // Disconnecting a socket whose port the kernel chose (at its connect) also unbinds that
  // port: a datagram to it is refused from now on, as after close(), and the next connect()
  // binds a new random one. One cheap system call in place of close(), socket() and an
  // epoll registration.
  auto& idle = idle_ports(p->family);
  sockaddr unspec{};
  unspec.sa_family = AF_UNSPEC;
  if (idle.size() < kMaxIdlePorts && connect(p->fd, &unspec, sizeof unspec) == 0) {
    idle.push_back(p);
    return;
  }
  close_port(p);
}

void Upstream::send_udp(Attempt& a, std::span<const uint8_t> bytes) {
  Server& s = *a.server;
  const int family = s.endpoint.family();
  PortSocket* p = make_socket_room(s, family) ? take_port(family) : nullptr;
  if (p == nullptr) {
    // Out of descriptors or memory here, not a fault of the server: the attempt counts as
    // sent and its retransmission timer covers it, as for a datagram lost on the way.
    bump(s.stats->socket_errors);
    a.local_error = true;
    return;
  }
  // connect() on the unbound socket binds a kernel-chosen ephemeral port (random since Linux
  // 4.x, RFC 6056) and ties the socket to the server: the kernel then delivers to it only
  // what comes from the server's address and port, and answers anyone else's datagram to
  // that port with ICMP port unreachable, exactly as for a closed port, so a prober cannot
  // tell which port a query waits on. ICMP errors for our datagram come back on this socket
  // only.
  if (::connect(p->fd, s.endpoint.sockaddr_ptr(), s.endpoint.sockaddr_len()) != 0 ||
      ::send(p->fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(bytes.size())) {
    close_port(p);
    on_answer(&a, ARES_ECONNREFUSED, {});  // the attempt failed: the query moves on
    return;
  }
  p->attempt = &a;
  a.port = p;
  open_sockets_.push_back({&a, p, a.id});
}

}  // namespace hg::resolver
