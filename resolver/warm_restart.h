// Warm restart: the daemon's side of `--cache-file PATH` (the format is cache/persist.h).
//
// At start, before any listener is bound, the file is loaded into the shared cache and one
// line says what happened: how many answers came back, or — for a file that is unreadable,
// foreign, truncated, corrupt or from a newer version — one "warning:" line, after which the
// daemon starts with an empty cache (a bad file never stops it from starting). A missing
// file is a first start. At a graceful stop (SIGTERM, SIGINT), after the last query was
// answered, and on `hourglass-ctl save`, the cache is written back atomically.
#pragma once

#include "cache/persist.h"
#include "resolver/event_loop.h"
#include "resolver/query_engine.h"

namespace hg::resolver {

/// Loads shared.config.cache_file (if set) into shared.cache and prints its line to stderr.
/// Returns the number of answers loaded.
std::size_t load_cache_file(Shared& shared, MonoTime now);

/// Writes shared.cache to shared.config.cache_file. Precondition: cache_file is set.
cache::persist::SaveReport save_cache_file(Shared& shared, MonoTime now);

}  // namespace hg::resolver
