// Shared: what every worker's QueryEngine shares with the others and with the operations
// code (control socket, metrics, shadow control, warm restart) — one cache, one in-flight
// table, the counters, the routing in force — and what a waiting client is (Waiter, Route).
// The operations code includes this, not query_engine.h: it reads and adjusts the shared
// state and never drives a query. No c-ares here (docs/architecture.md §1).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/counter_slots.h"
#include "cache/cache.h"
#include "cache/shadow.h"
#include "dnssec/trust_anchor.h"
#include "resolver/config.h"
#include "resolver/fleet/fleet_cache.h"
#include "resolver/net/conn_admission.h"
#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"
#include "resolver/net/outbox.h"
#include "resolver/query/admission.h"
#include "resolver/query/dnssec_probe.h"
#include "resolver/query/fair_share.h"
#include "resolver/query/inflight.h"
#include "resolver/query/links.h"
#include "resolver/query/local_names.h"
#include "resolver/query/top_names.h"
#include "resolver/tap/dnstap_writer.h"
#include "resolver/upstream/upstream_board.h"

namespace hg::resolver {

class TcpConnection;  // resolver/net/tcp_listener.h

/// Where an answer goes: a UDP client (its socket and address), a TCP connection, or (tests
/// and fuzzing) a callback.
struct Route {
  UdpPeer udp;                                                    ///< used when udp.fd >= 0
  std::weak_ptr<TcpConnection> tcp;                               ///< used when set
  std::function<void(std::span<const uint8_t>)>* sink = nullptr;  ///< tests: receives answers
  bool is_tcp = false;
};

/// One client waiting for an in-flight query.
struct Waiter {
  MonoTime deadline{};  ///< answer (stale or SERVFAIL) at this time at the latest
  MonoTime received{};
  Route route;
  /// The engine that received the query: its loop runs the deadline timer (`timer`), and it
  /// keeps the key that timer will look up (QueryEngine::KeySlots).
  class QueryEngine* engine = nullptr;
  uint32_t key_slot = 0;
  TimerId timer{};
  /// What the client asked, without its pointers into the packet (`question` empty, `qname`
  /// null): the question bytes are kept below, and client() points at them.
  ClientQuery query;
  uint16_t question_len = 0;
  /// Bytes past question_len are never read (and not zeroed: a waiter is made per miss).
  std::array<uint8_t, wire::kMaxNameOctets + 4> question;
  /// The stale entry this client may be given if the upstream fails or is late.
  std::shared_ptr<const cache::Entry> stale;
  int64_t tap_ns = 0;  ///< dnstap on: wall-clock arrival time (ns), for CLIENT_RESPONSE

