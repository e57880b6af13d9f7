// Local names and routing (docs/local-names.md): which rule answers a query name before the
// cache and the default upstreams are consulted.
//
//   1. a name from a hosts file (--hosts-file), or the built-in PTR records of 127.0.0.1
//      and ::1: answered here (A, AAAA, PTR; other types NODATA);
//   2. the longest matching zone among the forward zones (--forward) and the special-use
//      and locally served zones (RFC 6761, 6303, 6762, 7793, 7686, 8375, 8880, 9462, 9476);
//      a special-use zone at or below a forward zone is switched off (the operator claimed
//      that subtree), and --no-special-zone switches one off by name;
//   3. a single-label name asked for A, AAAA or ANY: NODATA here (never sent upstream),
//      unless --single-label forward;
//   4. everything else: the default upstreams.
//
// A Routing is built once (start-up, SIGHUP, a hosts file change) and then only read: each
// worker holds a shared_ptr to the current one and swaps it in a task posted to its loop.
// The query path calls claims() first: one hash lookup of the name's last label, false for
// every name whose top-level label no rule mentions.
//
// The rules' settings (--forward, --local-record, hosts files) and their parsers are in
// resolver/routing_settings.h, below config.h.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "resolver/checked.h"
#include "resolver/net/endpoint.h"
#include "resolver/query/admission.h"
#include "resolver/query/hosts_table.h"
#include "resolver/routing_settings.h"
#include "resolver/upstream/dot.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::resolver {

/// A hosts file as read: its path and its lines.
struct HostsFile {
  std::string path;
  std::vector<HostsLine> lines;
};

/// TTL of answers from hosts files: short, since the file may change at any time (and is
/// re-read within a second when it does).
inline constexpr uint32_t kHostsTtl = 5;
/// TTL (and SOA MINIMUM) of the special-use zones' answers: RFC 6303 §3's zone uses 10800.
inline constexpr uint32_t kLocalZoneTtl = 10800;
/// TTL of ipv4only.arpa's A and PTR records (RFC 8880 names the data, not a TTL): an hour,
/// as the built-in ipv4only.arpa zone of BIND 9 serves them.
inline constexpr uint32_t kIpv4onlyTtl = 3600;

enum class RouteKind : uint8_t {
  Upstream,     ///< the default upstreams
  Forward,      ///< a forward zone's servers
  LocalZone,    ///< a special-use or locally served zone, answered here
  Hosts,        ///< a hosts-file (or built-in) name, answered here
  SingleLabel,  ///< a single-label name asked for an address: NODATA here
};

class Routing {
 public:
  struct Input {
    std::vector<ForwardZone> forward{};
    std::vector<HostsFile> hosts{};  ///< lines (tests), each file made a table here
    /// Hosts files already made tables (resolver/query/hosts_table.h), after `hosts`.
    std::vector<std::shared_ptr<const HostsTable>> tables{};
    std::vector<LocalRecord> records{};
    bool special_use = true;  ///< serve the special-use zones (tests may turn them off)
    /// --no-special-zone: built-in zones not served here (as special_zone_key spells them).
    std::vector<std::string> no_special{};
    /// --single-label forward: single-label names go to the default upstreams.
    bool single_label_forward = false;
  };
  /// Builds the table; fails (naming the zone) if a forward zone is not a domain name.
  static Checked<std::shared_ptr<const Routing>> build(const Input& input);

  struct Match {
    RouteKind kind = RouteKind::Upstream;
    /// Forward: the zone's server set; LocalZone: the zone; Hosts: the --local-record or
    /// built-in data at the name (kNoHost: none)
    uint32_t index = 0;
    const void* host = nullptr;  ///< Hosts: the first hosts-file table with the name, if any
  };

  /// The rule for `qname` asked with `qtype`. For a name whose last label no rule
  /// mentions (the common case) this is one hash lookup of that label.
  Match route(const wire::Name& qname, wire::RRType qtype) const noexcept;

  /// Writes the answer of a LocalZone, Hosts or SingleLabel match for `q` into out (at
  /// most `limit` bytes; TC=1 at a record boundary when the records do not fit). Returns
  /// the size, and the rcode in `rcode`.
  std::size_t answer(const Match& m, const ClientQuery& q, std::span<uint8_t> out,
                     std::size_t limit, wire::RCode& rcode) const noexcept;

