// The authenticated fleet's pure parts (resolver/fleet/fleet_auth.h): HMAC-SHA256 against RFC 4231,
// values, fleet messages and ttl caps sealed and opened, every alteration refused, purposes
// kept apart, and the replay guard on an injected clock.
#include "resolver/fleet/fleet_auth.h"

#include <gtest/gtest.h>

#include "cache/key.h"
#include "resolver/fleet/redis_value.h"
#include "tests/resolver/cached_answers.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using namespace fleet;
using wire::test::Bytes;
using wire::test::PacketBuilder;

const std::string kSecret = "0123456789abcdef0123456789abcdef";

std::unique_ptr<FleetAuth> auth_of(const std::string& s) {
  std::string why;
  auto a = FleetAuth::create(bytes(s), &why);
  EXPECT_TRUE(a) << why;
  return a;
}

TEST(FleetAuth, HmacMatchesRfc4231TestCase2) {
  const std::string key = "Jefe";
  const std::string data = "what do ya want for nothing?";
  auto h = Hmac::create(bytes(key));
  ASSERT_TRUE(h);
  const std::span<const uint8_t> parts[] = {bytes(data)};
  const auto t = h->tag(parts);
  EXPECT_EQ(to_hex(t), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Re-initialised per tag: the same input gives the same tag again, split or not.
  const std::string head = data.substr(0, 7);
  const std::string tail = data.substr(7);
  const std::span<const uint8_t> split[] = {bytes(head), bytes(tail)};
  EXPECT_EQ(h->tag(split), t);
}

TEST(FleetAuth, ASecretShorterThan32BytesIsRefused) {
  std::string why;
  EXPECT_FALSE(FleetAuth::create(bytes(std::string(31, 'x')), &why));
  EXPECT_NE(why.find("at least 32"), std::string::npos) << why;
  EXPECT_TRUE(FleetAuth::create(bytes(std::string(32, 'x')), &why));
}

TEST(FleetAuth, ASealedValueOpensOnlyUnderItsNameWithItsKeyAndUnaltered) {
  auto a = auth_of(kSecret);
  const auto key = query_key("www.example.com");
  const std::string name = "hg:c:www.example.com. 1 1 0";
  auto v = encode_value(key, 1'700'000'000'000, a_response("www.example.com"), true);
  const auto plain = encode_value(key, 1'700'000'000'000, a_response("www.example.com"));
  // Exactly the tag more than a value without a key.
  EXPECT_EQ(v.size(), plain.size() + kTagSize);
  seal_value(*a, name, v);
  EXPECT_EQ(open_value(*a, name, v), AuthStatus::Ok);
  wire::Message m;
  const auto d = decode_value(v, key, m);
  EXPECT_EQ(d.status, ValueStatus::Ok);
  EXPECT_TRUE(d.authenticated);

  EXPECT_EQ(open_value(*a, "x:c:www.example.com. 1 1 0", v), AuthStatus::Forged);
  EXPECT_EQ(open_value(*auth_of(kSecret + "!"), name, v), AuthStatus::Forged);
  EXPECT_EQ(open_value(*a, name, plain), AuthStatus::Unsigned);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i == 5) continue;  // the flags byte: clearing bit 0 makes it Unsigned, also refused
    auto bad = v;
    bad[i] ^= 0x01;
    EXPECT_EQ(open_value(*a, name, bad), AuthStatus::Forged) << "byte " << i;
  }
  auto cleared = v;
  cleared[5] = 0;
  EXPECT_EQ(open_value(*a, name, cleared), AuthStatus::Unsigned);
  EXPECT_EQ(open_value(*a, name, std::span<const uint8_t>(v).first(5)), AuthStatus::Malformed);
  // The same bytes as a fleet message or cap key: purposes are separate keys.
  EXPECT_NE(a->tag(Purpose::Value, {bytes(name)}), a->tag(Purpose::Message, {bytes(name)}));
  EXPECT_NE(a->tag(Purpose::Value, {bytes(name)}), a->tag(Purpose::TtlCap, {bytes(name)}));
  // Field boundaries are bound: "ab"+"c" is not "a"+"bc".
  EXPECT_NE(a->tag(Purpose::Value, {bytes("ab"), bytes("c")}),
            a->tag(Purpose::Value, {bytes("a"), bytes("bc")}));
}

