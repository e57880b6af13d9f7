#include "tools/ctl/system_resolver.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "tools/ctl/client.h"

namespace hg::ctl {

namespace {

constexpr const char* kMe = "hourglass-ctl use-as-system-resolver";
constexpr std::size_t kMaxResolvConf = 64 * 1024;
constexpr std::size_t kMaxLine = 1024;

// What this command appends to resolvconf.conf, and the NetworkManager drop-ins it writes.
// --undo compares the files with these before it changes anything back.
constexpr std::string_view kResolvconfBlock =
    "# Added by hourglass-ctl use-as-system-resolver (undo: hourglass-ctl "
    "use-as-system-resolver --undo):\n"
    "# resolv.conf names hourglassd only; hourglassd gets the interfaces' servers from its\n"
    "# openresolv subscriber (/lib/resolvconf/hourglass).\n"
    "name_servers=127.0.0.1\n";
constexpr std::string_view kNmDropInResolvconf =
    "# Written by hourglass-ctl use-as-system-resolver (undo: hourglass-ctl "
    "use-as-system-resolver --undo):\n"
    "# NetworkManager hands its servers and domains to openresolv, which writes resolv.conf\n"
    "# with hourglassd (name_servers=127.0.0.1 in /etc/resolvconf.conf) and the search\n"
    "# domains, and feeds hourglassd the servers through its hourglass subscriber.\n"
    "[main]\n"
    "rc-manager=resolvconf\n";
constexpr std::string_view kNmDropInNone =
    "# Written by hourglass-ctl use-as-system-resolver (undo: hourglass-ctl "
    "use-as-system-resolver --undo):\n"
    "# NetworkManager leaves /etc/resolv.conf alone; hourglassd gets its servers from the\n"
    "# dispatcher script /usr/lib/NetworkManager/dispatcher.d/60-hourglass.\n"
    "[main]\n"
    "dns=none\n";
constexpr const char* kNmDropInName = "/90-hourglass.conf";

bool exists(const std::string& path) {
  struct stat st = {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_symlink(const std::string& path) {
  struct stat st = {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

/// The file's first `limit` bytes (following a symbolic link), or nothing if it cannot be read.
std::optional<std::string> read_file(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string out(limit, '\0');
  in.read(out.data(), static_cast<std::streamsize>(limit));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

std::string link_target(const std::string& path) {
  char buf[4096];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

bool ours(const std::string& path) {
  const auto text = read_file(path, 512);
  return text && text->starts_with(kResolvConfMark);
}

/// Writes `content` to path through a temporary file and a rename; errno set on failure.
bool write_atomic(const std::string& path, std::string_view content, mode_t mode) {
  const std::string tmp = path + ".hourglass-new";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return false;
  bool ok = ::fchmod(fd, mode) == 0;
  for (std::size_t at = 0; ok && at < content.size();) {
    const ssize_t n = ::write(fd, content.data() + at, content.size() - at);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) at += static_cast<std::size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  const int err = errno;
  std::remove(tmp.c_str());
  errno = err;
  return false;
}

/// Runs argv (no shell) and returns its exit status, or -1 if it could not be run. With
/// `out`, its standard output (first 4 KiB) is captured instead of passed through.
int run_program(const std::vector<std::string>& argv, std::string* out = nullptr) {
  int pipefd[2] = {-1, -1};
  std::vector<char*> args;  // built before the fork: the child only execs
  args.reserve(argv.size() + 1);
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (out != nullptr && ::pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (out != nullptr) {
      ::close(pipefd[0]);
      ::close(pipefd[1]);
    }
    return -1;
  }
  if (pid == 0) {
    if (out != nullptr) ::dup2(pipefd[1], 1);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (out != nullptr) {
    ::close(pipefd[1]);
    char buf[512];
    ssize_t n;
    while ((n = ::read(pipefd[0], buf, sizeof buf)) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      if (out->size() < 4096) out->append(buf, static_cast<std::size_t>(n));
    }
    ::close(pipefd[0]);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The resolvconf program, if it is openresolv (Debian's other resolvconf has no
/// resolvconf.conf and is not handled here), else "".
std::string find_openresolv(const std::string& given) {
  std::vector<std::string> candidates;
  if (!given.empty()) {
    candidates.push_back(given);
  } else {
    candidates = {"/usr/sbin/resolvconf", "/sbin/resolvconf"};
  }
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) != 0) continue;
    std::string version;
    if (run_program({c, "--version"}, &version) == 0 && version.starts_with("openresolv")) {
      return c;
    }
  }
  return "";
}

struct Options {
  bool undo = false, force = false;
  std::string resolv = "/etc/resolv.conf", backup = "/etc/hourglass/resolv.conf.before";
  std::string resolvconf_conf = "/etc/resolvconf.conf", resolvconf,
              nm_dir =
                  "/etc/NetworkManager/"
                  "conf.d";
};

/// The record kept in the backup file of a managed switch: "key value" lines after the mark.
struct Record {
  std::string resolvconf_conf, resolvconf_conf_saved, resolvconf, nm_drop_in, nm_drop_in_text;
  std::string resolv_conf, resolv_conf_saved;
};

std::string to_text(const Record& r) {
  std::string t =
      std::string(kManagedMark) + "\n# undo: hourglass-ctl use-as-system-resolver --undo\n";
  auto put = [&](const char* key, const std::string& v) {
    if (!v.empty()) t += fmt::format("{} {}\n", key, v);
  };
  put("resolv-conf", r.resolv_conf);
  put("resolv-conf-saved", r.resolv_conf_saved);
  put("resolvconf", r.resolvconf);
  put("resolvconf-conf", r.resolvconf_conf);
  put("resolvconf-conf-saved", r.resolvconf_conf_saved);
  put("nm-drop-in", r.nm_drop_in);
  put("nm-drop-in-kind", r.nm_drop_in_text == kNmDropInNone ? "dns-none" : "rc-manager");
  return t;
}

std::optional<Record> parse_record(std::string_view text) {
  if (!text.starts_with(kManagedMark)) return std::nullopt;
  Record r;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    if (sp == std::string::npos || sp + 1 >= line.size()) return std::nullopt;
    const std::string key = line.substr(0, sp), v = line.substr(sp + 1);
    if (key == "resolv-conf") {
      r.resolv_conf = v;
    } else if (key == "resolv-conf-saved") {
      r.resolv_conf_saved = v;
    } else if (key == "resolvconf") {
      r.resolvconf = v;
    } else if (key == "resolvconf-conf") {
      r.resolvconf_conf = v;
    } else if (key == "resolvconf-conf-saved") {
      r.resolvconf_conf_saved = v;
    } else if (key == "nm-drop-in") {
      r.nm_drop_in = v;
    } else if (key == "nm-drop-in-kind") {
      r.nm_drop_in_text = v == "dns-none" ? kNmDropInNone : kNmDropInResolvconf;
    } else {
      return std::nullopt;
    }
  }
  return r;
}

/// The new resolv.conf of a plain switch: hourglassd, then what the old one said besides its
/// servers.
std::string plain_resolv_conf(const std::vector<std::string>& kept) {
  std::string t = std::string(kResolvConfMark) +
                  "; undo: hourglass-ctl use-as-system-resolver --undo\n"
                  "# The servers hourglassd forwards to are in /etc/hourglass/upstream.conf.\n"
                  "nameserver 127.0.0.1\n";
  if (!kept.empty()) t += "# Kept from the resolv.conf before hourglass:\n";
  for (const auto& l : kept)
    t += l + "\n";
  t += "options edns0\n";
  return t;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines)
    s += (s.empty() ? "" : "; ") + l;
  return s.empty() ? "(none)" : s;
}

// Plain switch (also NetworkManager with dns=none): rename the file away, write ours.
// `saved` is where the old file goes.
bool switch_file(const Options& o, const std::string& saved) {
  const auto text = read_file(o.resolv, kMaxResolvConf);
  const auto kept = resolv_conf_kept_lines(text.value_or(""));
  if (is_symlink(o.resolv)) {
    fmt::print(
        "{}: warning: {} was a symbolic link to {}; whatever maintains that file no longer "
        "reaches /etc/resolv.conf (--undo puts the link back)\n",
        kMe, o.resolv, link_target(o.resolv));
  }
  if (exists(o.resolv) && std::rename(o.resolv.c_str(), saved.c_str()) != 0) {
    fmt::print(stderr, "{}: cannot rename {} to {}: {}\n", kMe, o.resolv, saved,
               std::strerror(errno));
    return false;
  }
  if (!write_atomic(o.resolv, plain_resolv_conf(kept), 0644)) {
    const int err = errno;
    if (exists(saved)) std::rename(saved.c_str(), o.resolv.c_str());
    fmt::print(stderr, "{}: cannot write {}: {}; nothing changed\n", kMe, o.resolv,
               std::strerror(err));
    return false;
  }
  fmt::print("{}: {} now says nameserver 127.0.0.1, keeping: {}\n", kMe, o.resolv, joined(kept));
  return true;
}

int switch_over(const Options& o) {
  const auto text = read_file(o.resolv, kMaxResolvConf);
  const std::string target = is_symlink(o.resolv) ? link_target(o.resolv) : std::string();
  const ResolvManager manager = resolv_conf_manager(text.value_or(""), target);
  const std::string openresolv =
      manager == ResolvManager::kNone ? std::string() : find_openresolv(o.resolvconf);

  if (manager == ResolvManager::kNone ||
      (manager == ResolvManager::kOpenresolv && openresolv.empty())) {
    if (manager == ResolvManager::kOpenresolv) {
      fmt::print(
          "{}: warning: {} says resolvconf wrote it, but no openresolv program was found; "
          "replacing the file\n",
          kMe, o.resolv);
    }
    if (!switch_file(o, o.backup)) return 1;
    fmt::print("{}: the old one is {} (--undo puts it back)\n", kMe, o.backup);
    return 0;
  }

  Record rec;
  rec.resolv_conf = o.resolv;
  std::vector<std::string> done;  // what was changed, said at the end
  auto fail = [&](const std::string& what) {
    fmt::print(stderr, "{}: {}\n", kMe, what);
    // Whatever was changed already is recorded: --undo can take it back.
    if (!done.empty()) {
      write_atomic(o.backup, to_text(rec), 0644);
      fmt::print(stderr,
                 "{}: changed so far: {}; hourglass-ctl use-as-system-resolver --undo "
                 "takes it back\n",
                 kMe, joined(done));
    }
    return 1;
  };

  if (manager == ResolvManager::kNetworkManager) {
    rec.nm_drop_in = o.nm_dir + kNmDropInName;
    rec.nm_drop_in_text = openresolv.empty() ? kNmDropInNone : kNmDropInResolvconf;
    if (exists(rec.nm_drop_in)) {
      return fail(
          fmt::format("{} exists already; remove it or move it away first", rec.nm_drop_in));
    }
    // conf.d may not exist yet; NetworkManager's own folder must.
    if (::mkdir(o.nm_dir.c_str(), 0755) != 0 && errno == ENOENT) {
      return fail(fmt::format(
          "the folder of {} does not exist: is NetworkManager installed here? (--nm-conf-dir "
          "names its conf.d)",
          o.nm_dir));
    }
    if (!write_atomic(rec.nm_drop_in, rec.nm_drop_in_text, 0644)) {
      return fail(fmt::format("cannot write {}: {}", rec.nm_drop_in, std::strerror(errno)));
    }
    done.push_back(fmt::format("wrote {} ({})", rec.nm_drop_in,
                               openresolv.empty() ? "dns=none" : "rc-manager=resolvconf"));
    if (openresolv.empty()) {
      // No openresolv: NetworkManager is told to leave the file alone and it is written here.
      rec.resolv_conf_saved = o.backup + ".resolv.conf";
      if (!switch_file(o, rec.resolv_conf_saved)) return fail("nothing else changed");
      done.push_back(
          fmt::format("{} written (the old one is {})", o.resolv, rec.resolv_conf_saved));
      write_atomic(o.backup, to_text(rec), 0644);
      fmt::print(
          "{}: warning: without openresolv, NetworkManager no longer writes {}: the search "
          "domains kept in it do not follow the network any more (apt install openresolv, then "
          "--undo and again, makes them follow)\n",
          kMe, o.resolv);
      fmt::print(
          "{}: changed: {}. NetworkManager reads the drop-in when it reloads "
          "(systemctl reload NetworkManager). --undo removes the drop-in and puts {} back\n",
          kMe, joined(done), o.resolv);
      return 0;
    }
    if (exists(o.resolv)) {
      // openresolv writes /etc/resolv.conf itself: NetworkManager's file or link is kept
      // aside, as it is, for --undo.
      rec.resolv_conf_saved = o.backup + ".resolv.conf";
      if (std::rename(o.resolv.c_str(), rec.resolv_conf_saved.c_str()) != 0) {
        return fail(fmt::format("cannot rename {} to {}: {}", o.resolv, rec.resolv_conf_saved,
                                std::strerror(errno)));
      }
      done.push_back(fmt::format("{}{} moved to {}", o.resolv,
                                 target.empty() ? "" : " (a link to " + target + ")",
                                 rec.resolv_conf_saved));
    }
  }

  // Through openresolv: name_servers=127.0.0.1, then resolvconf -u rewrites the file.
  rec.resolvconf = openresolv;
  rec.resolvconf_conf = o.resolvconf_conf;
  const auto conf = read_file(o.resolvconf_conf, kMaxResolvConf);
  struct stat st = {};
  const mode_t mode = ::stat(o.resolvconf_conf.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  if (conf) {
    rec.resolvconf_conf_saved = o.backup + ".resolvconf.conf";
    if (!write_atomic(rec.resolvconf_conf_saved, *conf, mode)) {
      return fail(fmt::format("cannot save a copy of {} as {}: {}", o.resolvconf_conf,
                              rec.resolvconf_conf_saved, std::strerror(errno)));
    }
  }
  std::string updated = conf.value_or("");
  if (!updated.empty() && !updated.ends_with('\n')) updated += '\n';
  updated += kResolvconfBlock;
  if (!write_atomic(o.resolvconf_conf, updated, mode)) {
    return fail(fmt::format("cannot write {}: {}", o.resolvconf_conf, std::strerror(errno)));
  }
  done.push_back(fmt::format("{} got name_servers=127.0.0.1", o.resolvconf_conf));
  write_atomic(o.backup, to_text(rec), 0644);
  const int rc = run_program({openresolv, "-u"});
  if (rc != 0) {
    fmt::print(stderr, "{}: warning: {} -u exited with {}\n", kMe, openresolv, rc);
  }
  done.push_back(fmt::format("{} -u rewrote {}", openresolv, o.resolv));
  const auto now = read_file(o.resolv, kMaxResolvConf);
  const auto kept = resolv_conf_kept_lines(now.value_or(""));
  fmt::print(
      "{}: through {}: {}\n", kMe,
      manager == ResolvManager::kNetworkManager ? "NetworkManager and openresolv" : "openresolv",
      joined(done));
  fmt::print("{}: {} now names hourglassd (127.0.0.1); openresolv keeps in it: {}\n", kMe, o.resolv,
             joined(kept));
  if (manager == ResolvManager::kNetworkManager) {
    fmt::print(
        "{}: NetworkManager reads the drop-in when it reloads (systemctl reload "
        "NetworkManager); from then on it hands its servers and search domains to openresolv\n",
        kMe);
  }
  fmt::print("{}: --undo restores {} and {} as they were (record: {})\n", kMe, o.resolvconf_conf,
             manager == ResolvManager::kNetworkManager ? rec.nm_drop_in + " (removed)" : o.resolv,
             o.backup);
  return 0;
}

int undo_managed(const Options& o, const Record& rec) {
  int status = 0;
  auto warn = [&](const std::string& what) {
    fmt::print(stderr, "{}: {}\n", kMe, what);
    status = 1;
  };
  std::vector<std::string> done;
  if (!rec.nm_drop_in.empty() && exists(rec.nm_drop_in)) {
    const auto text = read_file(rec.nm_drop_in, 4096);
    if (text && *text == rec.nm_drop_in_text) {
      if (std::remove(rec.nm_drop_in.c_str()) == 0) {
        done.push_back("removed " + rec.nm_drop_in);
      } else {
        warn(fmt::format("cannot remove {}: {}", rec.nm_drop_in, std::strerror(errno)));
      }
    } else {
      warn(fmt::format("{} was changed since hourglass wrote it; left as it is", rec.nm_drop_in));
    }
  }
  if (!rec.resolvconf_conf.empty()) {
    const auto now = read_file(rec.resolvconf_conf, kMaxResolvConf);
    const auto saved = rec.resolvconf_conf_saved.empty()
                           ? std::optional<std::string>()
                           : read_file(rec.resolvconf_conf_saved, kMaxResolvConf);
    std::string expected = saved.value_or("");
    if (!expected.empty() && !expected.ends_with('\n')) expected += '\n';
    expected += kResolvconfBlock;
    if (now && *now == expected) {
      struct stat st = {};
      const mode_t mode =
          ::stat(rec.resolvconf_conf.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
      const bool ok = saved ? write_atomic(rec.resolvconf_conf, *saved, mode)
                            : std::remove(rec.resolvconf_conf.c_str()) == 0;
      if (ok) {
        done.push_back(rec.resolvconf_conf + " as it was");
        if (saved) std::remove(rec.resolvconf_conf_saved.c_str());
      } else {
        warn(fmt::format("cannot restore {}: {}", rec.resolvconf_conf, std::strerror(errno)));
      }
    } else {
      warn(
          fmt::format("{} was changed since hourglass added name_servers=127.0.0.1 to it; left "
                      "as it is{}",
                      rec.resolvconf_conf,
                      saved ? "; the one from before hourglass is " + rec.resolvconf_conf_saved
                            : std::string()));
    }
  }
  if (!rec.resolv_conf_saved.empty()) {
    // The file or link moved aside: back, unless something other than hourglass or openresolv
    // (which writes "# Generated by resolvconf") wrote the file since.
    const auto text = read_file(rec.resolv_conf, 512);
    const bool replaceable =
        !text || ours(rec.resolv_conf) ||
        (!rec.resolvconf.empty() && text->starts_with("# Generated by resolvconf"));
    if (!replaceable) {
      warn(fmt::format("{} was changed since hourglass; left as it is. The one it replaced is {}",
                       rec.resolv_conf, rec.resolv_conf_saved));
    } else if (std::rename(rec.resolv_conf_saved.c_str(), rec.resolv_conf.c_str()) != 0) {
      warn(fmt::format("cannot rename {} to {}: {}", rec.resolv_conf_saved, rec.resolv_conf,
                       std::strerror(errno)));
    } else {
      done.push_back(rec.resolv_conf + " as it was");
    }
  } else if (!rec.resolvconf.empty() && status == 0) {
    const int rc = run_program({rec.resolvconf, "-u"});
    if (rc != 0) fmt::print(stderr, "{}: warning: {} -u exited with {}\n", kMe, rec.resolvconf, rc);
    done.push_back(fmt::format("{} -u rewrote {} with the interfaces' servers", rec.resolvconf,
                               rec.resolv_conf));
  }
  if (status == 0) {
    std::remove(o.backup.c_str());
    fmt::print("{}: back as before hourglass: {}\n", kMe, joined(done));
    if (!rec.nm_drop_in.empty()) {
      fmt::print(
          "{}: NetworkManager takes its old setting at its next reload (systemctl reload "
          "NetworkManager)\n",
          kMe);
    }
  } else {
    fmt::print(stderr, "{}: undone: {}; the record stays in {}\n", kMe, joined(done), o.backup);
  }
  return status;
}

}  // namespace

std::vector<std::string> resolv_conf_kept_lines(std::string_view text) {
  std::vector<std::string> kept;
  text = text.substr(0, kMaxResolvConf);
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.size() > kMaxLine) continue;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
      line.remove_prefix(1);
    bool control = false;
    for (const char c : line) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) control = true;
    }
    if (control) continue;
    const auto end = line.find_first_of(" \t");
    if (end == std::string_view::npos) continue;  // a keyword without a value
    const std::string_view key = line.substr(0, end);
    if (key == "search" || key == "domain" || key == "options" || key == "sortlist") {
      kept.emplace_back(line);
    }
  }
  return kept;
}

ResolvManager resolv_conf_manager(std::string_view text, std::string_view link_target) {
  if (link_target.find("/NetworkManager/") != std::string_view::npos) {
    return ResolvManager::kNetworkManager;
  }
  // The header comment is at the top; only the first lines are looked at.
  text = text.substr(0, 1024);
  if (text.find("# Generated by NetworkManager") != std::string_view::npos) {
    return ResolvManager::kNetworkManager;
  }
  if (text.starts_with("# Generated by resolvconf")) return ResolvManager::kOpenresolv;
  return ResolvManager::kNone;
}

int use_as_system_resolver(const std::string& socket, double timeout_s,
                           const std::vector<std::string>& words) {
  Options o;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    const bool has_value = i + 1 < words.size() && !words[i + 1].empty();
    if (w == "--undo") {
      o.undo = true;
    } else if (w == "--force") {
      o.force = true;
    } else if (w == "--resolv-conf" && has_value) {
      o.resolv = words[++i];
    } else if (w == "--backup" && has_value) {
      o.backup = words[++i];
    } else if (w == "--resolvconf-conf" && has_value) {
      o.resolvconf_conf = words[++i];
    } else if (w == "--resolvconf" && has_value) {
      o.resolvconf = words[++i];
    } else if (w == "--nm-conf-dir" && has_value) {
      o.nm_dir = words[++i];
    } else {
      fmt::print(stderr,
                 "{}: unexpected '{}'; usage: use-as-system-resolver [--undo] [--force] "
                 "[--resolv-conf PATH] [--backup PATH] [--resolvconf-conf PATH] [--resolvconf "
                 "PROGRAM] [--nm-conf-dir DIR]\n",
                 kMe, w);
      return 2;
    }
  }
  if (o.undo) {
    if (!exists(o.backup)) {
      fmt::print("{}: nothing to undo: {} does not exist\n", kMe, o.backup);
      return 0;
    }
    if (!is_symlink(o.backup)) {
      const auto text = read_file(o.backup, 16 * 1024);
      if (text && text->starts_with(kManagedMark)) {
        const auto rec = parse_record(*text);
        if (!rec) {
          fmt::print(stderr, "{}: {} is not a record this command wrote; nothing changed\n", kMe,
                     o.backup);
          return 1;
        }
        return undo_managed(o, *rec);
      }
    }
    if (exists(o.resolv) && !ours(o.resolv)) {
      fmt::print(stderr,
                 "{}: {} was changed since hourglass wrote it; left as it is. The file it "
                 "replaced is {}\n",
                 kMe, o.resolv, o.backup);
      return 1;
    }
    if (std::rename(o.backup.c_str(), o.resolv.c_str()) != 0) {
      fmt::print(stderr, "{}: cannot rename {} to {}: {}\n", kMe, o.backup, o.resolv,
                 std::strerror(errno));
      return 1;
    }
    fmt::print("{}: {} is back as it was before hourglass\n", kMe, o.resolv);
    return 0;
  }
  if (exists(o.backup)) {
    fmt::print(stderr,
               "{}: {} already exists: hourglass is the system resolver already (--undo goes "
               "back)\n",
               kMe, o.backup);
    return 1;
  }
  if (!o.force) {
    const Reply r = exchange(socket, "stats", timeout_s);
    if (r.status != 0) {
      fmt::print(stderr,
                 "{}: hourglassd does not answer on {} ({}); start it first (systemctl start "
                 "hourglassd), or give --force\n",
                 kMe, socket, r.status == 2 ? r.error : r.text);
      return 1;
    }
  }
  return switch_over(o);
}

}  // namespace hg::ctl
