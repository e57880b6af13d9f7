#include "cache/cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "base/counter_slots.h"
#include "cache/clock.h"
#include "cache_test_util.h"

namespace hg::cache {
namespace {

using namespace testing;
using wire::RCode;

class CacheTest : public ::testing::Test {
 protected:
  CacheSettings settings_{.max_bytes = 1 << 20, .shards = 4};
  ManualClock clock_;
  std::unique_ptr<Cache> cache_ = std::make_unique<Cache>(settings_);

  void reset(const CacheSettings& s) {
    settings_ = s;
    cache_ = std::make_unique<Cache>(s);
  }
  InsertOutcome put(const OwnedMessage& m, const CacheKey& k, Hit* stored = nullptr) {
    const Packet p(m);
    return cache_->insert(k, p.msg, clock_.now(), stored);
  }
  InsertOutcome put_a(std::string_view name, uint32_t ttl, Hit* stored = nullptr) {
    OwnedMessage m = response(name);
    m.answer.push_back(A(name, ttl));
    return put(m, key(name), stored);
  }
  Hit get(std::string_view name) { return cache_->lookup(key(name), clock_.now()); }
};

TEST_F(CacheTest, PeekFindsAnEntryWithoutCountingOrPromotingIt) {
  ASSERT_EQ(put_a("www.example.com", 60), InsertOutcome::Cached);
  EXPECT_EQ(cache_->peek(key("www.example.com"), clock_.now()).freshness, Freshness::Fresh);
  EXPECT_EQ(cache_->peek(key("other.example.com"), clock_.now()).freshness, Freshness::Miss);
  clock_.advance(Seconds{61});
  EXPECT_EQ(cache_->peek(key("www.example.com"), clock_.now()).freshness, Freshness::Stale);
  const CacheStats st = cache_->stats();
  EXPECT_EQ(st.hits, 0u);
  EXPECT_EQ(st.stale_hits, 0u);
  EXPECT_EQ(st.misses, 0u);
}

TEST_F(CacheTest, OneHitNamesInsertedAndPeekedDoNotWashOutTheHotSet) {
  // The resolver's miss path: insert, then peek to answer the waiters. A hot name looked up
  // a few times must survive a flood of such one-hit names (found in review: rendering the
  // waiters with lookup() bumped every new entry and defeated S3-FIFO's small queue).
  reset({.max_bytes = 200 << 10, .shards = 1});
  ASSERT_EQ(put_a("hot.example", 3600), InsertOutcome::Cached);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(get("hot.example").freshness, Freshness::Fresh);
  for (int i = 0; i < 3000; ++i) {
    const std::string name = "flood" + std::to_string(i) + ".example";
    ASSERT_EQ(put_a(name, 3600), InsertOutcome::Cached);
    (void)cache_->peek(key(name), clock_.now());
  }
  EXPECT_GT(cache_->stats().evictions, 0u);
  EXPECT_EQ(get("hot.example").freshness, Freshness::Fresh);
}

TEST_F(CacheTest, AnAdBitIsStoredOnlyWhenTheCacheKeepsAd) {
  // Whoever inserts (an upstream answer, a cache file, a fleet peer), a cache whose daemon
  // trusts no upstream's AD never stores it; one with --trust-ad keeps what it was given.
  OwnedMessage m = response("signed.example");
  m.header.set(wire::flag::AD, true);
  m.answer.push_back(A("signed.example", 60));
  for (const bool keep : {false, true}) {
    reset({.max_bytes = 1 << 20, .shards = 4, .keep_ad = keep});
    ASSERT_EQ(put(m, key("signed.example")), InsertOutcome::Cached);
    const Hit h = get("signed.example");
    ASSERT_EQ(h.freshness, Freshness::Fresh);
    EXPECT_EQ(h.entry->authentic_data(), keep);
  }
}

TEST_F(CacheTest, LookupMissesWhenEmpty) {
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Miss);
  EXPECT_EQ(cache_->stats().misses, 1u);
}

TEST_F(CacheTest, FreshUntilShortestTtlThenStale) {
  ASSERT_EQ(put_a("www.example.com", 60), InsertOutcome::Cached);
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Fresh);
  clock_.advance(Seconds{59} + Millis{999});
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Fresh);
  clock_.advance(Millis{1});
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Stale);
}

