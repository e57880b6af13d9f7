// Fair shares of the in-flight table (resolver/query/inflight.h, fair_share.h): per-source
// shares, the per-zone cap of failing zones with its decay and bound, the source and zone
// tags, and the --client-rate token bucket. Time is passed in (an injected clock): no sleeps.
#include "resolver/query/fair_share.h"
#include "resolver/query/inflight.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>

namespace hg::resolver {
namespace {

struct W {
  MonoTime deadline{};
  int id = 0;
};
using Table = InflightTable<std::string, std::hash<std::string>, W>;
const MonoTime t0{Millis{1000}};
constexpr uint64_t kA = 11, kB = 22;          // sources
constexpr uint64_t kDead = 101, kLive = 202;  // zones

std::string name(int i) {
  return "n" + std::to_string(i);
}

TEST(FairShares, ASourceGetsItsShareOfNewEntriesAndTheOthersTheRest) {
  Table t(InflightSettings{.max_entries = 16, .source_share = 4});
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(t.join(name(i), W{}, t0, 0, {.source = kA}), JoinOutcome::Created);
  EXPECT_EQ(t.join("over", W{}, t0, 0, {.source = kA}), JoinOutcome::SourceShareFull);
  EXPECT_EQ(t.source_entries(kA), 4u);
  // Joining an entry (its own or another's) is not creating one: no share used.
  EXPECT_EQ(t.join(name(0), W{}, t0, 0, {.source = kA}), JoinOutcome::Joined);
  EXPECT_EQ(t.join(name(1), W{}, t0, 0, {.source = kB}), JoinOutcome::Joined);
  EXPECT_EQ(t.source_entries(kB), 0u);
  // Another source, and queries with no source (tests, prefetches), are not held back.
  for (int i = 10; i < 14; ++i)
    EXPECT_EQ(t.join(name(i), W{}, t0, 0, {.source = kB}), JoinOutcome::Created);
  EXPECT_EQ(t.join("nosource", W{}, t0, 0, {}), JoinOutcome::Created);
  EXPECT_TRUE(t.start_background("prefetch", t0));
  EXPECT_EQ(t.sources(), 2u);
  // Completing one of A's entries gives A one new name again.
  EXPECT_EQ(t.complete(name(0)).size(), 2u);
  EXPECT_EQ(t.source_entries(kA), 3u);
  EXPECT_EQ(t.join("again", W{}, t0, 0, {.source = kA}), JoinOutcome::Created);
  EXPECT_EQ(t.join("over", W{}, t0, 0, {.source = kA}), JoinOutcome::SourceShareFull);
}

TEST(FairShares, CountsReturnToZeroAfterEveryEntryCompletes) {
  Table t(InflightSettings{.max_entries = 64, .source_share = 8});
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(t.join(name(i), W{}, t0, 0, {.source = kA, .zone = kDead}), JoinOutcome::Created);
      ASSERT_EQ(t.join(name(i), W{}, t0, 0, {.source = kB, .zone = kDead}), JoinOutcome::Joined);
    }
    ASSERT_TRUE(t.start_background("bg", t0, 0, kLive));
    EXPECT_EQ(t.source_entries(kA), 8u);
    EXPECT_EQ(t.zone_entries(kDead), 8u);
    EXPECT_EQ(t.zone_entries(kLive), 1u);
    for (int i = 0; i < 8; ++i)
      t.complete(name(i), round == 0 ? Completion::Other : Completion::Answered, t0);
    t.complete("bg");
    // Completing twice, or a key never seen, releases nothing more: nothing goes below zero.
    t.complete(name(0));
    t.complete("never");
    EXPECT_EQ(t.source_entries(kA), 0u);
    EXPECT_EQ(t.source_entries(kB), 0u);
    EXPECT_EQ(t.zone_entries(kDead), 0u);
    EXPECT_EQ(t.sources(), 0u) << "a source with nothing in flight leaves the map";
    EXPECT_EQ(t.zones(), 0u);
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.waiters(), 0u);
  }
}

TEST(FairShares, ShareOffOrAsLargeAsTheTableCountsNothing) {
  for (std::size_t share : {std::size_t{0}, std::size_t{8}}) {
    Table t(InflightSettings{.max_entries = 8, .source_share = share});
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(t.join(name(i), W{}, t0, 0, {.source = kA}), JoinOutcome::Created);
    EXPECT_EQ(t.join("full", W{}, t0, 0, {.source = kA}), JoinOutcome::TableFull);
    EXPECT_EQ(t.sources(), 0u);
  }
}

