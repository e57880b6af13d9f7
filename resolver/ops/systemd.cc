// Systemd: sd_notify's datagram protocol, and the watchdog's heartbeat check.
#include "resolver/ops/systemd.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/decimal.h"

namespace hg::resolver {
namespace {

std::optional<uint64_t> parse_u64(const char* text) {
  if (text == nullptr) return std::nullopt;
  return base::parse_decimal<uint64_t>(text);
}

}  // namespace

SystemdNotifier SystemdNotifier::from_environment(long pid) {
  return from_values(std::getenv("NOTIFY_SOCKET"), std::getenv("WATCHDOG_USEC"),
                     std::getenv("WATCHDOG_PID"), pid);
}

SystemdNotifier SystemdNotifier::from_values(const char* notify_socket, const char* watchdog_usec,
                                             const char* watchdog_pid, long pid) {
  SystemdNotifier n;
  if (notify_socket == nullptr) return n;
  const std::string_view path(notify_socket);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  // A path ('/...') or an abstract name ('@...'); anything else (e.g. vsock:) is not ours.
  if (path.size() < 2 || path.size() >= sizeof sun.sun_path || (path[0] != '/' && path[0] != '@')) {
    return n;
  }
  std::memcpy(sun.sun_path, path.data(), path.size());
  if (path[0] == '@') sun.sun_path[0] = '\0';
  const std::size_t len = offsetof(sockaddr_un, sun_path) + path.size() + (path[0] == '/' ? 1 : 0);
  n.fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (n.fd_ < 0) return n;
  n.addr_.assign(reinterpret_cast<const char*>(&sun), len);
  n.addr_len_ = len;
  // sd_watchdog_enabled(3): the interval is for us unless WATCHDOG_PID names another process.
  const auto usec = parse_u64(watchdog_usec);
  if (usec && *usec > 0) {
    const auto for_pid = parse_u64(watchdog_pid);
    if (watchdog_pid == nullptr || (for_pid && static_cast<long>(*for_pid) == pid))
      n.watchdog_ = std::chrono::microseconds{static_cast<int64_t>(*usec)};
  }
  return n;
}

SystemdNotifier::~SystemdNotifier() {
  if (fd_ >= 0) ::close(fd_);
}

SystemdNotifier::SystemdNotifier(SystemdNotifier&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      addr_(std::move(o.addr_)),
      addr_len_(std::exchange(o.addr_len_, 0)),
      watchdog_(o.watchdog_) {}

SystemdNotifier& SystemdNotifier::operator=(SystemdNotifier&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    addr_ = std::move(o.addr_);
    addr_len_ = std::exchange(o.addr_len_, 0);
    watchdog_ = o.watchdog_;
  }
  return *this;
}

bool SystemdNotifier::send(std::string_view message) const {
  if (!enabled() || fd_ < 0) return false;
  const ssize_t n =
      ::sendto(fd_, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(addr_.data()), static_cast<socklen_t>(addr_len_));
  return n == static_cast<ssize_t>(message.size());
}

std::optional<std::size_t> stuck_loop(std::span<const int64_t> beats_ms, int64_t now_ms,
                                      int64_t limit_ms) noexcept {
  for (std::size_t i = 0; i < beats_ms.size(); ++i) {
    if (now_ms - beats_ms[i] > limit_ms) return i;
  }
  return std::nullopt;
}

}  // namespace hg::resolver