TEST_F(CacheTest, ServesStaleWithinWindowAfterExpiryThenReclaims) {
  reset({.max_bytes = 1 << 20, .shards = 1, .stale_max = Seconds{3600}});
  ASSERT_EQ(put_a("www.example.com", 60), InsertOutcome::Cached);
  clock_.advance(Seconds{60 + 3599});
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Stale);
  clock_.advance(Seconds{1});
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Miss);
  const CacheStats st = cache_->stats();
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.expired, 1u);
  EXPECT_EQ(st.stale_hits, 1u);
}

TEST_F(CacheTest, StaleHitRendersStaleTtl) {
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  clock_.advance(Seconds{400});
  const Hit hit = get("www.example.com");
  ASSERT_TRUE(hit.stale());
  const Packet q(query("www.example.com"));
  std::vector<uint8_t> buf(512);
  wire::WireWriter w(buf, 512);
  ASSERT_TRUE(render(hit, {.id = 7, .question = q.question()}, clock_.now(), w).ok);
  buf.resize(w.size());
  EXPECT_EQ(decode(buf).answer.at(0).ttl, 30u);
}

TEST_F(CacheTest, StaleNxdomainIsDistinguishable) {
  OwnedMessage m = response("nope.example.com", RRType::A, RCode::NXDomain);
  m.authority.push_back(SOA("example.com", 60, 60));
  ASSERT_EQ(put(m, key("nope.example.com")), InsertOutcome::Cached);
  EXPECT_FALSE(get("nope.example.com").stale_nxdomain());
  clock_.advance(Seconds{61});
  EXPECT_TRUE(get("nope.example.com").stale_nxdomain());
  ASSERT_EQ(put_a("www.example.com", 60), InsertOutcome::Cached);
  clock_.advance(Seconds{61});
  const Hit positive = get("www.example.com");
  EXPECT_TRUE(positive.stale());
  EXPECT_FALSE(positive.stale_nxdomain());
}

TEST_F(CacheTest, ZeroTtlAnswerRemovesCachedCopy) {
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  clock_.advance(Seconds{400});  // stale: exactly what must not live on
  EXPECT_EQ(put_a("www.example.com", 0), InsertOutcome::RemovedZeroTtl);
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Miss);
}

// insert(..., &stored): the entry just stored, as peek() gives it right after; nothing when
// the answer was not cached.
TEST_F(CacheTest, InsertHandsBackTheEntryItStored) {
  Hit stored;
  ASSERT_EQ(put_a("www.example.com", 300, &stored), InsertOutcome::Cached);
  const Hit peeked = cache_->peek(key("www.example.com"), clock_.now());
  EXPECT_EQ(stored.freshness, Freshness::Fresh);
  ASSERT_NE(stored.entry, nullptr);
  EXPECT_EQ(stored.entry, peeked.entry);
  EXPECT_FALSE(stored.prefetch);
  EXPECT_EQ(stored.stale_ttl, peeked.stale_ttl);

  Hit untouched;
  ASSERT_EQ(put_a("www.example.com", 0, &untouched), InsertOutcome::RemovedZeroTtl);
  EXPECT_EQ(untouched.freshness, Freshness::Miss);
  EXPECT_EQ(untouched.entry, nullptr);
}

TEST_F(CacheTest, PrefetchIsOnlyAHint) {
  cache_->prefetch(key("empty.example.com"));  // an empty cache: index and policy unsized
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  const auto before = cache_->stats();
  cache_->prefetch(key("www.example.com"));
  cache_->prefetch(key("absent.example.com"));
  const auto after = cache_->stats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.entries, before.entries);
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Fresh);
  EXPECT_EQ(get("absent.example.com").freshness, Freshness::Miss);
}

TEST_F(CacheTest, RefusedAnswersLeaveCachedCopyAlone) {
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  EXPECT_EQ(put(response("www.example.com", RRType::A, RCode::ServFail), key("www.example.com")),
            InsertOutcome::UncacheableRcode);
  EXPECT_EQ(get("www.example.com").freshness, Freshness::Fresh);
}

