// open_trusted(): the one way hourglassd opens a file it was given by path and will act on
// (hosts, upstream and TOML files, trust anchors, the fleet secret, the TLS CA file, the cache
// file; the dnstap output checks an existing file with check_trusted()). The rules are the
// cache file's (cache/persist.h), as ssh applies them to a key file, generalised:
//
//   - O_NOFOLLOW: a symbolic link as the last component is refused. Whoever can write the
//     directory can plant one and point it at a root-only file (/etc/shadow) that hourglassd,
//     started as root, would then read and serve or quote. The link's target is named in the
//     message so the fix (give that path) is one edit. The one exception is root's own link
//     /etc/resolv.conf (system_link()).
//   - O_NONBLOCK | fstat(): not a regular file (a FIFO would wedge the start, a device or
//     directory has no text) is refused.
//   - the owner must be root or a user hourglassd runs as (its effective uid, and the --user it
//     will switch to: trust_daemon_uid()); any other user could have written anything into it.
//   - writable by its group or by every user: refused. A group is a set of users hourglassd
//     cannot vet, and the packaged files are 0644 root:root; this is the cache file's rule.
//   - a file no other user may read (mode without o+r) that has more than one hard link:
//     refused. Where fs.protected_hardlinks is off, anyone may hard-link a root-only file
//     into a directory they write, and the link passes every check above.
//
// Only the descriptor is checked, after open(), so nothing can be swapped between the check
// and the read. Nothing of a refused file is read. `private_text` tells a caller whose parser
// quotes the file's lines in errors that the file is not world-readable: such a line must not
// be written to a log others may read.
//
// Header-only, like the rest of base/; depends on nothing.
#pragma once

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace hg::base {

namespace detail {
inline std::atomic<long long> daemon_uid{-1};
}  // namespace detail

/// The uid hourglassd switches to after binding (--user); files it owns are trusted like
/// root's, since the daemon runs as it from then on. Call before the files are opened.
inline void trust_daemon_uid(uid_t uid) {
  detail::daemon_uid.store(static_cast<long long>(uid));
}

/// The user hourglassd runs as once started: the --user to come, else the effective user.
inline uid_t daemon_uid() {
  const long long u = detail::daemon_uid.load();
  return u >= 0 ? static_cast<uid_t>(u) : ::geteuid();
}

/// Root, the effective user and the --user to come.
inline bool trusted_owner(uid_t uid) {
  return uid == 0 || uid == ::geteuid() || static_cast<long long>(uid) == detail::daemon_uid.load();
}

/// "0644"
inline std::string mode_text(mode_t mode) {
  std::array<char, 8> buf{};
  std::snprintf(buf.data(), buf.size(), "%04o", static_cast<unsigned>(mode & 07777));
  return buf.data();
}

inline std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

/// What is wrong with the file `st` describes (see the top of this file), as words that
/// follow its path: "is owned by uid 1000 ...". Empty when it may be used.
inline std::string untrusted_reason(const struct stat& st, const std::string& path) {
  if (!S_ISREG(st.st_mode)) return "is not a regular file (" + file_kind(st.st_mode) + ")";
  if (!trusted_owner(st.st_uid)) {
    std::string who = "uid " + std::to_string(st.st_uid);
    if (const passwd* pw = ::getpwuid(st.st_uid); pw != nullptr && pw->pw_name != nullptr)
      who += " (" + std::string(pw->pw_name) + ")";
    return "is owned by " + who + ", not by root or the user hourglassd runs as; refused, " +
           "since that user could have written anything into it: chown root '" + path +
           "' if you trust it";
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return "is writable by " +
           std::string((st.st_mode & S_IWOTH) != 0 ? "every user" : "its group") + " (mode " +
           mode_text(st.st_mode) +
           "); refused, since another user could have written anything into it: chmod go-w '" +
           path + "' if you trust it";
  }
  if ((st.st_mode & S_IROTH) == 0 && st.st_nlink > 1) {
    return "is readable by its owner or group only and has " + std::to_string(st.st_nlink) +
           " hard links; refused, since a hard link can make a private file appear here: give "
           "the path of a file with one link";
  }
  return {};
}

struct TrustedFd {
  int fd = -1;                ///< open, read-only, close-on-exec; -1 when refused or not opened
  int error = 0;              ///< open() failed: its errno (ENOENT: missing); 0 when refused
  std::string refused;        ///< refused: why, words that follow the path; empty otherwise
  struct stat st = {};        ///< the opened file's
  bool private_text = false;  ///< no o+r: its lines must not be quoted in logs
  TrustedFd() = default;
  TrustedFd(const TrustedFd&) = delete;
  TrustedFd& operator=(const TrustedFd&) = delete;
  TrustedFd(TrustedFd&& o) noexcept
      : fd(o.fd),
        error(o.error),
        refused(std::move(o.refused)),
        st(o.st),
        private_text(o.private_text) {
    o.fd = -1;
  }
  ~TrustedFd() {
    if (fd >= 0) ::close(fd);
  }
  bool ok() const { return fd >= 0; }
  /// One line: `path` then what is wrong (refused, or open()'s error).
  std::string problem(const std::string& path) const {
    if (!refused.empty()) return "'" + path + "' " + refused;
    return "cannot open '" + path + "' (" + std::strerror(error) + ")";
  }
};

/// The symbolic link's target, for the message; empty when unreadable.
inline std::string link_target(const std::string& path) {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string();
}

/// The one symbolic link followed: /etc/resolv.conf, which systemd-resolved, resolvconf and
/// NetworkManager make a link to their own file, in a directory only root writes. The link
/// must be root's; the file it leads to is checked like any other.
inline bool system_link(const std::string& path) {
  struct stat lst = {};
  return path == "/etc/resolv.conf" && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode) &&
         lst.st_uid == 0;
}

/// Opens `path` read-only under the rules at the top of this file.
inline TrustedFd open_trusted(const std::string& path) {
  TrustedFd out;
  const int nofollow = system_link(path) ? 0 : O_NOFOLLOW;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | nofollow | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    struct stat lst = {};
    if (err == ELOOP && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      const std::string to = link_target(path);
      out.refused = "is a symbolic link" + (to.empty() ? std::string() : " to '" + to + "'") +
                    "; refused, since whoever can write its directory can point it at any " +
                    "file: give the path of the file itself";
    } else if (err == ENXIO) {
      out.refused = "is not a regular file (a socket)";
    } else {
      out.error = err;
    }
    return out;
  }
  out.fd = fd;
  if (::fstat(fd, &out.st) != 0) {
    out.error = errno;
    ::close(fd);
    out.fd = -1;
    return out;
  }
  out.refused = untrusted_reason(out.st, path);
  if (!out.refused.empty()) {
    ::close(fd);
    out.fd = -1;
    return out;
  }
  out.private_text = (out.st.st_mode & S_IROTH) == 0;
  return out;
}

}  // namespace hg::base
