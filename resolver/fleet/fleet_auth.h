// The authenticated fleet (--fleet-key-file): with a secret shared by every instance, each
// thing an instance reads back from Redis carries an HMAC-SHA256 tag (OpenSSL libcrypto), and
// whatever does not verify is ignored and counted, never served or obeyed:
//
//   values (PREFIXc:KEY) and the lock holder's hand-over (published on PREFIXd:KEY, the same
//   bytes): flags bit 0 set and a 32-byte tag after the CRC, over the Redis key name the value
//   is stored under and every byte before the tag (redis_value.h);
//   fleet messages (PREFIXfleet): "s1 TIME_MS SEQ TAG_HEX " + the unauthenticated form, the
//   tag over the channel name, TIME_MS, SEQ and that form; refused when older than
//   kMaxMessageAgeMs, more than kMaxClockSkewMs ahead, or not newer than the sender's last
//   (ReplayGuard);
//   fleet TTL caps (the hash PREFIXttl-caps): "SECONDS TAG_HEX", the tag over the hash's name,
//   the field (the zone) and SECONDS.
//
// Why a MAC and not an AEAD: nothing here is secret (DNS answers, zone names and TTLs); what
// must not happen is that someone with write access to Redis makes an instance serve or obey
// data no instance wrote. A MAC proves that and leaves values readable with redis-cli.
// Key separation: the secret is never used directly; HKDF-SHA256 derives one key per purpose
// (values, fleet messages, ttl caps), so a tag made for one purpose never verifies as another.
//
// FleetAuth keeps OpenSSL contexts and is not thread-safe: every worker's FleetCache owns one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct evp_mac_ctx_st;

namespace hg::resolver::fleet {

inline constexpr std::size_t kTagSize = 32;         ///< HMAC-SHA256, not truncated
inline constexpr std::size_t kMinSecretSize = 32;   ///< bytes of the key file's first line
inline constexpr int64_t kMaxClockSkewMs = 2000;    ///< how far ahead a peer's clock may be
inline constexpr int64_t kMaxMessageAgeMs = 30000;  ///< fleet messages older are refused

enum class Purpose : uint8_t { Value = 0, Message = 1, TtlCap = 2 };

/// HMAC-SHA256 with one key and one OpenSSL context, reused for every tag.
class Hmac {
 public:
  using Tag = std::array<uint8_t, kTagSize>;
  /// nullptr when OpenSSL cannot set it up (no SHA-256 in the loaded providers).
  static std::unique_ptr<Hmac> create(std::span<const uint8_t> key);
  ~Hmac();
  Hmac(const Hmac&) = delete;
  Hmac& operator=(const Hmac&) = delete;

  /// The tag over the concatenation of `parts`.
  Tag tag(std::span<const std::span<const uint8_t>> parts);
  /// Whether a tag() since the last clear_failed() could not be computed.
  bool failed() const noexcept { return failed_; }
  void clear_failed() noexcept { failed_ = false; }

 private:
  Hmac() = default;
  evp_mac_ctx_st* ctx_ = nullptr;
  std::vector<uint8_t> key_{};
  bool failed_ = false;
};

class FleetAuth {
 public:
  /// Derives the per-purpose keys from `secret` (at least kMinSecretSize bytes). nullptr
  /// and `error` set when it is too short or OpenSSL fails.
  static std::unique_ptr<FleetAuth> create(std::span<const uint8_t> secret, std::string* error);

  /// The tag over `fields`, each preceded by its length (4 bytes, big-endian), so neither a
  /// field's end nor its purpose can be moved.
  Hmac::Tag tag(Purpose p, std::initializer_list<std::span<const uint8_t>> fields);
  bool verify(Purpose p, std::initializer_list<std::span<const uint8_t>> fields,
              std::span<const uint8_t> tag);

 private:
  std::array<std::unique_ptr<Hmac>, 3> macs_{};
};

std::span<const uint8_t> bytes(std::string_view s) noexcept;
std::string to_hex(std::span<const uint8_t> b);
/// Exactly 2 * out.size() lowercase or uppercase hex digits, else false.
bool from_hex(std::string_view s, std::span<uint8_t> out) noexcept;

// --- values ----------------------------------------------------------------------------------

enum class AuthStatus : uint8_t {
  Ok,
  Unsigned,   ///< no tag (written without a key, or by hand)
  Forged,     ///< a tag that does not verify (other key, other Redis key name, altered bytes)
  Malformed,  ///< not even the shape of a signed value or message
};
const char* to_string(AuthStatus s) noexcept;

/// Appends the tag to a value made by encode_value(..., /*authenticated=*/true) to be stored
/// under (or handed over for) Redis key `redis_key`.
void seal_value(FleetAuth& auth, std::string_view redis_key, std::vector<uint8_t>& value);
/// Checks a value read from (or published for) `redis_key`. Ok: the tag verifies.
AuthStatus open_value(FleetAuth& auth, std::string_view redis_key, std::span<const uint8_t> value);

// --- fleet messages --------------------------------------------------------------------------

struct OpenedMessage {
  AuthStatus status = AuthStatus::Malformed;
  int64_t time_ms = 0;
  uint64_t seq = 0;
  std::string_view inner{};  ///< the "v1 SENDER ..." form, into the input
};

/// "s1 TIME_MS SEQ TAG_HEX INNER" for `channel`; INNER is never empty (an empty one does not
/// open: Malformed).
std::string seal_fleet_message(FleetAuth& auth, std::string_view channel, int64_t time_ms,
                               uint64_t seq, std::string_view inner);
/// Splits and (with `auth`) verifies. Without `auth` the tag is not checked (status Ok when
/// the shape is right): an instance without a key trusts Redis. Text that does not start
/// with "s1 " is Unsigned with `inner` = the whole text.
OpenedMessage open_fleet_message(FleetAuth* auth, std::string_view channel, std::string_view text);

/// Refuses stale, future and replayed fleet messages: per sender, the sequence number must
/// grow; a message older than kMaxMessageAgeMs or more than kMaxClockSkewMs ahead is refused
/// whatever its sequence. Senders not heard from within the age window are forgotten (a
/// replay of their messages is stale by then); at most kMaxSenders are remembered.
class ReplayGuard {
 public:
  static constexpr std::size_t kMaxSenders = 4096;
  enum class Verdict : uint8_t { Accept, Stale, Future, Replayed };
  Verdict check(std::string_view sender, int64_t time_ms, uint64_t seq, int64_t now_ms);

 private:
  struct Seen {
    uint64_t seq;
    int64_t last_ms;
  };
  std::map<std::string, Seen, std::less<>> seen_;
};

// --- ttl caps ---------------------------------------------------------------------------------

/// The hash field's value for a fleet TTL cap: "SECONDS" without a key, "SECONDS TAG_HEX" with.
std::string seal_ttl_cap(FleetAuth* auth, std::string_view hash_key, std::string_view zone,
                         uint32_t seconds);
struct OpenedTtlCap {
  AuthStatus status = AuthStatus::Malformed;
  uint32_t seconds = 0;
};
/// Reads a field's value back. Without `auth` the tag, if any, is ignored.
OpenedTtlCap open_ttl_cap(FleetAuth* auth, std::string_view hash_key, std::string_view zone,
                          std::string_view value);

}  // namespace hg::resolver::fleet