TEST_F(CacheTest, KeyIgnoresTransportAndCookie) {
  OwnedMessage udp_q = query("www.example.com", RRType::A, true);
  udp_q.edns->options.push_back({wire::edns_option::Cookie, {1, 2, 3, 4, 5, 6, 7, 8}});
  const Packet udp(udp_q);
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 300));
  const Packet answer(m);
  ASSERT_EQ(cache_->insert(CacheKey::from_query(udp.msg), answer.msg, clock_.now()),
            InsertOutcome::Cached);
  const Packet tcp_retry(query("WWW.example.com", RRType::A, true));  // no cookie
  EXPECT_TRUE(cache_->lookup(CacheKey::from_query(tcp_retry.msg), clock_.now()));
}

TEST_F(CacheTest, DoBitSelectsSeparateEntry) {
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  EXPECT_FALSE(cache_->lookup(key("www.example.com", RRType::A, true), clock_.now()));
}

TEST_F(CacheTest, ReinsertReplacesTheAnswer) {
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  clock_.advance(Seconds{200});
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  const Hit h = get("www.example.com");
  EXPECT_EQ(h.entry->remaining_ttl(0, clock_.now()), 300u);
  EXPECT_EQ(cache_->stats().entries, 1u);
}

TEST(PrefetchDue, NeverBeforeTheLastTenthOfTheTtl) {
  const Time t{Seconds{1000}};
  for (double u : {0.0, 0.5, 0.999}) {
    EXPECT_FALSE(prefetch_due(t, t + Seconds{100}, t + Seconds{90}, 0.1, u));
  }
}

TEST(PrefetchDue, ProbabilityRisesTowardsExpiry) {
  const Time t{Seconds{1000}};
  const Time exp = t + Seconds{100};
  // 1 s into the 10 s window: probability 0.1.
  EXPECT_TRUE(prefetch_due(t, exp, t + Seconds{91}, 0.1, 0.05));
  EXPECT_FALSE(prefetch_due(t, exp, t + Seconds{91}, 0.1, 0.15));
  // 9 s in: probability 0.9.
  EXPECT_TRUE(prefetch_due(t, exp, t + Seconds{99}, 0.1, 0.85));
  EXPECT_FALSE(prefetch_due(t, exp, exp, 0.1, 0.0));  // expired: the stale path refreshes
}

TEST_F(CacheTest, PrefetchIsGrantedToOneLookupPerEntry) {
  ASSERT_EQ(put_a("www.example.com", 100), InsertOutcome::Cached);
  EXPECT_FALSE(get("www.example.com").prefetch);
  clock_.advance(Seconds{99} + Millis{999});  // probability 0.9999
  int granted = 0;
  for (int i = 0; i < 100; ++i)
    granted += get("www.example.com").prefetch ? 1 : 0;
  EXPECT_EQ(granted, 1);
  // The refreshed entry may be prefetched again near its own expiry.
  ASSERT_EQ(put_a("www.example.com", 100), InsertOutcome::Cached);
  clock_.advance(Seconds{99} + Millis{999});
  granted = 0;
  for (int i = 0; i < 100; ++i)
    granted += get("www.example.com").prefetch ? 1 : 0;
  EXPECT_EQ(granted, 1);
}

// lookup_fresh: the entry is handed to the callback for a fresh hit only (no reference kept
// in the Hit); stale hits and misses come back as lookup() returns them; counting and the
// prefetch grant are lookup()'s.
TEST_F(CacheTest, LookupFreshHandsOverAFreshEntryOnlyAndCountsAsLookup) {
  ASSERT_EQ(put_a("www.example.com", 100), InsertOutcome::Cached);
  int calls = 0;
  std::string seen;
  auto visit = [&](const Entry& e, bool) {
    ++calls;
    seen = std::string(reinterpret_cast<const char*>(e.qname_wire().data()), e.qname_wire().size());
  };
  Hit h = cache_->lookup_fresh(key("www.example.com"), clock_.now(), visit);
  EXPECT_EQ(h.freshness, Freshness::Fresh);
  EXPECT_EQ(h.entry, nullptr);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, std::string("\3www\7example\3com\0", 17));

  h = cache_->lookup_fresh(key("other.example.com"), clock_.now(), visit);
  EXPECT_EQ(h.freshness, Freshness::Miss);
  EXPECT_EQ(calls, 1);

  // Near expiry one lookup is granted the prefetch, passed to the callback and in the Hit.
  clock_.advance(Seconds{99} + Millis{999});
  int granted_arg = 0;
  int granted_hit = 0;
  for (int i = 0; i < 100; ++i) {
    const Hit g =
        cache_->lookup_fresh(key("www.example.com"), clock_.now(),
                             [&](const Entry&, bool prefetch) { granted_arg += prefetch; });
    granted_hit += g.prefetch ? 1 : 0;
  }
  EXPECT_EQ(granted_arg, 1);
  EXPECT_EQ(granted_hit, 1);

  clock_.advance(Seconds{1});  // stale now
  h = cache_->lookup_fresh(key("www.example.com"), clock_.now(), visit);
  EXPECT_EQ(h.freshness, Freshness::Stale);
  ASSERT_NE(h.entry, nullptr);  // a stale answer outlives eviction: it keeps its reference
  EXPECT_EQ(calls, 1);

  const CacheStats st = cache_->stats();
  EXPECT_EQ(st.hits, 101u);
  EXPECT_EQ(st.stale_hits, 1u);
  EXPECT_EQ(st.misses, 1u);
}

