// The fleet (--redis) against a real redis-server: two or three hourglassd instances sharing
// one cache, one upstream query for a name however many instances miss it at once, a dead
// lock holder, Redis stopped / restarted / slow / full, garbage under a key, fleet flushes.
// Timing assertions are loose on purpose: the machine running the tests is shared. The
// fleet's deadlines themselves (lock wait, Redis timeout, breaker cool-down) are held exactly,
// on virtual time, by tests/resolver/fleet_cache_test.cc; these are the daemon's smoke tests.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include "tests/support/requires.h"

#include <chrono>

#include "cache/key.h"
#include "resolver/fleet/redis_value.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/integration/fleet_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/redis_server.h"
#include "tests/support/resp_client.h"
#include "wire/message.h"
#include "wire/name.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::RedisServer;
using test::Resp;
namespace fleet = resolver::fleet;
using wire::RCode;
using Clock = std::chrono::steady_clock;

class FleetTest : public FleetFixture {
 protected:
  /// Until `redis-cli ARGS` prints `want` (10 s at most).
  bool redis_says(const std::vector<std::string>& args, const std::string& want) {
    return eventually([&] { return redis_.cli(args) == want; });
  }

  static std::string redis_key(const std::string& name) { return "hg:c:" + name + ". 1 1 0"; }
};

TEST_F(FleetTest, MissOnOneInstanceIsAHitOnAnotherWithTheTtlCountedFromTheFirstInsert) {
  const std::string name = random_label() + ".fleet.test";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 60, "192.0.2.10")}));
  Member a = start_member();
  Member b = start_member();

  auto first = ask(a, name);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->rcode(), RCode::NoError);
  EXPECT_EQ(first->ttls(), std::vector<uint32_t>{60});
  // The value is in Redis, expiring after the TTL plus the stale window.
  ASSERT_TRUE(redis_says({"EXISTS", redis_key(name)}, "1"));
  const int64_t pttl = std::stoll(redis_.cli({"PTTL", redis_key(name)}));
  EXPECT_GT(pttl, (86400 + 50) * 1000LL);
  EXPECT_LE(pttl, (86400 + 60) * 1000LL);

  // Thirty seconds pass for the value, not for the test: its insert time is moved back 30 s
  // (the value re-encoded by the daemon's own encoder, its expiry kept), as if B asked 30 s
  // after A's insert.
  Resp r(redis_.port());
  const auto got = r.call({"GET", redis_key(name)});
  ASSERT_TRUE(got && got->size() == 1);
  const std::vector<uint8_t> stored(got->front().begin(), got->front().end());
  const auto key =
      cache::CacheKey::make(*wire::Name::from_text(name + "."), wire::RRType::A, 1, false, false);
  wire::Message parsed;
  const auto v = fleet::decode_value(stored, key, parsed);
  ASSERT_EQ(v.status, fleet::ValueStatus::Ok);
  const auto older = fleet::encode_value(key, v.inserted_ms - 30'000, v.message);
  ASSERT_EQ(r.call({"SET", redis_key(name), std::string(older.begin(), older.end()), "KEEPTTL"}),
            std::vector<std::string>{"OK"});
  auto second = ask(b, name);
  ASSERT_TRUE(second);
  ASSERT_EQ(second->rcode(), RCode::NoError) << second->text();
  ASSERT_EQ(second->ttls().size(), 1u);
  // Counted down from the insert time in the value, not stored afresh with 60 on B.
  EXPECT_LE(second->ttls()[0], 30u);
  EXPECT_GE(second->ttls()[0], 25u);
  EXPECT_EQ(upstream_.queries(name), 1u);
  EXPECT_EQ(ctl_stat(b.socket, "fleet.l2_hits"), 1);
  EXPECT_TRUE(b.d->wait_for_output(" A NOERROR l2 ", Millis{2000})) << b.d->output();
  // And B now has it locally: a plain hit, Redis not asked again.
  auto third = ask(b, name);
  ASSERT_TRUE(third);
  EXPECT_EQ(ctl_stat(b.socket, "fleet.l2_hits"), 1);
  EXPECT_EQ(ctl_stat(b.socket, "server.hits"), 1);
}

