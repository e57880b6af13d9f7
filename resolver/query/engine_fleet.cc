// QueryEngine's side of the fleet (--redis): where a local miss meets the shared cache, and
// where an upstream answer is offered to it. The fleet protocol on Redis is in
// resolver/fleet/fleet_cache.cc (the connections: redis_conn.cc), the value format in
// redis_value.cc.
#include <fmt/core.h>

#include <algorithm>

#include "base/wall_clock.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/query/query_engine.h"

namespace hg::resolver {

using wire::RCode;

FleetHooks QueryEngine::fleet_hooks() {
  FleetHooks h;
  h.deliver = [this](const cache::CacheKey& key, std::span<const uint8_t> value) {
    return answer_from_l2(key, value);
  };
  h.go_upstream = [this](const cache::CacheKey& key) { start_upstream(key); };
  return h;
}

void QueryEngine::begin_miss(const cache::CacheKey& key) {
  if (fleet_ != nullptr) {
    fleet_->on_miss(key);
  } else {
    start_upstream(key);
  }
}

void QueryEngine::fleet_after_upstream(const cache::CacheKey& key, const cache::Hit& cached) {
  if (fleet_ == nullptr) return;
  if (cached.freshness == cache::Freshness::Fresh) {
    fleet_->on_answer(key, upstream_msg_.packet(), cached.entry->ttl(), base::wall_count<Millis>());
  } else {
    fleet_->on_failure(key);
  }
}

void QueryEngine::adopt_fleet_stale(const cache::CacheKey& key, Waiter& w) {
  if (fleet_ == nullptr || w.stale) return;
  const cache::Hit hit = shared_.cache.peek(key, loop_.now());
  if (hit.stale()) w.stale = hit.entry;
}

bool QueryEngine::answer_from_l2(const cache::CacheKey& key, std::span<const uint8_t> value) {
  auto& fs = shared_.fleet_stats;
  const auto decoded = fleet::decode_value(value, key, l2_msg_);
  // Another writer's bytes: re-encode them with our writer, as an upstream answer is, so the
  // cache's precondition (compression pointers only to names) holds whatever they contain.
  if (decoded.status != fleet::ValueStatus::Ok || !normalize_upstream(decoded.message, key)) {
    fs.l2_corrupt.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const MonoTime now = loop_.now();
  const auto& settings = shared_.cache.settings();
  const int64_t cap_ms =
      (int64_t{settings.ttl.max_ttl} + settings.stale_max.count() + 1) * int64_t{1000};
  const int64_t wall = base::wall_count<Millis>();
  // An insert time in the future would stop the TTLs from counting down: beyond the clock
  // skew allowed between instances the value is refused; within it, the age is 0, so the
  // TTLs are at most the upstream's, never extended.
  if (decoded.inserted_ms > wall + fleet::kMaxClockSkewMs) {
    fs.future_values.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const int64_t age = fleet::value_age_ms(decoded.inserted_ms, wall, cap_ms);
  // Backdated to when the first instance received it: the TTLs we render count down from
  // that instant, as the other instances' do.
  const auto outcome = shared_.cache.insert(key, upstream_msg_, now - Millis{age});
  if (outcome != cache::InsertOutcome::Cached) {
    fs.l2_corrupt.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const cache::Hit hit = shared_.cache.peek(key, now);
  if (hit.freshness != cache::Freshness::Fresh) {
    fs.l2_stale.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const auto rcode = static_cast<RCode>(hit.entry->rcode());
  for (const Waiter& w : shared_.inflight.complete(key)) {
    release_timer(w);
    const ClientQuery q = w.client();
    const std::size_t limit =
        w.route.is_tcp ? buf_.size() : std::min<std::size_t>({w.query.udp_size, 1232, buf_.size()});
    const std::size_t size = answer_hit(hit, q, buf_, limit, std::nullopt);
    deliver(w, std::span<const uint8_t>(buf_.data(), size), "l2", rcode);
  }
  return true;
}

void apply_fleet_message(Shared& shared, const fleet::FleetMessage& m, MonoTime now) {
  auto& cache = shared.cache;
  switch (m.op) {
    case fleet::FleetOp::FlushAll:
      cache.flush_all();
      break;
    case fleet::FleetOp::FlushName:
      cache.flush_name(m.name);
      break;
    case fleet::FleetOp::FlushZone:
      cache.flush_zone(m.name);
      break;
    case fleet::FleetOp::TtlCap:
      cache.set_ttl_cap(m.name, m.seconds, now);
      break;
    case fleet::FleetOp::TtlCapClear:
      cache.clear_ttl_cap(m.name);
      break;
  }
}

namespace {

using FleetField = const std::atomic<uint64_t> FleetStats::*;

struct FleetCounter {
  const char* key;     // hourglass-ctl stats: fleet.KEY
  const char* metric;  // hourglass_fleet_METRIC
  const char* help;
  FleetField field;
};

constexpr FleetCounter kFleetCounters[] = {
    {"l2_hits", "l2_hits_total", "Local misses answered from a fresh value in Redis.",
     &FleetStats::l2_hits},
    {"l2_stale", "l2_stale_total",
     "Values found in Redis past their TTL (kept locally for serve-stale; asked upstream).",
     &FleetStats::l2_stale},
    {"l2_misses", "l2_misses_total", "Local misses that found no value in Redis.",
     &FleetStats::l2_misses},
    {"l2_errors", "l2_errors_total",
     "Local misses whose Redis lookup failed or timed out (asked upstream).",
     &FleetStats::l2_errors},
    {"l2_corrupt", "l2_corrupt_total",
     "Values or fleet messages from Redis ignored as corrupt, foreign or for another key.",
     &FleetStats::l2_corrupt},
    {"l2_skipped", "l2_skipped_total",
     "Local misses not sent to Redis (not connected, or the circuit breaker open).",
     &FleetStats::l2_skipped},
    {"l2_stores", "l2_stores_total", "Upstream answers stored in Redis.", &FleetStats::l2_stores},
    {"l2_store_errors", "l2_store_errors_total",
     "Upstream answers Redis did not store (error, timeout, maxmemory).",
     &FleetStats::l2_store_errors},
    {"lock_wins", "lock_wins_total", "Fleet single-flight locks won: this instance asked upstream.",
     &FleetStats::lock_wins},
    {"lock_waits", "lock_waits_total",
     "Misses that waited for another instance holding the fleet lock.", &FleetStats::lock_waits},
    {"lock_answered", "lock_answered_total", "Waits answered by the lock holder's published value.",
     &FleetStats::lock_answered},
    {"lock_timeouts", "lock_timeouts_total",
     "Waits that ran out (client timeout) and asked upstream themselves.",
     &FleetStats::lock_timeouts},
    {"lock_fallbacks", "lock_fallbacks_total",
     "Waits that got nothing usable (holder failed, Redis lost) and asked upstream.",
     &FleetStats::lock_fallbacks},
    {"timeouts", "redis_timeouts_total", "Redis replies that did not come within --redis-timeout.",
     &FleetStats::timeouts},
    {"breaker_opens", "breaker_opens_total", "Times a worker's Redis circuit breaker opened.",
     &FleetStats::breaker_opens},
    {"reconnects", "redis_disconnects_total", "Redis command connections lost.",
     &FleetStats::reconnects},
    {"fleet_sent", "messages_sent_total", "Fleet flush/ttl-cap messages published.",
     &FleetStats::fleet_sent},
    {"fleet_received", "messages_received_total",
     "Fleet flush/ttl-cap messages from other instances applied here.",
     &FleetStats::fleet_received},
    {"auth_failed_values", "auth_failed_values_total",
     "Values and lock hand-overs from Redis ignored: no tag or a tag that does not verify "
     "with --fleet-key-file.",
     &FleetStats::auth_failed_values},
    {"auth_failed_messages", "auth_failed_messages_total",
     "Fleet messages ignored: no tag or a tag that does not verify with --fleet-key-file.",
     &FleetStats::auth_failed_messages},
    {"auth_failed_caps", "auth_failed_caps_total",
     "Fleet TTL caps in Redis ignored: no tag or a tag that does not verify with "
     "--fleet-key-file.",
     &FleetStats::auth_failed_caps},
    {"replayed_messages", "replayed_messages_total",
     "Fleet messages that verified but were refused as stale, from the future or replayed.",
     &FleetStats::replayed_messages},
    {"future_values", "future_values_total",
     "Values from Redis refused because their insert time is ahead of this clock by more than "
     "the allowed skew.",
     &FleetStats::future_values},
    {"lock_unbounded", "lock_unbounded_total",
     "Fleet locks found without an expiry (no hourglass writes one): not waited on.",
     &FleetStats::lock_unbounded},
};

}  // namespace

std::string fleet_stats_text(const Shared& shared) {
  const FleetStats& f = shared.fleet_stats;
  std::string out;
  for (const auto& c : kFleetCounters)
    out += fmt::format("fleet.{} {}\n", c.key, (f.*c.field).load(std::memory_order_relaxed));
  out += fmt::format("fleet.connected_workers {}\n", f.connected.load(std::memory_order_relaxed));
  out += fmt::format("fleet.breaker_open_workers {}\n",
                     f.breaker_open.load(std::memory_order_relaxed));
  return out;
}

std::string fleet_metrics_text(const Shared& shared) {
  const FleetStats& f = shared.fleet_stats;
  std::string out;
  for (const auto& c : kFleetCounters) {
    const std::string name = fmt::format("hourglass_fleet_{}", c.metric);
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, c.help, name, name,
                       (f.*c.field).load(std::memory_order_relaxed));
  }
  out += fmt::format(
      "# HELP hourglass_fleet_redis_connected Workers whose Redis connection is up.\n"
      "# TYPE hourglass_fleet_redis_connected gauge\nhourglass_fleet_redis_connected {}\n",
      f.connected.load(std::memory_order_relaxed));
  out += fmt::format(
      "# HELP hourglass_fleet_breaker_open Workers whose Redis circuit breaker is open (0: "
      "closed everywhere).\n# TYPE hourglass_fleet_breaker_open gauge\n"
      "hourglass_fleet_breaker_open {}\n",
      f.breaker_open.load(std::memory_order_relaxed));
  return out;
}

}  // namespace hg::resolver