TEST_F(CacheTest, PrefetchCanBeDisabled) {
  reset({.max_bytes = 1 << 20, .shards = 1, .prefetch = false});
  ASSERT_EQ(put_a("www.example.com", 100), InsertOutcome::Cached);
  clock_.advance(Seconds{99} + Millis{999});
  for (int i = 0; i < 50; ++i)
    EXPECT_FALSE(get("www.example.com").prefetch);
}

TEST_F(CacheTest, FailureHoldoffDoublesFromFiveToThirtySeconds) {
  const CacheKey k = key("dead.example.com");
  EXPECT_EQ(cache_->failure_holdoff(k, clock_.now()), Millis{0});
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{5});
  EXPECT_EQ(cache_->failure_holdoff(k, clock_.now()), Seconds{5});
  clock_.advance(Seconds{2});
  EXPECT_EQ(cache_->failure_holdoff(k, clock_.now()), Seconds{3});
  clock_.advance(Seconds{3});
  EXPECT_EQ(cache_->failure_holdoff(k, clock_.now()), Millis{0});
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{10});
  clock_.advance(Seconds{10});
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{20});
  clock_.advance(Seconds{20});
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{30});
  clock_.advance(Seconds{30});
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{30});
  EXPECT_EQ(cache_->failure_holdoff(key("other.example.com"), clock_.now()), Millis{0});
}

TEST_F(CacheTest, FailureStreakEndsAfterQuietPeriodOrSuccess) {
  const CacheKey k = key("flaky.example.com");
  cache_->note_failure(k, clock_.now());
  cache_->note_failure(k, clock_.now());  // 10 s
  clock_.advance(Seconds{10 + 31});
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{5});
  cache_->note_failure(k, clock_.now());
  ASSERT_EQ(put_a("flaky.example.com", 60), InsertOutcome::Cached);  // upstream recovered
  EXPECT_EQ(cache_->failure_holdoff(k, clock_.now()), Millis{0});
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{5});
}

TEST_F(CacheTest, FailureCacheIsBounded) {
  reset({.max_bytes = 1 << 20, .shards = 1, .failure_entries_per_shard = 8});
  for (int i = 0; i < 100; ++i) {
    cache_->note_failure(key(nm("n", i, ".example.com")), clock_.now());
  }
  EXPECT_LE(cache_->stats().failure_entries, 8u);
}

TEST_F(CacheTest, AFullFailureTableKeepsARecentlyFailedNameHeldOff) {
  // Found in review: a full table evicted an arbitrary key (begin()), often the name that had
  // just failed, which then went upstream again at once.
  reset({.max_bytes = 1 << 20, .shards = 1, .failure_entries_per_shard = 4});
  for (int i = 0; i < 4; ++i)
    cache_->note_failure(key(nm("old", i, ".example.com")), clock_.now());
  clock_.advance(Seconds{1});
  const CacheKey hot = key("hot.example.com");
  cache_->note_failure(hot, clock_.now());
  for (int i = 0; i < 3; ++i) {
    clock_.advance(Millis{100});
    cache_->note_failure(key(nm("new", i, ".example.com")), clock_.now());
    EXPECT_GT(cache_->failure_holdoff(hot, clock_.now()), Millis{0}) << i;
  }
  EXPECT_EQ(cache_->stats().failure_entries, 4u);
  // The least recently failed went first: all four old names, none of the new ones.
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(cache_->note_failure(key(nm("old", i, ".example.com")), clock_.now()), Seconds{5});
}

