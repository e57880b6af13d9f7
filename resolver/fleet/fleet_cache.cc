#include "resolver/fleet/fleet_cache.h"

#include <fmt/core.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <ctime>
#include <random>

#include "base/wall_clock.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/log.h"

namespace hg::resolver {

namespace {

// KEYS: value, lock. ARGV: token, lock ms, longest lock ms. {1, value} | {2} lock won | {0}
// lock held by another instance | {3, error} the lock could not be taken (e.g. maxmemory
// reached) | {4} a lock no hourglass wrote: without an expiry (PTTL -1) or longer than any
// instance's (hourglass always sets PX <upstream timeout>, at most 60 s). Nobody would ever
// publish for it: it is given our lock's expiry and the miss goes upstream at once.
constexpr std::string_view kLookupScript =
    "local v = redis.call('GET', KEYS[1]) "
    "if v then return {1, v} end "
    "local r = redis.pcall('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) "
    "if type(r) == 'table' and r['ok'] then return {2} end "
    "if type(r) == 'table' and r['err'] then return {3, r['err']} end "
    "local t = redis.call('PTTL', KEYS[2]) "
    "if t == -1 or t > tonumber(ARGV[3]) then "
    "  redis.pcall('PEXPIRE', KEYS[2], ARGV[2]) return {4} end "
    "return {0}";

/// The longest lock an instance takes: --upstream-timeout's limit.
constexpr std::string_view kLongestLockMs = "60000";

// KEYS: value, lock. ARGV: value ('' = nothing to store), expiry (Unix ms), token ('' = not
// holding the lock), channel. Stores, releases the lock if it is still ours, publishes.
constexpr std::string_view kStoreScript =
    "local stored = 0 "
    "if ARGV[1] ~= '' then "
    "  local r = redis.pcall('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2]) "
    "  if type(r) == 'table' and r['ok'] then stored = 1 end "
    "end "
    "if ARGV[3] ~= '' and redis.call('GET', KEYS[2]) == ARGV[3] then "
    "  redis.call('DEL', KEYS[2]) end "
    "if ARGV[3] ~= '' or ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[4], ARGV[1]) end "
    "return stored";

constexpr std::chrono::milliseconds kAdminTimeout{2000};

bool is_string(const redisReply* r) {
  return r != nullptr && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

std::string random_hex(std::size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i)
    s += kHex[rng() & 15u];
  return s;
}

}  // namespace

// --- FleetCache -------------------------------------------------------------------------------

FleetCache::FleetCache(EventLoop& loop, Settings settings, FleetStats& stats, FleetHooks hooks,
                       FleetApplier applier)
    : loop_(loop),
      settings_(std::move(settings)),
      stats_(stats),
      hooks_(std::move(hooks)),
      applier_(std::move(applier)),
      breaker_(settings_.breaker),
      instance_id_(random_hex(16)),
      fleet_channel_(fleet::fleet_channel(settings_.redis.prefix)) {
  if (!settings_.redis.fleet_key.empty()) {
    std::string why;
    auth_ = fleet::FleetAuth::create(fleet::bytes(settings_.redis.fleet_key), &why);
    // Server::create made one already, so this does not fail; if it did, this worker would
    // trust Redis: never use it instead.
    if (!auth_) settings_.redis.target.clear();
  }
  cmd_ = std::make_unique<RedisConn>(loop_, settings_.redis, "commands", false);
  sub_ = std::make_unique<RedisConn>(loop_, settings_.redis, "pubsub", true);
  cmd_->on_ready = [this] {
    if (!connected_counted_) {
      stats_.connected.fetch_add(1, std::memory_order_relaxed);
      connected_counted_ = true;
    }
    if (settings_.control) load_ttl_caps();
  };
  cmd_->on_lost = [this] {
    stats_.reconnects.fetch_add(1, std::memory_order_relaxed);
    if (connected_counted_) {
      stats_.connected.fetch_sub(1, std::memory_order_relaxed);
      connected_counted_ = false;
    }
  };
  sub_->on_ready = [this] {
    if (settings_.control) sub_->subscribe(fleet_channel_);
  };
  sub_->on_pubsub = [this](const redisReply* r) { on_pubsub(r); };
  sub_->on_lost = [this] {
    // Every wait loses its subscription: those keys go upstream now.
    std::vector<cache::CacheKey> waiting;
    for (auto& [key, ks] : keys_)
      if (ks.waiting) waiting.push_back(key);
    for (const auto& key : waiting)
      end_wait(key, {}, false);
  };
}

FleetCache::~FleetCache() {
  for (auto& [key, ks] : keys_)
    if (ks.wait_timer) loop_.cancel_timer(ks.wait_timer);
  if (breaker_counted_open_) stats_.breaker_open.fetch_sub(1, std::memory_order_relaxed);
  if (connected_counted_) stats_.connected.fetch_sub(1, std::memory_order_relaxed);
  sub_.reset();
  cmd_.reset();
}

void FleetCache::start() {
  if (!settings_.redis.enabled()) return;
  cmd_->start();
  sub_->start();
}

bool FleetCache::usable() {
  if (!cmd_->connected()) return false;
  const bool ok = breaker_.allow(loop_.now());
  const bool open = breaker_.state() != CircuitBreaker::State::Closed;
  if (open != breaker_counted_open_) {
    stats_.breaker_open.fetch_add(open ? 1 : -1, std::memory_order_relaxed);
    breaker_counted_open_ = open;
  }
  return ok;
}

void FleetCache::note_result(bool ok) {
  if (ok) {
    breaker_.success();
  } else if (breaker_.failure(loop_.now())) {
    stats_.breaker_opens.fetch_add(1, std::memory_order_relaxed);
    log::print(log::Level::Warning, "redis: circuit breaker open for {} ms after repeated failures",
               breaker_.cooldown().count());
  }
  const bool open = breaker_.state() != CircuitBreaker::State::Closed;
  if (open != breaker_counted_open_) {
    stats_.breaker_open.fetch_add(open ? 1 : -1, std::memory_order_relaxed);
    breaker_counted_open_ = open;
  }
}

void FleetCache::on_miss(const cache::CacheKey& key) {
  if (!usable()) {
    stats_.l2_skipped.fetch_add(1, std::memory_order_relaxed);
    hooks_.go_upstream(key);
    return;
  }
  const std::string& prefix = settings_.redis.prefix;
  const std::string vkey = fleet::cache_key(prefix, key);
  const std::string lkey = fleet::lock_key(prefix, key);
  std::string token = instance_id_ + "-" + random_hex(8);
  const std::string lock_ms = std::to_string(settings_.lock_ttl.count());
  const bool sent =
      cmd_->command({"EVAL", kLookupScript, "2", vkey, lkey, token, lock_ms, kLongestLockMs},
                    settings_.redis.timeout,
                    [this, key, token](const redisReply* r) { on_lookup_reply(key, token, r); });
  if (!sent) {
    note_result(false);
    stats_.l2_errors.fetch_add(1, std::memory_order_relaxed);
    hooks_.go_upstream(key);
  }
}

void FleetCache::on_lookup_reply(const cache::CacheKey& key, const std::string& token,
                                 const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
      r->element[0]->type != REDIS_REPLY_INTEGER) {
    if (r == nullptr) stats_.timeouts.fetch_add(1, std::memory_order_relaxed);
    note_result(false);
    stats_.l2_errors.fetch_add(1, std::memory_order_relaxed);
    hooks_.go_upstream(key);
    return;
  }
  note_result(true);
  switch (r->element[0]->integer) {
    case 1: {
      if (r->elements < 2 || r->element[1]->type != REDIS_REPLY_STRING) break;
      const redisReply* v = r->element[1];
      const auto value = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v->str),
                                                  static_cast<std::size_t>(v->len));
      if (authentic(key, value) && hooks_.deliver(key, value)) {
        stats_.l2_hits.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      hooks_.go_upstream(key);  // corrupt or stale (counted by deliver)
      return;
    }
    case 2:
      stats_.l2_misses.fetch_add(1, std::memory_order_relaxed);
      stats_.lock_wins.fetch_add(1, std::memory_order_relaxed);
      keys_[key].token = token;
      hooks_.go_upstream(key);
      return;
    case 0:
      stats_.l2_misses.fetch_add(1, std::memory_order_relaxed);
      stats_.lock_waits.fetch_add(1, std::memory_order_relaxed);
      start_wait(key);
      return;
    case 4:
      // A lock nobody will publish for (no expiry): do not wait on it; the script gave it our
      // expiry, so the fleet's single-flight works again after it.
      stats_.l2_misses.fetch_add(1, std::memory_order_relaxed);
      stats_.lock_unbounded.fetch_add(1, std::memory_order_relaxed);
      hooks_.go_upstream(key);
      return;
    default:
      stats_.l2_misses.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  stats_.l2_errors.fetch_add(1, std::memory_order_relaxed);
  hooks_.go_upstream(key);
}

