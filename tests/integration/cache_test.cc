// The cache seen from outside: TTLs counting down (dig), negative caching with the SOA,
// TTL-0 answers passed through, truncation then the TCP retry from the same entry, an
// upstream answer to the wrong question discarded.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/integration/daemon.h"
#include "tests/integration/daemon_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "wire/edns.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::Transport;
using wire::RCode;
using wire::Section;
using Clock = std::chrono::steady_clock;

class CacheTest : public DaemonTest {};

// Three names cached at once and asked again until a second has passed: dig sees the TTL
// count down, each record counts down from its own TTL, and a cached NXDOMAIN's SOA counts
// down too. QueryEngineTest (HitCountsTtlDownWithTheClock,
// NegativeAnswerExpiresAtTheSoaMinimumWhenLower) holds the arithmetic on virtual time.
TEST_F(CacheTest, DigSeesTtlsCountDownForEachRecordAndForANegativeAnswer) {
  upstream_.on("countdown.test", FakeReply::records({FakeRecord::a("", 3, "192.0.2.1")}));
  upstream_.on("two-ttls.test", FakeReply::records({FakeRecord::a("", 3, "192.0.2.1"),
                                                    FakeRecord::a("", 60, "192.0.2.2")}));
  upstream_.on("gone.neg.test", FakeReply::nxdomain(FakeRecord::soa("neg.test", 3, 3)));
  start();
  // countdown.test last: once its TTL has counted down, the other two have too.
  ASSERT_TRUE(udp_query(port(), build_query({.name = "two-ttls.test"})));
  auto first = dig(port(), "gone.neg.test A");
  EXPECT_EQ(first.status(), "NXDOMAIN") << first.output;
  ASSERT_EQ(first.ttls("AUTHORITY"), std::vector<uint32_t>{3}) << first.output;
  auto miss = dig(port(), "countdown.test A");
  EXPECT_EQ(miss.status(), "NOERROR") << miss.output;
  ASSERT_EQ(miss.ttls(), std::vector<uint32_t>{3}) << miss.output;

  // Asked again until the TTL has counted down (hits, far from the prefetch window).
  DigResult hit;
  EXPECT_TRUE(eventually(
      [&] {
        hit = dig(port(), "countdown.test A");
        return hit.ttls().size() == 1 && hit.ttls()[0] <= 2;
      },
      Millis{5000}))
      << "within a few seconds the TTL must have counted down\n"
      << hit.output;
  ASSERT_EQ(hit.ttls().size(), 1u) << hit.output;
  EXPECT_GE(hit.ttls()[0], 1u);

  // A second has passed for the other two as well.
  auto a = udp_query(port(), build_query({.name = "two-ttls.test"}));
  ASSERT_TRUE(a);
  ASSERT_EQ(a->ttls().size(), 2u);
  const auto ttls = a->ttls();
  // RFC 2181 5.2 wants one TTL per RRset; the cache either keeps each record's or clamps to
  // the lowest — either way both have counted down.
  EXPECT_LE(ttls[0], 2u);
  EXPECT_LE(ttls[1], 59u);

  auto second = dig(port(), "gone.neg.test A");
  EXPECT_EQ(second.status(), "NXDOMAIN") << second.output;
  ASSERT_EQ(second.ttls("AUTHORITY").size(), 1u) << second.output;
  EXPECT_LE(second.ttls("AUTHORITY")[0], 2u) << second.output;

  EXPECT_EQ(upstream_.queries("countdown.test"), 1u);
  EXPECT_EQ(upstream_.queries("two-ttls.test"), 1u);
  EXPECT_EQ(upstream_.queries("gone.neg.test"), 1u);
}

TEST_F(CacheTest, TtlZeroAnswerIsPassedThroughAndNotCached) {
  upstream_.on("zero.test", FakeReply::records({FakeRecord::a("", 0, "192.0.2.9")}));
  start();
  for (int i = 0; i < 2; ++i) {
    auto a = udp_query(port(), build_query({.name = "zero.test"}));
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), RCode::NoError);
    EXPECT_EQ(a->ttls(), std::vector<uint32_t>{0});
  }
  EXPECT_EQ(upstream_.queries("zero.test"), 2u);
}

// 40 A records: about 700 bytes, over the 512 a client without EDNS takes, within the 1232
// the daemon takes from upstream over UDP.
std::vector<FakeRecord> forty_a_records() {
  std::vector<FakeRecord> rrs;
  for (int i = 0; i < 40; ++i)
    rrs.push_back(FakeRecord::a("", 300, "192.0.2." + std::to_string(i + 1)));
  return rrs;
}