  /// The server sets of the forward zones (one per distinct list of servers, in order).
  const std::vector<std::vector<Endpoint>>& server_sets() const noexcept { return sets_; }
  /// The forward zones, lowercased, with their server set index.
  struct ForwardRule {
    wire::Name zone;
    uint32_t set;
    std::string link{};  ///< the runtime link that set the zone (resolver/query/links.h), or empty
  };
  const std::vector<ForwardRule>& forward_rules() const noexcept { return forward_; }
  /// The forward zones' servers reached over TLS.
  const std::vector<TlsTarget>& tls_targets() const noexcept { return tls_; }

  /// `hourglass-ctl route NAME`: one line saying which rule answers `qname` and how.
  /// `upstreams` are the default upstreams now in force.
  std::string describe(const wire::Name& qname, std::span<const Endpoint> upstreams) const;

  static constexpr uint32_t kNoHost = 0xFFFFFFFF;
  /// Names from hosts files (each file's distinct names).
  std::size_t hosts_names() const noexcept;
  /// A Hosts match from a hosts file or --local-record (not one of the built-in loopback PTR
  /// records).
  bool from_hosts_file(const Match& m) const noexcept {
    return m.kind == RouteKind::Hosts &&
           (m.host != nullptr || (m.index != kNoHost && !host_data_[m.index].builtin));
  }

 private:
  struct Zone {
    wire::Name name;
    LocalZoneKind kind = LocalZoneKind::Empty;
    bool forward = false;
    uint32_t set = 0;
    const char* why = "";  ///< the RFC, for describe()
  };
  /// A name's --local-record data, or a built-in loopback PTR (few: the hosts files' names
  /// are in tables_).
  struct Host {
    std::optional<wire::Name> ptr;
    std::string source;  ///< "PATH:LINE" or "built-in"
    uint32_t ttl = kHostsTtl;
    bool builtin = false;
    std::vector<const LocalRecord*> records;  ///< --local-record data at this name
  };
  std::vector<LocalRecord> records_;
  struct SvHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept;
  };
  using NameMap = std::unordered_map<std::string, uint32_t, SvHash, std::equal_to<>>;

  void add_tld(std::string_view lowered_wire);
  Host& host_at(const wire::Name& name);

  std::vector<Zone> zones_;
  NameMap zone_index_;  // lowercased wire name -> zones_ index
  std::vector<Host> host_data_;
  NameMap hosts_;  // lowercased wire name -> host_data_ index (--local-record, built-in)
  /// The hosts files' names and addresses, one table per file in the order given; a name in
  /// several files has the addresses of all, the source and PTR of the first.
  std::vector<std::shared_ptr<const HostsTable>> tables_;
  bool special_use_ = true;
  /// Calls fn(table, entry, address) for each hosts-file table that knows a lowercased wire
  /// name: entry is its name's (A, AAAA; HostsTable::kNone if none), address the reverse
  /// name's address (PTR; kNone if none). Returns the first such table, or nullptr.
  /// Calls emit(bytes) for each address (len 4 or 16 bytes) the hosts files give a
  /// lowercased wire name, in file order, each once.
  template <typename Fn>
  void hosts_addresses(std::span<const uint8_t> low, std::size_t len, Fn&& emit) const noexcept;
  template <typename Fn>
  const HostsTable* hosts_visit(std::span<const uint8_t> low, Fn&& fn) const noexcept;
  /// The last labels (lowercased, with their length byte) some rule ends in, as FNV-1a
  /// hashes in an open-addressing table (0 = empty): the one probe every query pays. A
  /// false positive only sends a name down the exact lookups.
  std::vector<uint64_t> tld_hashes_ = std::vector<uint64_t>(16, 0);
  std::size_t tld_count_ = 0;
  bool single_label_forward_ = false;
  bool tld_maybe(uint64_t h) const noexcept;
  std::vector<std::vector<Endpoint>> sets_;
  std::vector<ForwardRule> forward_;
  std::vector<TlsTarget> tls_;
};

/// The reverse-lookup name of an address: d.c.b.a.in-addr.arpa or the 32 nibbles of
/// ip6.arpa (RFC 1035 §3.5, RFC 3596 §2.5).
wire::Name reverse_name(int family, std::span<const uint8_t> addr);

}  // namespace hg::resolver
