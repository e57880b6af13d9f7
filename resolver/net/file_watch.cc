#include "resolver/net/file_watch.h"

#include <limits.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

namespace hg::resolver {

namespace {

constexpr uint32_t kMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                           IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

std::pair<std::string, std::string> split_path(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  if (slash == 0) return {"/", path.substr(1)};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

Checked<std::unique_ptr<FileWatch>> FileWatch::open(EventLoop& loop, Changed changed) {
  using R = Checked<std::unique_ptr<FileWatch>>;
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0)
    return R::failure(std::string("cannot watch files (inotify_init1): ") + std::strerror(errno) +
                      "; raise fs.inotify.max_user_instances");
  std::unique_ptr<FileWatch> w(new FileWatch(loop, fd, std::move(changed)));
  if (!loop.add_fd(fd, Interest::Read, [p = w.get()](FdEvents) { p->on_readable(); })) {
    return R::failure(std::string("cannot watch files: ") + std::strerror(errno));
  }
  return w;
}

FileWatch::~FileWatch() {
  loop_.remove_fd(fd_);
  ::close(fd_);
}

void FileWatch::watch(const std::string& dir, const std::string& base, const std::string& path,
                      std::vector<std::string>& problems) {
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) {
    const int wd = ::inotify_add_watch(fd_, dir.c_str(), kMask | IN_ONLYDIR);
    if (wd < 0) {
      problems.push_back("cannot watch " + dir + " for changes to " + path + ": " +
                         std::strerror(errno) + "; changes need SIGHUP");
      return;
    }
    it = dirs_.emplace(dir, wd).first;
  }
  files_.emplace(std::make_pair(it->second, base), path);
}

std::vector<std::string> FileWatch::set_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> problems;
  for (const auto& [dir, wd] : dirs_)
    ::inotify_rm_watch(fd_, wd);
  dirs_.clear();
  files_.clear();
  paths_ = paths;
  for (const std::string& path : paths) {
    const auto [dir, base] = split_path(path);
    watch(dir, base, path, problems);
    // A symbolic link: the file it leads to changes in its own directory.
    std::error_code ec;
    if (std::filesystem::is_symlink(path, ec)) {
      const auto target = std::filesystem::canonical(path, ec);
      if (!ec) {
        const auto [tdir, tbase] = split_path(target.string());
        watch(tdir, tbase, path, problems);
      }
    }
  }
  return problems;
}

void FileWatch::on_readable() {
  alignas(inotify_event) char buf[16 * (sizeof(inotify_event) + NAME_MAX + 1)];
  std::set<std::string> hit;
  bool all = false;
  while (true) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if ((ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF)) != 0) {
        all = true;  // lost events, or a watched directory went away: look at everything
        continue;
      }
      if (ev->len == 0) continue;
      const std::string name(ev->name, ::strnlen(ev->name, ev->len));
      auto [b, e] = files_.equal_range({ev->wd, name});
      for (auto it = b; it != e; ++it)
        hit.insert(it->second);
    }
  }
  if (all) hit.insert(paths_.begin(), paths_.end());
  for (const std::string& p : hit)
    changed_(p);
}

}  // namespace hg::resolver
