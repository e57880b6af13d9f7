// QueryEngine: the life of a query (docs/architecture.md §2) — receive, admit, look up the
// cache, coalesce in the in-flight table, forward through c-ares, serve stale, answer on time.
// What every worker's engine shares with the others (Shared, Stats) and what a waiting
// client is (Waiter, Route) are in resolver/query/shared.h.
//
// QueryEngine is the per-worker part that decides what to answer. It does not own sockets:
// it is handed packets and a Route to answer on, and an upstream "sender" function, so the
// request-path fuzz target and unit tests drive it with a fake upstream and no network.
// The process around it (threads, signals, reload, shutdown) is resolver/server.h.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/cache.h"
#include "dnssec/aggressive.h"
#include "dnssec/answer.h"
#include "resolver/fleet/fleet_cache.h"
#include "resolver/net/event_loop.h"
#include "resolver/net/tcp_listener.h"
#include "resolver/net/udp_listener.h"
#include "resolver/query/admission.h"
#include "resolver/query/local_names.h"
#include "resolver/query/responder.h"
#include "resolver/query/shared.h"
#include "resolver/tap/dnstap_writer.h"
#include "resolver/upstream/upstream.h"
#include "wire/reencode.h"

namespace hg::resolver {

/// The largest answer over TCP (its two-byte length prefix, RFC 1035 §4.2.2).
inline constexpr std::size_t kMaxTcpAnswer = 65535;

class QueryEngine {
 public:
  /// Sends one upstream query; the callback runs later on this worker's loop thread.
  using Sender = std::function<void(std::span<const uint8_t> query, Upstream::Callback done)>;

  QueryEngine(Shared& shared, EventLoop& loop, Sender sender, int worker);

  /// Sends one upstream query to the servers of forward server set `set`.
  using ForwardSender =
      std::function<void(uint32_t set, std::span<const uint8_t> query, Upstream::Callback done)>;
  /// The routing this engine applies (local answers before the cache, forward zones on a
  /// miss); nullptr (the default): every name goes to `sender`. On the engine's thread.
  void set_routing(std::shared_ptr<const Routing> routing, ForwardSender forward);

  /// Handles one query from `peer`. Returns the size of an answer written to `out` now
  /// (cache hits, errors), or 0 when there is nothing to send now (dropped, or the answer
  /// will go to `route` later). `out` holds at least 512 bytes; answers respect out.size().
  struct Outcome {
    std::size_t size = 0;   ///< bytes of `out` to send now
    bool deferred = false;  ///< the answer will be sent to the route later
  };
  Outcome on_query(std::span<const uint8_t> packet, const sockaddr* peer, const Route& route,
                   std::span<uint8_t> out) {
    if (dnstap_ != nullptr) [[unlikely]]
      return on_query_tapped(packet, peer, route, out);
    return handle(packet, peer, route, out);
  }

  /// dnstap (engine_dnstap.cc): the writer this worker logs to, or nullptr (the default: then
  /// dnstap costs one branch per query). Set on the engine's own thread; what this worker
  /// wrote to the previous writer is flushed to it first.
  void set_dnstap(DnstapWriter* w) noexcept {
    if (dnstap_ != nullptr) dnstap_->flush(static_cast<unsigned>(worker_));
    dnstap_ = w;
  }
  DnstapWriter* dnstap() const noexcept { return dnstap_; }
  /// Writes `m` to this worker's dnstap batch (dnstap() must be set). The batch goes to the
  /// writer's I/O thread at the end of the loop iteration, or at once outside of one.
  void tap_write(const dnstap::Message& m);
  int worker() const noexcept { return worker_; }

  // --- the fleet (--redis; resolver/query/engine_fleet.cc) ---
  /// What this engine lets its worker's FleetCache do: answer waiters from a value, or ask
  /// the upstream. The FleetCache must be destroyed before the engine.
  FleetHooks fleet_hooks();
  void set_fleet(FleetCache* fleet) noexcept { fleet_ = fleet; }
  /// Inserts a Redis value for `key` into the local cache, its TTLs counted down from the
  /// value's insert time, and answers the waiting clients; false (counted) when the value is
  /// unusable or already stale — stale values stay in the local cache for serve-stale.
  bool answer_from_l2(const cache::CacheKey& key, std::span<const uint8_t> value);

