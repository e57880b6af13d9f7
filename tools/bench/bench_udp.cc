#include "tools/bench/bench_udp.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace hg::bench {

int open_udp(const sockaddr_in& at, const char* what) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    std::perror("socket");
    std::exit(1);
  }
  const int size = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) {
    char addr[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &at.sin_addr, addr, sizeof addr);
    std::fprintf(stderr, "cannot bind the %s socket to %s:%u: %s\n", what, addr, ntohs(at.sin_port),
                 std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

void say_listening(int fd, const char* program) {
  sockaddr_in got{};
  socklen_t len = sizeof got;
  getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len);
  char addr[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &got.sin_addr, addr, sizeof addr);
  std::fprintf(stderr, "%s: listening on %s:%u\n", program, addr, ntohs(got.sin_port));
}

void send_all(int fd, mmsghdr* msgs, unsigned n) {
  for (unsigned sent = 0; sent < n;) {
    const int k = sendmmsg(fd, msgs + sent, n - sent, MSG_DONTWAIT);
    if (k > 0) {
      sent += static_cast<unsigned>(k);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      ++sent;  // this datagram was refused; send the others
    }
  }
}

namespace {
volatile sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}
}  // namespace

volatile int* install_stop_handler() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return &g_stop;
}

}  // namespace hg::bench
