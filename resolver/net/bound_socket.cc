#include "resolver/net/bound_socket.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace hg::resolver {

namespace {

std::string bind_failure(const std::string& what, int err) {
  const char* hint = err == EACCES ? " (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
                     : err == EADDRINUSE
                         ? " (another program, or another hourglassd, already uses it: pick "
                           "another --listen)"
                     : err == EADDRNOTAVAIL ? " (no interface of this machine has that address)"
                                            : "";
  return "cannot listen on " + what + ": " + std::strerror(err) + hint;
}

// Binds a plain socket (no SO_REUSEPORT) to addr and closes it: 0, or the errno of the bind.
int probe_bind(int type, const Endpoint& addr) {
  const int fd = ::socket(addr.family(), type | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;  // the real socket will say what is wrong
  int one = 1;
  if (addr.family() == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  const int err = ::bind(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

}  // namespace

Checked<BoundSocket> open_bound_socket(int type, const Endpoint& addr, bool reuse_port,
                                       bool first_of_port) {
  const bool tcp = type == SOCK_STREAM;
  const std::string what = std::string(tcp ? "TCP " : "UDP ") + addr.to_string();
  if (reuse_port && first_of_port && addr.port() != 0) {
    if (const int err = probe_bind(type, addr); err == EADDRINUSE)
      return Checked<BoundSocket>::failure(bind_failure(what, err));
  }
  int fd = ::socket(addr.family(), type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Checked<BoundSocket>::failure("cannot create a socket for " + what + ": " +
                                         std::strerror(errno));
  int one = 1;
  if (tcp) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (addr.family() == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (!tcp) {
    // A larger receive buffer absorbs bursts while the loop is busy.
    int rcvbuf = 4 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  if (::bind(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) != 0 ||
      (tcp && ::listen(fd, 128) != 0)) {
    const int err = errno;
    ::close(fd);
    return Checked<BoundSocket>::failure(bind_failure(what, err));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return BoundSocket{fd,
                     Endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len).value_or(addr)};
}

}  // namespace hg::resolver
