#include "cache/ttl_policy.h"

#include <gtest/gtest.h>

#include "cache_test_util.h"

namespace hg::cache {
namespace {

using namespace testing;

TEST(SanitizeTtl, TreatsHighBitAsZeroPerRfc2181) {
  EXPECT_EQ(sanitize_ttl(0x80000000u), 0u);
  EXPECT_EQ(sanitize_ttl(0xFFFFFFFFu), 0u);
  EXPECT_EQ(sanitize_ttl(0x7FFFFFFFu), 0x7FFFFFFFu);
}

TEST(PositiveTtl, ClampsAtBothEdges) {
  const TtlSettings s{.min_ttl = 30, .max_ttl = 3600};
  EXPECT_EQ(positive_ttl(29, s), 30u);
  EXPECT_EQ(positive_ttl(30, s), 30u);
  EXPECT_EQ(positive_ttl(31, s), 31u);
  EXPECT_EQ(positive_ttl(3599, s), 3599u);
  EXPECT_EQ(positive_ttl(3600, s), 3600u);
  EXPECT_EQ(positive_ttl(3601, s), 3600u);
  EXPECT_EQ(positive_ttl(0x7FFFFFFF, s), 3600u);
}

TEST(PositiveTtl, KeepsZeroEvenWithMinTtl) {
  const TtlSettings s{.min_ttl = 30};
  EXPECT_EQ(positive_ttl(0, s), 0u);
  EXPECT_EQ(positive_ttl(0x80000001u, s), 0u);  // high bit: zero, not raised
}

TEST(PositiveTtl, DefaultMaxIsSevenDays) {
  EXPECT_EQ(positive_ttl(30 * 86400, TtlSettings{}), 7u * 86400);
}

TEST(NegativeTtl, IsSoaTtlWhenBelowMinimum) {
  EXPECT_EQ(negative_ttl(60, 300, TtlSettings{}), 60u);
}

TEST(NegativeTtl, IsSoaMinimumWhenBelowSoaTtl) {
  EXPECT_EQ(negative_ttl(300, 60, TtlSettings{}), 60u);
}

TEST(NegativeTtl, ClampsToNegativeMaxTtl) {
  EXPECT_EQ(negative_ttl(86400, 86400, TtlSettings{}), 3600u);
  EXPECT_EQ(negative_ttl(86400, 86400, TtlSettings{.negative_max_ttl = 900}), 900u);
}

TEST(NegativeTtl, IgnoresMinTtlAndTreatsHighBitAsZero) {
  EXPECT_EQ(negative_ttl(5, 5, TtlSettings{.min_ttl = 60}), 5u);
  EXPECT_EQ(negative_ttl(0x80000000u, 300, TtlSettings{}), 0u);
}

TEST(TtlCaps, CapsZoneAndBelowButNotSiblingWithSameSuffix) {
  TtlCaps caps;
  caps.set(N("Example.COM"), 60);
  EXPECT_EQ(caps.cap_for(N("example.com")), 60u);
  EXPECT_EQ(caps.cap_for(N("www.EXAMPLE.com")), 60u);
  EXPECT_EQ(caps.cap_for(N("badexample.com")), std::nullopt);
  EXPECT_EQ(caps.cap_for(N("com")), std::nullopt);
}

TEST(TtlCaps, SmallestApplicableCapWins) {
  TtlCaps caps;
  caps.set(N("example.com"), 300);
  caps.set(N("shop.example.com"), 60);
  EXPECT_EQ(caps.cap_for(N("www.shop.example.com")), 60u);
  EXPECT_EQ(caps.cap_for(N("www.example.com")), 300u);
}

TEST(TtlCaps, ClearRemovesOnlyThatZone) {
  TtlCaps caps;
  EXPECT_TRUE(caps.empty());
  caps.set(N("example.com"), 60);
  caps.set(N("example.net"), 60);
  EXPECT_TRUE(caps.clear(N("example.com")));
  EXPECT_FALSE(caps.clear(N("example.com")));
  EXPECT_EQ(caps.cap_for(N("www.example.com")), std::nullopt);
  EXPECT_EQ(caps.cap_for(N("www.example.net")), 60u);
  caps.clear_all();
  EXPECT_TRUE(caps.empty());
}

TEST(TtlCaps, SetAgainReplacesTheCap) {
  TtlCaps caps;
  caps.set(N("example.com"), 60);
  caps.set(N("example.com"), 10);
  EXPECT_EQ(caps.cap_for(N("example.com")), 10u);
  EXPECT_EQ(caps.list().size(), 1u);
}

}  // namespace
}  // namespace hg::cache
