#include "resolver/fleet/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "base/checked_open.h"

namespace hg::resolver {

namespace {

constexpr std::size_t kMaxSecretFile = 4096;

}  // namespace

std::optional<std::string> read_secret_file(const std::string& path, std::size_t min_size,
                                            std::string& out) {
  if (path.empty()) return "expected the path of a file";
  // The shared checks (base/checked_open.h): no symbolic link, a regular file owned by root or
  // the daemon's user, writable by nobody else; then the secret's own rule, readable by its
  // owner only.
  base::TrustedFd f = base::open_trusted(path);
  if (!f.ok()) {
    // "is a symbolic link ..." follows the path; here the words follow "PATH: ".
    if (!f.refused.empty()) return f.refused.substr(f.refused.rfind("is ", 0) == 0 ? 3 : 0);
    return fmt::format("cannot open: {}; expected a readable file whose first line is the secret",
                       std::strerror(f.error));
  }
  const struct stat& st = f.st;
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