// Times out `n` new entries of `zone`, one after the other, at `now`.
void time_out(Table& t, uint64_t zone, int n, MonoTime now, int& serial) {
  for (int i = 0; i < n; ++i) {
    const std::string k = "t" + std::to_string(serial++);
    ASSERT_EQ(t.join(k, W{}, now, 0, {.zone = zone}), JoinOutcome::Created);
    t.complete(k, Completion::TimedOut, now);
  }
}

TEST(FairShares, AZoneThatKeepsTimingOutIsCappedAndOthersAreNot) {
  Table t(InflightSettings{.max_entries = 64, .zone_cap = 3, .zone_fail_after = 4});
  int serial = 0;
  time_out(t, kDead, 3, t0, serial);
  // Three timeouts: not failing yet, so more than the cap may be in flight.
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(t.join(name(i), W{}, t0, 0, {.zone = kDead}), JoinOutcome::Created);
  for (int i = 0; i < 4; ++i)
    t.complete(name(i), Completion::Other, t0);  // a SERVFAIL says nothing of the streak
  time_out(t, kDead, 1, t0, serial);
  EXPECT_EQ(t.failing_zones(t0), 1u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(t.join(name(i), W{}, t0, 0, {.zone = kDead}), JoinOutcome::Created);
  EXPECT_EQ(t.join("capped", W{}, t0, 0, {.zone = kDead}), JoinOutcome::ZoneCapped);
  EXPECT_FALSE(t.start_background("capped", t0, 0, kDead)) << "no prefetch beyond the cap";
  EXPECT_EQ(t.join(name(0), W{}, t0, 0, {.zone = kDead}), JoinOutcome::Joined);
  // Other zones, and names with no zone, are not capped.
  for (int i = 10; i < 20; ++i)
    EXPECT_EQ(t.join(name(i), W{}, t0, 0, {.zone = kLive}), JoinOutcome::Created);
  EXPECT_EQ(t.join("rootish", W{}, t0, 0, {}), JoinOutcome::Created);
  // One of the capped zone's queries ends: one more may start.
  t.complete(name(0), Completion::TimedOut, t0);
  EXPECT_EQ(t.join("next", W{}, t0, 0, {.zone = kDead}), JoinOutcome::Created);
  EXPECT_EQ(t.join("capped", W{}, t0, 0, {.zone = kDead}), JoinOutcome::ZoneCapped);
}

TEST(FairShares, AZoneThatAnswersAgainIsUncappedAtOnce) {
  Table t(InflightSettings{.max_entries = 64, .zone_cap = 2, .zone_fail_after = 2});
  int serial = 0;
  time_out(t, kDead, 2, t0, serial);
  ASSERT_EQ(t.join("a", W{}, t0, 0, {.zone = kDead}), JoinOutcome::Created);
  ASSERT_EQ(t.join("b", W{}, t0, 0, {.zone = kDead}), JoinOutcome::Created);
  ASSERT_EQ(t.join("c", W{}, t0, 0, {.zone = kDead}), JoinOutcome::ZoneCapped);
  t.complete("a", Completion::Answered, t0);
  EXPECT_EQ(t.failing_zones(t0), 0u);
  EXPECT_EQ(t.zone_streaks(), 0u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(t.join(name(i), W{}, t0, 0, {.zone = kDead}), JoinOutcome::Created);
}

TEST(FairShares, AStreakWithNoNewTimeoutIsForgotten) {
  Table t(InflightSettings{
      .max_entries = 64, .zone_cap = 1, .zone_fail_after = 2, .zone_fail_memory = Millis{5000}});
  int serial = 0;
  time_out(t, kDead, 2, t0, serial);
  ASSERT_EQ(t.join("a", W{}, t0, 0, {.zone = kDead}), JoinOutcome::Created);
  const MonoTime t1 = t0 + Millis{4999};
  EXPECT_EQ(t.join("b", W{}, t1, 0, {.zone = kDead}), JoinOutcome::ZoneCapped);
  const MonoTime t2 = t0 + Millis{5000};
  EXPECT_EQ(t.failing_zones(t2), 0u);
  EXPECT_EQ(t.join("b", W{}, t2, 0, {.zone = kDead}), JoinOutcome::Created);
  // One timeout after the pause starts a new streak: not failing again at once.
  t.complete("a", Completion::TimedOut, t2);
  EXPECT_EQ(t.failing_zones(t2), 0u);
  EXPECT_EQ(t.join("c", W{}, t2, 0, {.zone = kDead}), JoinOutcome::Created);
}

TEST(FairShares, AFloodOfDistinctFailingZonesCannotGrowTheStreaksPastTheBound) {
  Table t(InflightSettings{
      .max_entries = 64, .zone_cap = 1, .zone_fail_after = 2, .max_failing_zones = 8});
  int serial = 0;
  MonoTime now = t0;
  for (uint64_t z = 1; z <= 1000; ++z) {
    time_out(t, z, 1, now, serial);
    ASSERT_LE(t.zone_streaks(), 8u);
    now += Millis{10};
  }
  EXPECT_EQ(t.zones(), 0u);
  // Zones already failing stay capped while the flood of one-off zones goes on.
  Table u(InflightSettings{
      .max_entries = 64, .zone_cap = 1, .zone_fail_after = 2, .max_failing_zones = 4});
  time_out(u, kDead, 2, t0, serial);
  for (uint64_t z = 1; z <= 100; ++z)
    time_out(u, 1000 + z, 1, t0 + Millis{static_cast<int64_t>(z) * 100}, serial);
  ASSERT_LE(u.zone_streaks(), 4u);
}

TEST(FairShares, SourcesAreAggregatedToSlash24AndSlash56AndLoopbackPerAddress) {
  auto v4 = [](const char* ip) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &sin.sin_addr);
    return client_source(reinterpret_cast<const sockaddr*>(&sin));
  };
  auto v6 = [](const char* ip) {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, ip, &sin6.sin6_addr);
    return client_source(reinterpret_cast<const sockaddr*>(&sin6));
  };
  EXPECT_NE(v4("192.0.2.1"), 0u);
  EXPECT_EQ(v4("192.0.2.1"), v4("192.0.2.254"));
  EXPECT_NE(v4("192.0.2.1"), v4("192.0.3.1"));
  EXPECT_NE(v4("127.0.0.2"), v4("127.0.0.3"));
  EXPECT_EQ(v6("::ffff:192.0.2.7"), v4("192.0.2.9"));
  EXPECT_EQ(v6("2001:db8:0:ab00::1"), v6("2001:db8:0:abff:ffff::2"));
  EXPECT_NE(v6("2001:db8:0:ab00::1"), v6("2001:db8:0:ac00::1"));
  EXPECT_NE(v6("::1"), 0u);
  EXPECT_NE(v6("::1"), v4("127.0.0.1"));
  EXPECT_NE(v6("::"), v6("::1"));
  EXPECT_EQ(client_source(nullptr), 0u);
  sockaddr unix_peer{};
  unix_peer.sa_family = AF_UNIX;
  EXPECT_EQ(client_source(&unix_peer), 0u);
}

