#include "tools/ctl/system_resolver.h"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tools/ctl/client.h"

namespace hg::ctl {

namespace {

bool exists(const std::string& path) {
  struct stat st = {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool ours(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  return in && std::getline(in, first) && first.starts_with(kResolvConfMark);
}

}  // namespace

int use_as_system_resolver(const std::string& socket, double timeout_s,
                           const std::vector<std::string>& words) {
  bool undo = false, force = false;
  std::string resolv = "/etc/resolv.conf", backup = "/etc/hourglass/resolv.conf.before";
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--undo") {
      undo = true;
    } else if (w == "--force") {
      force = true;
    } else if ((w == "--resolv-conf" || w == "--backup") && i + 1 < words.size() &&
               !words[i + 1].empty()) {
      (w == "--backup" ? backup : resolv) = words[++i];
    } else {
      fmt::print(stderr,
                 "hourglass-ctl use-as-system-resolver: unexpected '{}'; usage: "
                 "use-as-system-resolver [--undo] [--force] [--resolv-conf PATH] [--backup "
                 "PATH]\n",
                 w);
      return 2;
    }
  }
  const char* me = "hourglass-ctl use-as-system-resolver";
  if (undo) {
    if (!exists(backup)) {
      fmt::print("{}: nothing to undo: {} does not exist\n", me, backup);
      return 0;
    }
    if (exists(resolv) && !ours(resolv)) {
      fmt::print(stderr,
                 "{}: {} was changed since hourglass wrote it; left as it is. The file it "
                 "replaced is {}\n",
                 me, resolv, backup);
      return 1;
    }
    if (std::rename(backup.c_str(), resolv.c_str()) != 0) {
      fmt::print(stderr, "{}: cannot rename {} to {}: {}\n", me, backup, resolv,
                 std::strerror(errno));
      return 1;
    }
    fmt::print("{}: {} is back as it was before hourglass\n", me, resolv);
    return 0;
  }
  if (exists(backup)) {
    fmt::print(stderr,
               "{}: {} already exists: hourglass is the system resolver already (--undo goes "
               "back)\n",
               me, backup);
    return 1;
  }
  if (!force) {
    const Reply r = exchange(socket, "stats", timeout_s);
    if (r.status != 0) {
      fmt::print(stderr,
                 "{}: hourglassd does not answer on {} ({}); start it first (systemctl start "
                 "hourglassd), or give --force\n",
                 me, socket, r.status == 2 ? r.error : r.text);
      return 1;
    }
  }
  if (exists(resolv) && std::rename(resolv.c_str(), backup.c_str()) != 0) {
    fmt::print(stderr, "{}: cannot rename {} to {}: {}\n", me, resolv, backup,
               std::strerror(errno));
    return 1;
  }
  const std::string tmp = resolv + ".hourglass-new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kResolvConfMark << "; undo: hourglass-ctl use-as-system-resolver --undo\n"
        << "# The servers hourglassd forwards to are in /etc/hourglass/upstream.conf.\n"
        << "nameserver 127.0.0.1\n"
        << "options edns0\n";
    out.close();
    if (!out || ::chmod(tmp.c_str(), 0644) != 0 || std::rename(tmp.c_str(), resolv.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp.c_str());
      if (exists(backup)) std::rename(backup.c_str(), resolv.c_str());
      fmt::print(stderr, "{}: cannot write {}: {}; nothing changed\n", me, resolv,
                 std::strerror(err));
      return 1;
    }
  }
  fmt::print("{}: {} now says nameserver 127.0.0.1; the old one is {} (--undo puts it back)\n", me,
             resolv, backup);
  return 0;
}

}  // namespace hg::ctl