TEST_F(CacheTest, AFullFailureTableDropsEveryRecordWhoseStreakIsOver) {
  reset({.max_bytes = 1 << 20, .shards = 1, .failure_entries_per_shard = 4});
  for (int i = 0; i < 3; ++i)
    cache_->note_failure(key(nm("old", i, ".example.com")), clock_.now());
  clock_.advance(Seconds{5 + 30 + 1});  // holdoff and streak window over
  const CacheKey k = key("flaky.example.com");
  cache_->note_failure(k, clock_.now());
  cache_->note_failure(key("next.example.com"), clock_.now());
  EXPECT_EQ(cache_->stats().failure_entries, 2u);
  EXPECT_EQ(cache_->note_failure(k, clock_.now()), Seconds{10});  // its streak was kept
}

TEST_F(CacheTest, TtlCapAppliesToNewAndExistingEntriesAtOrBelowZone) {
  ASSERT_EQ(put_a("www.example.com", 3600), InsertOutcome::Cached);
  ASSERT_EQ(put_a("badexample.com", 3600), InsertOutcome::Cached);
  clock_.advance(Seconds{100});
  cache_->set_ttl_cap(N("example.com"), 60, clock_.now());
  EXPECT_EQ(get("www.example.com").entry->remaining_ttl(0, clock_.now()), 60u);
  EXPECT_EQ(get("badexample.com").entry->remaining_ttl(0, clock_.now()), 3500u);
  ASSERT_EQ(put_a("api.example.com", 3600), InsertOutcome::Cached);
  EXPECT_EQ(get("api.example.com").entry->ttl(), 60u);
  clock_.advance(Seconds{60});
  EXPECT_TRUE(get("www.example.com").stale());
  EXPECT_TRUE(cache_->clear_ttl_cap(N("EXAMPLE.com")));
  ASSERT_EQ(put_a("api.example.com", 3600), InsertOutcome::Cached);
  EXPECT_EQ(get("api.example.com").entry->ttl(), 3600u);
}

// ttl-cap ZONE 0 means "not cached": nothing new is stored, and what was cached goes at once
// rather than lingering as stale data (with a cap of N it is shortened to N instead).
TEST_F(CacheTest, ATtlCapOfZeroCachesNothingAndRemovesWhatWasCached) {
  ASSERT_EQ(put_a("www.example.com", 3600), InsertOutcome::Cached);
  ASSERT_EQ(put_a("badexample.com", 3600), InsertOutcome::Cached);
  cache_->set_ttl_cap(N("example.com"), 0, clock_.now());
  EXPECT_FALSE(get("www.example.com")) << "left to be served stale";
  EXPECT_TRUE(get("badexample.com"));
  EXPECT_EQ(put_a("api.example.com", 3600), InsertOutcome::RemovedZeroTtl);
  EXPECT_FALSE(get("api.example.com"));
  EXPECT_EQ(cache_->ttl_cap_for(N("API.example.com")), std::optional<uint32_t>(0));
  EXPECT_EQ(cache_->ttl_cap_for(N("badexample.com")), std::nullopt);
  EXPECT_TRUE(cache_->has_ttl_caps());
  EXPECT_TRUE(cache_->clear_ttl_cap(N("example.com")));
  EXPECT_FALSE(cache_->has_ttl_caps());
  EXPECT_EQ(put_a("api.example.com", 3600), InsertOutcome::Cached);
}

TEST_F(CacheTest, FlushNameRemovesEveryVariantOfThatNameOnly) {
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  OwnedMessage aaaa = response("www.example.com", RRType::AAAA);
  aaaa.answer.push_back(AAAA("www.example.com", 300));
  ASSERT_EQ(put(aaaa, key("www.example.com", RRType::AAAA)), InsertOutcome::Cached);
  ASSERT_EQ(put_a("a.www.example.com", 300), InsertOutcome::Cached);
  EXPECT_EQ(cache_->flush_name(N("WWW.example.com")), 2u);
  EXPECT_FALSE(get("www.example.com"));
  EXPECT_TRUE(get("a.www.example.com"));
}

