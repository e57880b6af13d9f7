#include "tests/support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

}  // namespace hg::test
