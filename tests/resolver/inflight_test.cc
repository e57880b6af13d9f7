// InflightTable: joining, bounds, completion and deadlines.
#include "resolver/query/inflight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace hg::resolver {
namespace {

struct W {
  MonoTime deadline{};
  int id = 0;
};
using Table = InflightTable<std::string, std::hash<std::string>, W>;
const MonoTime t0{Millis{1000}};

TEST(InflightTable, FirstQueryCreatesLaterIdenticalOnesJoin) {
  Table t;
  EXPECT_EQ(t.join("a", W{t0, 1}, t0), JoinOutcome::Created);
  EXPECT_EQ(t.join("a", W{t0, 2}, t0), JoinOutcome::Joined);
  EXPECT_EQ(t.join("b", W{t0, 3}, t0), JoinOutcome::Created);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.waiters(), 3u);
  auto ws = t.complete("a");
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].id, 1);
  EXPECT_EQ(ws[1].id, 2);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.waiters(), 1u);
  EXPECT_TRUE(t.complete("a").empty());
}

TEST(InflightTable, ARecycledListServesTheNextEntryWithItsOwnWaitersOnly) {
  Table t;
  ASSERT_EQ(t.join("a", W{t0, 1}, t0), JoinOutcome::Created);
  ASSERT_EQ(t.join("a", W{t0, 2}, t0), JoinOutcome::Joined);
  auto done = t.complete("a");
  ASSERT_EQ(done.size(), 2u);
  const W* buffer = done.data();
  t.recycle(std::move(done));
  ASSERT_EQ(t.join("b", W{t0, 3}, t0), JoinOutcome::Created);
  auto next = t.complete("b");
  ASSERT_EQ(next.size(), 1u);  // nothing of "a" left in the reused list
  EXPECT_EQ(next[0].id, 3);
  EXPECT_EQ(next.data(), buffer);  // the same buffer: no allocation
  EXPECT_EQ(t.waiters(), 0u);
  t.recycle(std::vector<W>{});  // an empty list without a buffer is simply dropped
  ASSERT_EQ(t.join("c", W{t0, 4}, t0), JoinOutcome::Created);
  EXPECT_EQ(t.complete("c").size(), 1u);
}

// complete() keeps up to 64 map nodes and join() fills them with the new key: nothing of
// the old key, its start time or its waiters may show through.
TEST(InflightTable, AReusedNodeCarriesOnlyItsNewKeyAndEntry) {
  Table t;
  const auto long_key = [](int i) { return std::string(300, 'k') + std::to_string(i); };
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(t.join(long_key(i), W{t0, i}, t0), JoinOutcome::Created);
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(t.complete(long_key(i)).size(), 1u);
  EXPECT_EQ(t.size(), 0u);
  const MonoTime t1 = t0 + Millis{5};
  for (int i = 100; i < 200; ++i) {
    ASSERT_EQ(t.join(long_key(i), W{t1, i}, t1), JoinOutcome::Created);
    ASSERT_TRUE(t.start_background("bg" + std::to_string(i), t1));
  }
  for (int i = 0; i < 100; ++i)
    EXPECT_FALSE(t.started_at(long_key(i)).has_value()) << i;
  for (int i = 100; i < 200; ++i) {
    EXPECT_EQ(t.started_at(long_key(i)), t1) << i;
    EXPECT_EQ(t.join(long_key(i), W{t1, -i}, t1), JoinOutcome::Joined);
    auto ws = t.complete(long_key(i));
    ASSERT_EQ(ws.size(), 2u) << i;
    EXPECT_EQ(ws[0].id, i);
    EXPECT_EQ(ws[1].id, -i);
    EXPECT_TRUE(t.complete("bg" + std::to_string(i)).empty());
  }
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.waiters(), 0u);
}

TEST(InflightTable, BoundsEntriesWaitersPerKeyAndWaitersInAll) {
  Table t(InflightSettings{.max_entries = 2, .max_waiters = 2, .max_total_waiters = 3});
  EXPECT_EQ(t.join("a", W{}, t0), JoinOutcome::Created);
  EXPECT_EQ(t.join("a", W{}, t0), JoinOutcome::Joined);
  EXPECT_EQ(t.join("a", W{}, t0), JoinOutcome::WaitersFull);  // 2 for one key
  EXPECT_EQ(t.join("b", W{}, t0), JoinOutcome::Created);
  EXPECT_EQ(t.join("b", W{}, t0), JoinOutcome::WaitersFull);  // 3 in all
  t.complete("a");
  EXPECT_EQ(t.join("c", W{}, t0), JoinOutcome::Created);
  EXPECT_EQ(t.join("d", W{}, t0), JoinOutcome::TableFull);  // 2 queries in flight
}

