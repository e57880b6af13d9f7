// The fleet's pure parts: the Redis value codec (untrusted input: every damage is a status),
// key and pattern formats, fleet messages, and the circuit breaker on a test clock.
#include <gtest/gtest.h>

#include "cache/key.h"
#include "resolver/fleet/redis_breaker.h"
#include "resolver/fleet/redis_value.h"
#include "tests/resolver/cached_answers.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using namespace fleet;
using wire::test::Bytes;
using wire::test::PacketBuilder;

TEST(RedisValue, RoundTripsTheMessageAndTheInsertTime) {
  const auto key = query_key("WWW.Example.com");
  const Bytes msg = a_response("www.example.com");
  const auto v = encode_value(key, 1'700'000'123'456, msg);
  wire::Message parsed;
  const auto d = decode_value(v, key, parsed);
  ASSERT_EQ(d.status, ValueStatus::Ok);
  EXPECT_EQ(d.inserted_ms, 1'700'000'123'456);
  EXPECT_EQ(Bytes(d.message.begin(), d.message.end()), msg);
  EXPECT_EQ(parsed.records().size(), 1u);
}

TEST(RedisValue, EveryFlippedByteIsDetected) {
  const auto key = query_key("www.example.com");
  const auto v = encode_value(key, 1'700'000'000'000, a_response("www.example.com"));
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto bad = v;
    bad[i] ^= 0x01;
    wire::Message parsed;
    EXPECT_NE(decode_value(bad, key, parsed).status, ValueStatus::Ok) << "byte " << i;
  }
}

TEST(RedisValue, TruncationsAndExtensionsAreCorrupt) {
  const auto key = query_key("www.example.com");
  const auto v = encode_value(key, 1, a_response("www.example.com"));
  for (std::size_t n = 0; n < v.size(); ++n) {
    wire::Message parsed;
    const auto s = decode_value(std::span(v).first(n), key, parsed).status;
    EXPECT_TRUE(s == ValueStatus::Corrupt || s == ValueStatus::Foreign) << n;
  }
  auto longer = v;
  longer.push_back(0);
  wire::Message parsed;
  EXPECT_EQ(decode_value(longer, key, parsed).status, ValueStatus::Corrupt);
}

TEST(RedisValue, ForeignVersionAndKeyMismatchAreTold) {
  const auto key = query_key("www.example.com");
  wire::Message parsed;
  const std::string garbage = "some other program's value";
  EXPECT_EQ(
      decode_value(std::span(reinterpret_cast<const uint8_t*>(garbage.data()), garbage.size()), key,
                   parsed)
          .status,
      ValueStatus::Foreign);
  auto v = encode_value(key, 1, a_response("www.example.com"));
  EXPECT_EQ(decode_value(v, query_key("www.example.org"), parsed).status, ValueStatus::KeyMismatch);
  EXPECT_EQ(decode_value(v, query_key("www.example.com", wire::RRType::AAAA), parsed).status,
            ValueStatus::KeyMismatch);
  EXPECT_EQ(decode_value(v, query_key("www.example.com", wire::RRType::A, true), parsed).status,
            ValueStatus::KeyMismatch);
  v[4] = 2;  // version
  EXPECT_EQ(decode_value(v, key, parsed).status, ValueStatus::BadVersion);
}

TEST(RedisValue, AMessageForAnotherQuestionIsRefused) {
  const auto key = query_key("www.example.com");
  // A valid value whose embedded answer asks about another name.
  const auto v = encode_value(key, 1, a_response("evil.example.com"));
  wire::Message parsed;
  EXPECT_EQ(decode_value(v, key, parsed).status, ValueStatus::BadMessage);
  const Bytes junk{1, 2, 3};
  EXPECT_EQ(decode_value(encode_value(key, 1, junk), key, parsed).status, ValueStatus::BadMessage);
}