TEST_F(CacheTest, FlushZoneRemovesZoneAndBelowButNotSibling) {
  ASSERT_EQ(put_a("example.com", 300), InsertOutcome::Cached);
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  ASSERT_EQ(put_a("badexample.com", 300), InsertOutcome::Cached);
  EXPECT_EQ(cache_->flush_zone(N("example.com")), 2u);
  EXPECT_TRUE(get("badexample.com"));
  EXPECT_EQ(cache_->flush_all(), 1u);
  EXPECT_EQ(cache_->stats().entries, 0u);
}

TEST_F(CacheTest, StatsCountHitsMissesAndStaleHits) {
  ASSERT_EQ(put_a("www.example.com", 60), InsertOutcome::Cached);
  get("www.example.com");
  get("www.example.com");
  get("nope.example.com");
  clock_.advance(Seconds{61});
  get("www.example.com");
  const CacheStats st = cache_->stats();
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.stale_hits, 1u);
  EXPECT_EQ(st.inserts, 1u);
  EXPECT_EQ(st.entries, 1u);
  EXPECT_GT(st.bytes, 0u);
  EXPECT_EQ(st.capacity_bytes, settings_.max_bytes);
}

TEST_F(CacheTest, ByteBudgetHoldsUnderFloodAndCountsEvictions) {
  reset({.max_bytes = 256 << 10, .shards = 4});
  for (int i = 0; i < 20'000; ++i) {
    ASSERT_EQ(put_a(nm("r", i, ".flood.example"), 300), InsertOutcome::Cached);
  }
  const CacheStats st = cache_->stats();
  EXPECT_LE(st.bytes, st.capacity_bytes);
  EXPECT_GT(st.evictions, 0u);
  EXPECT_EQ(st.inserts - st.evictions, st.entries);
  // Honest accounting: an entry with a ~30-byte answer costs well over 100 bytes in memory.
  EXPECT_GT(st.bytes / st.entries, 150u);
}

TEST_F(CacheTest, HotNamesSurviveOneHitFlood) {
  reset({.max_bytes = 256 << 10, .shards = 1});
  for (int i = 0; i < 50; ++i)
    ASSERT_EQ(put_a(nm("hot", i, ".example"), 3600), InsertOutcome::Cached);
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 50; i += 5)
      get(nm("hot", i + round % 5, ".example"));
    for (int j = 0; j < 50; ++j)
      put_a(nm("x", round * 50 + j, ".flood"), 3600);
  }
  for (int i = 0; i < 50; ++i)
    EXPECT_TRUE(get(nm("hot", i, ".example"))) << i;
}

TEST_F(CacheTest, SnapshotListsEntriesWithRemainingTtls) {
  ASSERT_EQ(put_a("a.example.com", 300), InsertOutcome::Cached);
  ASSERT_EQ(put_a("b.example.com", 100), InsertOutcome::Cached);
  clock_.advance(Seconds{40});
  auto entries = cache_->snapshot();
  ASSERT_EQ(entries.size(), 2u);
  std::sort(entries.begin(), entries.end(),
            [](const auto& x, const auto& y) { return x->qname() < y->qname(); });
  EXPECT_EQ(entries[0]->qname(), N("a.example.com"));
  EXPECT_EQ(entries[0]->remaining_ttl(0, clock_.now()), 260u);
  EXPECT_EQ(entries[1]->remaining_ttl(0, clock_.now()), 60u);
  EXPECT_EQ(decode(entries[1]->to_wire(clock_.now())).answer.at(0).ttl, 60u);
}

// The periodic save's snapshot, a few slots per lock: the same entries as snapshot(), across
// evictions and removals that leave empty slots behind, whatever the step.
TEST_F(CacheTest, ASnapshotInStepsListsTheSameEntries) {
  reset({.max_bytes = 64 << 10, .shards = 2});
  for (int i = 0; i < 400; ++i)
    put_a(nm("host", i, ".example.org"), 3600);  // more than fit: evictions free slots
  cache_->flush_name(N("host399.example.org"));
  auto sorted = [](std::vector<std::shared_ptr<const Entry>> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto whole = sorted(cache_->snapshot());
  ASSERT_GT(whole.size(), 10u);
  ASSERT_LT(whole.size(), 399u);
  for (const std::size_t step : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1024}})
    EXPECT_EQ(sorted(cache_->snapshot_in_steps(step)), whole) << "step " << step;
}