void FleetCache::start_wait(const cache::CacheKey& key) {
  const std::string channel = fleet::done_channel(settings_.redis.prefix, key);
  if (by_channel_.contains(channel) || !sub_->subscribe(channel)) {
    stats_.lock_fallbacks.fetch_add(1, std::memory_order_relaxed);
    hooks_.go_upstream(key);
    return;
  }
  KeyState& ks = keys_[key];
  ks.channel = channel;
  ks.waiting = true;
  ks.subscribed = false;
  by_channel_.emplace(channel, key);
  // First the subscription must be confirmed within the Redis timeout; then the lock
  // holder's publication is awaited up to the client timeout in all.
  const MonoTime give_up = loop_.now() + settings_.wait_max;
  ks.wait_timer = loop_.add_timer(settings_.redis.timeout, [this, key, give_up] {
    auto it = keys_.find(key);
    if (it == keys_.end() || !it->second.waiting) return;
    it->second.wait_timer = {};
    if (!it->second.subscribed) {
      stats_.timeouts.fetch_add(1, std::memory_order_relaxed);
      end_wait(key, {}, false);
      return;
    }
    it->second.wait_timer = loop_.add_timer_at(give_up, [this, key] {
      auto jt = keys_.find(key);
      if (jt == keys_.end()) return;
      jt->second.wait_timer = {};
      end_wait(key, {}, true);
    });
  });
}

