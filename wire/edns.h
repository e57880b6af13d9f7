// EDNS(0) (RFC 6891): the OPT pseudo-record, its options, and Extended DNS Errors (RFC 8914).
//
// The OPT record's CLASS carries the requestor's UDP payload size and its TTL carries
// extended RCODE (high 8 bits), version and flags (DO):
//
//   TTL:  | EXTENDED-RCODE (8) | VERSION (8) | DO | Z (15) |
//
// Options are kept as (code, bytes) so unknown options survive a round trip.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "base/bytes.h"
#include "wire/result.h"
#include "wire/writer.h"

namespace hg::wire {

inline constexpr uint16_t kEdnsDoBit = 0x8000;
/// The payload size hourglass advertises and accepts by default (DNS flag day 2020).
inline constexpr uint16_t kDefaultEdnsPayload = 1232;
/// RFC 6891 §6.2.5: values below 512 are treated as 512.
inline constexpr uint16_t kMinUdpPayload = 512;

namespace edns_option {
inline constexpr uint16_t NSID = 3;
inline constexpr uint16_t ClientSubnet = 8;
inline constexpr uint16_t Cookie = 10;
inline constexpr uint16_t Padding = 12;
inline constexpr uint16_t ExtendedError = 15;  // RFC 8914
}  // namespace edns_option

/// RFC 8914 §4 info-codes that hourglass emits or recognises.
namespace ede {
inline constexpr uint16_t Other = 0;
inline constexpr uint16_t StaleAnswer = 3;
inline constexpr uint16_t CachedError = 13;  ///< RFC 8914 §4.14: the failure cache answered
inline constexpr uint16_t NotReady = 14;
inline constexpr uint16_t Blocked = 15;  ///< RFC 8914 §4.16: by this resolver's policy
inline constexpr uint16_t Prohibited = 18;
inline constexpr uint16_t StaleNxdomainAnswer = 19;
inline constexpr uint16_t NotSupported = 21;
inline constexpr uint16_t NoReachableAuthority = 22;
inline constexpr uint16_t NetworkError = 23;
}  // namespace ede

struct EdnsOption {
  uint16_t code;
  std::span<const uint8_t> data;
};

/// A parsed OPT record: a view into the packet it came from.
struct Edns {
  uint16_t udp_size = 0;       ///< as sent (not yet raised to 512)
  uint8_t ext_rcode_high = 0;  ///< upper 8 bits of the 12-bit RCODE
  uint8_t version = 0;
  uint16_t flags = 0;                     ///< DO and the Z bits
  std::size_t record_offset = 0;          ///< where the OPT record starts in the packet
  std::span<const uint8_t> options_wire;  ///< the whole RDATA

  bool dnssec_ok() const noexcept { return (flags & kEdnsDoBit) != 0; }
  /// The payload size a responder may use: at least 512 (RFC 6891 §6.2.5).
  uint16_t effective_udp_size() const noexcept {
    return udp_size < kMinUdpPayload ? kMinUdpPayload : udp_size;
  }

  /// Calls f(EdnsOption) for each option, in order. Options were validated at parse time.
  template <class F>
  void for_each_option(F&& f) const {
    std::size_t i = 0;
    while (i + 4 <= options_wire.size()) {
      auto code = base::load_u16(&options_wire[i]);
      auto len = static_cast<std::size_t>(base::load_u16(&options_wire[i + 2]));
      f(EdnsOption{code, options_wire.subspan(i + 4, len)});
      i += 4 + len;
    }
  }
};

/// Checks that RDATA is a well-formed option list (each option's length fits).
/// Error: BadOpt at the offset (base_offset + position) of the bad option.
Status validate_edns_options(std::span<const uint8_t> rdata, std::size_t base_offset) noexcept;

/// An Extended DNS Error option's content (RFC 8914 §2): info-code and optional UTF-8 text.
struct ExtendedError {
  uint16_t info_code;
  std::string_view extra_text;
};
/// Parses the data of option 15; BadOpt when shorter than 2 bytes.
Result<ExtendedError> parse_extended_error(std::span<const uint8_t> data) noexcept;

/// What to put in an OPT record we send (a response's, or an upstream query's).
/// Views only: the option bytes and EDE text must outlive the write_opt() call.
struct OptSpec {
  uint16_t udp_size = kDefaultEdnsPayload;
  uint8_t ext_rcode_high = 0;  ///< upper 8 bits of a 12-bit RCODE (BADVERS = 16 → 1)
  uint8_t version = 0;
  uint16_t flags = 0;                        ///< kEdnsDoBit and the Z bits
  std::span<const EdnsOption> options = {};  ///< written first, in order, verbatim
  std::optional<ExtendedError> ede = {};     ///< appended as option 15 (RFC 8914) after them
};

/// Octets write_opt() needs for `spec` (11 for a bare OPT record).
std::size_t opt_size(const OptSpec& spec) noexcept;

/// Writes one OPT record (root owner, TYPE 41, CLASS = payload size, TTL = ext-rcode / version
/// / flags, RDATA = options). Does not touch ARCOUNT. Returns false and writes nothing when it
/// does not fit the writer's limit or an option is longer than 65535 octets.
[[nodiscard]] bool write_opt(WireWriter& w, const OptSpec& spec) noexcept;

/// write_opt() and then ARCOUNT + 1 in the header the writer already holds (its first 12
/// octets). The usual call for a response: header, question, answers, then append_opt().
[[nodiscard]] bool append_opt(WireWriter& w, const OptSpec& spec) noexcept;

/// RFC 8914 §5.2 purpose text for an info-code ("Stale Answer"), or "" when unassigned.
std::string_view ede_purpose(uint16_t info_code) noexcept;

}  // namespace hg::wire