TEST(RedisValue, AgeIsClampedBothWays) {
  EXPECT_EQ(value_age_ms(1000, 500, 10'000), 0);  // a peer's clock ahead of ours
  EXPECT_EQ(value_age_ms(1000, 3500, 10'000), 2500);
  EXPECT_EQ(value_age_ms(1000, 1'000'000, 10'000), 10'000);
  EXPECT_EQ(value_age_ms(INT64_MIN, INT64_MAX, 10'000), 10'000);
}

TEST(RedisValue, KeysAndPatterns) {
  const auto key = query_key("WWW.Example.COM", wire::RRType::AAAA, true, true);
  EXPECT_EQ(cache_key("hg:", key), "hg:c:www.example.com. 28 1 3");
  EXPECT_EQ(lock_key("hg:", key), "hg:l:www.example.com. 28 1 3");
  EXPECT_EQ(done_channel("x", key), "xd:www.example.com. 28 1 3");
  auto spaced = wire::Name::from_text("a\\032b.example.");
  ASSERT_TRUE(spaced);
  const auto k2 = cache::CacheKey::make(*spaced, wire::RRType::A, 1, false, false);
  EXPECT_EQ(cache_key("hg:", k2), "hg:c:a\\032b.example. 1 1 0");
  auto n = name_of_cache_key("hg:", cache_key("hg:", k2));
  ASSERT_TRUE(n);
  EXPECT_TRUE(*n == *spaced);
  EXPECT_FALSE(name_of_cache_key("hg:", "other:c:www. 1 1 0"));
  auto zone = wire::Name::from_text("example.com");
  EXPECT_EQ(scan_pattern("hg:", &*zone, false), "hg:c:example.com. *");
  EXPECT_EQ(scan_pattern("hg:", &*zone, true), "hg:c:*example.com. *");
  EXPECT_EQ(scan_pattern("h*g:", nullptr, false), "h\\*g:c:*");
}

TEST(FleetMessage, RoundTripsAndRejectsJunk) {
  FleetMessage m;
  m.op = FleetOp::TtlCap;
  m.sender = "abc";
  m.name = *wire::Name::from_text("Example.com");
  m.seconds = 60;
  const auto text = encode_fleet_message(m);
  EXPECT_EQ(text, "v1 abc ttl-cap example.com. 60");
  auto back = decode_fleet_message(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->op, FleetOp::TtlCap);
  EXPECT_EQ(back->seconds, 60u);
  for (std::string_view bad :
       {"", "v1", "v2 abc flush-all", "v1 abc flush", "v1 abc flush-all extra", "v1 abc ttl-cap x.",
        "v1 abc ttl-cap x. 99999999999", "v1 abc ttl-cap x. -1", "v1 abc reboot", "v1  flush-all"})
    EXPECT_FALSE(decode_fleet_message(bad)) << bad;
  EXPECT_TRUE(decode_fleet_message("v1 abc flush-all"));
  EXPECT_TRUE(decode_fleet_message("v1 abc flush-zone example.com."));
}

TEST(CircuitBreaker, OpensAfterThresholdProbesAndBacksOff) {
  CircuitBreaker b({.threshold = 3, .cooldown = Millis{1000}, .max_cooldown = Millis{3000}});
  MonoTime t{Millis{1'000'000}};
  using S = CircuitBreaker::State;
  EXPECT_TRUE(b.allow(t));
  EXPECT_FALSE(b.failure(t));
  EXPECT_FALSE(b.failure(t));
  b.success();  // a success resets the count
  EXPECT_FALSE(b.failure(t));
  EXPECT_FALSE(b.failure(t));
  EXPECT_TRUE(b.failure(t));
  EXPECT_EQ(b.state(), S::Open);
  EXPECT_FALSE(b.allow(t + Millis{999}));
  // Cool-down over: exactly one probe.
  EXPECT_TRUE(b.allow(t + Millis{1000}));
  EXPECT_EQ(b.state(), S::HalfOpen);
  EXPECT_FALSE(b.allow(t + Millis{1000}));
  // The probe fails: open again, twice as long.
  t += Millis{1000};
  EXPECT_TRUE(b.failure(t));
  EXPECT_EQ(b.cooldown(), Millis{2000});
  EXPECT_FALSE(b.allow(t + Millis{1999}));
  EXPECT_TRUE(b.allow(t + Millis{2000}));
  t += Millis{2000};
  EXPECT_TRUE(b.failure(t));
  EXPECT_EQ(b.cooldown(), Millis{3000});  // capped
  EXPECT_TRUE(b.allow(t + Millis{3000}));
  b.success();
  EXPECT_EQ(b.state(), S::Closed);
  EXPECT_EQ(b.cooldown(), Millis{1000});
  EXPECT_TRUE(b.allow(t));
  EXPECT_EQ(b.times_opened(), 3u);
}

}  // namespace
}  // namespace hg::resolver
