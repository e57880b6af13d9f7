// Warm restart: loading the cache file at start and saving it at stop or on request.
#include "resolver/warm_restart.h"
#include "resolver/log.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hg::resolver {

namespace persist = cache::persist;

std::size_t load_cache_file(Shared& shared, MonoTime now) {
  const std::string& path = shared.config.cache_file;
  if (path.empty()) return 0;
  const auto wall = persist::wall_now();
  const auto started = std::chrono::steady_clock::now();
  const persist::LoadReport r = persist::load_file(shared.cache, path, now, wall);
  const auto took =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started);
  switch (r.status) {
    case persist::LoadReport::Status::Missing:
      log::print(log::Level::Info, "cache file {}: none yet; starting with an empty cache", path);
      break;
    case persist::LoadReport::Status::Rejected:
      log::print(log::Level::Warning, "warning: cache file {}: {}; starting with an empty cache",
                 path, r.problem);
      break;
    case persist::LoadReport::Status::Loaded: {
      // saved_at comes from the file: subtract without overflowing.
      int64_t ago_ms = 0;
      if (__builtin_sub_overflow(wall.time_since_epoch().count(),
                                 r.saved_at.time_since_epoch().count(), &ago_ms))
        ago_ms = 0;
      const auto ago = std::chrono::duration_cast<std::chrono::seconds>(Millis{ago_ms});
      log::print(log::Level::Info,
                 "cache file {}: loaded {} of {} answers in {:.1f} ms (saved {}s ago; {} past "
                 "their stale window, {} refused)",
                 path, r.loaded, r.in_file, took.count(), ago.count(), r.expired, r.refused);
      break;
    }
  }
  // Say now, not at the first stop, when the file could never be written.
  const std::size_t slash = path.rfind('/');
  std::string dir = ".";
  if (slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  if (::access(dir.c_str(), W_OK) != 0) {
    log::print(log::Level::Warning,
               "warning: cache file {}: cannot write in {} ({}); it will not be saved", path, dir,
               std::strerror(errno));
  }
  return r.loaded;
}

persist::SaveReport save_cache_file(Shared& shared, MonoTime now) {
  return persist::save_file(shared.cache, shared.config.cache_file, now, persist::wall_now());
}

}  // namespace hg::resolver
