// ShadowTable: the projected upstream count of a scripted query sequence, counted by hand, with
// a real Cache beside it and a ManualClock (no sleeping).
#include "cache/shadow.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "cache/cache.h"
#include "tests/cache/cache_test_util.h"

namespace hg::cache {
namespace {

using namespace hg::cache::testing;

/// Caches an answer for `k`'s name (one A record, TTL 300) in `c` at `now`; its entry.
std::shared_ptr<const Entry> cache_a(Cache& c, const CacheKey& k, Time now) {
  OwnedMessage r = response(k.qname.to_text());
  r.answer.push_back(A(k.qname.to_text(), 300));
  Packet p(r);
  c.insert(k, p.msg, now);
  return c.peek(k, now).entry;
}

class ShadowTest : public ::testing::Test {
 protected:
  ShadowTest() : cache_(settings()), shadow_(ShadowSettings{.max_bytes = 1 << 20, .shards = 4}) {}

  static CacheSettings settings() {
    CacheSettings s;
    s.prefetch = false;  // the ramp draws random numbers; the script wants none
    s.shards = 1;
    return s;
  }

  /// What the resolver does with one client query for `name` (an A record with `ttl` when
  /// it has to ask upstream, which answers at once). Returns true when it was a real hit.
  bool ask(std::string_view name, uint32_t ttl = 300) {
    const CacheKey k = key(name);
    const Time now = clock_.now();
    const Hit hit = cache_.lookup(k, now);
    const bool fresh = hit.freshness == Freshness::Fresh;
    shadow_.on_query(k, fresh ? hit.entry.get() : nullptr, now);
    if (fresh) return true;
    shadow_.on_upstream(k);
    OwnedMessage r = response(name);
    r.answer.push_back(A(name, ttl));
    Packet p(r);
    EXPECT_EQ(cache_.insert(k, p.msg, now), InsertOutcome::Cached);
    shadow_.on_fill(k, *cache_.peek(k, now).entry);
    return false;
  }
  void at(int64_t seconds) { clock_.set(start_ + Seconds{seconds}); }

  ShadowZoneStats zone(std::string_view name) {
    for (auto& z : shadow_.zone_stats())
      if (z.zone == N(name)) return z;
    ADD_FAILURE() << "no zone " << name;
    return {};
  }