TEST(FleetAuth, FleetMessagesOpenOnlyOnTheirChannelAndUnaltered) {
  auto a = auth_of(kSecret);
  const std::string text =
      seal_fleet_message(*a, "hg:fleet", 1'700'000'000'000, 7, "v1 abc flush-all");
  auto o = open_fleet_message(a.get(), "hg:fleet", text);
  EXPECT_EQ(o.status, AuthStatus::Ok);
  EXPECT_EQ(o.time_ms, 1'700'000'000'000);
  EXPECT_EQ(o.seq, 7u);
  EXPECT_EQ(o.inner, "v1 abc flush-all");
  EXPECT_EQ(open_fleet_message(a.get(), "x:fleet", text).status, AuthStatus::Forged);
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::string bad = text;
    bad[i] = bad[i] == '1' ? '2' : '1';
    const auto st = open_fleet_message(a.get(), "hg:fleet", bad).status;
    EXPECT_NE(st, AuthStatus::Ok) << "char " << i;
  }
  EXPECT_EQ(open_fleet_message(a.get(), "hg:fleet", "v1 abc flush-all").status,
            AuthStatus::Unsigned);
  EXPECT_EQ(open_fleet_message(a.get(), "hg:fleet", "s1 1 2 zz v1 a flush-all").status,
            AuthStatus::Malformed);
  EXPECT_EQ(open_fleet_message(a.get(), "hg:fleet", "s1 ").status, AuthStatus::Malformed);
  // Without a key the shape is enough (Redis is trusted then).
  EXPECT_EQ(open_fleet_message(nullptr, "x:fleet", text).status, AuthStatus::Ok);
}

TEST(FleetAuth, TtlCapsAreBoundToTheirHashAndZone) {
  auto a = auth_of(kSecret);
  const std::string v = seal_ttl_cap(a.get(), "hg:ttl-caps", "shop.test.", 30);
  EXPECT_EQ(v.substr(0, 3), "30 ");
  const auto ok = open_ttl_cap(a.get(), "hg:ttl-caps", "shop.test.", v);
  EXPECT_EQ(ok.status, AuthStatus::Ok);
  EXPECT_EQ(ok.seconds, 30u);
  EXPECT_EQ(open_ttl_cap(a.get(), "hg:ttl-caps", ".", v).status, AuthStatus::Forged);
  EXPECT_EQ(open_ttl_cap(a.get(), "x:ttl-caps", "shop.test.", v).status, AuthStatus::Forged);
  EXPECT_EQ(open_ttl_cap(a.get(), "hg:ttl-caps", "shop.test.", "0" + v.substr(2)).status,
            AuthStatus::Forged);
  EXPECT_EQ(open_ttl_cap(a.get(), "hg:ttl-caps", ".", "0").status, AuthStatus::Unsigned);
  EXPECT_EQ(open_ttl_cap(a.get(), "hg:ttl-caps", ".", "x").status, AuthStatus::Malformed);
  EXPECT_EQ(open_ttl_cap(a.get(), "hg:ttl-caps", ".", "99999999999").status, AuthStatus::Malformed);
  // Without a key: the old form, and the tag ignored.
  EXPECT_EQ(seal_ttl_cap(nullptr, "hg:ttl-caps", ".", 5), "5");
  EXPECT_EQ(open_ttl_cap(nullptr, "hg:ttl-caps", ".", v).seconds, 30u);
}

TEST(FleetAuth, ReplayGuardRefusesStaleFutureAndRepeatedMessages) {
  ReplayGuard g;
  using V = ReplayGuard::Verdict;
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(g.check("a", now, 5, now), V::Accept);
  EXPECT_EQ(g.check("a", now, 5, now), V::Replayed);
  EXPECT_EQ(g.check("a", now, 4, now), V::Replayed);
  EXPECT_EQ(g.check("a", now, 6, now), V::Accept);
  EXPECT_EQ(g.check("b", now - kMaxMessageAgeMs - 1, 1, now), V::Stale);
  EXPECT_EQ(g.check("b", now - kMaxMessageAgeMs, 1, now), V::Accept);
  EXPECT_EQ(g.check("c", now + kMaxClockSkewMs + 1, 1, now), V::Future);
  EXPECT_EQ(g.check("c", now + kMaxClockSkewMs, 1, now), V::Accept);
  // Many senders: the silent ones are forgotten, never the table unbounded.
  for (std::size_t i = 0; i < ReplayGuard::kMaxSenders + 10; ++i)
    g.check("s" + std::to_string(i), now, 1, now);
  EXPECT_EQ(g.check("late", now + kMaxMessageAgeMs + 1, 1, now + kMaxMessageAgeMs + 1), V::Accept);
}

TEST(FleetAuth, HexRoundTripsAndRefusesBadDigits) {
  const std::array<uint8_t, 3> in{0x00, 0xab, 0xff};
  EXPECT_EQ(to_hex(in), "00abff");
  std::array<uint8_t, 3> out{};
  EXPECT_TRUE(from_hex("00ABff", out));
  EXPECT_EQ(out, in);
  EXPECT_FALSE(from_hex("00abf", out));
  EXPECT_FALSE(from_hex("00abfg", out));
}

}  // namespace
}  // namespace hg::resolver
