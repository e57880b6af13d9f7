// The fleet: a shared second-level cache and fleet-wide single-flight on Redis
// (`--redis`). Each worker owns one FleetCache with two Redis connections driven by its own
// event loop (redis_conn.h): one for commands, one for pub/sub. Redis is an accelerator,
// never a dependency: every Redis step has a deadline (--redis-timeout), a circuit breaker
// stops asking after repeated failures, and any failure falls back to exactly what a single
// instance does — ask the upstream.
//
// A local miss (the first client of a key on this instance; the in-flight table coalesces
// the rest) runs one Lua script, one round trip:
//
//   GET PREFIXc:KEY          → a value: decode, insert into the local cache with the TTLs
//                              counted down from the value's wall-clock insert time, answer
//                              (stale values go into the local cache and the key goes upstream)
//   else SET PREFIXl:KEY TOKEN NX PX <upstream timeout>
//        won  → ask the upstream; on its answer one more script stores the value (SET ... PXAT
//               insert + TTL + stale window), deletes the lock if still ours, and PUBLISHes the
//               value on PREFIXd:KEY (an empty message when there is nothing to share)
//        lost → SUBSCRIBE PREFIXd:KEY, GET the value again (it may have been published before
//               the subscription), then wait for the publication up to --client-timeout; an
//               empty or unusable publication, or the wait running out, and the key goes
//               upstream from here (a dead lock holder costs at most one client timeout)
//   error/timeout/breaker open → ask the upstream
//
// Operators' flushes and TTL caps with `--fleet` go to Redis (SCAN + UNLINK; the caps in the
// hash PREFIXttl-caps, read at every connect) and, on PREFIXfleet, to every instance.
//
// With --fleet-key-file every value, hand-over, fleet message and ttl cap carries an
// HMAC-SHA256 tag (fleet_auth.h) and whatever does not verify is counted and ignored; a lock
// without an expiry is never waited on (see kLookupScript).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/key.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/fleet/redis_breaker.h"
#include "resolver/fleet/redis_config.h"
#include "resolver/fleet/redis_conn.h"
#include "resolver/fleet/redis_value.h"
#include "resolver/net/event_loop.h"

struct redisAsyncContext;
struct redisReply;

namespace hg::resolver {

/// Counters for metrics and `hourglass-ctl stats`: relaxed atomics, shared by the workers.
struct FleetStats {
  std::atomic<uint64_t> l2_hits{0};     ///< misses answered from a fresh Redis value
  std::atomic<uint64_t> l2_stale{0};    ///< a Redis value found, but past its TTL (kept stale)
  std::atomic<uint64_t> l2_misses{0};   ///< no value in Redis
  std::atomic<uint64_t> l2_errors{0};   ///< Redis failed or timed out; the miss went upstream
  std::atomic<uint64_t> l2_corrupt{0};  ///< values ignored: foreign, corrupt, other key
  std::atomic<uint64_t> l2_skipped{0};  ///< misses not sent to Redis (down, breaker open)
  std::atomic<uint64_t> l2_stores{0};
  std::atomic<uint64_t> l2_store_errors{0};
  std::atomic<uint64_t> lock_wins{0};
  std::atomic<uint64_t> lock_waits{0};      ///< another instance held the lock: waited
  std::atomic<uint64_t> lock_answered{0};   ///< ... and got its value
  std::atomic<uint64_t> lock_timeouts{0};   ///< ... and gave up (went upstream itself)
  std::atomic<uint64_t> lock_fallbacks{0};  ///< ... and got nothing usable (went upstream)
  std::atomic<uint64_t> timeouts{0};        ///< Redis commands past --redis-timeout
  std::atomic<uint64_t> breaker_opens{0};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<uint64_t> fleet_sent{0};
  std::atomic<uint64_t> fleet_received{0};
  // --fleet-key-file: what did not verify, ignored (fleet_auth.h).
  std::atomic<uint64_t> auth_failed_values{0};    ///< values and hand-overs: no tag or forged
  std::atomic<uint64_t> auth_failed_messages{0};  ///< fleet messages: no tag or forged
  std::atomic<uint64_t> auth_failed_caps{0};      ///< PREFIXttl-caps fields: no tag or forged
  std::atomic<uint64_t> replayed_messages{0};     ///< verified, but stale, future or replayed
  std::atomic<uint64_t> future_values{0};   ///< insert time ahead of our clock beyond the skew
  std::atomic<uint64_t> lock_unbounded{0};  ///< locks without expiry: not waited on
  std::atomic<int64_t> connected{0};        ///< workers whose command connection is up
  std::atomic<int64_t> breaker_open{0};     ///< workers whose breaker is open or half-open
};

/// What a QueryEngine lets the fleet do with a key it resolves (see QueryEngine).
struct FleetHooks {
  /// A value read from Redis or published by the lock holder: true when the waiting clients
  /// were answered from it; false when it was unusable (counted) or stale.
  std::function<bool(const cache::CacheKey& key, std::span<const uint8_t> value)> deliver;
  /// Resolve upstream as a single instance would.
  std::function<void(const cache::CacheKey& key)> go_upstream;
};

/// Applies fleet control messages to this instance (set by the Server).
struct FleetApplier {
  std::function<void(const fleet::FleetMessage&)> apply;
};

class FleetCache {
 public:
  struct Settings {
    RedisConfig redis;
    std::chrono::milliseconds lock_ttl{3000};   ///< the upstream timeout
    std::chrono::milliseconds wait_max{1800};   ///< the client timeout
    std::chrono::seconds keep_after_expiry{0};  ///< the stale window
    bool control = false;  ///< this worker subscribes to PREFIXfleet and loads ttl caps
    CircuitBreaker::Settings breaker{};
  };