  ManualClock clock_;
  Time start_ = clock_.now();
  Cache cache_;
  ShadowTable shadow_;
};

TEST_F(ShadowTest, ScriptedSequenceGivesTheHandCountedProjection) {
  shadow_.set(N("example.com"), 60, clock_.now());
  ASSERT_TRUE(shadow_.active());
  // Real TTL 300, shadow TTL 60. t=0 miss (real 1); t=30 shadow fresh (expires 60);
  // t=60 shadow expired → projected (refilled to 120); t=90 shadow fresh; t=299 shadow
  // expired → projected (to 359); t=300 real miss (real 2; shadow refilled to 360);
  // t=330 shadow fresh.
  at(0);
  EXPECT_FALSE(ask("www.example.com"));
  at(30);
  EXPECT_TRUE(ask("www.example.com"));
  at(60);
  EXPECT_TRUE(ask("www.example.com"));
  at(90);
  EXPECT_TRUE(ask("www.example.com"));
  at(299);
  EXPECT_TRUE(ask("www.example.com"));
  at(300);
  EXPECT_FALSE(ask("www.example.com"));
  at(330);
  EXPECT_TRUE(ask("www.example.com"));
  // Not in the zone: not counted anywhere.
  EXPECT_FALSE(ask("www.example.org"));
  EXPECT_FALSE(ask("badexample.com"));

  const ShadowZoneStats z = zone("example.com");
  EXPECT_EQ(z.seconds, 60u);
  EXPECT_EQ(z.since, start_);
  EXPECT_EQ(z.queries, 7u);
  EXPECT_EQ(z.hits, 5u);
  EXPECT_EQ(z.real_upstream, 2u);
  EXPECT_EQ(z.shadow_misses, 2u);
  EXPECT_EQ(z.projected_upstream(), 4u);
  EXPECT_DOUBLE_EQ(z.multiplier(), 2.0);
  EXPECT_DOUBLE_EQ(z.projected_hit_ratio(), 1.0 - 4.0 / 7.0);
  EXPECT_DOUBLE_EQ(z.real_hit_ratio(), 1.0 - 2.0 / 7.0);
  EXPECT_EQ(shadow_.stats().entries, 1u);
}

TEST_F(ShadowTest, ShadowTtlAtOrAboveTheRealTtlProjectsExactlyTheRealCount) {
  shadow_.set(N("example.com"), 3600, clock_.now());
  for (int64_t t = 0; t < 2000; t += 7) {
    at(t);
    ask("a.example.com", 300);
    ask("b.example.com", 60);
  }
  const ShadowZoneStats z = zone("example.com");
  EXPECT_GT(z.real_upstream, 10u);
  EXPECT_EQ(z.shadow_misses, 0u);
  EXPECT_DOUBLE_EQ(z.multiplier(), 1.0);
}

TEST_F(ShadowTest, NamesCountInTheDeepestZoneAtOrAboveThem) {
  shadow_.set(N("Example.COM"), 100, clock_.now());
  shadow_.set(N("shop.example.com"), 10, clock_.now());
  at(0);
  ask("www.shop.example.com");
  at(0);
  ask("shop.example.com");
  at(0);
  ask("example.com");
  at(0);
  ask("deep.www.example.com");
  at(20);
  ask("www.shop.example.com");  // 20 ≥ 10: shadow miss in shop.example.com
  at(20);
  ask("deep.www.example.com");  // 20 < 100: shadow hit in example.com
  EXPECT_EQ(zone("shop.example.com").queries, 3u);
  EXPECT_EQ(zone("shop.example.com").shadow_misses, 1u);
  EXPECT_EQ(zone("example.com").queries, 3u);
  EXPECT_EQ(zone("example.com").shadow_misses, 0u);
  const auto l = shadow_.list();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].first.to_text(), "example.com.");  // lowercased
  EXPECT_EQ(l[0].second, 100u);
}

TEST_F(ShadowTest, ZoneSetMidStreamCountsTheFirstHitAndClearForgetsEverything) {
  at(0);
  ask("www.example.com");  // cached before any shadow zone: nothing counted
  EXPECT_FALSE(shadow_.active());
  EXPECT_EQ(shadow_.stats().entries, 0u);
  at(10);
  shadow_.set(N("example.com"), 60, clock_.now());
  at(20);
  ask("www.example.com");  // no shadow entry yet: a projected query, refilled to 80
  at(70);
  ask("www.example.com");  // shadow fresh
  EXPECT_EQ(zone("example.com").shadow_misses, 1u);
  EXPECT_EQ(zone("example.com").since, start_ + Seconds{10});

  EXPECT_TRUE(shadow_.clear(N("EXAMPLE.com")));
  EXPECT_FALSE(shadow_.clear(N("example.com")));
  EXPECT_FALSE(shadow_.active());
  EXPECT_EQ(shadow_.stats().entries, 0u);
  EXPECT_TRUE(shadow_.zone_stats().empty());

  // Set again: counters start afresh, and the old entry is not reused.
  shadow_.set(N("example.com"), 60, clock_.now());
  at(71);
  ask("www.example.com");
  EXPECT_EQ(zone("example.com").queries, 1u);
  EXPECT_EQ(zone("example.com").shadow_misses, 1u);
  // Setting it again with another TTL also restarts it.
  shadow_.set(N("example.com"), 30, clock_.now());
  EXPECT_EQ(zone("example.com").queries, 0u);
  EXPECT_EQ(shadow_.list().size(), 1u);
}

