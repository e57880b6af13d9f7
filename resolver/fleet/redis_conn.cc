#include "resolver/fleet/redis_conn.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <string>
#include <utility>

#include "resolver/fleet/redis_adapter.h"
#include "resolver/log.h"

namespace hg::resolver {

namespace {

constexpr std::size_t kMaxPending = 4096;
constexpr std::chrono::milliseconds kBackoffMin{100};
constexpr std::chrono::milliseconds kBackoffMax{5000};

}  // namespace

std::string_view reply_text(const redisReply* r) noexcept {
  return {r->str, static_cast<std::size_t>(r->len)};
}

RedisConn::RedisConn(EventLoop& loop, const RedisConfig& config, std::string name, bool subscriber)
    : loop_(loop), config_(config), name_(std::move(name)), subscriber_(subscriber) {}

RedisConn::~RedisConn() {
  closing_ = true;
  on_ready = nullptr;
  on_pubsub = nullptr;
  on_lost = nullptr;
  for (auto& [id, p] : pending_)
    loop_.cancel_timer(p.timer);
  pending_.clear();
  if (reconnect_timer_) loop_.cancel_timer(reconnect_timer_);
  if (connect_timer_) loop_.cancel_timer(connect_timer_);
  if (ac_ != nullptr) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    redisAsyncFree(ac);  // runs the pending callbacks with no reply: they find nothing
  }
}

void RedisConn::start() {
  connect();
}

void RedisConn::connect() {
  reconnect_timer_ = {};
  redisAsyncContext* ac = config_.unix_socket
                              ? redisAsyncConnectUnix(config_.path.c_str())
                              : redisAsyncConnect(config_.host.c_str(), config_.port);
  if (ac == nullptr || ac->err != 0) {
    if (!logged_error_) {
      log::print(log::Level::Warning, "redis {}: cannot connect to {}: {}; retrying with backoff",
                 name_, config_.target, ac != nullptr ? ac->errstr : "out of memory");
      logged_error_ = true;
    }
    if (ac != nullptr) redisAsyncFree(ac);
    schedule_reconnect();
    return;
  }
  ac->data = this;
  if (!redis_attach(loop_, ac)) {
    redisAsyncFree(ac);
    schedule_reconnect();
    return;
  }
  ac_ = ac;
  redisAsyncSetConnectCallback(ac, on_connect_cb);
  redisAsyncSetDisconnectCallback(ac, on_disconnect_cb);
  // A connect that hangs (a filtered port) is abandoned like a command that does.
  connect_timer_ =
      loop_.add_timer(std::max(config_.timeout * 10, std::chrono::milliseconds{500}), [this] {
        connect_timer_ = {};
        if (!connected_ && ac_ != nullptr) {
          redisAsyncContext* c = ac_;
          lost("connect timed out");
          redisAsyncFree(c);
        }
      });
  if (!config_.password.empty() && !config_.user.empty()) {
    // Redis 6 ACL: AUTH user password.
    const char* argv[] = {"AUTH", config_.user.c_str(), config_.password.c_str()};
    const size_t lens[] = {4, config_.user.size(), config_.password.size()};
    redisAsyncCommandArgv(ac, on_reply_cb, nullptr, 3, argv, lens);
  } else if (!config_.password.empty()) {
    const char* argv[] = {"AUTH", config_.password.c_str()};
    const size_t lens[] = {4, config_.password.size()};
    redisAsyncCommandArgv(ac, on_reply_cb, nullptr, 2, argv, lens);
  }
  if (!subscriber_ && config_.db != 0) {
    redisAsyncCommand(ac, on_reply_cb, nullptr, "SELECT %u", config_.db);
  }
  // The connection is ready when this PING, sent after AUTH and SELECT, answers PONG: only
  // then does the backoff start again from its minimum (a TCP connect alone proves nothing
  // when the password is wrong).
  redisAsyncCommand(ac, on_ready_cb, nullptr, "PING");
}

void RedisConn::on_connect_cb(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<RedisConn*>(ac->data);
  if (self == nullptr || self->closing_) return;
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback.
    self->lost(ac->errstr);
    return;
  }
  // TCP is up; AUTH, SELECT and PING are on their way (on_ready_cb), still under the connect
  // timer.
}

