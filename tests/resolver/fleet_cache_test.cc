// FleetCache (resolver/fleet/fleet_cache.h) against a real redis-server, with the event loop on
// a test clock: the fleet's deadlines — the wait for a lock holder (--client-timeout), each
// Redis command (--redis-timeout), the circuit breaker's cool-down — run on virtual time, so
// these cases neither sleep nor depend on how loaded the machine is. Only Redis's own replies
// are awaited in real time (polled with a bound, the virtual clock standing still meanwhile).
// The daemon-level smoke tests of the same features are tests/integration/fleet_test.cc.
#include "resolver/fleet/fleet_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/wall_clock.h"
#include "cache/key.h"
#include "resolver/fleet/redis_value.h"
#include "resolver/net/event_loop.h"
#include "tests/resolver/cached_answers.h"
#include "tests/support/eventually.h"
#include "tests/support/redis_server.h"
#include "tests/support/requires.h"
#include "tests/support/resp_client.h"
#include "wire/name.h"

namespace hg::resolver {
namespace {

using test::eventually;
using test::RedisServer;
using test::Resp;

class FleetCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisServer::installed())
      HG_SKIP_UNLESS_CI("redis-server / redis-cli not installed (scripts/install-deps)");
    ASSERT_TRUE(redis_.start()) << "redis-server did not start on port " << redis_.port();
  }

  /// A FleetCache on loop_ with the daemon's defaults (client timeout 1800 ms, upstream
  /// timeout 3000 ms, Redis timeout 20 ms), connected (both connections) before it returns.
  void start() {
    FleetCache::Settings s;
    s.redis.host = "127.0.0.1";
    s.redis.port = redis_.port();
    s.redis.target = redis_.address();
    s.keep_after_expiry = std::chrono::seconds{86400};
    FleetHooks hooks;
    hooks.deliver = [this](const cache::CacheKey&, std::span<const uint8_t> value) {
      delivered_.emplace_back(value.begin(), value.end());
      return true;
    };
    hooks.go_upstream = [this](const cache::CacheKey&) { ++upstream_; };
    fleet_ = std::make_unique<FleetCache>(loop_, s, stats_, hooks);
    fleet_->start();
    // The command connection counts itself; the subscriber shows in Redis's client list
    // (ours two, and redis-cli asking).
    ASSERT_TRUE(pump_until([&] { return stats_.connected.load() == 1 && clients() >= 3; }))
        << redis_.cli({"CLIENT", "LIST"});
  }

  int clients() const {
    const std::string list = redis_.cli({"CLIENT", "LIST"});
    int n = 0;
    for (const char c : list)
      n += c == '\n' ? 1 : 0;
    return list.empty() ? 0 : n + 1;
  }

  /// Runs the loop (virtual time standing still) until `done` holds; bounded in real time.
  template <typename F>
  bool pump_until(F&& done) {
    return eventually(
        [&] {
          loop_.run_once(Millis{5});
          return done();
        },
        std::chrono::seconds{10}, Millis{0});
  }
  /// Runs the loop until nothing has arrived for 50 ms (real time, virtual time still).
  void settle() {
    for (int i = 0; i < 200 && loop_.run_once(Millis{50}) > 0; ++i) {
    }
  }
  /// Moves the test clock on and runs what fell due.
  void advance(Millis d) {
    now_ += d;
    loop_.run_once(Millis{0});
  }

  /// Another instance holds the lock of `name` (with an expiry within the 60 s a lock of
  /// hourglass's can have; longer ones are not waited on), and
  /// this one waits: subscribed to the holder's channel, its GET of the value answered.
  void wait_on_a_held_lock(const std::string& name) {
    ASSERT_EQ(redis_.cli({"SET", "hg:l:" + name + ". 1 1 0", "another", "PX", "10000"}), "OK");
    fleet_->on_miss(query_key(name));
    const std::string channel = "hg:d:" + name + ". 1 1 0";
    ASSERT_TRUE(pump_until([&] {
      return stats_.lock_waits.load() == 1 &&
             redis_.cli({"PUBSUB", "NUMSUB", channel}) == channel + "\n1";
    })) << "lock_waits "
        << stats_.lock_waits.load() << ", upstream " << upstream_ << ", l2_errors "
        << stats_.l2_errors.load() << ", lock_fallbacks " << stats_.lock_fallbacks.load()
        << ", NUMSUB: " << redis_.cli({"PUBSUB", "NUMSUB", channel});
    settle();
    ASSERT_EQ(upstream_, 0);
  }

  RedisServer redis_;
  MonoTime now_{Millis{50'000'000}};
  EventLoop loop_{EventLoop::Options{.clock = [this] { return now_; }}};
  FleetStats stats_;
  std::unique_ptr<FleetCache> fleet_;
  std::vector<std::vector<uint8_t>> delivered_;
  int upstream_ = 0;
};

