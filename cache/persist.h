// Persist: the cache file behind warm restarts (`--cache-file PATH`).
//
// hourglassd writes every cached answer to the file when it stops (SIGTERM, SIGINT) and on
// `hourglass-ctl save`, and reads it back at start, before it serves. Each answer is stored
// with the wall-clock time it was inserted, because the cache's own clock is monotonic and
// starts again at every boot: at load, an entry inserted W ms of wall time ago gets the
// monotonic insert time now − W, so it is fresh, stale or gone exactly as if the daemon had
// never stopped. A wall time in the future (the clock was set back) counts as "just now".
//
// File format, version 1 (every integer big-endian):
//
//   offset  size  field
//   0       8     magic: 0x89 'H' 'G' 'C' 'A' 'C' 'H' 'E'
//   8       4     format version (1)
//   12      4     entry count
//   16      8     saved at: wall-clock milliseconds since the Unix epoch
//   24      8     payload length P (bytes of entries that follow)
//   32      P     entries, one after another:
//                   8  inserted at: wall-clock milliseconds since the Unix epoch (signed)
//                   1  key flags: bit 0 DO, bit 1 CD (other bits must be 0)
//                   2  message length M (12 to 65535)
//                   M  the answer as a DNS message: ID 0, QR=1, RA=1, AD as stored, the
//                      stored RCODE, one question (the lowercased key name, type, class),
//                      then the answer/authority/additional records exactly as the cache
//                      holds them, each TTL field holding the record's stored TTL (its TTL
//                      at insert, after the TTL policy), not the time left
//   32+P    4     CRC-32C (Castagnoli, reflected 0x82F63B78, as in iSCSI and ext4) of every
//                 byte from offset 8 up to here
//
// Loading trusts nothing: the magic, version, lengths and checksum are checked first; then
// every entry's message is parsed by wire/ (strict mode) and must be a one-question response
// with no OPT record; any structural fault rejects the whole file. A file that passes is
// then inserted entry by entry the way the resolver inserts an upstream answer: re-encoded
// by wire/'s writer (so no compression pointer can point into a header or TTL field) and
// offered to Cache::insert(), which applies the TTL policy in force now (cache-min-ttl,
// cache-max-ttl, negative-max-ttl, ttl-caps) and refuses what it would refuse from an
// upstream. Entries already past their stale window are skipped. The failure cache and the
// S3-FIFO queues are not saved: loaded entries start as new ones.
//
// Must not include anything from resolver/.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/clock.h"
#include "cache/entry.h"

namespace hg::cache::persist {

/// Wall-clock time, milliseconds since the Unix epoch.
using WallTime = std::chrono::time_point<std::chrono::system_clock, Millis>;

inline WallTime wall_now() noexcept {
  return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
}

constexpr uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderSize = 32;
constexpr std::size_t kTrailerSize = 4;
/// Per entry, before its message: insert time, key flags, message length.
constexpr std::size_t kEntryHeaderSize = 8 + 1 + 2;

/// CRC-32C of `bytes`, continuing from `crc` (0 to start).
uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0) noexcept;

/// Monotonic insert time of an entry inserted at `inserted_wall`, as seen at (`now`,
/// `now_wall`): now − (now_wall − inserted_wall), and `now` when inserted_wall lies ahead.
Time to_monotonic(WallTime inserted_wall, Time now, WallTime now_wall) noexcept;
/// The reverse, for saving: now_wall − (now − inserted_at).
WallTime to_wall(Time inserted_at, Time now, WallTime now_wall) noexcept;

/// The file's bytes for `entries` (entries past `stale_max` at `now` are left out; the
/// rest are written oldest first, so a smaller cache that loads the file keeps the newest).
std::vector<uint8_t> encode(std::vector<std::shared_ptr<const Entry>> entries, Time now,
                            WallTime now_wall, Seconds stale_max);

struct LoadReport {
  enum class Status : uint8_t {
    Loaded,    ///< the file was valid (some entries may have been skipped)
    Missing,   ///< no file at the path: a first start
    Rejected,  ///< unreadable, foreign, truncated, corrupt or a newer version: nothing loaded
  };
  Status status = Status::Missing;
  std::string problem{};    ///< Rejected: what is wrong, one line without the path
  std::size_t in_file = 0;  ///< entries the file holds
  std::size_t loaded = 0;   ///< inserted into the cache
  std::size_t expired = 0;  ///< past their stale window now: skipped
  std::size_t refused = 0;  ///< the cache refused them (the TTL policy now makes them 0, ...)
  WallTime saved_at{};      ///< when the file was written (Loaded only)
};

/// Validates `file` and inserts its entries into `cache` (see the top of this file).
/// Never throws on bad input; a Rejected file inserts nothing.
LoadReport load(Cache& cache, std::span<const uint8_t> file, Time now, WallTime now_wall);
/// Reads the file at `path` and load()s it; Missing when it does not exist.
LoadReport load_file(Cache& cache, const std::string& path, Time now, WallTime now_wall);

struct SaveReport {
  bool ok = false;
  std::string error{};  ///< !ok: what failed (the path is named), one line
  std::size_t entries = 0;
  std::size_t bytes = 0;
};

/// Writes the cache's entries to `path` atomically: a temporary file in the same directory
/// (mode 0600: the cache says which names were asked), fsync, rename over `path`, fsync the
/// directory. A reader never sees a half-written file, and a crash leaves the old one.
SaveReport save_file(const Cache& cache, const std::string& path, Time now, WallTime now_wall);

}  // namespace hg::cache::persist
