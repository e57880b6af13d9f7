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

/// Parses hosts(5) text: "ADDRESS NAME [ALIAS...]", '#' starts a comment. A malformed line
/// (bad address, scoped IPv6, no name, a name that is not a domain name) is skipped and
/// reported. At most kMaxHostsNames names are kept (the rest reported once).
HostsParse parse_hosts(std::string_view text);
inline constexpr std::size_t kMaxHostsNames = 1'000'000;
/// Files larger than this are refused (the previous contents stay in force).
inline constexpr std::size_t kMaxHostsFileBytes = 16u << 20;
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

}  // namespace hg::resolver