  /// One query of ours to an upstream, written in place (no allocation): the client's
  /// question (start_upstream), a DS/DNSKEY fetch of a chain of trust (send_fetch), or a
  /// DNSSEC probe (dnssec_probe.h).
  class UpstreamQuery {
   public:
    /// Header `flags`, one question, one bare OPT record (DO when `dnssec_ok`); false only if
    /// it does not fit, which the buffer's size rules out.
    bool write(const wire::Name& name, uint16_t type, uint16_t klass, uint16_t flags,
               bool dnssec_ok) noexcept;
    std::span<const uint8_t> bytes() const noexcept { return {buf_.data(), size_}; }

   private:
    std::array<uint8_t, 12 + wire::kMaxNameOctets + 4 + 11> buf_;
    std::size_t size_ = 0;
  };

 private:
  Outcome handle(std::span<const uint8_t> packet, const sockaddr* peer, const Route& route,
                 std::span<uint8_t> out);
  /// on_query with dnstap: CLIENT_QUERY, handle(), CLIENT_RESPONSE for an answer sent now.
  Outcome on_query_tapped(std::span<const uint8_t> packet, const sockaddr* peer, const Route& route,
                          std::span<uint8_t> out);
  /// CLIENT_RESPONSE for an answer delivered later to a waiter.
  void tap_response(const Waiter& w, std::span<const uint8_t> bytes);
  bool allowed(const sockaddr* peer) const noexcept;
  /// A name answered here (resolver/query/local_names.h), counted and logged.
  std::size_t answer_local(const Routing::Match& m, const ClientQuery& q, std::span<uint8_t> out,
                           std::size_t limit, MonoTime now);
  std::size_t answer_hit(const cache::Hit& hit, const ClientQuery& q, std::span<uint8_t> out,
                         std::size_t limit, std::optional<EdeSpec> ede);
  /// The same from the entry itself (a fresh hit rendered inside Cache::lookup_fresh);
  /// `stale_ttl` set for a stale answer.
  std::size_t answer_entry(const cache::Entry& entry, std::optional<uint32_t> stale_ttl,
                           const ClientQuery& q, std::span<uint8_t> out, std::size_t limit,
                           std::optional<EdeSpec> ede);
  /// A stale hit with EDE 3 (or 19 for NXDOMAIN), counted; answer_stale_now() also logs.
  std::size_t answer_stale(const cache::Hit& hit, const ClientQuery& q, std::span<uint8_t> out,
                           std::size_t limit);
  std::size_t answer_stale_now(const cache::Hit& hit, const ClientQuery& q, std::span<uint8_t> out,
                               std::size_t limit);
  void start_upstream(const cache::CacheKey& key);
  /// Sends `query` for `name`/`type` to a forward zone's servers when the routing says so
  /// (true), else to the default upstreams (false).
  bool send_routed(const wire::Name& name, wire::RRType type, std::span<const uint8_t> query,
                   Upstream::Callback done);
  /// A local miss: through the fleet when there is one, else straight upstream.
  void begin_miss(const cache::CacheKey& key);
  /// After an upstream answer or failure: share it with the fleet (no-op without one).
  void fleet_after_upstream(const cache::CacheKey& key, const cache::Hit& cached);
  /// A waiter with no stale entry of its own adopts one the fleet put in the local cache.
  void adopt_fleet_stale(const cache::CacheKey& key, Waiter& w);
  /// `validate`: the query was sent to be validated here (DO and CD).
  void on_upstream(const cache::CacheKey& key, UpstreamStatus status,
                   std::span<const uint8_t> answer, bool validate);
  /// What on_upstream does with an answer once it is validated (`verdict`) or needs no
  /// validation (nullptr): cache it and answer the waiters, or fail them.
  void complete_upstream(const cache::CacheKey& key, UpstreamStatus status,
                         std::span<const uint8_t> answer, const dnssec::Verdict* verdict);

