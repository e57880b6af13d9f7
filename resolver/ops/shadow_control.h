// Control commands for rehearsing a TTL change on the live daemon: the shadow-ttl zones
// (cache/shadow.h) and the drain view. Control::execute() hands them the request words.
//
//   shadow                    per zone since it was set: queries, real vs projected upstream
//                             queries and their rates, multiplier, real and projected hit ratio
//   shadow list               "ZONE SECONDS" per shadow zone
//   shadow set ZONE SECONDS   start (or restart) a shadow zone          → "ok: ..."
//   shadow clear ZONE         stop it, dropping its counters             → "ok: ..."
//
//   drain NAME [--old RDATA]... [--flush-old]
//       Every cached answer that leads to NAME's addresses: NAME's own A and AAAA entries,
//       and every entry whose answer section holds a CNAME to NAME or to a name already found
//       to lead there (followed upward until nothing new turns up). Each is printed like
//       `dump` prints it (a "; " header, then its answer records with the TTLs left now);
//       entries holding an --old address get "[old]" in the header and "; old" after that
//       record. The summary says when the last old copy stops being served fresh by this
//       cache and, worst case, stale (its expiry + stale-max). --flush-old removes exactly the
//       entries holding an old address (not a newer answer stored meanwhile).
//       RDATA: an IPv4 or IPv6 address, optionally typed: 192.0.2.1, A=192.0.2.1,
//       AAAA=2001:db8::1.
//
// The drain walks a snapshot of the cache in chunks of kDrainChunk entries per loop iteration
// (the StreamServer yields between chunks), so a large cache does not stall worker 0.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/ops/control.h"
#include "resolver/query/shared.h"

namespace hg::resolver {

/// An --old address of `drain`.
struct OldAddress {
  wire::RRType type = wire::RRType::A;
  std::array<uint8_t, 16> bytes{};  ///< 4 used for A
  std::string text;                 ///< "A 192.0.2.1"

  std::size_t size() const noexcept { return type == wire::RRType::A ? 4 : 16; }
};
/// Parses "192.0.2.1", "A=192.0.2.1", "2001:db8::1", "AAAA=2001:db8::1" (type case-blind).
Checked<OldAddress> parse_old_address(std::string_view text);

/// The reply to a `shadow` or `drain` request, or nullopt for any other command.
std::optional<Control::Output> rehearsal_command(Shared& shared,
                                                 const std::vector<std::string_view>& words,
                                                 MonoTime now);

/// "key value" lines for `stats`: shadow.* table figures and per-zone counters.
std::string shadow_stats_lines(const Shared& shared);

constexpr std::size_t kDrainChunk = 256;

}  // namespace hg::resolver