  /// Keeps `q` (its question bytes copied) for answering later.
  void hold(const ClientQuery& q) noexcept;
  /// The query as held, its question pointing at this waiter's copy.
  ClientQuery client() const noexcept;
};

using Inflight = InflightTable<cache::CacheKey, cache::CacheKeyHash, Waiter>;

/// Counters for logs, the control socket and metrics. Relaxed atomics: totals, not ordering.
// Every worker adds to these on every query (queries_*, hits on the hit path): per-thread
// slots (base/counter_slots.h), so no counter's line is written by every worker. Read them
// with load(); each is the sum of its slots.
struct Stats {
  using Counter = base::SlottedCounter;
  Counter queries_udp, queries_tcp;
  Counter hits, stale_answers, misses, coalesced, prefetches;
  Counter upstream_queries, upstream_answers, upstream_failures;
  /// Upstream answers scrubbed before they were cached or passed on (wire::RewriteRules):
  /// records left out (RRSIG/NSEC/NSEC3 for a key without DO) and TTLs of 2^31 or more
  /// written as 0 (RFC 2181 §8).
  Counter scrubbed_records, clamped_ttls;
  /// Queries of type ANY answered with RFC 8482's HINFO.
  Counter minimal_any;
  /// A/AAAA records left out of upstream answers by --private-address (rebinding protection).
  Counter rebind_blocked;
  Counter servfail, deadline_answers, failure_cached_answers;
  Counter refused, formerr, notimp, dropped, overload;
  Counter truncated;
  /// Routing (resolver/query/local_names.h): answered here from a special-use zone or for a
  /// single-label name; answered from a hosts file; misses sent to a forward zone's servers.
  Counter local_answers, hosts_answers, forwarded;
  /// Fair shares (docs/security.md): new names refused because their client's source held
  /// its --client-share of the in-flight table; because their zone keeps timing out and held
  /// its --failing-zone-cap; queries beyond --client-rate (UDP dropped, TCP REFUSED).
  Counter share_refused, zone_capped, rate_limited;
  /// --dnssec validate (resolver/query/engine_dnssec.cc): upstream answers found secure,
  /// insecure and bogus, and the DS/DNSKEY queries their chains of trust cost.
  Counter dnssec_secure, dnssec_insecure, dnssec_bogus, dnssec_fetches;
  /// Misses answered from validated NSEC/NSEC3 ranges without asking upstream (RFC 8198).
  Counter dnssec_synthesized;
};

/// Everything the workers share.
struct Shared {
  explicit Shared(const Config& c);
  Config config;
  cache::Cache cache;
  /// shadow-ttl: projected upstream counts for lower TTLs (cache/shadow.h), fed by the
  /// engines beside the cache.
  cache::ShadowTable shadow;
  Inflight inflight;
  /// --client-rate (off: allow() is one branch).
  ClientRateLimit client_rate;
  Stats stats;
  std::atomic<uint64_t> log_suppressed{0};
  std::atomic<int64_t> last_upstream_log_ms{0};
  DnstapCounters dnstap;  ///< --dnstap frames queued and dropped, over every reopen
  /// Per-upstream-server statistics from every worker (hourglass-ctl upstreams, metrics).
  UpstreamBoard upstream_board;
  /// The fleet (--redis): counters, and worker 0's FleetCache for `hourglass-ctl ... --fleet`
  /// (used on worker 0's loop only, where the control socket runs).
  FleetStats fleet_stats;
  FleetCache* fleet_control = nullptr;
  /// The busiest names and those causing upstream queries (hourglass-ctl top).
  TopNames top_names;
  /// --dnssec validate: the trust anchors read at start (nullptr: not validating).
  std::shared_ptr<const dnssec::TrustAnchors> anchors;
  /// Whether the default upstreams deliver DNSSEC records (resolver/query/dnssec_probe.h).
  DnssecUpstreams dnssec_upstreams;

  /// Connection admission (resolver/net/conn_admission.h): every DNS-over-TCP listener's, and the
  /// metrics endpoint's.
  ConnCounters tcp_conns;
  ConnCounters metrics_conns;

  /// Runtime links (resolver/query/links.h): the table `hourglass-ctl links` lists, and the
  /// server's hook that puts a changed table in force (routing and default upstreams) or
  /// says why it cannot (then nothing changes). Both on worker 0's loop only, where the
  /// control socket runs; without a hook (tests, fuzzing) a change only updates the table.
  LinkTable links;
  std::function<std::optional<std::string>(const LinkTable& next, const std::string& what)>
      links_changed;

  /// The routing in force and the default upstreams, for `hourglass-ctl route` (the workers
  /// hold their own copies of the routing).
  void set_routing(std::shared_ptr<const Routing> r) {
    std::lock_guard lock(routing_mu_);
    routing_ = std::move(r);
  }
  void set_upstreams_now(std::vector<Endpoint> u) {
    std::lock_guard lock(routing_mu_);
    upstreams_now_ = std::move(u);
  }
  std::pair<std::shared_ptr<const Routing>, std::vector<Endpoint>> routing() const {
    std::lock_guard lock(routing_mu_);
    return {routing_, upstreams_now_};
  }

 private:
  mutable std::mutex routing_mu_;
  std::shared_ptr<const Routing> routing_;  // guarded by routing_mu_
  std::vector<Endpoint> upstreams_now_;     // guarded by routing_mu_
};

/// Applies a fleet flush or ttl-cap (from another instance, or Redis's cap list) to the
/// local cache (resolver/query/engine_fleet.cc).
void apply_fleet_message(Shared& shared, const fleet::FleetMessage& m, MonoTime now);
/// `hourglass-ctl stats` lines (fleet.*) and Prometheus families (hourglass_fleet_*).
std::string fleet_stats_text(const Shared& shared);
std::string fleet_metrics_text(const Shared& shared);

}  // namespace hg::resolver
