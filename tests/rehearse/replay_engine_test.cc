// ReplayEngine: coalescing, schedules with a switch time, negative answers, TTL recovery,
// warm start and calibration against the recorder's own upstream queries.
#include <gtest/gtest.h>

#include <random>

#include "tests/rehearse/replay_test_util.h"
#include "tests/wire/answer_cases.h"

namespace hg::rehearse::testing {
namespace {

ReplayConfig no_prefetch(int64_t rtt_ns = 20 * kMs) {
  ReplayConfig c;
  c.prefetch = false;
  c.upstream_rtt_ns = rtt_ns;
  return c;
}

ReplayConfig no_prefetch_measured() {
  ReplayConfig c;
  c.prefetch = false;
  return c;
}

TEST(ReplayEngine, QueriesDuringAnOutstandingMissAreCoalesced) {
  TraceBuilder t;
  // A miss at 0, three more before the 20 ms upstream answer lands, one after it.
  for (int64_t ms : {0, 5, 10, 19, 30})
    t.query(ms * kMs, "www.example.com");
  t.answer(1 * kMs, "www.example.com", 300);
  const ReplayResult r = t.run(no_prefetch());
  EXPECT_EQ(r.queries, 5u);
  EXPECT_EQ(r.before.upstream, 1u);
  EXPECT_EQ(r.before.coalesced, 3u);
  EXPECT_EQ(r.after.upstream, 1u);
  EXPECT_EQ(r.upstream_rtt_ns, 20 * kMs);
  EXPECT_FALSE(r.rtt_measured);
}

TEST(ReplayEngine, WithoutCoalescingEveryQueryBeforeTheAnswerWouldMiss) {
  // The same trace with a zero RTT: the answer is in the cache at once.
  TraceBuilder t;
  for (int64_t ms : {0, 5, 10, 19, 30})
    t.query(ms * kMs, "www.example.com");
  t.answer(1 * kMs, "www.example.com", 300);
  const ReplayResult r = t.run(no_prefetch(0));
  EXPECT_EQ(r.before.upstream, 1u);
  EXPECT_EQ(r.before.coalesced, 0u);
}

TEST(ReplayEngine, ScheduleWithATimeLowersTtlsFetchedFromThenOn) {
  // One query every 10 s for 3000 s at TTL 300; from +1000 s the zone's TTL is 60.
  TraceBuilder t;
  for (int64_t s = 0; s < 3000; s += 10) {
    t.query(s * kSec, "www.example.com");
    t.answer(s * kSec + kMs, "www.example.com", 300);
  }
  ReplayConfig c = no_prefetch();
  c.schedule.push_back(rule("example.com=60@+1000s"));
  const ReplayResult r = t.run(c);
  // A miss at s lands at s + 20 ms and lives TTL seconds; the schedule applies to fetches
  // asked from the switch on. The plain countdown, by hand:
  auto count = [](int64_t switch_s, uint32_t old_ttl, uint32_t new_ttl) {
    uint64_t n = 0;
    int64_t expires_ms = INT64_MIN;
    for (int64_t s = 0; s < 3000; s += 10) {
      const int64_t ms = s * 1000;
      if (ms < expires_ms) continue;
      ++n;
      const uint32_t ttl = ms >= switch_s * 1000 ? new_ttl : old_ttl;
      expires_ms = ms + 20 + int64_t{ttl} * 1000;
    }
    return n;
  };
  EXPECT_EQ(r.before.upstream, count(1'000'000, 300, 300));
  EXPECT_EQ(r.after.upstream, count(1000, 300, 60));
  // An entry fetched before the switch keeps its 300 s: after the switch at 1000 s the first
  // fetch at 60 s happens when that entry runs out, not at once.
  EXPECT_EQ(count(1'000'000, 300, 300), 10u);  // 0, 310, 620, ... 2790
  EXPECT_EQ(count(1000, 300, 60), 4u + 26u);   // 0..930 by 310; 1240..2990 by 70
  ASSERT_EQ(r.switch_ns.size(), 1u);
  EXPECT_EQ(r.switch_ns[0], kT0 + 1000 * kSec);
}

TEST(ReplayEngine, ScheduleAppliesToTheZoneAndBelowOnly) {
  TraceBuilder t;
  for (int64_t s = 0; s < 600; s += 10) {
    for (const char* n : {"a.example.com", "example.com", "badexample.com", "b.other.net"}) {
      t.query(s * kSec, n);
      t.answer(s * kSec + kMs, n, 600);
    }
  }
  ReplayConfig c = no_prefetch();
  c.schedule.push_back(rule("example.com=60"));
  const ReplayResult r = t.run(c);
  for (const char* n : {"a.example.com", "example.com"}) {
    ASSERT_NE(find(r, n), nullptr);
    EXPECT_EQ(find(r, n)->before.upstream, 1u) << n;
    EXPECT_EQ(find(r, n)->after.upstream, 9u) << n;  // 0, 70, 140, ... 560
  }
  for (const char* n : {"badexample.com", "b.other.net"}) {
    ASSERT_NE(find(r, n), nullptr);
    EXPECT_EQ(find(r, n)->after.upstream, 1u) << n;
  }
}

TEST(ReplayEngine, TtlCapAppliesToTheAfterRunOnly) {
  TraceBuilder t;
  for (int64_t s = 0; s < 600; s += 10) {
    t.query(s * kSec, "www.example.com");
    t.answer(s * kSec + kMs, "www.example.com", 600);
  }
  ReplayConfig c = no_prefetch();
  c.ttl_caps.emplace_back(N("example.com"), 100);
  const ReplayResult r = t.run(c);
  EXPECT_EQ(r.before.upstream, 1u);
  EXPECT_EQ(r.after.upstream, 6u);  // 0, 110, 220, 330, 440, 550
}

TEST(ReplayEngine, NegativeAnswersAreCachedForTheSoaMinimum) {
  // NXDOMAIN with SOA TTL 3600 and MINIMUM 300: cached 300 s (RFC 2308 §5).
  TraceBuilder t;
  for (int64_t s = 0; s < 1000; s += 100) {
    t.query(s * kSec, "gone.example.com");
    t.nxdomain(s * kSec + kMs, "gone.example.com", "example.com", 3600, 300);
  }
  ReplayConfig c = no_prefetch();
  c.schedule.push_back(rule("example.com=60"));
  const ReplayResult r = t.run(c);
  EXPECT_EQ(r.before.upstream, 3u);  // 0, 400 (300.02 has passed), 800 (700.02 has)
  EXPECT_EQ(r.after.upstream, 10u);  // the SOA at the apex gets 60 s: every query misses
}

TEST(ReplayEngine, CountedDownTtlsAreRecoveredToTheUpstreamTtl) {
  // A recorder with TTL 300 answered from its cache with counted-down TTLs; only the first
  // answer after each of its misses carries the full 300.
  TraceBuilder t;
  int64_t inserted = -1'000'000;
  for (int64_t s = 0; s < 1200; s += 7) {
    if (s >= inserted + 300) inserted = s;
    t.query(s * kSec, "www.example.com");
    t.answer(s * kSec + kMs, "www.example.com", static_cast<uint32_t>(300 - (s - inserted)));
  }
  const ReplayResult r = t.run(no_prefetch());
  // With the recorded (counted-down) TTLs the replay would miss far more often; recovered to
  // 300 it misses when the recorder did: 0, 301, 602, 903 (each first query ≥ 300.02 s on).
  EXPECT_EQ(r.before.upstream, 4u);
}

TEST(ReplayEngine, AWarmRecorderCacheIsSeededNotCountedAsAMiss) {
  // The recorder (RTT 30 ms, TTL 300) had the name cached before the trace began, with 100 s
  // left; its own upstream queries are in the trace (FORWARDER_*), and there is none for the
  // first client query.
  TraceBuilder t;
  t.forward(0, "other.example.com", 7);
  t.answer(30 * kMs, "other.example.com", 300, Side::Upstream, 7);
  int64_t expires_ms = 100'000;
  for (int64_t s = 0; s < 500; s += 10) {
    const int64_t ms = s * 1000;
    if (ms >= expires_ms) {
      expires_ms = ms + 30 + 300'000;
      t.forward(ms * kMs, "www.example.com", static_cast<uint16_t>(s));
      t.answer((ms + 30) * kMs, "www.example.com", 300, Side::Upstream, static_cast<uint16_t>(s));
    }
    t.query(ms * kMs, "www.example.com");
    t.answer((ms + 31) * kMs, "www.example.com", static_cast<uint32_t>((expires_ms - ms) / 1000));
  }
  const ReplayResult r = t.run(no_prefetch_measured());
  EXPECT_EQ(r.warm_entries, 1u);
  const NameReport* n = find(r, "www.example.com");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->recorded_upstream, 2u);  // at 100 s and 410 s
  EXPECT_EQ(n->before.upstream, 2u);    // the replay agrees: calibration error 0 %
  EXPECT_EQ(r.recorded_upstream, 3u);
  EXPECT_TRUE(r.rtt_measured);
  EXPECT_EQ(r.rtt_samples, 3u);
  EXPECT_EQ(r.upstream_rtt_ns, 30 * kMs);
}

TEST(ReplayEngine, TheDefaultRttIsTheMedianOfForwarderPairs) {
  TraceBuilder t;
  const int64_t rtts_ms[] = {10, 50, 30, 40, 20};
  for (int i = 0; i < 5; ++i) {
    const std::string name = cache::testing::nm("n", i, ".example.com");
    t.forward(i * kSec, name, static_cast<uint16_t>(i));
    t.answer(i * kSec + rtts_ms[i] * kMs, name, 60, Side::Upstream, static_cast<uint16_t>(i));
  }
  t.query(100 * kSec, "www.example.com").answer(100 * kSec + kMs, "www.example.com", 60);
  const ReplayResult r = t.run(no_prefetch_measured());
  EXPECT_TRUE(r.rtt_measured);
  EXPECT_EQ(r.upstream_rtt_ns, 30 * kMs);
  EXPECT_EQ(r.rtt_median_all_ns, 30 * kMs);
}

TEST(ReplayEngine, ATtlChangeUpstreamDuringTheTraceIsFollowed) {
  // The upstream answered with TTL 300 at first and 30 later (a new lifetime: an answer above
  // the countdown). A miss at 1200 s uses the answer recorded then, at its TTL of 30 s.
  TraceBuilder t;
  t.query(0, "www.example.com").answer(kMs, "www.example.com", 300);
  t.query(1200 * kSec, "www.example.com").answer(1200 * kSec + kMs, "www.example.com", 30);
  t.query(1220 * kSec, "www.example.com");
  t.query(1240 * kSec, "www.example.com");
  const ReplayResult r = t.run(no_prefetch());
  EXPECT_EQ(r.before.upstream, 3u);  // 0, 1200, and 1240 (1200.02 + 30 s has passed)
}

TEST(ReplayEngine, AMissIsAnsweredWithTheRecordedResponseNearestInTime) {
  // The name did not exist at 0 s (NXDOMAIN, negative TTL 60) and did at 100 s (TTL 600; that
  // answer's query is missing from the trace, as in a capture that lost it). The miss at
  // 130 s takes the answer recorded nearest to it, the one at 100 s: cached 600 s, so 200 s
  // and 260 s hit. Had it taken the NXDOMAIN (60 s), 200 s would miss again.
  TraceBuilder t;
  t.query(0, "flip.example.com").nxdomain(kMs, "flip.example.com", "example.com", 60, 60);
  t.answer(100 * kSec, "flip.example.com", 600);
  for (int64_t s : {130, 200, 260})
    t.query(s * kSec, "flip.example.com");
  const ReplayResult r = t.run(no_prefetch());
  EXPECT_EQ(r.before.upstream, 2u);
}

TEST(ReplayEngine, AQueryWithNoRecordedAnswerStillCountsAndIsReported) {
  TraceBuilder t;
  t.query(0, "lost.example.com").query(kSec, "lost.example.com");
  const ReplayResult r = t.run(no_prefetch());
  EXPECT_EQ(r.before.upstream, 2u);
  EXPECT_EQ(r.unanswered_misses, 2u);
}

TEST(ReplayEngine, UndecodableMessagesAreCountedAndSkipped) {
  TraceBuilder t;
  t.raw(Side::Client, Role::Query, 0, {1, 2, 3});
  t.query(kSec, "www.example.com").answer(kSec + kMs, "www.example.com", 60);
  const ReplayResult r = t.run(no_prefetch());
  EXPECT_EQ(r.undecodable, 1u);
  EXPECT_EQ(r.queries, 1u);
}

TEST(ReplayEngine, RecordedAnswersGetTheNormalizersVerdict) {
  // A recorded answer goes into the replay's caches through wire::AnswerNormalizer, as the
  // daemon's upstream answers do: one it takes is cached (three queries, one miss); one it
  // refuses is never cached (three misses); one the trace reader cannot parse never reaches
  // it (undecodable).
  for (const auto& c : wire::test::answer_cases()) {
    if (c.bytes.size() > 0xFFFF) continue;  // no trace record is that long
    SCOPED_TRACE(c.name);
    wire::Message m;
    const bool parses = m.parse(c.bytes, wire::ParseMode::Lenient).has_value();
    const std::string qname = parses ? m.questions().front().name.to_text() : "www.example.com";
    const wire::RRType qtype = parses ? m.questions().front().type : wire::RRType::A;
    TraceBuilder t;
    for (int64_t s : {0, 10, 20})
      t.query(s * kSec, qname, qtype);
    t.raw(Side::Client, Role::Response, kMs, c.bytes);
    const ReplayResult r = t.run(no_prefetch());
    EXPECT_EQ(r.queries, 3u);
    if (c.status == wire::NormalizeStatus::Ok) {
      EXPECT_EQ(r.before.upstream, 1u);
      EXPECT_EQ(r.after.upstream, 1u);
    } else {
      EXPECT_EQ(r.before.upstream, 3u);
      EXPECT_EQ(r.after.upstream, 3u);
      EXPECT_EQ(r.undecodable, parses ? 0u : 1u);
    }
  }
}

TEST(ReplayEngine, PrefetchIsReproducibleAndRefreshesHotNamesBeforeExpiry) {
  // A hot name (10 q/s) at TTL 60 for 600 s: with prefetch it never expires after the first
  // miss; each refresh is one upstream query, about one per TTL.
  TraceBuilder t;
  for (int64_t ms = 0; ms < 600'000; ms += 100) {
    t.query(ms * kMs, "hot.example.com");
    t.answer(ms * kMs + kMs, "hot.example.com", 60);
  }
  ReplayConfig c;
  c.upstream_rtt_ns = 20 * kMs;
  const ReplayResult r1 = t.run(c);
  const ReplayResult r2 = t.run(c);
  EXPECT_EQ(r1.before.upstream, r2.before.upstream);
  EXPECT_GE(r1.before.prefetches, 9u);
  EXPECT_EQ(r1.before.upstream - r1.before.prefetches, 1u);  // only the very first is a miss
}

TEST(ReplayEngine, BucketsAndPeaks) {
  TraceBuilder t;
  for (int64_t s = 0; s < 10; ++s) {
    t.query(s * kSec, "a.example.com");  // TTL 0: never cached, one upstream per query
    t.answer(s * kSec + kMs, "a.example.com", 0);
  }
  t.query(3 * kSec + 500 * kMs, "b.example.com").answer(3 * kSec + 501 * kMs, "b.example.com", 60);
  ReplayConfig c = no_prefetch();
  c.bucket_ns = kSec;
  const ReplayResult r = t.run(c);
  ASSERT_EQ(r.buckets_before.size(), 10u);
  EXPECT_EQ(r.buckets_before[3], 2u);
  EXPECT_EQ(r.before.peak_bucket, 2u);
  EXPECT_EQ(find(r, "a.example.com")->before.peak_bucket, 1u);
}

// The pipeline (a reading thread classifies events, this one replays them) must give exactly
// what feeding the engine one event at a time gives: the same questions in the same order,
// the same counts, buckets and peaks. The trace spans many batches and has every kind of
// event: client and FORWARDER pairs, counted-down answers, NXDOMAIN, undecodable messages,
// a few late queries, and prefetch on.
TEST(ReplayEngine, TheTwoThreadPipelineGivesTheSameFiguresAsOneThread) {
  TraceBuilder t;
  std::mt19937_64 rng(7);
  const double rates[] = {0.05, 0.5, 2, 8, 20};
  constexpr double kD = 1500;
  uint16_t id = 1;
  for (std::size_t i = 0; i < 40; ++i) {
    const std::string name = cache::testing::nm("p", static_cast<long>(i), ".example.com");
    std::exponential_distribution<double> gap(rates[i % std::size(rates)]);
    int64_t lifetime_start = -1;
    const uint32_t ttl = 30 + static_cast<uint32_t>(i) * 7;
    for (double s = gap(rng); s < kD; s += gap(rng)) {
      const auto ns = static_cast<int64_t>(s * 1e9);
      ++id;
      // A late query now and then: read after later ones, replayed in its place.
      t.query(ns - ((id % 97 == 0) ? 2 * kSec : 0), name, wire::RRType::A, id);
      if (i % 10 == 9) {
        t.nxdomain(ns + kMs, name, "example.com", 300, 60);
        continue;
      }
      // The recorder's cache: a new lifetime goes upstream, later answers count down.
      const int64_t age = lifetime_start < 0 ? -1 : (ns - lifetime_start) / kSec;
      if (age < 0 || age >= ttl) {
        lifetime_start = ns;
        t.forward(ns + kMs / 2, name, static_cast<uint16_t>(id ^ 0x5555));
        t.answer(ns + kMs, name, ttl, Side::Upstream, static_cast<uint16_t>(id ^ 0x5555),
                 static_cast<uint8_t>(1 + (ns / (600 * kSec)) % 3));
        t.answer(ns + 2 * kMs, name, ttl, Side::Client, id,
                 static_cast<uint8_t>(1 + (ns / (600 * kSec)) % 3));
      } else {
        t.answer(ns + kMs, name, ttl - static_cast<uint32_t>(age), Side::Client, id,
                 static_cast<uint8_t>(1 + (lifetime_start / (600 * kSec)) % 3));
      }
    }
  }
  for (int k = 0; k < 50; ++k)
    t.raw(Side::Client, Role::Query, k * 20 * kSec, {0x12, 0x34, 0x01});
  ASSERT_GT(t.size(), 20'000u);

  ReplayConfig c;
  c.schedule.push_back(rule("example.com=20@+10m"));
  c.ttl_caps.emplace_back(N("p3.example.com"), 10);
  const ReplayResult one = t.run(c);
  uint64_t batches = 0;
  const ReplayResult two = t.run_pipelined(c, &batches);
  EXPECT_GT(batches, 4u);

  EXPECT_EQ(one.queries, two.queries);
  EXPECT_GT(one.queries, 10'000u);
  EXPECT_EQ(one.responses, two.responses);
  EXPECT_EQ(one.recorded_upstream, two.recorded_upstream);
  EXPECT_EQ(one.undecodable, two.undecodable);
  EXPECT_EQ(one.undecodable, 50u);
  EXPECT_EQ(one.warm_entries, two.warm_entries);
  EXPECT_EQ(one.upstream_rtt_ns, two.upstream_rtt_ns);
  for (const auto& [a, b] : {std::pair{&one.before, &two.before}, {&one.after, &two.after}}) {
    EXPECT_EQ(a->upstream, b->upstream);
    EXPECT_EQ(a->prefetches, b->prefetches);
    EXPECT_EQ(a->coalesced, b->coalesced);
    EXPECT_EQ(a->peak_bucket, b->peak_bucket);
  }
  EXPECT_GT(one.after.upstream, one.before.upstream);
  EXPECT_GT(one.before.prefetches, 0u);
  EXPECT_EQ(one.buckets_before, two.buckets_before);
  EXPECT_EQ(one.buckets_after, two.buckets_after);
  ASSERT_EQ(one.names.size(), two.names.size());
  for (std::size_t i = 0; i < one.names.size(); ++i) {
    EXPECT_EQ(one.names[i].name, two.names[i].name);
    EXPECT_EQ(one.names[i].queries, two.names[i].queries);
    EXPECT_EQ(one.names[i].before.upstream, two.names[i].before.upstream);
    EXPECT_EQ(one.names[i].after.upstream, two.names[i].after.upstream);
    EXPECT_EQ(one.names[i].after.peak_bucket, two.names[i].after.peak_bucket);
  }
}

}  // namespace
}  // namespace hg::rehearse::testing