TEST_F(FleetTest, HundredConcurrentMissesOverThreeInstancesMakeOneUpstreamQuery) {
  const std::string name = random_label() + ".stampede.test";
  FakeReply reply = FakeReply::records({FakeRecord::a("", 300, "192.0.2.11")});
  reply.delay = Millis{500};  // so the queries overlap
  upstream_.on(name, reply);
  std::vector<Member> members;
  for (int i = 0; i < 3; ++i)
    members.push_back(start_member());

  constexpr int kClients = 100;
  std::vector<std::unique_ptr<UdpClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<UdpClient>());
    ASSERT_TRUE(clients.back()->send(members[static_cast<std::size_t>(i % 3)].d->port(),
                                     build_query({.name = name})));
  }
  int answered = 0;
  for (auto& c : clients) {
    auto bytes = c->receive(Millis{5000});
    ASSERT_TRUE(bytes);
    auto a = parse_answer(*bytes);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), RCode::NoError) << a->text();
    ++answered;
  }
  EXPECT_EQ(answered, kClients);
  EXPECT_EQ(upstream_.queries(name), 1u);
  int64_t wins = 0;
  int64_t answered_by_lock = 0;
  for (const auto& m : members) {
    wins += ctl_stat(m.socket, "fleet.lock_wins");
    answered_by_lock +=
        ctl_stat(m.socket, "fleet.lock_answered") + ctl_stat(m.socket, "fleet.l2_hits");
  }
  EXPECT_EQ(wins, 1);
  EXPECT_EQ(answered_by_lock, 2);
}

TEST_F(FleetTest, ADeadLockHolderStallsOthersForAtMostOneClientTimeout) {
  const std::string name = random_label() + ".holder.test";
  FakeReply reply = FakeReply::records({FakeRecord::a("", 300, "192.0.2.12")});
  reply.delay = Millis{800};
  upstream_.on(name, reply);
  const std::vector<std::string> timeouts{"--client-timeout", "1000", "--upstream-timeout", "4000"};
  Member a = start_member(timeouts);
  Member b = start_member(timeouts);

  UdpClient to_a;
  ASSERT_TRUE(to_a.send(a.d->port(), build_query({.name = name})));
  // A holds the lock and waits for the upstream; then A dies without releasing it.
  const std::string lock = "hg:l:" + name + ". 1 1 0";
  ASSERT_TRUE(redis_says({"EXISTS", lock}, "1"));
  ASSERT_TRUE(a.d->signal(SIGKILL));
  a.d->wait_exit(Millis{2000});

  const auto t0 = Clock::now();
  auto ans = ask(b, name, Millis{6000});
  const auto took = std::chrono::duration_cast<Millis>(Clock::now() - t0);
  ASSERT_TRUE(ans);
  EXPECT_EQ(ans->rcode(), RCode::NoError) << ans->text();
  // One client timeout (1000) waiting for the dead holder, then B's own upstream query (800):
  // well before the SERVFAIL deadline (4000) it would get if it waited on the lock.
  EXPECT_GE(took.count(), 900);
  EXPECT_LT(took.count(), 3500);
  EXPECT_EQ(ctl_stat(b.socket, "fleet.lock_timeouts"), 1);
  EXPECT_EQ(upstream_.queries(name), 2u);
}

TEST_F(FleetTest, RedisDownRestartedSlowAndFullNeverCostsAnAnswer) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.13")}));
  Member a = start_member();
  Member b = start_member();
  const std::string warm = random_label() + ".warm.test";
  ASSERT_TRUE(ask(a, warm));

  auto hit_ms = [&](const Member& m) {
    const auto t0 = Clock::now();
    auto r = ask(m, warm);
    EXPECT_TRUE(r && r->rcode() == RCode::NoError);
    return std::chrono::duration_cast<Millis>(Clock::now() - t0).count();
  };
  auto miss_ok = [&](const Member& m, const char* phase) {
    const std::string n = random_label() + ".miss.test";
    auto r = ask(m, n);
    EXPECT_TRUE(r) << phase;
    if (r) {
      EXPECT_EQ(r->rcode(), RCode::NoError) << phase << "\n" << r->text();
    }
  };

  // Stopped: misses go upstream, hits unaffected.
  redis_.stop();
  for (int i = 0; i < 10; ++i)
    miss_ok(a, "redis stopped");
  EXPECT_LT(hit_ms(a), 1000);
  EXPECT_EQ(ctl_stat(a.socket, "fleet.connected_workers"), 0);

  // Restarted on the same port: the instances reconnect and share again.
  ASSERT_TRUE(redis_.start());
  ASSERT_TRUE(wait_connected(a));
  ASSERT_TRUE(wait_connected(b));
  const std::string shared = random_label() + ".again.test";
  ASSERT_TRUE(ask(a, shared));
  ASSERT_TRUE(redis_says({"EXISTS", redis_key(shared)}, "1"));
  const uint64_t before = upstream_.total_queries();
  auto from_l2 = ask(b, shared);
  ASSERT_TRUE(from_l2);
  EXPECT_EQ(upstream_.total_queries(), before);
  EXPECT_EQ(ctl_stat(b.socket, "fleet.l2_hits"), 1);

  // Slow: Redis sleeps 2 s. Misses wait at most the Redis timeout (250 ms here; asserted loosely),
  // then go upstream; hits never touch Redis.
  ASSERT_TRUE(redis_.send_async({"DEBUG", "SLEEP", "2"}));
  ASSERT_TRUE(eventually([&] { return redis_.sleeping(); }));
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    miss_ok(a, "redis slow");
    EXPECT_LT(std::chrono::duration_cast<Millis>(Clock::now() - t0).count(), 1000);
  }
  EXPECT_LT(hit_ms(a), 1000);
  EXPECT_GE(ctl_stat(a.socket, "fleet.timeouts") + ctl_stat(a.socket, "fleet.l2_skipped"), 5);
  ASSERT_TRUE(eventually([&] { return !redis_.sleeping(); }));

  // Full: noeviction at a tiny maxmemory. Lookups work, stores fail, every miss is answered.
  ASSERT_TRUE(wait_connected(a));
  ASSERT_EQ(redis_.cli({"CONFIG", "SET", "maxmemory-policy", "noeviction"}), "OK");
  ASSERT_EQ(redis_.cli({"CONFIG", "SET", "maxmemory", "1"}), "OK");
  // Past the breaker's cool-down from the slow phase (1 s, on the daemon's clock), Redis is
  // asked again: misses, answered every one, until a store has failed.
  const auto failed = [&] {
    return ctl_stat(a.socket, "fleet.l2_store_errors") + ctl_stat(a.socket, "fleet.l2_errors") >= 1;
  };
  EXPECT_TRUE(eventually([&] {
    miss_ok(a, "redis full");
    return failed();
  })) << ctl(a.socket, "stats").output;
  for (int i = 0; i < 10; ++i)
    miss_ok(a, "redis full");
  EXPECT_LT(hit_ms(a), 1000);
  redis_.cli({"CONFIG", "SET", "maxmemory", "0"});
}