TEST(InflightTable, TakeDueReturnsOnlyExpiredWaitersAndKeepsTheEntry) {
  Table t;
  t.join("a", W{t0 + Millis{100}, 1}, t0);
  t.join("a", W{t0 + Millis{300}, 2}, t0);
  auto due = t.take_due("a", t0 + Millis{100});
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].id, 1);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.waiters(), 1u);
  EXPECT_EQ(t.started_at("a"), t0);
  EXPECT_TRUE(t.take_due("a", t0 + Millis{299}).empty());
  EXPECT_EQ(t.take_due("a", t0 + Millis{300}).size(), 1u);
  EXPECT_EQ(t.waiters(), 0u);
  EXPECT_EQ(t.join("a", W{}, t0), JoinOutcome::Joined);  // the upstream query goes on
}

TEST(InflightTable, BackgroundRefreshHasNoWaiterAndIsJoinable) {
  Table t;
  EXPECT_TRUE(t.start_background("a", t0));
  EXPECT_FALSE(t.start_background("a", t0));
  EXPECT_EQ(t.join("a", W{}, t0), JoinOutcome::Joined);
  EXPECT_EQ(t.complete("a").size(), 1u);
  EXPECT_FALSE(t.started_at("a").has_value());
}

// Two threads join, time out and complete the same keys at once (as two workers do with
// --threads 2): every waiter comes back exactly once — from complete() or take_due() — and
// the counts end at zero. Run under ThreadSanitizer in CI.
TEST(InflightTable, ConcurrentJoinsAndCompletionsHandBackEveryWaiterOnce) {
  Table t(InflightSettings{.max_entries = 64, .max_waiters = 1024, .max_total_waiters = 1 << 20});
  constexpr int kPerThread = 20000;
  std::atomic<long> handed_back{0};
  std::atomic<long> accepted{0};
  auto worker = [&](int self) {
    for (int i = 0; i < kPerThread; ++i) {
      const std::string key = "k" + std::to_string(i % 16);
      if (t.join(key, W{t0, self}, t0, self) != JoinOutcome::WaitersFull) ++accepted;
      if (i % 3 == 0) handed_back += static_cast<long>(t.complete(key).size());
      if (i % 7 == 0) handed_back += static_cast<long>(t.take_due(key, t0).size());
    }
  };
  std::thread a(worker, 1), b(worker, 2);
  a.join();
  b.join();
  for (int k = 0; k < 16; ++k)
    handed_back += static_cast<long>(t.complete("k" + std::to_string(k)).size());
  EXPECT_EQ(handed_back.load(), accepted.load());
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.waiters(), 0u);
}

// The fair-share counts under two threads creating, joining, refusing and completing the same
// keys at once: no count leaks or goes below zero, and a source never holds more than its
// share. (In this file so that the ThreadSanitizer build runs it.)
TEST(InflightTable, ConcurrentSharesAndZoneCountsReturnToZero) {
  Table t(InflightSettings{.max_entries = 64,
                           .max_waiters = 1024,
                           .max_total_waiters = 1 << 20,
                           .source_share = 8,
                           .zone_cap = 4,
                           .zone_fail_after = 2});
  constexpr int kPerThread = 20000;
  std::atomic<bool> over_share{false};
  auto worker = [&](int self) {
    for (int i = 0; i < kPerThread; ++i) {
      const std::string key = "k" + std::to_string(i % 24);
      const JoinOrigin origin{.source = static_cast<uint64_t>(1 + i % 3),
                              .zone = static_cast<uint64_t>(1 + i % 2)};
      t.join(key, W{t0, self}, t0, self, origin);
      if (t.source_entries(origin.source) > 8) over_share = true;
      if (i % 3 == 0) t.complete(key, i % 6 == 0 ? Completion::TimedOut : Completion::Answered, t0);
    }
  };
  std::thread a(worker, 1), b(worker, 2);
  a.join();
  b.join();
  for (int k = 0; k < 24; ++k)
    t.complete("k" + std::to_string(k));
  EXPECT_FALSE(over_share.load());
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.sources(), 0u);
  EXPECT_EQ(t.zones(), 0u);
  for (uint64_t s = 1; s <= 3; ++s)
    EXPECT_EQ(t.source_entries(s), 0u);
}

}  // namespace
}  // namespace hg::resolver
