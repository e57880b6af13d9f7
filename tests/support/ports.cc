#include "tests/support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace hg::test {

uint16_t free_port(const char* ipv4) {
  for (int tries = 0; tries < 20; ++tries) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    if (inet_pton(AF_INET, ipv4, &sin.sin_addr) != 1) return 0;
    socklen_t len = sizeof sin;
    const int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (t < 0) continue;
    const bool bound = bind(t, reinterpret_cast<sockaddr*>(&sin), sizeof sin) == 0 &&
                       getsockname(t, reinterpret_cast<sockaddr*>(&sin), &len) == 0;
    close(t);
    if (!bound) continue;
    const int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const bool udp_free = u >= 0 && bind(u, reinterpret_cast<sockaddr*>(&sin), sizeof sin) == 0;
    if (u >= 0) close(u);
    if (udp_free) return ntohs(sin.sin_port);
  }
  return 0;
}

sockaddr_in ipv4_address(const char* ip, uint16_t port) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1) std::abort();
  return sin;
}

namespace {

int close_keeping_errno(int fd) {
  const int err = errno;
  close(fd);
  errno = err;
  return -1;
}

}  // namespace

int bind_any_port(int type, sockaddr_in& bound, const char* ip) {
  const int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  bound = ipv4_address(ip, 0);
  socklen_t len = sizeof bound;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&bound), sizeof bound) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0)
    return close_keeping_errno(fd);
  return fd;
}

int listen_any_port(sockaddr_in& bound, int backlog, int flags, const char* ip) {
  const int fd = bind_any_port(SOCK_STREAM | flags, bound, ip);
  if (fd >= 0 && listen(fd, backlog) != 0) return close_keeping_errno(fd);
  return fd;
}

int connect_tcp(const sockaddr_in& to, const char* from, int flags,
                std::chrono::milliseconds send_bound) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  if (fd < 0) return -1;
  if (send_bound.count() > 0) {
    timeval tv{static_cast<time_t>(send_bound.count() / 1000),
               static_cast<suseconds_t>(send_bound.count() % 1000 * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  const sockaddr_in src = ipv4_address(from, 0);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0)
    return close_keeping_errno(fd);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)
    return close_keeping_errno(fd);
  return fd;
}

bool read_available(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

bool closed_by_peer(int fd) {
  std::string dropped;
  return read_available(fd, dropped);
}

int udp_probe(const char* from, uint16_t from_port, uint16_t to_port, const std::string& datagram,
              std::chrono::milliseconds wait) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const sockaddr_in me = ipv4_address(from, from_port);
  const sockaddr_in to = ipv4_address("127.0.0.1", to_port);
  int result = 0;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&me), sizeof me) != 0 ||
      connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 ||
      send(fd, datagram.data(), datagram.size(), 0) != static_cast<ssize_t>(datagram.size())) {
    result = errno;
  } else {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(wait.count())) == 1) {
      char buf[512];
      result = recv(fd, buf, sizeof buf, MSG_DONTWAIT) < 0 ? errno : 0;
    }
  }
  close(fd);
  return result;
}

}  // namespace hg::test
