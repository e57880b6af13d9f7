// Warm restart: loading the cache file at start, saving it at stop, on request and
// periodically.
#include "resolver/ops/warm_restart.h"
#include "base/wall_clock.h"
#include "resolver/log.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hg::resolver {

namespace persist = cache::persist;

namespace {

// Entry slots copied per shared lock by a periodic save's snapshot: about 0.1 ms of copying.
constexpr std::size_t kSnapshotStep = 1024;

// One file's line: what was loaded, or why nothing was. Returns the report.
// `fallback`: this is already PATH.v1, whose own newer version has nowhere else to go.
persist::LoadReport load_one(Shared& shared, const std::string& path, MonoTime now,
                             persist::WallTime wall, bool fallback) {
  const auto started = std::chrono::steady_clock::now();
  persist::LoadReport r = persist::load_file(shared.cache, path, now, wall);
  const auto took =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started);
  switch (r.status) {
    case persist::LoadReport::Status::Missing:
      log::print(log::Level::Info, "cache file {}: none yet; starting with an empty cache", path);
      break;
    case persist::LoadReport::Status::Rejected:
      if (r.newer && !fallback) {
        // The fallback's own line follows, saying what was loaded.
        log::print(log::Level::Warning,
                   "warning: cache file {}: {}; left as it is for the hourglassd that wrote it: "
                   "this one loads and saves {} instead",
                   path, r.problem, persist::fallback_path(path));
        break;
      }
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
  return r;
}

std::string saved_where(const persist::SaveReport& r) {
  if (r.diverted.empty()) return r.path;
  return r.path + " (" + r.diverted + ")";
}

}  // namespace

std::size_t load_cache_file(Shared& shared, MonoTime now) {
  const std::string& path = shared.config.cache_file;
  if (path.empty()) return 0;
  const auto wall = base::wall_now<Millis>();
  persist::LoadReport r = load_one(shared, path, now, wall, false);
  std::string written = path;
  if (r.newer) {
    written = persist::fallback_path(path);
    r = load_one(shared, written, now, wall, true);
  }
  // Say now, not at the first stop, when the file could never be written.
  const std::size_t slash = written.rfind('/');
  std::string dir = ".";
  if (slash != std::string::npos) dir = slash == 0 ? "/" : written.substr(0, slash);
  if (::access(dir.c_str(), W_OK) != 0) {
    log::print(log::Level::Warning,
               "warning: cache file {}: cannot write in {} ({}); it will not be saved", written,
               dir, std::strerror(errno));
  }
  return r.loaded;
}

persist::SaveReport save_cache_file(Shared& shared, MonoTime now) {
  return persist::save_file(shared.cache, shared.config.cache_file, now, base::wall_now<Millis>());
}

// --- PeriodicSaver ----------------------------------------------------------------------------

PeriodicSaver::PeriodicSaver(Shared& shared, std::chrono::milliseconds interval)
    : shared_(shared), interval_(interval) {
  const cache::CacheStats st = shared_.cache.stats();
  last_inserts_ = st.inserts;
  last_entries_ = st.entries;
  thread_ = std::thread([this] { run(); });
}

PeriodicSaver::~PeriodicSaver() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t PeriodicSaver::saves() const {
  std::lock_guard lock(mu_);
  return saves_;
}

void PeriodicSaver::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (cv_.wait_for(lock, interval_, [this] { return stop_; })) return;
    lock.unlock();
    save_if_changed();
    lock.lock();
  }
}

bool PeriodicSaver::save_if_changed() {
  // Nothing inserted and nothing removed since the last save: the file on disk already holds
  // this cache (its entries' ages follow from their insert times).
  const cache::CacheStats st = shared_.cache.stats();
  if (st.inserts == last_inserts_ && st.entries == last_entries_) return false;
  const auto t0 = std::chrono::steady_clock::now();
  const MonoTime now = std::chrono::time_point_cast<Millis>(t0);
  // The snapshot holds every entry by shared_ptr: what is evicted meanwhile stays valid (and
  // in memory) until the file is written. Taken kSnapshotStep slots at a time, so no shard's
  // lock is held for longer than copying that many pointers.
  const persist::SaveReport r = persist::save_entries(
      shared_.cache.snapshot_in_steps(kSnapshotStep), shared_.cache.settings().stale_max,
      shared_.config.cache_file, now, base::wall_now<Millis>());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok) {
    if (r.error != last_error_) {
      log::print(log::Level::Warning,
                 "warning: cache file {}: periodic save failed: {}; retrying every {} s",
                 shared_.config.cache_file, r.error, interval_.count() / 1000);
      last_error_ = r.error;
    }
    return false;
  }
  last_inserts_ = st.inserts;
  last_entries_ = st.entries;
  uint64_t n = 0;
  {
    std::lock_guard lock(mu_);
    n = ++saves_;
  }
  if (n == 1 || !last_error_.empty()) {
    log::print(log::Level::Info,
               "cache file: {}saved {} answers to {} ({} bytes, {:.1f} ms); saved every {} s while "
               "the cache changes, failures logged",
               last_error_.empty() ? "periodic save: " : "periodic save works again: ", r.entries,
               saved_where(r), r.bytes, ms, interval_.count() / 1000);
  }
  last_error_.clear();
  return true;
}

}  // namespace hg::resolver