TEST_F(FleetTest, AGarbageValueIsIgnoredCountedAndReplacedFromUpstream) {
  const std::string name = random_label() + ".garbage.test";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 300, "192.0.2.14")}));
  Member a = start_member();
  ASSERT_EQ(redis_.cli({"SET", redis_key(name), "not a value hourglass wrote"}), "OK");
  auto r = ask(a, name);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rcode(), RCode::NoError) << r->text();
  ASSERT_EQ(r->msg.answer.size(), 1u);
  EXPECT_EQ(upstream_.queries(name), 1u);
  EXPECT_EQ(ctl_stat(a.socket, "fleet.l2_corrupt"), 1);
  // The upstream's answer replaced the garbage.
  EXPECT_TRUE(redis_says({"GETRANGE", redis_key(name), "0", "3"}, "HGL2"));
}

TEST_F(FleetTest, FleetFlushEmptiesRedisAndEveryInstance) {
  const std::string zone = random_label() + ".flush.test";
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.15")}));
  Member a = start_member();
  Member b = start_member();
  ASSERT_TRUE(ask(a, "www." + zone));
  ASSERT_TRUE(ask(a, "other.test"));
  ASSERT_TRUE(redis_says({"EXISTS", redis_key("www." + zone)}, "1"));
  ASSERT_TRUE(ask(b, "www." + zone));  // now cached on B too
  EXPECT_NE(ctl(b.socket, "dump www." + zone).output.find("; 1 entry"), std::string::npos);

  const std::string out = ctl(a.socket, "flush-zone " + zone + " --fleet").output;
  EXPECT_NE(out.find("fleet: sent"), std::string::npos) << out;
  EXPECT_TRUE(eventually([&] {
    return redis_.cli({"EXISTS", redis_key("www." + zone)}) == "0" &&
           ctl(b.socket, "dump www." + zone).output.find("; 0 entries") != std::string::npos;
  })) << ctl(b.socket, "dump").output;
  EXPECT_EQ(redis_.cli({"EXISTS", redis_key("other.test")}), "1");  // outside the zone
  EXPECT_EQ(ctl_stat(b.socket, "fleet.fleet_received"), 1);

  // A fleet ttl-cap reaches B and is kept in Redis for instances that start later.
  EXPECT_NE(ctl(a.socket, "ttl-cap " + zone + " 30 --fleet").output.find("fleet: sent"),
            std::string::npos);
  EXPECT_TRUE(eventually(
      [&] { return ctl(b.socket, "ttl-caps").output.find(zone + ". 30") != std::string::npos; }));
  Member c = start_member();
  EXPECT_TRUE(eventually(
      [&] { return ctl(c.socket, "ttl-caps").output.find(zone + ". 30") != std::string::npos; }));
}

TEST_F(FleetTest, WithoutRedisFleetCommandsSayWhy) {
  const std::string socket = "/tmp/hg-fleet-" + random_label(12) + ".ctl";
  auto d = Daemon::start({"--upstream", upstream_.address(), "--control", socket});
  ASSERT_TRUE(d->ready());
  const std::string out = ctl(socket, "flush --fleet").output;
  EXPECT_NE(out.find("error: --fleet: this hourglassd runs without --redis"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace hg::integration