TEST_F(CacheTest, TruncatedOverUdpThenFullOverTcpFromSameEntry) {
  upstream_.on("big.test", FakeReply::records(forty_a_records()));
  start();
  auto udp = udp_query(port(), build_query({.name = "big.test", .edns = false}));
  ASSERT_TRUE(udp);
  EXPECT_TRUE(udp->tc()) << udp->text();
  EXPECT_LE(udp->bytes.size(), 512u);
  auto tcp = tcp_query(port(), build_query({.name = "big.test", .edns = false}));
  ASSERT_TRUE(tcp);
  EXPECT_FALSE(tcp->tc());
  EXPECT_EQ(tcp->msg.answer.size(), 40u);
  EXPECT_EQ(upstream_.queries("big.test"), 1u) << "the TCP retry must hit the cached entry";
}

TEST_F(CacheTest, DigRetriesTruncatedAnswerOverTcp) {
  upstream_.on("big.test", FakeReply::records(forty_a_records()));
  start();
  auto r = dig(port(), "+noedns big.test A");
  EXPECT_TRUE(r.contains("Truncated, retrying in TCP mode")) << r.output;
  EXPECT_EQ(r.ttls().size(), 40u) << r.output;
  auto notcp = dig(port(), "+noedns +ignore big.test A");
  EXPECT_NE(notcp.flags().find("tc"), std::string::npos) << notcp.output;
  EXPECT_EQ(upstream_.queries("big.test"), 1u);
}

TEST_F(CacheTest, AnswerOverEdnsLimitIsTruncatedAndUpstreamTcpIsUsed) {
  // 100 records (~1.7 KB): the fake sets TC over UDP, so the daemon (c-ares) retries over TCP
  // upstream; the client's 1232-byte EDNS limit then truncates, and TCP gets everything.
  std::vector<FakeRecord> rrs;
  for (int i = 0; i < 100; ++i)
    rrs.push_back(FakeRecord::a("", 300, "198.51.100." + std::to_string(i + 1)));
  FakeReply reply = FakeReply::records(rrs);
  reply.truncate_udp = true;
  upstream_.on("huge.test", reply);
  start();
  auto udp = udp_query(port(), build_query({.name = "huge.test", .udp_size = 4096}));
  ASSERT_TRUE(udp);
  EXPECT_TRUE(udp->tc());
  EXPECT_LE(udp->bytes.size(), 1232u) << "never more than 1232 over UDP";
  ASSERT_TRUE(udp->msg.edns) << "OPT kept when truncating (RFC 6891 7)";
  auto tcp = tcp_query(port(), build_query({.name = "huge.test"}));
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->msg.answer.size(), 100u);
  EXPECT_EQ(upstream_.queries("huge.test", Transport::Udp), 1u);
  EXPECT_EQ(upstream_.queries("huge.test", Transport::Tcp), 1u);
}

TEST_F(CacheTest, WrongQuestionFromUpstreamIsDiscarded) {
  FakeReply reply = FakeReply::records({FakeRecord::a("", 300, "192.0.2.66")});
  reply.wrong_question = true;
  upstream_.on("spoofed.test", reply);
  start({"--upstream-timeout", "1000", "--client-timeout", "500"});
  const auto t0 = Clock::now();
  auto a = udp_query(port(), build_query({.name = "spoofed.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::ServFail) << a->text();
  EXPECT_TRUE(a->msg.answer.empty());
  EXPECT_EQ(a->ede(), wire::ede::NoReachableAuthority);
  EXPECT_LT(Clock::now() - t0, Millis{1800});
  // Not cached either: the next query does not return the spoofed record.
  auto again = udp_query(port(), build_query({.name = "spoofed.test"}));
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->msg.answer.empty()) << again->text();
}

TEST_F(CacheTest, TtlCapLowersCachedTtl) {
  upstream_.on("www.shop.test", FakeReply::records({FakeRecord::a("", 3600, "192.0.2.1")}));
  upstream_.on("www.other.test", FakeReply::records({FakeRecord::a("", 3600, "192.0.2.2")}));
  start({"--ttl-cap", "shop.test=2"});
  auto capped = udp_query(port(), build_query({.name = "www.shop.test"}));
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->ttls(), std::vector<uint32_t>{2}) << capped->text();
  auto other = udp_query(port(), build_query({.name = "www.other.test"}));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->ttls(), std::vector<uint32_t>{3600});
}

}  // namespace
}  // namespace hg::integration
