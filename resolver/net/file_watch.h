// FileWatch: tells the daemon, on its event loop, that a file it reads (a hosts file, the
// upstream file) may have changed — through inotify on the file's directory, so a file
// replaced by rename (what resolvconf, NetworkManager and most editors do), created after
// start-up, or deleted is seen as well as one written in place. When the path is a symbolic
// link (/etc/resolv.conf often is), the directory of the file it points to is watched too.
//
// It only says "look again": the caller re-reads the file, after a short pause so that a
// writer's several steps end in one reload (Server uses 50 ms).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "resolver/checked.h"
#include "resolver/net/event_loop.h"

namespace hg::resolver {

class FileWatch {
 public:
  /// `changed` runs on `loop` with the path (as given to set_paths) of a file that may
  /// have changed.
  using Changed = std::function<void(const std::string& path)>;
  static Checked<std::unique_ptr<FileWatch>> open(EventLoop& loop, Changed changed);
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  /// Watches these files from now on (replacing the previous list). A directory that cannot
  /// be watched is reported in the returned lines and skipped.
  std::vector<std::string> set_paths(const std::vector<std::string>& paths);

 private:
  FileWatch(EventLoop& loop, int fd, Changed changed)
      : loop_(loop), fd_(fd), changed_(std::move(changed)) {}
  void on_readable();
  void watch(const std::string& dir, const std::string& base, const std::string& path,
             std::vector<std::string>& problems);

  EventLoop& loop_;
  int fd_;
  Changed changed_;
  std::vector<std::string> paths_;
  std::map<std::string, int> dirs_;  // directory -> watch descriptor
  /// (watch descriptor, file name) -> the paths to report.
  std::multimap<std::pair<int, std::string>, std::string> files_;
};

}  // namespace hg::resolver
