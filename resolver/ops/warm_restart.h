// Warm restart: the daemon's side of `--cache-file PATH` (the format is cache/persist.h).
//
// At start, before any listener is bound, the file is loaded into the shared cache and one
// line says what happened: how many answers came back, or — for a file that is unreadable,
// foreign, planted (a symbolic link, a FIFO, another user's, writable by others), too large,
// truncated, corrupt or from the future — one "warning:" line, after which the daemon starts
// with an empty cache (a bad file never stops it from starting). A missing file is a first
// start. A file of a newer format version is left as it is for the hourglassd that wrote it:
// this one says so and loads and saves PATH.v1 instead (cache::persist::fallback_path).
//
// The cache is written back atomically at a graceful stop (SIGTERM, SIGINT), after the last
// query was answered; on `hourglass-ctl save`; and every --cache-save-interval by
// PeriodicSaver, so a crash (kill -9, an OOM kill, a watchdog abort) loses at most that much.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "cache/persist.h"
#include "resolver/net/event_loop.h"
#include "resolver/query/shared.h"

namespace hg::resolver {

/// Loads shared.config.cache_file (if set) into shared.cache and prints its line to stderr.
/// Returns the number of answers loaded.
std::size_t load_cache_file(Shared& shared, MonoTime now);

/// Writes shared.cache to shared.config.cache_file (or, when a newer hourglassd's file is
/// there, to its fallback path: the report's `path` and `diverted` say so). Precondition:
/// cache_file is set.
cache::persist::SaveReport save_cache_file(Shared& shared, MonoTime now);

/// --cache-save-interval: a thread of its own that, every interval, takes a snapshot of the
/// cache (Cache::snapshot_in_steps(): a shard's shared lock for 1024 entry slots at a time,
/// 0.03-0.1 ms; lookups share the lock and go on, an insert into that shard — and the
/// lookups queued behind it — waits one step at most) and encodes, writes, fsyncs and
/// renames the file off every worker's thread. An
/// interval in which nothing was inserted or removed writes nothing. Failures are logged
/// once per change of the error, and the first save after a failure says it works again.
class PeriodicSaver {
 public:
  /// Starts the thread; the first save comes one interval from now.
  PeriodicSaver(Shared& shared, std::chrono::milliseconds interval);
  /// Stops and joins (a save in progress finishes first).
  ~PeriodicSaver();
  PeriodicSaver(const PeriodicSaver&) = delete;
  PeriodicSaver& operator=(const PeriodicSaver&) = delete;
  /// Saves written so far (for tests and the log).
  uint64_t saves() const;
  /// One tick of the thread: saves unless nothing was inserted or removed since the last
  /// save (or since construction, which follows the load); true when a file was written.
  /// Public for tests; the thread calls it once per interval.
  bool save_if_changed();

 private:
  void run();

  Shared& shared_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;      // guarded by mu_
  uint64_t saves_ = 0;     // guarded by mu_
  uint64_t last_inserts_;  // the cache's insert count and size at the last save (or load)
  std::size_t last_entries_;
  std::string last_error_;  // the last failure logged, "" while saves work
  std::thread thread_;      // last: started once the rest is set
};

}  // namespace hg::resolver
