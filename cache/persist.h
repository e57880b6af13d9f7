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
// Before a byte is read, load_file() checks the file itself, as ssh checks a key file: it is
// opened with O_NOFOLLOW (a symbolic link as the last component is refused: whoever can plant
// one could point it anywhere) and O_NONBLOCK (a FIFO at the path cannot wedge the start),
// and fstat() of the opened descriptor must show a regular file owned by the user hourglassd
// runs as, writable by no group or other user, no larger than the cache it is loaded into
// (`cache-size`: a file a cache of that size wrote is smaller). Then the 32-byte header is
// read and checked against the file's size; only then is the rest read. So a sparse 1 TiB
// file, 512 MiB of zeros or a FIFO cost one line and no memory. A file whose header carries a
// newer format version is left alone: this version loads and saves `PATH.v1` instead
// (fallback_path()), so a rollback never destroys the newer version's file.
//
// Insert times are bounded by the clock: a file saved more than kFutureSkew after now, or an
// entry inserted after the file was saved, is rejected (a forged or clock-confused file
// would otherwise pin answers that never count down).
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
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/clock.h"
#include "cache/entry.h"

namespace hg::cache::persist {

/// Wall-clock time, milliseconds since the Unix epoch.
using WallTime = std::chrono::time_point<std::chrono::system_clock, Millis>;

constexpr uint32_t kFormatVersion = 1;
/// How far ahead of the clock a file's save time may lie (clock adjustments between a save
/// and a start); entries inserted up to this far ahead count as inserted now.
constexpr Millis kFutureSkew{5000};
constexpr std::size_t kHeaderSize = 32;
constexpr std::size_t kTrailerSize = 4;
/// Per entry, before its message: insert time, key flags, message length.
constexpr std::size_t kEntryHeaderSize = 8 + 1 + 2;

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
  bool newer = false;       ///< Rejected because a newer hourglass wrote it: leave it alone
  std::size_t in_file = 0;  ///< entries the file holds
  std::size_t loaded = 0;   ///< inserted into the cache
  std::size_t expired = 0;  ///< past their stale window now: skipped
  std::size_t refused = 0;  ///< the cache refused them (the TTL policy now makes them 0, ...)
  WallTime saved_at{};      ///< when the file was written (Loaded only)
};

/// Validates `file` and inserts its entries into `cache` (see the top of this file).
/// Never throws on bad input; a Rejected file inserts nothing.
LoadReport load(Cache& cache, std::span<const uint8_t> file, Time now, WallTime now_wall);

/// What is wrong with a file of `file_size` bytes that starts with `header` (its first
/// kHeaderSize bytes, or all of it when shorter): no magic, a newer or unknown version, or a
/// payload length that does not match the size. nullopt when the rest is worth reading.
/// load() applies the same checks; load_file() runs this before it reads the rest.
std::optional<LoadReport> check_header(std::span<const uint8_t> header, uint64_t file_size);

/// Where this version saves when `path` holds a newer format: `path` + ".v1".
std::string fallback_path(const std::string& path);

struct FileRules {
  /// The largest file worth reading: the cache's byte budget (cache-size).
  uint64_t max_bytes = UINT64_MAX;
  /// The owner the file must have; normally geteuid().
  uint32_t owner = 0;
};
/// The rules for loading into `cache` as this process: max_bytes from its settings, the
/// effective user as the owner.
FileRules rules_for(const Cache& cache);

/// Checks the file at `path` (see the top of this file), reads it and load()s it; Missing
/// when it does not exist. Never blocks on a FIFO, never follows a symbolic link at the end
/// of `path`, and allocates at most rules.max_bytes.
LoadReport load_file(Cache& cache, const std::string& path, Time now, WallTime now_wall,
                     const FileRules& rules);
/// The same with rules_for(cache).
LoadReport load_file(Cache& cache, const std::string& path, Time now, WallTime now_wall);

struct SaveReport {
  bool ok = false;
  std::string error{};  ///< !ok: what failed (the path is named), one line
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::string path{};      ///< where it was written (fallback_path() when diverted)
  std::string diverted{};  ///< non-empty: why not to the path asked for (a newer file is there)
};

/// Writes the cache's entries to `path` atomically: a temporary file in the same directory
/// (mode 0600 whatever the umask: the cache says which names were asked), fsync, rename over
/// `path`, fsync the directory. A reader never sees a half-written file, and a crash leaves
/// the old one. When `path` holds a file of a newer format version, that file is left as it
/// is and the save goes to fallback_path(path) instead (`diverted` says so).
SaveReport save_file(const Cache& cache, const std::string& path, Time now, WallTime now_wall);
/// The same for entries already taken with Cache::snapshot() (a periodic save takes the
/// snapshot and writes it on its own thread).
SaveReport save_entries(std::vector<std::shared_ptr<const Entry>> entries, Seconds stale_max,
                        const std::string& path, Time now, WallTime now_wall);

}  // namespace hg::cache::persist