void FleetCache::on_pubsub(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || !is_string(r->element[0]) ||
      !is_string(r->element[1]))
    return;
  const std::string_view kind = reply_text(r->element[0]);
  const std::string channel(reply_text(r->element[1]));
  if (kind == "message" && r->element[2]->type == REDIS_REPLY_STRING) {
    const auto payload =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r->element[2]->str),
                                 static_cast<std::size_t>(r->element[2]->len));
    if (channel == fleet_channel_) {
      on_fleet_message(reply_text(r->element[2]));
    } else {
      on_message(channel, payload);
    }
  } else if (kind == "subscribe") {
    on_subscribed(channel);
  }
}

void FleetCache::on_subscribed(const std::string& channel) {
  auto ct = by_channel_.find(channel);
  if (ct == by_channel_.end()) return;
  const cache::CacheKey key = ct->second;
  auto it = keys_.find(key);
  if (it == keys_.end() || !it->second.waiting) return;
  it->second.subscribed = true;
  // The holder may have published before we listened: look at the value once more.
  cmd_->command({"GET", fleet::cache_key(settings_.redis.prefix, key)}, settings_.redis.timeout,
                [this, key](const redisReply* r) {
                  if (r == nullptr || r->type != REDIS_REPLY_STRING) return;  // keep waiting
                  end_wait(key,
                           std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r->str),
                                                    static_cast<std::size_t>(r->len)),
                           false);
                });
}

void FleetCache::on_message(const std::string& channel, std::span<const uint8_t> payload) {
  auto ct = by_channel_.find(channel);
  if (ct == by_channel_.end()) return;
  const cache::CacheKey key = ct->second;
  end_wait(key, payload, false);
}