TEST_F(ShadowTest, ReplaceKeepsUnchangedZonesAndRestartsTheRest) {
  shadow_.set(N("a.example"), 60, clock_.now());
  shadow_.set(N("b.example"), 60, clock_.now());
  shadow_.set(N("c.example"), 60, clock_.now());
  at(0);
  ask("x.a.example");
  ask("x.b.example");
  ask("x.c.example");
  at(100);
  shadow_.replace({{N("a.example"), 60}, {N("b.example"), 30}, {N("d.example"), 5}}, clock_.now());
  EXPECT_EQ(zone("a.example").queries, 1u);
  EXPECT_EQ(zone("a.example").since, start_);
  EXPECT_EQ(zone("b.example").queries, 0u);
  EXPECT_EQ(zone("b.example").since, start_ + Seconds{100});
  EXPECT_EQ(zone("d.example").seconds, 5u);
  EXPECT_EQ(shadow_.list().size(), 3u);
  EXPECT_EQ(shadow_.stats().entries, 1u);  // only a.example's entry survives
  shadow_.replace({}, clock_.now());
  EXPECT_FALSE(shadow_.active());
  EXPECT_EQ(shadow_.stats().entries, 0u);
}

TEST(ShadowBounds, FullTableEvictsTheEntryFilledLongestAgo) {
  ManualClock clock;
  ShadowTable t(ShadowSettings{.max_bytes = 10 * ShadowTable::kBytesPerEntry, .shards = 1});
  t.set(N("example"), 60, clock.now());
  Cache c(CacheSettings{.shards = 1, .prefetch = false});
  auto entry_for = [&](const CacheKey& k) { return cache_a(c, k, clock.now()); };
  std::vector<CacheKey> keys;
  for (int i = 0; i < 15; ++i) {
    keys.push_back(key(nm("n", i, ".example")));
    t.on_fill(keys.back(), *entry_for(keys.back()));
  }
  ShadowTableStats st = t.stats();
  EXPECT_EQ(st.entries, 10u);
  EXPECT_EQ(st.evictions, 5u);
  EXPECT_EQ(st.bytes, 10 * ShadowTable::kBytesPerEntry);
  EXPECT_EQ(st.capacity_bytes, 10 * ShadowTable::kBytesPerEntry);
  // n0 was evicted: its next hit is a shadow miss though 60 s have not passed; n14 is there.
  t.on_query(keys[0], c.peek(keys[0], clock.now()).entry.get(), clock.now());
  t.on_query(keys[14], c.peek(keys[14], clock.now()).entry.get(), clock.now());
  auto z = t.zone_stats().at(0);
  EXPECT_EQ(z.shadow_misses, 1u);
  EXPECT_EQ(t.stats().evictions, 6u);  // refilling n0 pushed out the next oldest, n1
}

TEST(ShadowThreads, ConcurrentQueriesAreAllCounted) {
  ManualClock clock;
  ShadowTable t;
  t.set(N("example"), 60, clock.now());
  Cache c(CacheSettings{.prefetch = false});
  const CacheKey k = key("www.example");
  const auto e = cache_a(c, k, clock.now());
  constexpr int kPerThread = 20000;
  auto work = [&] {
    for (int i = 0; i < kPerThread; ++i)
      t.on_query(k, e.get(), clock.now());
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  const auto z = t.zone_stats().at(0);
  EXPECT_EQ(z.queries, 2u * kPerThread);
  EXPECT_EQ(z.shadow_misses, 1u);  // one expiry, one projected fetch, whichever thread saw it
}

// Zone changes publish a new snapshot while other threads read the old one: no thread may use
// a snapshot after it is freed (ASan/TSan builds check), and after the last change every
// thread counts in the zones now set.
TEST(ShadowThreads, ZoneChangesWhileThreadsQueryAreSafeAndSeenByEveryThread) {
  ManualClock clock;
  ShadowTable t;
  t.set(N("example"), 60, clock.now());
  Cache c(CacheSettings{.prefetch = false});
  const CacheKey k = key("www.example");
  const auto e = cache_a(c, k, clock.now());
  std::atomic<bool> stop{false};
  auto reader = [&] {
    for (int i = 0; i < 2'000'000 && !stop.load(std::memory_order_relaxed); ++i) {
      t.on_query(k, e.get(), clock.now());
      t.on_upstream(k);
    }
  };
  std::thread a(reader), b(reader);
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0) t.set(N("www.example"), 30, clock.now());
    if (i % 3 == 1) t.clear(N("www.example"));
    if (i % 3 == 2) t.replace({{N("example"), 60}, {N("other"), 5}}, clock.now());
  }
  stop.store(true);
  a.join();
  b.join();
  t.set(N("www.example"), 10, clock.now());  // a new generation each thread must pick up
  std::vector<uint64_t> before;              // the other zones' counts, kept from the first phase
  for (const auto& z : t.zone_stats())
    before.push_back(z.queries);
  constexpr int kPerThread = 1000;
  auto counted = [&] {
    for (int i = 0; i < kPerThread; ++i)
      t.on_query(k, e.get(), clock.now());
  };
  std::thread x(counted), y(counted);
  x.join();
  y.join();
  const auto after = t.zone_stats();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (after[i].zone == N("www.example")) {
      EXPECT_EQ(after[i].queries, 2u * kPerThread);
      EXPECT_EQ(after[i].shadow_misses, 1u);
    } else {
      EXPECT_EQ(after[i].queries, before[i]) << after[i].zone.to_text();  // www is deeper
    }
  }
}

