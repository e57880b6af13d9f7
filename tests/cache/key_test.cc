#include "cache/key.h"

#include <gtest/gtest.h>

#include "cache_test_util.h"

namespace hg::cache {
namespace {

using namespace testing;

TEST(CacheKey, IgnoresQnameLetterCase) {
  const CacheKey a = key("WwW.ExAmPlE.cOm");
  const CacheKey b = key("www.example.com");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_TRUE(a.qname.identical(N("www.example.com")));
}

TEST(CacheKey, DistinguishesTypeClassDoAndCd) {
  const CacheKey base = CacheKey::make(N("example.com"), RRType::A, 1, false, false);
  const CacheKey others[] = {
      CacheKey::make(N("example.com"), RRType::AAAA, 1, false, false),
      CacheKey::make(N("example.com"), RRType::A, 3, false, false),
      CacheKey::make(N("example.com"), RRType::A, 1, true, false),
      CacheKey::make(N("example.com"), RRType::A, 1, false, true),
      CacheKey::make(N("example.net"), RRType::A, 1, false, false),
  };
  for (const CacheKey& k : others) {
    EXPECT_FALSE(k == base);
    EXPECT_NE(k.hash, base.hash);
  }
}

TEST(CacheKey, FromQueryIgnoresCookiesAndPayloadSize) {
  OwnedMessage plain = query("www.example.com", RRType::AAAA, /*edns=*/true);
  OwnedMessage cookie = query("WWW.example.com", RRType::AAAA, /*edns=*/true);
  cookie.edns->udp_size = 4096;
  cookie.edns->options.push_back({wire::edns_option::Cookie, {1, 2, 3, 4, 5, 6, 7, 8}});
  const Packet a(plain), b(cookie);
  EXPECT_EQ(CacheKey::from_query(a.msg), CacheKey::from_query(b.msg));
}

TEST(CacheKey, FromQueryTakesDoFromOptAndCdFromHeader) {
  OwnedMessage q = query("example.com", RRType::A, /*edns=*/true, /*dnssec_ok=*/true);
  q.header.set(wire::flag::CD, true);
  const Packet p(q);
  const CacheKey k = CacheKey::from_query(p.msg);
  EXPECT_TRUE(k.dnssec_ok);
  EXPECT_TRUE(k.checking_disabled);
  const Packet none(query("example.com"));
  EXPECT_FALSE(CacheKey::from_query(none.msg).dnssec_ok);
}

TEST(WireAtOrBelow, MatchesOnLabelBoundariesOnly) {
  const Name zone = N("example.com");
  EXPECT_TRUE(wire_at_or_below(N("example.com").wire(), zone.wire()));
  EXPECT_TRUE(wire_at_or_below(N("a.b.example.com").wire(), zone.wire()));
  EXPECT_FALSE(wire_at_or_below(N("badexample.com").wire(), zone.wire()));
  EXPECT_FALSE(wire_at_or_below(N("com").wire(), zone.wire()));
  EXPECT_TRUE(wire_at_or_below(N("anything.org").wire(), Name{}.wire()));
}

}  // namespace
}  // namespace hg::cache