void RedisConn::on_ready_cb(redisAsyncContext* ac, void* reply, void* /*privdata*/) {
  auto* self = static_cast<RedisConn*>(ac->data);
  auto* r = static_cast<const redisReply*>(reply);
  if (self == nullptr || self->closing_ || r == nullptr || self->ac_ != ac) return;
  if (r->type == REDIS_REPLY_ERROR) {
    // e.g. NOAUTH when no password is configured but Redis wants one.
    const std::string why = "refused PING: " + std::string(reply_text(r));
    self->lost(why.c_str());
    redisAsyncDisconnect(ac);
    return;
  }
  if (self->connect_timer_) {
    self->loop_.cancel_timer(self->connect_timer_);
    self->connect_timer_ = {};
  }
  self->connected_ = true;
  self->backoff_ = kBackoffMin;
  if (self->logged_error_) {
    log::print(log::Level::Info, "redis {}: connected to {}", self->name_, self->config_.target);
    self->logged_error_ = false;
  }
  if (self->on_ready) self->on_ready();
}

void RedisConn::on_disconnect_cb(const redisAsyncContext* ac, int /*status*/) {
  auto* self = static_cast<RedisConn*>(ac->data);
  if (self == nullptr || self->closing_) return;
  if (self->ac_ == ac) self->lost(ac->errstr[0] != 0 ? ac->errstr : "connection closed");
}

void RedisConn::lost(const char* why) {
  if (ac_ == nullptr) return;
  ac_ = nullptr;
  const bool was_connected = connected_;
  connected_ = false;
  if (connect_timer_) {
    loop_.cancel_timer(connect_timer_);
    connect_timer_ = {};
  }
  if (!logged_error_) {
    log::print(log::Level::Warning, "redis {}: {} {}: {}; retrying with backoff", name_,
               was_connected ? "lost" : "cannot connect to", config_.target, why);
    logged_error_ = true;
  }
  fail_all();
  if (was_connected && on_lost) on_lost();
  schedule_reconnect();
}

void RedisConn::fail_all() {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    loop_.cancel_timer(p.timer);
    if (p.done) p.done(nullptr);
  }
}

void RedisConn::schedule_reconnect() {
  if (closing_ || reconnect_timer_) return;
  reconnect_timer_ = loop_.add_timer(backoff_, [this] { connect(); });
  backoff_ = std::min(backoff_ * 2, kBackoffMax);
}

void RedisConn::on_reply_cb(redisAsyncContext* ac, void* reply, void* privdata) {
  auto* self = static_cast<RedisConn*>(ac->data);
  auto* r = static_cast<const redisReply*>(reply);
  if (self == nullptr || self->closing_) return;
  if (privdata == nullptr) {
    // AUTH or SELECT: a refusal makes the connection useless; drop it and retry later.
    if (r != nullptr && r->type == REDIS_REPLY_ERROR && self->ac_ == ac) {
      const std::string why = "refused AUTH/SELECT: " + std::string(reply_text(r));
      self->lost(why.c_str());
      redisAsyncDisconnect(ac);
    }
    return;
  }
  const auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(privdata));
  auto it = self->pending_.find(id);
  if (it == self->pending_.end()) return;  // timed out already
  Pending p = std::move(it->second);
  self->pending_.erase(it);
  self->loop_.cancel_timer(p.timer);
  p.done(r);
}

void RedisConn::on_pubsub_cb(redisAsyncContext* ac, void* reply, void* /*privdata*/) {
  auto* self = static_cast<RedisConn*>(ac->data);
  if (self == nullptr || self->closing_ || reply == nullptr) return;
  if (self->on_pubsub) self->on_pubsub(static_cast<const redisReply*>(reply));
}

bool RedisConn::command(const std::vector<std::string_view>& argv,
                        std::chrono::milliseconds timeout, ReplyFn done) {
  if (!connected_ || ac_ == nullptr || pending_.size() >= kMaxPending || argv.empty()) return false;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  const uint64_t id = next_id_++;
  if (redisAsyncCommandArgv(ac_, on_reply_cb, reinterpret_cast<void*>(static_cast<uintptr_t>(id)),
                            static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK)
    return false;
  const TimerId t = loop_.add_timer(timeout, [this, id] {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Pending p = std::move(it->second);
    pending_.erase(it);
    p.done(nullptr);
  });
  pending_.emplace(id, Pending{std::move(done), t});
  return true;
}

bool RedisConn::subscribe(std::string_view channel) {
  if (!connected_ || ac_ == nullptr) return false;
  return redisAsyncCommand(ac_, on_pubsub_cb, nullptr, "SUBSCRIBE %b", channel.data(),
                           channel.size()) == REDIS_OK;
}

bool RedisConn::unsubscribe(std::string_view channel) {
  if (!connected_ || ac_ == nullptr) return false;
  return redisAsyncCommand(ac_, on_pubsub_cb, nullptr, "UNSUBSCRIBE %b", channel.data(),
                           channel.size()) == REDIS_OK;
}

}  // namespace hg::resolver
