// Runtime links (docs/local-names.md, "Links"): upstream servers and domains of a network
// interface, set while the daemon runs by the scripts of a network manager or VPN client
// (`hourglass-ctl link IFACE --dns ADDR --domain ZONE`), like `resolvectl dns/domain IFACE`.
//
//   link IFACE [--dns ADDR]... [--domain ZONE]... [--default-route yes|no]
//   link IFACE --revert
//   links
//
// A link's domains become forward zones to its servers (a zone the operator configured with
// --forward wins over a link's same zone; of two links with the same zone, the one set most
// recently wins); a default-route link's servers join the default upstreams after the
// configured ones. `~ZONE` is a routing-only domain (systemd-resolved's convention), ZONE
// without `~` is both a routing and a search domain; `.` and `~.` make the link a default
// route. `link IFACE ...` replaces the whole state of IFACE, so a script may send it again.
//
// The parser takes untrusted words (the control socket's, tests/fuzz/control_fuzz.cc): every
// word is bounded and checked, every error is one line naming the word, and the table's
// limits (kMaxLinks, kMaxLinkServers, kMaxLinkDomains) are enforced before anything changes.
// The table itself is plain data: the server (resolver/server.cc) turns it into routing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/checked.h"
#include "resolver/net/endpoint.h"
#include "resolver/routing_settings.h"
#include "wire/name.h"

namespace hg::resolver {

inline constexpr std::size_t kMaxLinks = 64;
inline constexpr std::size_t kMaxLinkServers = 16;
inline constexpr std::size_t kMaxLinkDomains = 64;
inline constexpr std::size_t kMaxLinkNameLength = 64;

struct LinkDomain {
  wire::Name zone{};          ///< lowercased; the root for "." and "~."
  bool routing_only = false;  ///< given as ~ZONE: routes, never a search domain
  /// "corp.example" or "~corp.example" ("." / "~." for the root): no trailing dot.
  std::string text() const;
  friend bool operator==(const LinkDomain&, const LinkDomain&) = default;
};

struct Link {
  std::string name{};
  std::vector<Endpoint> servers{};    ///< in the order given, no duplicates
  std::vector<LinkDomain> domains{};  ///< in the order given, no duplicates
  bool default_route = true;
  /// Which link was set most recently (higher: later); decides between two links that
  /// route the same zone.
  uint64_t serial = 0;
  /// `IFACE dns=ADDR,ADDR|- domains=ZONE,~ZONE|- default-route=yes|no` (no newline).
  std::string text() const;
};

struct LinkCommand {
  bool revert = false;
  Link link{};  ///< the whole new state (no servers and no domains: the same as revert)
};

/// Whether `name` may name a link: 1 to 64 bytes of [A-Za-z0-9._:@+-].
bool valid_link_name(std::string_view name) noexcept;

/// Parses the words of one `link` request, words[0] being "link". The error names the word
/// that is wrong and what is allowed.
Checked<LinkCommand> parse_link_command(std::span<const std::string_view> words);

/// The links in force. Used on one thread (the control socket's loop).
class LinkTable {
 public:
  /// Sets or reverts a link and puts the reply line ("ok: ...\n") in `reply`; or returns
  /// the error (the table is full) and changes nothing. Sending a link's current state
  /// again changes nothing (its serial included); `changed` says whether anything did.
  std::optional<std::string> apply(const LinkCommand& c, std::string& reply, bool& changed);
  /// `links`: one line per link sorted by name, each '\n'-terminated; "" when there are none.
  std::string text() const;
  std::size_t size() const noexcept { return links_.size(); }
  const std::map<std::string, Link>& links() const noexcept { return links_; }

  /// The forward zones the links add: one per routing domain (not the root) of a link with
  /// servers; a zone also in `configured` is left out (the operator's wins); of two links
  /// routing the same zone, the one set most recently. Sorted by zone; `link` says whose.
  std::vector<ForwardZone> forward_zones(std::span<const ForwardZone> configured) const;
  /// The default upstreams: `base` (the configured ones) first, then the servers of every
  /// default-route link in the order the links were set, each server once.
  std::vector<Endpoint> default_upstreams(std::span<const Endpoint> base) const;
  /// "; link tun0 adds 10.8.0.1:53" text for `route`: the default-route links' servers.
  std::string default_route_note() const;

 private:
  std::map<std::string, Link> links_;
  uint64_t next_serial_ = 1;
};

}  // namespace hg::resolver
