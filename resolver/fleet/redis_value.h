// The fleet's shared-cache formats, without any Redis client: how a cache key becomes a Redis
// key, how an answer becomes a Redis value and back, and the control messages instances send
// each other over pub/sub. Everything read back from Redis is untrusted (another program, an
// older or newer hourglass, or a person with redis-cli may have written it), so every decoder
// here returns a status and never crashes; tests/fuzz/redis_value_fuzz.cc runs them.
//
// A value (all integers big-endian):
//
//   "HGL2" | version 1 | flags 0 | inserted_ms u64 | qtype u16 | qclass u16 | key flags u8 |
//   qname length u8 | qname (wire, lowercased) | message length u16 | message | CRC-32C u32
//
// inserted_ms is the wall clock (milliseconds since the Unix epoch) at which the first
// instance received the answer: every instance that reads the value counts the record TTLs
// down from that same instant. The message is the normalised upstream answer (re-encoded by
// our own writer, no OPT). The CRC-32C (Castagnoli, the cache file's checksum) covers every
// byte before it. It stops damage, not a forger: flags bit 0 (kValueAuthenticated) says a
// 32-byte HMAC-SHA256 tag follows the CRC (fleet_auth.h, --fleet-key-file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/key.h"
#include "wire/message.h"
#include "wire/name.h"

namespace hg::resolver::fleet {

inline constexpr uint8_t kValueVersion = 1;
/// Flags bit 0: a kTagSize-byte tag follows the CRC (fleet_auth.h checks it).
inline constexpr uint8_t kValueAuthenticated = 1;
inline constexpr std::size_t kValueTagSize = 32;

/// "PREFIXc:NAME TYPE CLASS FLAGS", e.g. "hg:c:www.example.com. 1 1 0". NAME is the
/// presentation form of the lowercased name, in which a space is always escaped (\032), so
/// the first space ends it; FLAGS is DO + 2 * CD.
std::string cache_key(std::string_view prefix, const cache::CacheKey& key);
/// "PREFIXl:..." — the single-flight lock of the same key.
std::string lock_key(std::string_view prefix, const cache::CacheKey& key);
/// "PREFIXd:..." — the channel on which the lock holder publishes the value.
std::string done_channel(std::string_view prefix, const cache::CacheKey& key);
/// "PREFIXfleet" — flush and ttl-cap messages to every instance.
std::string fleet_channel(std::string_view prefix);
/// "PREFIXttl-caps" — the hash of fleet-wide TTL caps (field: zone, value: seconds).
std::string ttl_caps_key(std::string_view prefix);

/// The name part of a key made by cache_key(), when `redis_key` is one (for flush-zone's
/// exact check of the keys a SCAN pattern found).
std::optional<wire::Name> name_of_cache_key(std::string_view prefix, std::string_view redis_key);

/// A SCAN MATCH pattern that finds the cache keys of `name` (every type, class and flag), or
/// with `zone` true those of `name` and every name below it (a superset: check each key with
/// name_of_cache_key), or of everything when `name` is null.
std::string scan_pattern(std::string_view prefix, const wire::Name* name, bool zone);

/// Builds a value. Empty when the message is larger than 65535 bytes. With `authenticated`
/// the flag is set and kValueTagSize zero bytes are appended for fleet::seal_value to fill.
std::vector<uint8_t> encode_value(const cache::CacheKey& key, int64_t inserted_ms,
                                  std::span<const uint8_t> message, bool authenticated = false);

enum class ValueStatus : uint8_t {
  Ok,
  Foreign,      ///< not our magic: some other program's value
  BadVersion,   ///< our magic, a version this build does not read
  Corrupt,      ///< lengths or CRC do not add up
  KeyMismatch,  ///< a valid value, but for another key (misplaced or a hash-less collision)
  BadMessage,   ///< the embedded message does not parse, is not a response, or asks
                ///< another question
};
const char* to_string(ValueStatus s) noexcept;

struct DecodedValue {
  ValueStatus status = ValueStatus::Corrupt;
  int64_t inserted_ms = 0;
  std::span<const uint8_t> message{};  ///< points into the input
  bool authenticated = false;          ///< has a tag (not checked here: fleet::open_value)
};

/// Checks and unpacks a value read for `key`. On Ok, `parsed` holds the message parsed
/// strictly (every offset valid, as cache::Cache::insert requires), QR=1, exactly one
/// question equal (case-insensitively) to the key's. The tag of an authenticated value is
/// skipped, not verified: callers with a key run fleet::open_value first.
DecodedValue decode_value(std::span<const uint8_t> value, const cache::CacheKey& key,
                          wire::Message& parsed);

/// How old a value is at wall-clock `now_ms`: never negative (a peer's clock ahead of ours
/// counts as "just inserted") and never more than `cap`.
int64_t value_age_ms(int64_t inserted_ms, int64_t now_ms, int64_t cap) noexcept;

// --- fleet control messages (pub/sub on fleet_channel) --------------------------------------
//
//   "v1 SENDER flush-all" | "v1 SENDER flush NAME" | "v1 SENDER flush-zone NAME" |
//   "v1 SENDER ttl-cap NAME SECONDS" | "v1 SENDER ttl-cap-clear NAME"
//
// SENDER is the sending instance's random id, so an instance ignores its own messages (it
// has applied the change already).

enum class FleetOp : uint8_t { FlushAll, FlushName, FlushZone, TtlCap, TtlCapClear };

struct FleetMessage {
  FleetOp op = FleetOp::FlushAll;
  std::string sender{};
  wire::Name name{};
  uint32_t seconds = 0;
};

std::string encode_fleet_message(const FleetMessage& m);
/// nullopt for anything that is not exactly one of the forms above.
std::optional<FleetMessage> decode_fleet_message(std::string_view text);

}  // namespace hg::resolver::fleet