TEST_F(CacheTest, LookupAndRenderOfAHitDoNotAllocate) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(CNAME("www.example.com", 3600, "cdn.example.net"));
  m.answer.push_back(A("cdn.example.net", 300));
  ASSERT_EQ(put(m, key("www.example.com")), InsertOutcome::Cached);
  const CacheKey k = key("www.example.com");
  const Packet q(query("WWW.example.COM"));
  std::vector<uint8_t> buf(512);
  clock_.advance(Seconds{280});  // inside the prefetch window too
  const long before = testing::allocation_count();
  for (int i = 0; i < 100; ++i) {
    const Hit hit = cache_->lookup(k, clock_.now());
    wire::WireWriter w(buf, 512);
    ASSERT_TRUE(render(hit, {.id = 1, .question = q.question()}, clock_.now(), w, 11).ok);
  }
  EXPECT_EQ(testing::allocation_count() - before, 0);
  // The counter does count: an insert allocates (the entry, its blob, its record table).
  ASSERT_EQ(put(m, key("www.example.com")), InsertOutcome::Cached);
  EXPECT_GT(testing::allocation_count() - before, 0);
}

TEST_F(CacheTest, HitStaysValidAfterEviction) {
  ASSERT_EQ(put_a("www.example.com", 300), InsertOutcome::Cached);
  const Hit hit = get("www.example.com");
  cache_->flush_all();
  EXPECT_EQ(hit.entry->qname(), N("www.example.com"));
}

TEST_F(CacheTest, ConcurrentLookupsAndInsertsAreSafe) {
  for (int i = 0; i < 100; ++i)
    put_a(nm("n", i, ".example"), 300);
  const Time now = clock_.now();
  auto reader = [&] {
    for (int r = 0; r < 2000; ++r) {
      const Hit h = cache_->lookup(key(nm("n", r % 100, ".example")), now);
      if (h) {
        EXPECT_EQ(h.entry->ttl(), 300u);
      }
    }
  };
  std::thread t1(reader), t2(reader);
  for (int r = 0; r < 500; ++r) {
    OwnedMessage m = response(nm("n", r % 100, ".example"));
    m.answer.push_back(A(nm("n", r % 100, ".example"), 300));
    const Packet p(m);
    cache_->insert(key(nm("n", r % 100, ".example")), p.msg, now);
  }
  t1.join();
  t2.join();
  EXPECT_EQ(cache_->stats().entries, 100u);
}

// The lookup counters live in per-thread slots: what each thread counts must add up exactly,
// also with more threads than slots (two threads then share one), and stats() sees the sum.
TEST_F(CacheTest, CountersFromManyThreadsAddUpExactly) {
  for (int i = 0; i < 50; ++i)
    put_a(nm("n", i, ".example"), 60);
  constexpr int kThreads = static_cast<int>(base::kCounterSlots) + 4;
  constexpr int kRounds = 300;
  const Time fresh = clock_.now();
  const Time stale = clock_.now() + Seconds{61};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        // One fresh hit, one miss and (at a later time: stale) one stale hit per round.
        EXPECT_TRUE(cache_->lookup(key(nm("n", (t + r) % 50, ".example")), fresh));
        EXPECT_FALSE(cache_->lookup(key(nm("absent", r, ".example")), fresh));
        EXPECT_TRUE(cache_->lookup(key(nm("n", r % 50, ".example")), stale).stale());
      }
    });
  }
  for (auto& th : threads)
    th.join();
  const CacheStats st = cache_->stats();
  EXPECT_EQ(st.hits, uint64_t{kThreads} * kRounds);
  EXPECT_EQ(st.misses, uint64_t{kThreads} * kRounds);
  EXPECT_EQ(st.stale_hits, uint64_t{kThreads} * kRounds);
  // A second cache counts from zero: the slots belong to the cache, not to the thread.
  reset(settings_);
  get("www.example.com");
  EXPECT_EQ(cache_->stats().misses, 1u);
  EXPECT_EQ(cache_->stats().hits, 0u);
}

}  // namespace
}  // namespace hg::cache