  FleetCache(EventLoop& loop, Settings settings, FleetStats& stats, FleetHooks hooks,
             FleetApplier applier = {});
  ~FleetCache();
  FleetCache(const FleetCache&) = delete;
  FleetCache& operator=(const FleetCache&) = delete;

  void start();

  /// The first local miss of `key`: L2 lookup and lock, then hooks.deliver or go_upstream.
  void on_miss(const cache::CacheKey& key);
  /// The upstream answered and the answer was cached here: `message` is the normalised
  /// answer, `ttl` the entry's shortest TTL after the TTL policy, `received_ms` the wall clock
  /// when it arrived. Stores and publishes it, and releases our lock.
  void on_answer(const cache::CacheKey& key, std::span<const uint8_t> message, uint32_t ttl,
                 int64_t received_ms);
  /// The upstream failed, or the answer is not for sharing: releases our lock and tells the
  /// waiting instances to ask for themselves.
  void on_failure(const cache::CacheKey& key);

  /// Fleet control (worker 0): does the Redis part of `m` and publishes it to every instance.
  /// Returns an error line when Redis cannot be reached.
  std::optional<std::string> broadcast(const fleet::FleetMessage& m);

 private:
  struct KeyState {
    std::string token;  ///< non-empty while we hold the lock
    std::string channel;
    bool waiting = false;
    bool subscribed = false;
    TimerId wait_timer{};
  };

  bool usable();
  void note_result(bool ok);
  void on_lookup_reply(const cache::CacheKey& key, const std::string& token, const redisReply* r);
  void start_wait(const cache::CacheKey& key);
  void on_subscribed(const std::string& channel);
  void on_message(const std::string& channel, std::span<const uint8_t> payload);
  void end_wait(const cache::CacheKey& key, std::span<const uint8_t> value, bool timed_out);
  void release(const cache::CacheKey& key, std::span<const uint8_t> value, int64_t expiry_ms);
  void on_pubsub(const redisReply* r);
  void on_fleet_message(std::string_view text);
  void load_ttl_caps();
  /// With a key: does `value` (read or published for `key`) verify? Counts it when not.
  bool authentic(const cache::CacheKey& key, std::span<const uint8_t> value);
  /// A fleet message as published: with a key, tagged now with the next sequence number.
  std::string sealed(const std::string& text);
  void scan_delete(const std::string& pattern, const std::string& cursor,
                   std::optional<wire::Name> zone, int rounds);

  EventLoop& loop_;
  Settings settings_;
  FleetStats& stats_;
  FleetHooks hooks_;
  FleetApplier applier_;
  CircuitBreaker breaker_;
  std::unique_ptr<RedisConn> cmd_;
  std::unique_ptr<RedisConn> sub_;
  std::string instance_id_;
  std::string fleet_channel_;
  std::unique_ptr<fleet::FleetAuth> auth_;  ///< with --fleet-key-file
  fleet::ReplayGuard replay_;
  uint64_t sent_seq_ = 0;  ///< of our fleet messages
  bool logged_forgery_ = false;
  std::unordered_map<cache::CacheKey, KeyState, cache::CacheKeyHash> keys_;
  std::unordered_map<std::string, cache::CacheKey> by_channel_;
  std::string pending_publish_;  ///< a fleet message to send when its flush is done
  bool breaker_counted_open_ = false;
  bool connected_counted_ = false;
};

}  // namespace hg::resolver
