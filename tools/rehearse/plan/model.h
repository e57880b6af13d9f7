// The linger report's model: what was found about a name (its chain of hops with the TTL the
// authoritative servers publish for each, its zones' SOA and NS figures, the problems met on
// the way) and the timeline computed from it for a cut-over. Pure data and arithmetic: no
// network, no clock (the caller passes "now"), so every figure is unit-tested.
//
// The timeline (docs/rehearsal.md, "The linger report"):
//   moving hops   = the RRsets the move changes: by default the address records at the end
//                   of the chain (or the negative answer, for a name new at the cut-over);
//                   --moving OWNER names another hop, --moving all every hop
//   margin        = --transfer-margin, else the SOA REFRESH of the moving hops' zones (how
//                   late a secondary without NOTIFY may pick up a change)
//   lower_by      = cutover − margin − limiting_ttl, limiting_ttl = the largest TTL among the
//                   moving hops. Hops that do not change need no lowering: a cache holds each
//                   RRset on its own TTL (RFC 2181 §5), so a 3600 s CNAME above a 300 s A record
//                   does not keep the old address past the A record's 300 s.
//   gone_by_ttl   = cutover + margin + max over moving hops of min(hop TTL, target TTL)
//   per layer     = gone_by_ttl + the layer's hold (fixed, floor, until) or stale window;
//                   caps add nothing; for a new name its negative hold
//   new name      = gone_by_ttl, the moving hop being the negative answer
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/rehearse/plan/profile.h"

namespace hg::rehearse {

using SysSeconds = std::chrono::sys_seconds;

/// "2026-12-03T10:00Z", "2026-12-03T10:00:00Z" (seconds optional, UTC only). nullopt if the
/// text is not such a time or the date does not exist.
std::optional<SysSeconds> parse_utc(std::string_view text);
/// "2026-12-03T09:00:00Z"
std::string format_utc(SysSeconds t);
/// "3600 s", or with a readable form for longer spans: "86400 s (1 d)", "5400 s (1 h 30 min)".
std::string format_span(int64_t seconds);

/// One server's view of a hop.
struct ServerView {
  std::string server;  ///< "127.0.0.1:5300"
  uint32_t ttl = 0;
  std::string data;  ///< the CNAME/DNAME target or the addresses, for comparison
};

/// One step of a name's chain: a CNAME, a DNAME, or the final address RRset.
struct Hop {
  std::string owner;  ///< "www.example.test."
  std::string type;   ///< "CNAME", "DNAME", "A", "AAAA"
  uint32_t ttl = 0;   ///< the largest TTL any server published for it
  std::string data;   ///< target name or addresses, as the first server gave them
  std::string zone;   ///< the zone apex that served it
  std::vector<ServerView> servers;
  /// Servers published different TTLs or data: "127.0.0.1:5300 says 3600, 127.0.0.1:5301 says 300"
  std::string disagreement;
};

/// A zone met along the chain.
struct ZoneFacts {
  std::string apex;
  std::vector<std::string> servers;  ///< the servers that answered authoritatively
  std::optional<uint32_t> soa_ttl;
  std::optional<uint32_t> soa_minimum;
  std::optional<uint32_t> ns_ttl;
  /// SOA REFRESH: the longest a secondary that gets no NOTIFY (RFC 1996) waits before it
  /// checks the primary's serial, so before it serves a change.
  std::optional<uint32_t> soa_refresh;
  std::string disagreement;  ///< servers differed on SOA/NS figures
  /// RFC 2308 §5: a negative answer is cached min(SOA TTL, SOA MINIMUM).
  std::optional<uint32_t> negative_ttl() const;
};

/// One profile layer's line in a name's timeline.
struct LayerLine {
  std::string name;
  LayerKind kind = LayerKind::Fixed;
  std::optional<SysSeconds> gone_by;  ///< nullopt: no bound (unlimited stale, until ...)
  std::string explanation;
  std::string source;
  std::string note;
};

/// One line of the report: a label, a time (or none) and a one-line explanation.
struct TimelineLine {
  std::string label;
  std::optional<SysSeconds> when;
  std::string explanation;
};

struct NamePlan {
  std::string name;  ///< as asked, absolute ("www.example.test.")
  std::vector<Hop> hops;
  std::vector<ZoneFacts> zones;
  /// Problems met (lame or unreachable servers, disagreement, loops): one line each.
  std::vector<std::string> problems;
  /// The chain ends in NXDOMAIN/NODATA: the name (or its last target) does not exist yet.
  bool missing = false;
  std::string missing_what;              ///< "NXDOMAIN" or "NODATA (no A record)"
  std::optional<uint32_t> negative_ttl;  ///< of the zone that said so
  /// Discovery failed before anything could be planned (the reason is in `problems`).
  bool failed = false;

  // --- filled by compute_timeline ----------------------------------------------------------
  bool planned = false;
  uint32_t limiting_ttl = 0;
  int limiting_hop = -1;         ///< index into hops: the moving hop with the largest TTL
  std::vector<int> moving_hops;  ///< indexes into hops of the RRsets the move changes
  uint32_t lowered_ttl = 0;      ///< max over moving hops of min(TTL, target)
  uint32_t transfer_margin = 0;  ///< seconds added for secondaries
  std::string margin_source;     ///< "--transfer-margin", "SOA REFRESH of zone x.", "unknown"
  std::optional<SysSeconds> lower_by;
  std::optional<SysSeconds> gone_by_ttl;
  std::optional<SysSeconds> new_name_by;  ///< when missing: cutover + negative TTL
  std::vector<TimelineLine> lines;
  std::vector<LayerLine> layers;
};

struct PlanInput {
  SysSeconds cutover;
  uint32_t target_ttl = 60;
  SysSeconds now;
  /// --moving: "" or "address" = the RRset at the end of the chain; "all" = every hop; else
  /// an owner name (absolute, any case) whose hop changes.
  std::string moving{};
  /// --transfer-margin; nullopt = the SOA REFRESH of the moving hops' zones.
  std::optional<uint32_t> transfer_margin = std::nullopt;
};

/// True when `moving` names a hop of `p` (or is "", "address" or "all").
bool moving_is_known(const NamePlan& p, std::string_view moving);

/// Fills the computed fields of `p` from its hops and zones. A failed discovery (or a missing
/// name without a negative TTL) stays unplanned.
void compute_timeline(NamePlan& p, const PlanInput& in, const Profile& profile);

/// When a layer of `kind` with `seconds` lets go of an answer that TTL-obeying caches dropped
/// at `gone_by_ttl`: nullopt means no bound.
std::optional<SysSeconds> layer_gone_by(const Layer& layer, SysSeconds gone_by_ttl);

}  // namespace hg::rehearse
