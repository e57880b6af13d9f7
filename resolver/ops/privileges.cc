#include "resolver/ops/privileges.h"

#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace hg::resolver {

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

// The capability sets of this thread; false when capget() fails.
bool capability_sets(uint64_t& effective, uint64_t& permitted, uint64_t& inheritable) {
  __user_cap_header_struct head{};
  head.version = _LINUX_CAPABILITY_VERSION_3;
  head.pid = 0;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &head, data) != 0) return false;
  auto join = [](uint32_t low, uint32_t high) { return uint64_t{low} | (uint64_t{high} << 32); };
  effective = join(data[0].effective, data[1].effective);
  permitted = join(data[0].permitted, data[1].permitted);
  inheritable = join(data[0].inheritable, data[1].inheritable);
  return true;
}

// The ambient set, bit by bit (PR_CAP_AMBIENT_IS_SET fails past the kernel's last one).
uint64_t ambient_set() {
  uint64_t out = 0;
  for (int cap = 0; cap < 64; ++cap) {
    const int r = ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
    if (r < 0) break;
    if (r == 1) out |= uint64_t{1} << cap;
  }
  return out;
}

}  // namespace

std::optional<std::string> refuse_root(const Config& config) {
  if (::geteuid() != 0 || !config.user.empty() || config.allow_root) return std::nullopt;
  return "hourglassd: refusing to run as root: give --user NAME to switch to that user once "
         "the ports are bound (the package creates the user hourglass: --user hourglass), or "
         "--allow-root to keep every privilege (not recommended); under systemd the packaged "
         "unit already runs it as a dynamic user";
}

void forbid_new_privileges() {
  // Fails only on kernels before 3.5; nothing then to do about it.
  (void)::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

std::optional<std::string> drop_to_user(const Config& config) {
  if (config.user.empty()) return std::nullopt;
  const std::string who =
      fmt::format("--user {} (uid {}, gid {})", config.user, config.user_uid, config.user_gid);
  // No supplementary groups at all, rather than initgroups() with the user's own: hourglassd
  // needs none (its files are checked by owner, its sockets are bound already), and a group
  // an administrator later adds the user to (adm, shadow, a VPN's) would otherwise give the
  // daemon access nobody meant it to have. The user's primary group stays, for files such as
  // a config of mode 0640 root:hourglass.
  if (::setgroups(0, nullptr) != 0)
    return fmt::format("hourglassd: {}: setgroups() failed: {}; start it as root to switch users",
                       who, errno_text(errno));
  // The bounding set too, while CAP_SETPCAP is still held: no later execve() of a file with
  // capabilities could get any back (no new privileges forbids that already; this is belt
  // and braces).
  for (int cap = 0; cap < 64; ++cap)
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
  // The group first: once the uid is not 0, setgid() is no longer allowed. glibc applies both
  // calls to every thread of the process (the dnstap writer's may already run).
  if (::setgid(config.user_gid) != 0)
    return fmt::format("hourglassd: {}: setgid() failed: {}", who, errno_text(errno));
  if (::setuid(config.user_uid) != 0)
    return fmt::format("hourglassd: {}: setuid() failed: {}", who, errno_text(errno));
  // Checked, not assumed: a kernel or a caller that kept capabilities (PR_SET_KEEPCAPS, file
  // capabilities on the binary, an ambient set) must not slip through.
  if (::getuid() != config.user_uid || ::geteuid() != config.user_uid ||
      ::getgid() != config.user_gid || ::getegid() != config.user_gid)
    return fmt::format("hourglassd: {}: still uid {}/{} gid {}/{} after the switch", who,
                       ::getuid(), ::geteuid(), ::getgid(), ::getegid());
  uint64_t eff = 0, prm = 0, inh = 0;
  if (!capability_sets(eff, prm, inh))
    return fmt::format("hourglassd: {}: cannot read the capability sets: {}", who,
                       errno_text(errno));
  const uint64_t amb = ambient_set();
  if ((eff | prm | amb) != 0)
    return fmt::format(
        "hourglassd: {}: capabilities left after the switch (effective {:#x}, permitted {:#x}, "
        "ambient {:#x}); do not start it with file capabilities or an ambient set",
        who, eff, prm, amb);
  if (::setuid(0) == 0 || ::setgid(0) == 0)
    return fmt::format("hourglassd: {}: root could be regained after the switch", who);
  return std::nullopt;
}

std::vector<std::string> check_user_access(const Config& config) {
  std::vector<std::string> out;
  if (config.user.empty()) return out;
  auto readable = [&](const std::string& path, const char* what) {
    if (path.empty() || ::access(path.c_str(), R_OK) == 0 || errno == ENOENT) return;
    out.push_back(fmt::format(
        "{} {} is not readable by user {} ({}): a reload (SIGHUP) will not read it; make it "
        "readable (chmod o+r, or chgrp {} and chmod g+r)",
        what, path, config.user, errno_text(errno), config.user));
  };
  if (!config.config_file.empty()) readable(config.config_file, "--config");
  if (config.upstreams_from_file) readable(config.upstream_file, "--upstream-file");
  for (const std::string& h : config.hosts_files)
    readable(h, "--hosts-file");
  if (!config.cache_file.empty()) {
    const auto slash = config.cache_file.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string(".")
                            : slash == 0               ? std::string("/")
                                                       : config.cache_file.substr(0, slash);
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      out.push_back(fmt::format(
          "--cache-file {}: its directory {} is not writable by user {} ({}): the cache will not "
          "be saved at stop; chown {} {}",
          config.cache_file, dir, config.user, errno_text(errno), config.user, dir));
  }
  return out;
}

}  // namespace hg::resolver
