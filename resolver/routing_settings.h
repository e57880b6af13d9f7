// The settings of local names and routing (docs/local-names.md) as configuration holds them:
// --forward zones, --local-record lines and hosts files, with their parsers. The rules built
// from them (Routing) are in resolver/query/local_names.h; these types sit below config.h so
// that the settings record needs nothing of the query path.
//
// The parsers take untrusted text (a hosts file anyone with write access to /etc may edit,
// flags, TOML): they return errors, never throw, and bound what they keep
// (tests/fuzz/local_names_fuzz.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/checked.h"
#include "resolver/net/endpoint.h"
#include "resolver/upstream/dot.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::resolver {

/// One --forward ZONE=ADDR[:PORT][,ADDR[:PORT]...].
struct ForwardZone {
  std::string zone{};  ///< as given (syntax-checked by parse_forward_spec)
  std::vector<Endpoint> servers{};
  /// The servers given as tls://ADDR[:PORT][#NAME] (also in `servers`), resolver/upstream/dot.h.
  std::vector<TlsTarget> tls{};
  /// Set by a runtime link (resolver/query/links.h): its name, for `hourglass-ctl route`; empty
  /// for a zone of the configuration.
  std::string link{};
  friend bool operator==(const ForwardZone&, const ForwardZone&) = default;
};

/// Parses "ZONE=ADDR[:PORT][,ADDR[:PORT]...]" (port 53 by default, at most 8 servers, IPv6
/// as [ADDR]:PORT). The root zone is refused: that is what --upstream is for. On failure,
/// the reason and what is allowed.
Checked<ForwardZone> parse_forward_spec(std::string_view text);

/// One address line of a hosts file.
struct HostsLine {
  int family = 0;                  ///< AF_INET or AF_INET6
  std::array<uint8_t, 16> addr{};  ///< 4 bytes used for AF_INET
  /// Canonical name first, then aliases; each in wire form (letter case as written).
  std::vector<std::string> names{};
  uint32_t line = 0;  ///< 1-based line number
};

struct HostsParse {
  std::vector<HostsLine> lines;
  std::vector<std::string> errors;  ///< "N: what is wrong" (N the line), one per malformed line
};

/// One good address line as scan_hosts() hands it over; the spans are valid during the call.
struct HostsLineView {
  int family = 0;                  ///< AF_INET or AF_INET6
  std::array<uint8_t, 16> addr{};  ///< 4 bytes used for AF_INET
  /// The names' wire forms one after the other (letter case as written), canonical first;
  /// `ends[i]` is where name i ends in `wire`.
  std::span<const uint8_t> wire{};
  std::span<const uint32_t> ends{};
  uint32_t line = 0;  ///< 1-based line number
  std::span<const uint8_t> name(std::size_t i) const noexcept {
    const std::size_t from = i == 0 ? 0 : ends[i - 1];
    return wire.subspan(from, ends[i] - from);
  }
};

/// Parses hosts(5) text: "ADDRESS NAME [ALIAS...]", '#' starts a comment. A malformed line
/// (bad address, scoped IPv6, no name, a name that is not a domain name, a NUL byte, more
/// than kMaxHostsLineBytes) is skipped and reported. At most kMaxHostsNames names are kept
/// (the rest reported once). Memory: one line's names at a time.
void scan_hosts(std::string_view text, const std::function<void(const HostsLineView&)>& on_line,
                const std::function<void(std::string)>& on_error);
/// scan_hosts() into lines (tests, and Routing::Input::hosts).
HostsParse parse_hosts(std::string_view text);
/// Per file; a blocklist of 64 MiB has about two million names.
inline constexpr std::size_t kMaxHostsNames = 4'000'000;
/// Longer lines are skipped (a hosts line is one address and its names).
inline constexpr std::size_t kMaxHostsLineBytes = 1u << 20;
/// Files larger than this are refused (the previous contents stay in force).
inline constexpr std::size_t kMaxHostsFileBytes = 64u << 20;
/// Reads and parses a hosts file; the error names the path and the reason.
Checked<HostsParse> read_hosts_file(const std::string& path);

/// One --local-record 'NAME TTL TYPE DATA' (like a zone file line, class IN implied):
///   A 192.0.2.1 | AAAA 2001:db8::1 | CNAME target | PTR target | TXT "text" ["more"...]
///   | MX PREFERENCE exchange | SRV PRIORITY WEIGHT PORT target
struct LocalRecord {
  wire::Name name{};
  uint32_t ttl = 0;
  wire::RRType type = wire::RRType::A;
  std::vector<uint8_t> rdata{};  ///< wire form, names uncompressed
  std::string text{};            ///< as given, for describe()
};
/// Parses one record; the error says what is wrong and what is allowed.
Checked<LocalRecord> parse_local_record(std::string_view text);

/// How a special-use zone answers (resolver/query/local_names.h serves them).
enum class LocalZoneKind : uint8_t {
  Localhost,    ///< RFC 6761 §6.3: every name at or below it is 127.0.0.1 / ::1
  Empty,        ///< RFC 6303 §3: the apex has SOA and NS, every name below it NXDOMAIN
  Nxdomain,     ///< RFC 6761 §6.2, §6.4, RFC 6762 §22.1, 7686, 9476: every name NXDOMAIN
  Nodata,       ///< RFC 9462 §4: the apex has SOA and NS, every other answer NODATA
  Ipv4only,     ///< RFC 8880 §7: the apex's A is 192.0.0.170 and .171; names below NXDOMAIN
  Ipv4onlyPtr,  ///< RFC 8880 §7: 170.0.0.192.in-addr.arpa (.171) PTR ipv4only.arpa.
};

/// One built-in special-use or locally served zone: answered here unless a forward zone at
/// or above it claims it or --no-special-zone names it.
struct SpecialZone {
  std::string name;  ///< lowercase, no final dot
  LocalZoneKind kind;
  const char* why;  ///< the RFC, for `hourglass-ctl route`
};
/// All of them, in a fixed order.
const std::vector<SpecialZone>& special_zones();
/// `zone` as special_zones() spells names: lowercase, no final dot.
std::string special_zone_key(std::string_view zone);
/// True if `zone` (any case, with or without the final dot) is one of special_zones()
/// (what --no-special-zone accepts).
bool is_special_zone(std::string_view zone);

}  // namespace hg::resolver