  // --- DNSSEC validation (--dnssec validate; resolver/query/engine_dnssec.cc) ---
  /// Whether `key`'s upstream answers are validated here: validation is on and the client
  /// did not set CD (RFC 4035 §3.2.2: then it validates, and gets the data as it is).
  bool validating(const cache::CacheKey& key) const noexcept {
    return dnssec_path(key) == DnssecPath::Validate;
  }
  /// What becomes of `key`'s upstream answer: validated; passed on unvalidated (validation
  /// off, CD=1, a forward zone without a trust anchor of its own, or default upstreams that
  /// do not deliver DNSSEC records under --dnssec validate); refused (--dnssec require).
  DnssecPath dnssec_path(const cache::CacheKey& key) const noexcept;
  /// --dnssec require behind upstreams that do not deliver DNSSEC records: `key`'s waiters
  /// get SERVFAIL with EDE 22, on the next loop iteration.
  void refuse_unvalidated(const cache::CacheKey& key);
  /// RFC 8198: when validated NSEC/NSEC3 records this worker holds prove `key`'s name or type
  /// does not exist, its waiters get that proof as a secure answer (cached like an upstream
  /// one), on the next loop iteration, and true; false: ask upstream.
  bool answer_from_denials(const cache::CacheKey& key);
  /// Validates an upstream answer for `key`, fetching the DS and DNSKEY RRsets it needs;
  /// complete_upstream() follows with the verdict.
  void begin_validation(const cache::CacheKey& key, std::span<const uint8_t> answer);
  /// Sends validation `id`'s next DS/DNSKEY fetch, or, when another validation's identical
  /// fetch is in flight, waits for that one's answer (fetches_).
  void send_fetch(uint32_t id);
  /// A fetch's answer: fed to every validation waiting for it.
  void on_fetch_answer(const std::pair<wire::Name, uint16_t>& fetch, UpstreamStatus status,
                       std::span<const uint8_t> answer);
  void on_fetch(uint32_t id, UpstreamStatus status, std::span<const uint8_t> answer);
  void finish_validation(const cache::CacheKey& key, const dnssec::AnswerValidation& v);
  /// The keys of `zone` a chain of trust established and that have not expired; nullptr.
  const dnssec::ZoneKeys* known_zone(const wire::Name& zone) const;
  void learn(const std::vector<dnssec::ZoneKeys>& zones);
  /// A bogus answer: its waiters get SERVFAIL with the RFC 8914 code of the reason (or a
  /// stale answer validated earlier), and the key waits out the failure cache (RFC 9520).
  void on_bogus(const cache::CacheKey& key, const dnssec::Verdict& verdict);
  /// Makes an upstream (or fleet) answer fit for the cache (wire::AnswerNormalizer): on true,
  /// upstream_msg_ is the view of it re-encoded by our writer.
  /// Re-encodes an upstream or fleet answer for `key` into upstream_msg_, scrubbed by the
  /// rules every answer gets (wire::RewriteRules: DNSSEC records only for DO keys, TTLs of
  /// 2^31 or more as 0, AD cleared unless the cache keeps AD, TTLs capped at `max_ttl`);
  /// counts what the rules changed.
  bool normalize_upstream(std::span<const uint8_t> answer, const cache::CacheKey& key,
                          uint32_t max_ttl = wire::RewriteRules{}.max_ttl);
  /// Whether `key`'s name may resolve to a --private-address block: at or below a
  /// --private-domain, or in a forward zone.
  bool may_be_private(const cache::CacheKey& key) const;
  void on_deadline(const cache::CacheKey& key);
  /// Cancels the waiter's deadline timer (on its own loop) once it has been answered.
  void release_timer(const Waiter& w);
  /// Answers a waiter whose query failed or ran out of time: stale if it has one, else
  /// SERVFAIL with `ede`.
  void answer_failed(const Waiter& w, uint16_t ede, std::string_view text, const char* what);
  void deliver(const Waiter& w, std::span<const uint8_t> bytes, const char* what,
               wire::RCode rcode);
  /// One line of the query log (--log-queries). `client`: the client's address (nullptr in
  /// tests that feed packets directly); when omitted, the client of the query being handled.
  void log_query(const wire::Name& qname, wire::RRType qtype, wire::RCode rcode, const char* what,
                 MonoTime received, const sockaddr* client);
  void log_query(const wire::Name& qname, wire::RRType qtype, wire::RCode rcode, const char* what,
                 MonoTime received) {
    log_query(qname, qtype, rcode, what, received, handling_peer_);
  }
  /// The client address of the query handle() is working on, for the query log.
  const sockaddr* handling_peer_ = nullptr;
  void log_upstream_failure(const cache::CacheKey& key, UpstreamStatus status);
  /// Whether a failure may be logged now (one line a second across all workers, so a flood of
  /// failing or bogus names cannot flood the journal): the number of lines suppressed since
  /// the last one, to say with it; nullopt when this one is suppressed (and counted).
  std::optional<uint64_t> failure_log_turn();

