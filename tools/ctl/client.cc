#include "tools/ctl/client.h"

#include <fmt/core.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace hg::ctl {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Reply exchange(const std::string& path, std::string_view command, double timeout_s) {
  Reply r;
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sun.sun_path) {
    r.error =
        fmt::format("--socket {}: expected a path of 1 to {} bytes", path, sizeof sun.sun_path - 1);
    return r;
  }
  std::memcpy(sun.sun_path, path.data(), path.size());
  Fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0 || ::connect(s.fd, reinterpret_cast<const sockaddr*>(&sun), sizeof sun) != 0) {
    r.error = fmt::format("cannot connect to {}: {}", path, std::strerror(errno));
    return r;
  }
  std::string line(command);
  line += '\n';
  std::string_view left = line;
  while (!left.empty()) {
    const ssize_t n = ::send(s.fd, left.data(), left.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.error = fmt::format("cannot send to {}: {}", path, std::strerror(errno));
      return r;
    }
    left.remove_prefix(static_cast<std::size_t>(n));
  }
  using Clock = std::chrono::steady_clock;
  const auto patience =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  auto deadline = Clock::now() + patience;
  std::string buf;
  char chunk[16384];
  for (;;) {
    // The reply ends with an empty line: "\n\n", or a lone "\n" at the start.
    if (buf == "\n") return Reply{0, "", ""};
    if (const auto end = buf.find("\n\n"); end != std::string::npos) {
      r.text = buf.substr(0, end + 1);
      r.status = r.text.starts_with("error:") ? 1 : 0;
      return r;
    }
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{s.fd, POLLIN, 0};
    const int ready = wait.count() > 0 ? ::poll(&p, 1, static_cast<int>(wait.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      r.error = fmt::format("{} sent nothing for {}s; the reply is incomplete", path, timeout_s);
      return r;
    }
    const ssize_t n = ::recv(s.fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.error = fmt::format("{} closed the connection before the reply ended", path);
      return r;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
    if (buf.size() > (std::size_t{64} << 20)) {
      r.error = fmt::format("{} sent a reply over 64 MiB", path);
      return r;
    }
    deadline = Clock::now() + patience;
  }
}

}  // namespace hg::ctl
