// RedisConn: one hiredis async connection on an EventLoop that reconnects (with backoff)
// when it breaks, authenticates and selects the database on every connect, and gives every
// command a deadline. The fleet cache (fleet_cache.h) runs two per worker: one for commands,
// one for pub/sub.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "resolver/fleet/redis_config.h"
#include "resolver/net/event_loop.h"

struct redisAsyncContext;
struct redisReply;

namespace hg::resolver {

/// The bytes of a string or status reply (r->str, r->len).
std::string_view reply_text(const redisReply* r) noexcept;

/// One hiredis async context that reconnects (with backoff) when it breaks. Commands carry
/// their own deadline; a reply that comes after it is dropped.
class RedisConn {
 public:
  /// nullptr: no reply (error, timeout, disconnect).
  using ReplyFn = std::function<void(const redisReply* reply)>;

  RedisConn(EventLoop& loop, const RedisConfig& config, std::string name, bool subscriber);
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  void start();
  /// Connected, and AUTH/SELECT accepted (a PING after them answered).
  bool connected() const noexcept { return connected_; }
  /// Called after every (re)connect once AUTH/SELECT have been accepted.
  std::function<void()> on_ready;
  /// Subscriber connections: every pub/sub reply ("subscribe", "message", "unsubscribe").
  std::function<void(const redisReply* reply)> on_pubsub;
  /// A ready connection lost (all pending commands have failed). One log line per change
  /// between ready and not (not one per attempt); reconnects back off from 100 ms, doubling
  /// to 5 s, and only a ready connection resets that.
  std::function<void()> on_lost;

  /// Sends a command; `done` runs exactly once (on this loop), with nullptr past `timeout`.
  /// Returns false (and never calls `done`) when not connected or too much is pending.
  bool command(const std::vector<std::string_view>& argv, std::chrono::milliseconds timeout,
               ReplyFn done);
  /// Subscriber connections only.
  bool subscribe(std::string_view channel);
  bool unsubscribe(std::string_view channel);

 private:
  static void on_connect_cb(const redisAsyncContext* ac, int status);
  static void on_ready_cb(redisAsyncContext* ac, void* reply, void* privdata);
  static void on_disconnect_cb(const redisAsyncContext* ac, int status);
  static void on_reply_cb(redisAsyncContext* ac, void* reply, void* privdata);
  static void on_pubsub_cb(redisAsyncContext* ac, void* reply, void* privdata);
  void connect();
  void lost(const char* why);
  void schedule_reconnect();
  void fail_all();

  EventLoop& loop_;
  const RedisConfig& config_;
  std::string name_;
  bool subscriber_;
  redisAsyncContext* ac_ = nullptr;
  bool connected_ = false;
  bool closing_ = false;
  std::chrono::milliseconds backoff_{100};
  TimerId reconnect_timer_{};
  TimerId connect_timer_{};
  struct Pending {
    ReplyFn done;
    TimerId timer;
  };
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t next_id_ = 1;
  bool logged_error_ = false;
};

}  // namespace hg::resolver