// Each thread caches the snapshot of the table it used last; using two tables by turns, or a
// new table where an old one was, must never count in the other table's zones.
TEST(ShadowThreads, TablesUsedByTurnsInOneThreadKeepTheirOwnZones) {
  ManualClock clock;
  Cache c(CacheSettings{.prefetch = false});
  auto entry_for = [&](const CacheKey& k) { return cache_a(c, k, clock.now()); };
  const CacheKey ka = key("www.a.example");
  const CacheKey kb = key("www.b.example");
  const auto ea = entry_for(ka);
  const auto eb = entry_for(kb);
  ShadowTable ta;
  ta.set(N("a.example"), 60, clock.now());
  for (int round = 0; round < 3; ++round) {
    auto tb = std::make_unique<ShadowTable>();
    tb->set(N("b.example"), 60, clock.now());
    for (int i = 0; i < 5; ++i) {
      ta.on_query(ka, ea.get(), clock.now());
      ta.on_query(kb, eb.get(), clock.now());  // not in ta's zones
      tb->on_query(kb, eb.get(), clock.now());
      tb->on_query(ka, ea.get(), clock.now());  // not in tb's zones
    }
    ASSERT_EQ(tb->zone_stats().size(), 1u);
    EXPECT_EQ(tb->zone_stats()[0].queries, 5u);
    EXPECT_EQ(tb->stats().entries, 1u);
  }  // each round's table goes, and the next may take its address
  ASSERT_EQ(ta.zone_stats().size(), 1u);
  EXPECT_EQ(ta.zone_stats()[0].queries, 15u);
  EXPECT_EQ(ta.zone_stats()[0].shadow_misses, 1u);
}

// Every query is matched against every zone, so the table is bounded: a new zone past
// kMaxZones is refused and changes nothing; setting a known zone again and clearing one still
// work, and a cleared slot can be reused.
TEST_F(ShadowTest, ZonesAreBoundedAndANewZonePastTheBoundChangesNothing) {
  for (std::size_t i = 0; i < ShadowTable::kMaxZones; ++i)
    ASSERT_TRUE(shadow_.set(N(("z" + std::to_string(i) + ".test").c_str()), 60, clock_.now()));
  EXPECT_FALSE(shadow_.set(N("one-too-many.test"), 60, clock_.now()));
  EXPECT_EQ(shadow_.list().size(), ShadowTable::kMaxZones);
  EXPECT_TRUE(shadow_.set(N("Z0.test"), 30, clock_.now()));  // known: set again
  EXPECT_EQ(shadow_.list().size(), ShadowTable::kMaxZones);
  EXPECT_TRUE(shadow_.clear(N("z1.test")));
  EXPECT_TRUE(shadow_.set(N("one-too-many.test"), 60, clock_.now()));
  // A configuration longer than the bound keeps its first kMaxZones zones.
  std::vector<std::pair<wire::Name, uint32_t>> many;
  for (std::size_t i = 0; i < ShadowTable::kMaxZones + 5; ++i)
    many.emplace_back(N(("r" + std::to_string(i) + ".test").c_str()), 60);
  shadow_.replace(many, clock_.now());
  const auto l = shadow_.list();
  ASSERT_EQ(l.size(), ShadowTable::kMaxZones);
  EXPECT_EQ(l.back().first.to_text(), "r" + std::to_string(ShadowTable::kMaxZones - 1) + ".test.");
}

}  // namespace
}  // namespace hg::cache