void FleetCache::end_wait(const cache::CacheKey& key, std::span<const uint8_t> value,
                          bool timed_out) {
  auto it = keys_.find(key);
  if (it == keys_.end() || !it->second.waiting) return;
  if (it->second.wait_timer) loop_.cancel_timer(it->second.wait_timer);
  by_channel_.erase(it->second.channel);
  sub_->unsubscribe(it->second.channel);
  keys_.erase(it);
  if (timed_out) {
    stats_.lock_timeouts.fetch_add(1, std::memory_order_relaxed);
    hooks_.go_upstream(key);
    return;
  }
  if (!value.empty() && authentic(key, value) && hooks_.deliver(key, value)) {
    stats_.lock_answered.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  stats_.lock_fallbacks.fetch_add(1, std::memory_order_relaxed);
  hooks_.go_upstream(key);
}

void FleetCache::on_answer(const cache::CacheKey& key, std::span<const uint8_t> message,
                           uint32_t ttl, int64_t received_ms) {
  const int64_t expiry = received_ms + (int64_t{ttl} + settings_.keep_after_expiry.count()) * 1000;
  auto value = fleet::encode_value(key, received_ms, message, auth_ != nullptr);
  if (auth_ && !value.empty())
    fleet::seal_value(*auth_, fleet::cache_key(settings_.redis.prefix, key), value);
  if (value.empty() || expiry <= received_ms) {
    release(key, {}, 0);
    return;
  }
  release(key, value, expiry);
}

void FleetCache::on_failure(const cache::CacheKey& key) {
  release(key, {}, 0);
}

void FleetCache::release(const cache::CacheKey& key, std::span<const uint8_t> value,
                         int64_t expiry_ms) {
  std::string token;
  auto it = keys_.find(key);
  if (it != keys_.end() && !it->second.waiting) {
    token = std::move(it->second.token);
    keys_.erase(it);
  }
  if (value.empty() && token.empty()) return;
  // The lock is released even while the breaker is open: a held lock makes other instances
  // wait. Without a lock there is only a value to offer, and that can be skipped.
  if (token.empty() && !usable()) return;
  const std::string& prefix = settings_.redis.prefix;
  const std::string vkey = fleet::cache_key(prefix, key);
  const std::string lkey = fleet::lock_key(prefix, key);
  const std::string channel = fleet::done_channel(prefix, key);
  const std::string expiry = std::to_string(expiry_ms);
  const std::string_view v(reinterpret_cast<const char*>(value.data()), value.size());
  const bool has_value = !value.empty();
  const bool sent =
      cmd_->command({"EVAL", kStoreScript, "2", vkey, lkey, v, expiry, token, channel},
                    settings_.redis.timeout, [this, has_value](const redisReply* r) {
                      const bool ok = r != nullptr && r->type == REDIS_REPLY_INTEGER;
                      note_result(ok);
                      if (!has_value) return;
                      if (ok && r->integer == 1) {
                        stats_.l2_stores.fetch_add(1, std::memory_order_relaxed);
                      } else {
                        stats_.l2_store_errors.fetch_add(1, std::memory_order_relaxed);
                      }
                    });
  if (!sent && has_value) stats_.l2_store_errors.fetch_add(1, std::memory_order_relaxed);
}

// --- fleet control ----------------------------------------------------------------------------

std::optional<std::string> FleetCache::broadcast(const fleet::FleetMessage& in) {
  if (!cmd_->connected())
    return fmt::format("--fleet: not connected to Redis at {}; only this instance was changed",
                       settings_.redis.target);
  fleet::FleetMessage m = in;
  m.sender = instance_id_;
  const std::string text = fleet::encode_fleet_message(m);
  const std::string& prefix = settings_.redis.prefix;
  auto publish = [this, text] {
    cmd_->command({"PUBLISH", fleet_channel_, sealed(text)}, kAdminTimeout,
                  [](const redisReply*) {});
    stats_.fleet_sent.fetch_add(1, std::memory_order_relaxed);
  };
  switch (m.op) {
    case fleet::FleetOp::FlushAll:
      scan_delete(fleet::scan_pattern(prefix, nullptr, false), "0", std::nullopt, 0);
      break;
    case fleet::FleetOp::FlushName:
      scan_delete(fleet::scan_pattern(prefix, &m.name, false), "0", std::nullopt, 0);
      break;
    case fleet::FleetOp::FlushZone:
      scan_delete(fleet::scan_pattern(prefix, &m.name, true), "0", m.name, 0);
      break;
    case fleet::FleetOp::TtlCap: {
      const std::string hash = fleet::ttl_caps_key(prefix);
      const std::string zone = m.name.to_text();
      const std::string secs = fleet::seal_ttl_cap(auth_.get(), hash, zone, m.seconds);
      cmd_->command({"HSET", hash, zone, secs}, kAdminTimeout, [](const redisReply*) {});
      break;
    }
    case fleet::FleetOp::TtlCapClear:
      cmd_->command({"HDEL", fleet::ttl_caps_key(prefix), m.name.to_text()}, kAdminTimeout,
                    [](const redisReply*) {});
      break;
  }
  // Replies come back in order on one connection: publishing after the deletes were sent
  // means an instance that flushes on the message cannot read a deleted value back. A
  // SCAN-based flush publishes when its last round is done (scan_delete).
  if (m.op == fleet::FleetOp::TtlCap || m.op == fleet::FleetOp::TtlCapClear) publish();
  pending_publish_ = text;
  return std::nullopt;
}

void FleetCache::scan_delete(const std::string& pattern, const std::string& cursor,
                             std::optional<wire::Name> zone, int rounds) {
  const bool sent =
      cmd_->command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, kAdminTimeout,
                    [this, pattern, zone, rounds](const redisReply* r) {
                      std::string next = "0";
                      if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                          is_string(r->element[0]) && r->element[1]->type == REDIS_REPLY_ARRAY) {
                        next = std::string(reply_text(r->element[0]));
                        std::vector<std::string> keys;
                        const redisReply* list = r->element[1];
                        for (std::size_t i = 0; i < list->elements; ++i) {
                          if (!is_string(list->element[i])) continue;
                          const std::string_view k = reply_text(list->element[i]);
                          if (zone) {
                            // The glob may match a name that only looks like it is below the zone.
                            auto n = fleet::name_of_cache_key(settings_.redis.prefix, k);
                            if (!n || !n->is_subdomain_of(*zone)) continue;
                          }
                          keys.emplace_back(k);
                        }
                        if (!keys.empty()) {
                          std::vector<std::string_view> argv{"UNLINK"};
                          for (const auto& k : keys)
                            argv.push_back(k);
                          cmd_->command(argv, kAdminTimeout, [](const redisReply*) {});
                        }
                      }
                      if (next != "0" && rounds < 100000) {
                        scan_delete(pattern, next, zone, rounds + 1);
                        return;
                      }
                      if (!pending_publish_.empty()) {
                        cmd_->command({"PUBLISH", fleet_channel_, sealed(pending_publish_)},
                                      kAdminTimeout, [](const redisReply*) {});
                        stats_.fleet_sent.fetch_add(1, std::memory_order_relaxed);
                        pending_publish_.clear();
                      }
                    });
  if (!sent) pending_publish_.clear();
}