TEST(FairShares, AZoneIsTheNameWithoutItsFirstLabel) {
  auto tag = [](const char* n) { return zone_tag(*wire::Name::from_text(n)); };
  EXPECT_NE(tag("a.example.com"), 0u);
  EXPECT_EQ(tag("a.example.com"), tag("x7f3q.example.com"));
  EXPECT_NE(tag("a.example.com"), tag("a.example.net"));
  EXPECT_NE(tag("a.b.example.com"), tag("a.example.com"));
  EXPECT_EQ(tag("example.com"), tag("www.com"));  // both count under "com"
  EXPECT_EQ(tag("com"), 0u);
  EXPECT_EQ(tag("."), 0u);
}

TEST(FairShares, ClientRateAllowsABurstThenTheRateAndForgetsNothingElse) {
  ClientRateLimit off(0);
  EXPECT_FALSE(off.enabled());
  for (int i = 0; i < 100000; ++i)
    ASSERT_TRUE(off.allow(kA, t0));

  ClientRateLimit r(100);
  ASSERT_TRUE(r.enabled());
  int allowed = 0;
  for (int i = 0; i < 1000; ++i)
    allowed += r.allow(kA, t0) ? 1 : 0;
  EXPECT_EQ(allowed, 100) << "a burst of one second's worth";
  EXPECT_TRUE(r.allow(kB, t0)) << "another source has its own budget";
  EXPECT_FALSE(r.allow(kA, t0 + Millis{5}));
  EXPECT_TRUE(r.allow(kA, t0 + Millis{10})) << "one query per 10 ms comes back";
  // Refused queries use no budget: after a pause the source has its burst again.
  for (int i = 0; i < 1000; ++i)
    r.allow(kA, t0 + Millis{20});
  allowed = 0;
  for (int i = 0; i < 1000; ++i)
    allowed += r.allow(kA, t0 + Millis{1100}) ? 1 : 0;
  EXPECT_GE(allowed, 99);
  EXPECT_LE(allowed, 101);
}

}  // namespace
}  // namespace hg::resolver