  /// Keys that this engine's pending callbacks (an upstream answer, a waiter's deadline) will
  /// need, each in a numbered slot: the callbacks capture [this, slot], which std::function
  /// keeps inline, instead of a copy of the key (~270 bytes), which it would allocate for.
  /// A deque, so a key stays put while slots are added. Loop thread only.
  class KeySlots {
   public:
    uint32_t hold(const cache::CacheKey& key);
    const cache::CacheKey& operator[](uint32_t slot) const noexcept { return keys_[slot]; }
    void drop(uint32_t slot) { free_.push_back(slot); }

   private:
    std::deque<cache::CacheKey> keys_;
    std::vector<uint32_t> free_;
  };
  /// Cancels a waiter's deadline timer on this engine's loop, freeing its key slot.
  void cancel_deadline(TimerId timer, uint32_t slot);

  KeySlots keys_;
  Shared& shared_;
  EventLoop& loop_;
  Sender sender_;
  int worker_;
  wire::Message scratch_;
  wire::AnswerNormalizer normalizer_;  // upstream and fleet answers, re-encoded for the cache
  const wire::Message& upstream_msg_ = normalizer_.message();  // the last one normalised
  std::vector<uint8_t> buf_;                                   // answers rendered for waiters
  DnstapWriter* dnstap_ = nullptr;
  int64_t tap_query_ns_ = 0;        // arrival time of the query being handled, when dnstap is on
  bool tap_flush_pending_ = false;  // a flush of the dnstap batch is due this iteration
  FleetCache* fleet_ = nullptr;
  // The top-names sample (resolver/query/top_names.h): queries since the last one sampled, and the
  // gap to the next, drawn from [1, 31] (mean 16) by a xorshift so that periodic traffic
  // cannot hide a name between samples.
  uint32_t top_tick_ = 0;
  uint32_t top_gap_ = TopNames::kSampleEvery;
  uint32_t top_rng_ = 0x9e3779b9u;
  wire::Message l2_msg_;
  std::shared_ptr<const Routing> routing_;
  std::vector<wire::Name> private_domains_;  ///< --private-domain, parsed
  ForwardSender forward_;
  /// Per forward server set: whether its names are validated (a trust anchor lies at or below
  /// one of its zones). Other forward zones are the site's own, not the public DNS's.
  std::vector<bool> validated_sets_;
  /// Validations waiting for a DS or DNSKEY fetch, by id; the key stays in keys_ meanwhile.
  struct PendingValidation {
    uint32_t slot;
    std::unique_ptr<dnssec::AnswerValidation> v;
  };
  std::unordered_map<uint32_t, PendingValidation> validations_;
  uint32_t next_validation_ = 0;
  /// DS/DNSKEY fetches in flight (lowercased name, type) and the validations waiting for each:
  /// answers from a zone not yet established, arriving together, share its fetches.
  std::map<std::pair<wire::Name, uint16_t>, std::vector<uint32_t>> fetches_;
  /// Fetch answers of the last kFetchMemo, as the upstream gave them (the validations check
  /// them each time): validations that start while others are still walking the same chain
  /// find them here, before the zones are established. At most kMaxFetchMemos.
  struct FetchMemo {
    std::vector<uint8_t> answer;
    MonoTime until;
  };
  static constexpr Millis kFetchMemo{30'000};
  static constexpr std::size_t kMaxFetchMemos = 256;
  std::map<std::pair<wire::Name, uint16_t>, FetchMemo> fetch_memos_;
  /// Zone keys (and insecure zones) chains of trust established, until they expire: the next
  /// answer from a zone costs no fetch. At most kMaxKnownZones, the oldest dropped first.
  struct KnownZone {
    dnssec::ZoneKeys keys;
    MonoTime until;
  };
  static constexpr std::size_t kMaxKnownZones = 1024;
  std::vector<KnownZone> known_zones_;
  /// Validated denials (RFC 8198), learned from this worker's secure NXDOMAIN/NODATA answers.
  dnssec::AggressiveCache denials_;
  /// complete_upstream() is storing an answer made from denials_, not an upstream's.
  bool from_denials_ = false;
};

/// RFC 8914's code for why an answer is bogus, and the text clients see with it
/// (engine_dnssec.cc).
EdeSpec dnssec_ede(dnssec::Why why);

/// dnstap (engine_dnstap.cc): sends an upstream query through `upstream` and logs it as
/// FORWARDER_QUERY, and its answer as FORWARDER_RESPONSE, to the engine's writer.
void dnstap_forward(QueryEngine& engine, Upstream& upstream, std::span<const uint8_t> query,
                    Upstream::Callback done);

}  // namespace hg::resolver
