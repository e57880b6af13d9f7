#include "resolver/fleet/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace hg::resolver {

namespace {

constexpr std::size_t kMaxSecretFile = 4096;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<std::string> read_secret_file(const std::string& path, std::size_t min_size,
                                            std::string& out) {
  if (path.empty()) return "expected the path of a file";
  // Non-blocking: a FIFO planted at the path must not hang the start.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (f.fd < 0)
    return fmt::format("cannot open: {}; expected a readable file whose first line is the secret",
                       std::strerror(errno));
  struct stat st = {};
  if (::fstat(f.fd, &st) != 0) return fmt::format("cannot stat: {}", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    return (
        fmt::format("owned by uid {}, but hourglassd runs as uid {}; a secret must be owned by the "
                    "daemon's user or root: chown {} {}",
                    st.st_uid, me, me, path));
  }
  if ((st.st_mode & 077) != 0) {
    return (
        fmt::format("mode {:04o} lets group or other {} it; a secret must be readable by its owner "
                    "only: chmod 600 {}",
                    st.st_mode & 07777, (st.st_mode & 022) != 0 ? "write" : "read", path));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxSecretFile)
    return (fmt::format("{} bytes; expected at most {} (the secret on the first line)", st.st_size,
                        kMaxSecretFile));
  std::string text(kMaxSecretFile + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fmt::format("cannot read: {}", std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  const std::size_t eol = text.find('\n');
  std::string line = text.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) return "the first line is empty; put the secret there";
  if (line.size() < min_size) {
    return (fmt::format(
        "the first line has {} bytes; at least {} are needed (e.g. openssl rand -hex 32 > {})",
        line.size(), min_size, path));
  }
  out = std::move(line);
  return std::nullopt;
}

}  // namespace hg::resolver
