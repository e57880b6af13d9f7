// read_small_file(): a whole configuration-sized file into memory, bounded. The one reader of
// the files hourglassd and its tools take by path and parse whole (hosts and upstream files,
// resolv.conf, trust anchors): it refuses what is not a regular file (a FIFO would block, a
// directory has no text) and stops at `max_bytes`, also when the file grows while being read.
// Callers turn the status into their own words.
//
// FileCheck::Trusted (the default: every file the daemon takes by path) opens through
// open_trusted() (base/checked_open.h): a symbolic link, a file of another user or one others
// may write is Refused before a byte is read. FileCheck::Any is for tools that read the
// system's own files (/etc/resolv.conf, often a link to the network manager's).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "base/checked_open.h"

namespace hg::base {

struct SmallFile {
  enum class Status : uint8_t {
    Ok,
    CannotOpen,  ///< open() failed: `error` is its errno
    NotRegular,  ///< not a regular file (or fstat failed)
    TooLarge,    ///< more than max_bytes, at open or while read
    CannotRead,  ///< read() failed: `error` is its errno
    Refused,     ///< FileCheck::Trusted refused it: `refused` says why (follows the path)
  };
  Status status = Status::Ok;
  int error = 0;
  std::string text;  ///< Ok only
  std::string refused{};
  /// Not readable by other users: a caller must not quote its lines in a log.
  bool private_text = false;
};

enum class FileCheck : uint8_t { Trusted, Any };

inline SmallFile read_small_file(const std::string& path, std::size_t max_bytes,
                                 FileCheck check = FileCheck::Trusted) {
  SmallFile out;
  int fd = -1;
  if (check == FileCheck::Trusted) {
    TrustedFd t = open_trusted(path);
    if (!t.ok()) {
      out.status = t.refused.empty() ? SmallFile::Status::CannotOpen : SmallFile::Status::Refused;
      out.error = t.error;
      out.refused = std::move(t.refused);
      return out;
    }
    out.private_text = t.private_text;
    std::swap(fd, t.fd);
  } else {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  }
  if (fd < 0) {
    out.status = SmallFile::Status::CannotOpen;
    out.error = errno;
    return out;
  }
  auto fail = [&](SmallFile::Status s, int e = 0) {
    ::close(fd);
    out.status = s;
    out.error = e;
    out.text.clear();
    return out;
  };
  struct stat st = {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return fail(SmallFile::Status::NotRegular);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return fail(SmallFile::Status::TooLarge);
  // One allocation of the size the file has now (it may still grow: then the appends do).
  out.text.reserve(static_cast<std::size_t>(st.st_size));
  std::array<char, 65536> buf;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(SmallFile::Status::CannotRead, errno);
    if (n == 0) break;
    out.text.append(buf.data(), static_cast<std::size_t>(n));
    if (out.text.size() > max_bytes) return fail(SmallFile::Status::TooLarge);  // it grew
  }
  ::close(fd);
  return out;
}

}  // namespace hg::base