TEST_F(FleetCacheTest, ADeadLockHolderCostsExactlyOneClientTimeoutOnTheLoopsClock) {
  start();
  const std::string name = "dead-holder.fleet.test";
  wait_on_a_held_lock(name);
  // The holder never publishes. 1799 ms on: still waiting; at 1800 ms, the client timeout,
  // the key goes upstream from here.
  for (int i = 0; i < 1799; i += 100)
    advance(Millis{std::min(100, 1799 - i)});
  EXPECT_EQ(upstream_, 0);
  EXPECT_EQ(stats_.lock_timeouts.load(), 0u);
  advance(Millis{1});
  EXPECT_EQ(upstream_, 1);
  EXPECT_EQ(stats_.lock_timeouts.load(), 1u);
  EXPECT_TRUE(delivered_.empty());
  // The subscription is given up.
  settle();
  EXPECT_EQ(redis_.cli({"PUBSUB", "NUMSUB", "hg:d:" + name + ". 1 1 0"}),
            "hg:d:" + name + ". 1 1 0\n0");
}

TEST_F(FleetCacheTest, TheHoldersPublicationEndsTheWaitBeforeTheClientTimeout) {
  start();
  const std::string name = "live-holder.fleet.test";
  wait_on_a_held_lock(name);
  advance(Millis{1000});
  const auto value =
      fleet::encode_value(query_key(name), base::wall_count<Millis>(), a_response(name, {60}));
  Resp r(redis_.port());
  ASSERT_EQ(
      r.call({"PUBLISH", "hg:d:" + name + ". 1 1 0", std::string(value.begin(), value.end())}),
      std::vector<std::string>{"1"});
  ASSERT_TRUE(pump_until([&] { return !delivered_.empty(); }));
  EXPECT_EQ(delivered_.front(), value);
  EXPECT_EQ(stats_.lock_answered.load(), 1u);
  // The wait's timer is gone with it: nothing happens at the client timeout.
  advance(Millis{1000});
  EXPECT_EQ(upstream_, 0);
  EXPECT_EQ(stats_.lock_timeouts.load(), 0u);
}

TEST_F(FleetCacheTest, AnEmptyPublicationSendsTheWaiterUpstreamAtOnce) {
  start();
  const std::string name = "failed-holder.fleet.test";
  wait_on_a_held_lock(name);
  Resp r(redis_.port());
  ASSERT_EQ(r.call({"PUBLISH", "hg:d:" + name + ". 1 1 0", ""}), std::vector<std::string>{"1"});
  ASSERT_TRUE(pump_until([&] { return upstream_ == 1; }));
  EXPECT_EQ(stats_.lock_fallbacks.load(), 1u);
  EXPECT_TRUE(delivered_.empty());
}

TEST_F(FleetCacheTest, ARedisSlowerThanItsTimeoutSendsTheMissUpstreamAtTheTimeout) {
  start();
  // Redis is busy for 300 ms (real time); on the loop's clock the miss waits exactly the
  // Redis timeout, 20 ms, then goes upstream.
  ASSERT_TRUE(redis_.send_async({"DEBUG", "SLEEP", "0.3"}));
  ASSERT_TRUE(eventually([&] { return redis_.sleeping(); }));
  fleet_->on_miss(query_key("slow-redis.fleet.test"));
  advance(Millis{19});
  EXPECT_EQ(upstream_, 0);
  advance(Millis{1});
  EXPECT_EQ(upstream_, 1);
  EXPECT_EQ(stats_.timeouts.load(), 1u);
  EXPECT_EQ(stats_.l2_errors.load(), 1u);
  ASSERT_TRUE(eventually([&] { return !redis_.sleeping(); }));
}

TEST_F(FleetCacheTest, TheBreakerOpensAfterFiveFailuresAndAsksAgainAfterItsCooldown) {
  start();
  ASSERT_TRUE(redis_.send_async({"DEBUG", "SLEEP", "0.3"}));
  ASSERT_TRUE(eventually([&] { return redis_.sleeping(); }));
  // Five misses time out one after the other: the breaker opens.
  for (int i = 0; i < 5; ++i) {
    fleet_->on_miss(query_key("b" + std::to_string(i) + ".fleet.test"));
    advance(Millis{20});
  }
  EXPECT_EQ(upstream_, 5);
  EXPECT_EQ(stats_.breaker_opens.load(), 1u);
  // Open: the next miss is not sent to Redis at all.
  fleet_->on_miss(query_key("skipped.fleet.test"));
  EXPECT_EQ(upstream_, 6);
  EXPECT_EQ(stats_.l2_skipped.load(), 1u);
  ASSERT_TRUE(eventually([&] { return !redis_.sleeping(); }));
  settle();  // the late replies of the timed-out commands arrive and are dropped
  // Still within the 1 s cool-down on the loop's clock: skipped again.
  advance(Millis{800});
  fleet_->on_miss(query_key("skipped2.fleet.test"));
  EXPECT_EQ(stats_.l2_skipped.load(), 2u);
  // After it, one probe goes to Redis; its answer (a miss, we win the lock) closes it.
  advance(Millis{300});
  fleet_->on_miss(query_key("probe.fleet.test"));
  ASSERT_TRUE(pump_until([&] { return stats_.lock_wins.load() == 1; }));
  EXPECT_EQ(stats_.l2_skipped.load(), 2u);
  EXPECT_EQ(stats_.breaker_open.load(), 0);
}

}  // namespace
}  // namespace hg::resolver