std::string FleetCache::sealed(const std::string& text) {
  // Tagged when it is sent, not when it was asked for: a flush publishes after its SCAN,
  // which may take longer than a message may be old.
  if (!auth_) return text;
  return fleet::seal_fleet_message(*auth_, fleet_channel_, base::wall_count<Millis>(), ++sent_seq_,
                                   text);
}

bool FleetCache::authentic(const cache::CacheKey& key, std::span<const uint8_t> value) {
  if (!auth_) return true;
  const std::string vkey = fleet::cache_key(settings_.redis.prefix, key);
  const fleet::AuthStatus st = fleet::open_value(*auth_, vkey, value);
  if (st == fleet::AuthStatus::Ok) return true;
  stats_.auth_failed_values.fetch_add(1, std::memory_order_relaxed);
  if (!logged_forgery_) {
    log::print(log::Level::Warning,
               "fleet: ignored a value for {} that does not verify with --fleet-key-file ({}); "
               "counted in fleet.auth_failed_*, not logged again",
               vkey, fleet::to_string(st));
    logged_forgery_ = true;
  }
  return false;
}

void FleetCache::on_fleet_message(std::string_view text) {
  const fleet::OpenedMessage opened = fleet::open_fleet_message(auth_.get(), fleet_channel_, text);
  if (auth_ && opened.status != fleet::AuthStatus::Ok) {
    stats_.auth_failed_messages.fetch_add(1, std::memory_order_relaxed);
    if (!logged_forgery_) {
      log::print(log::Level::Warning,
                 "fleet: ignored a message on {} that does not verify with --fleet-key-file "
                 "({}); counted in fleet.auth_failed_*, not logged again",
                 fleet_channel_, fleet::to_string(opened.status));
      logged_forgery_ = true;
    }
    return;
  }
  auto m = opened.status == fleet::AuthStatus::Malformed
               ? std::nullopt
               : fleet::decode_fleet_message(opened.inner);
  if (!m) {
    stats_.l2_corrupt.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (m->sender == instance_id_) return;
  if (auth_ && replay_.check(m->sender, opened.time_ms, opened.seq, base::wall_count<Millis>()) !=
                   fleet::ReplayGuard::Verdict::Accept) {
    stats_.replayed_messages.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  stats_.fleet_received.fetch_add(1, std::memory_order_relaxed);
  if (applier_.apply) applier_.apply(*m);
}

void FleetCache::load_ttl_caps() {
  cmd_->command({"HGETALL", fleet::ttl_caps_key(settings_.redis.prefix)}, kAdminTimeout,
                [this](const redisReply* r) {
                  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return;
                  const std::string hash = fleet::ttl_caps_key(settings_.redis.prefix);
                  for (std::size_t i = 0; i + 1 < r->elements; i += 2) {
                    if (!is_string(r->element[i]) || !is_string(r->element[i + 1])) continue;
                    const std::string_view zone = reply_text(r->element[i]);
                    const auto cap =
                        fleet::open_ttl_cap(auth_.get(), hash, zone, reply_text(r->element[i + 1]));
                    if (cap.status != fleet::AuthStatus::Ok) {
                      (auth_ ? stats_.auth_failed_caps : stats_.l2_corrupt)
                          .fetch_add(1, std::memory_order_relaxed);
                      continue;
                    }
                    const std::string line =
                        "v1 redis ttl-cap " + std::string(zone) + " " + std::to_string(cap.seconds);
                    auto m = fleet::decode_fleet_message(line);
                    if (m && applier_.apply) applier_.apply(*m);
                  }
                });
}

}  // namespace hg::resolver
