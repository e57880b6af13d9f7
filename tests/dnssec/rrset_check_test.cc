// dnssec/rrset_check.h: RRsets and DNSKEY RRsets signed by keys OpenSSL makes on the spot,
// checked as RFC 4035 §5.2 and §5.3 say — the verdicts, the reason each bogus one gives, the
// TTL a secure one may be kept, the validity window in serial arithmetic, and the budget that
// stops a KeyTrap zone.
#include "dnssec/rrset_check.h"

#include <gtest/gtest.h>

#include <vector>

#include "dnssec/crypto.h"
#include "tests/dnssec/test_keys.h"

namespace hg::dnssec {
namespace {

using test::Bytes;
using test::SigSpec;
using test::TestKey;

constexpr int64_t kNow = 1'800'000'000;  // any fixed time: the tests never read the clock

wire::Name name(const char* text) {
  return *wire::Name::from_text(text);
}

SigSpec valid_now() {
  return SigSpec{.inception = kNow - 86400, .expiration = kNow + 30 * 86400};
}

Rrset a_set(const char* owner = "www.example.test") {
  Rrset s;
  s.owner = name(owner);
  s.type = 1;
  s.ttl = 3600;
  s.rdatas = {{192, 0, 2, 1}, {192, 0, 2, 2}};
  return s;
}

Bytes ds_for(const TestKey& key, bool ksk, const wire::Name& owner, uint8_t digest_type) {
  const Bytes k = key.dnskey_rdata(ksk);
  const uint16_t tag = key_tag(k);
  Bytes ds{static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag), key.algorithm(), digest_type};
  const auto d = ds_digest(owner, k, digest_type);
  ds.insert(ds.end(), d->begin(), d->end());
  return ds;
}

class RrsetCheckTest : public ::testing::Test {
 protected:
  const wire::Name zone_ = name("example.test");
  TestKey zsk_{13};
  Budget budget_;

  CheckResult check(const Rrset& s, const std::vector<Bytes>& keys) {
    return check_rrset(s, zone_, keys, kNow, budget_);
  }
  Bytes sign(const Rrset& s, const SigSpec& spec) const {
    return test::sign_rrset(zsk_, false, s, zone_, spec);
  }
};

TEST(RrsetCheck, EveryAlgorithmVerifiesAndTheTtlIsTheSmallestOfTtlOriginalTtlAndTimeLeft) {
  const wire::Name zone = name("example.test");
  for (const uint8_t alg : std::vector<uint8_t>{8, 10, 13, 14, 15, 16}) {
    SCOPED_TRACE(static_cast<int>(alg));
    const TestKey key(alg);
    Rrset s = a_set();
    s.rrsigs.push_back(test::sign_rrset(key, false, s, zone, valid_now()));
    Budget b;
    const auto r = check_rrset(s, zone, std::vector<Bytes>{key.dnskey_rdata()}, kNow, b);
    EXPECT_EQ(r.security, Security::Secure);
    EXPECT_EQ(r.why, Why::None);
    EXPECT_EQ(r.ttl, 3600u);
    EXPECT_EQ(r.key_tag, key_tag(key.dnskey_rdata()));
    EXPECT_EQ(b.verifications, Budget{}.verifications - 1);
    EXPECT_EQ(b.failures, Budget{}.failures);
  }
}

TEST_F(RrsetCheckTest, TheTtlIsCappedByTheOriginalTtlAndByTheSignaturesExpiry) {
  Rrset s = a_set();
  SigSpec spec = valid_now();
  spec.original_ttl = 600;  // the zone's TTL; the upstream handed out 3600
  s.rrsigs = {sign(s, spec)};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).ttl, 600u);
  spec = valid_now();
  spec.expiration = kNow + 120;  // expires in two minutes
  s.rrsigs = {sign(s, spec)};
  const auto r = check(s, {zsk_.dnskey_rdata()});
  EXPECT_EQ(r.security, Security::Secure);
  EXPECT_EQ(r.ttl, 120u);
}

TEST_F(RrsetCheckTest, ExpiredAndFutureSignaturesAreBogusAndSaySoButSkewWithinTheAllowanceIsNot) {
  Rrset s = a_set();
  // A 30-day window: the allowance is its tenth capped at an hour.
  EXPECT_EQ(skew_allowance(kNow - 86400 * 30, kNow), 3600u);
  EXPECT_EQ(skew_allowance(kNow - 1000, kNow), 100u);
  s.rrsigs = {sign(s, {.inception = kNow - 30 * 86400, .expiration = kNow - 3601})};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).why, Why::SignatureExpired);
  s.rrsigs = {sign(s, {.inception = kNow + 3601, .expiration = kNow + 30 * 86400})};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).why, Why::SignatureNotYetValid);
  // A clock ten minutes off either way still validates.
  s.rrsigs = {sign(s, {.inception = kNow - 30 * 86400, .expiration = kNow - 600})};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).security, Security::Secure);
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).ttl, 0u);  // secure, but not to be kept
  s.rrsigs = {sign(s, {.inception = kNow + 600, .expiration = kNow + 30 * 86400})};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).security, Security::Secure);
}

TEST(RrsetCheck, TheWindowIsSerialArithmeticSoItWorksAcrossTheYear2106) {
  // 2106-02-07 is where 32-bit seconds wrap: a signature from just before to just after.
  const int64_t wrap = int64_t{1} << 32;
  const auto inception = static_cast<uint32_t>(wrap - 86400);
  const auto expiration = static_cast<uint32_t>(wrap + 86400);  // a small number
  EXPECT_EQ(window_check(inception, expiration, wrap), Why::None);
  EXPECT_EQ(window_check(inception, expiration, wrap + 2 * 86400 + 20000), Why::SignatureExpired);
  EXPECT_EQ(window_check(inception, expiration, wrap - 2 * 86400 - 20000),
            Why::SignatureNotYetValid);
  // And an ordinary window today.
  EXPECT_EQ(window_check(kNow - 10, kNow + 10, kNow), Why::None);
}

TEST_F(RrsetCheckTest, WithoutAnRrsigOfTheZoneForTheTypeTheRrsigsAreMissing) {
  Rrset s = a_set();
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).why, Why::RrsigsMissing);
  // Signed by another zone (the parent), or for another type: not this RRset's RRSIGs.
  s.rrsigs = {test::sign_rrset(zsk_, false, s, name("test"), valid_now())};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).why, Why::RrsigsMissing);
  Rrset other = s;
  other.type = 16;
  s.rrsigs = {sign(other, valid_now())};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).why, Why::RrsigsMissing);
  // The signer's name in another case is the same zone (RFC 4343).
  s.rrsigs = {test::sign_rrset(zsk_, false, s, name("EXAMPLE.Test"), valid_now())};
  EXPECT_EQ(check(s, {zsk_.dnskey_rdata()}).security, Security::Secure);
}

TEST_F(RrsetCheckTest, AKeyThatIsNotThereOrNotAZoneKeyIsAMissingDnskey) {
  Rrset s = a_set();
  s.rrsigs = {sign(s, valid_now())};
  const TestKey other(13);
  EXPECT_EQ(check(s, {other.dnskey_rdata()}).why, Why::DnskeyMissing);
  EXPECT_EQ(check(s, {}).why, Why::DnskeyMissing);
  Bytes not_zone = zsk_.dnskey_rdata();
  not_zone[0] = 0;  // flags 0: the Zone Key bit clear (RFC 4035 §5.3.1)
  EXPECT_EQ(check(s, {not_zone}).why, Why::DnskeyMissing);
  Bytes proto = zsk_.dnskey_rdata();
  proto[2] = 4;
  EXPECT_EQ(check(s, {proto}).why, Why::DnskeyMissing);
}

TEST_F(RrsetCheckTest, AlteredDataIsABadSignatureAndOneGoodRrsigAmongBadOnesIsEnough) {
  Rrset s = a_set();
  s.rrsigs = {sign(s, valid_now())};
  Rrset forged = s;
  forged.rdatas[0] = {6, 6, 6, 6};
  EXPECT_EQ(check(forged, {zsk_.dnskey_rdata()}).why, Why::BadSignature);
  Rrset owner = s;
  owner.owner = name("mail.example.test");
  EXPECT_EQ(check(owner, {zsk_.dnskey_rdata()}).why, Why::BadSignature);
  // The reason is the one of the RRSIG that got furthest: an expired one and a bad one say
  // "bad signature", an expired one and one with no key say "DNSKEY missing".
  Rrset both = forged;
  both.rrsigs.push_back(sign(s, {.inception = kNow - 99 * 86400, .expiration = kNow - 9 * 86400}));
  EXPECT_EQ(check(both, {zsk_.dnskey_rdata()}).why, Why::BadSignature);
  EXPECT_EQ(check(both, {TestKey(13).dnskey_rdata()}).why, Why::DnskeyMissing);
  // A broken RRSIG and a good one: secure.
  Rrset mixed = s;
  mixed.rrsigs.insert(mixed.rrsigs.begin(), Bytes{0, 1, 13});
  EXPECT_EQ(check(mixed, {zsk_.dnskey_rdata()}).security, Security::Secure);
  // Records in another order and duplicated: the same canonical RRset (RFC 4034 §6.3).
  Rrset reordered = s;
  reordered.rdatas = {s.rdatas[1], s.rdatas[0], s.rdatas[1]};
  EXPECT_EQ(check(reordered, {zsk_.dnskey_rdata()}).security, Security::Secure);
}

TEST_F(RrsetCheckTest, AWildcardExpansionVerifiesAndALabelsFieldLongerThanTheOwnerIsMalformed) {
  Rrset star = a_set("*.example.test");
  Rrset expanded = a_set("anything.at.all.example.test");
  SigSpec spec = valid_now();
  spec.labels = 2;  // "example.test": the RRSIG says the owner was a wildcard
  expanded.rrsigs = {sign(star, spec)};
  EXPECT_EQ(check(expanded, {zsk_.dnskey_rdata()}).security, Security::Secure);
  spec.labels = 5;
  Rrset too_many = a_set();
  too_many.rrsigs = {sign(a_set("a.b.c.example.test"), spec)};
  EXPECT_EQ(check(too_many, {zsk_.dnskey_rdata()}).why, Why::Malformed);
  // An owner outside the zone cannot be signed by it.
  Rrset outside = a_set("www.example.org");
  outside.rrsigs = {sign(outside, valid_now())};
  EXPECT_EQ(check(outside, {zsk_.dnskey_rdata()}).why, Why::Malformed);
}

// Public keys that all have `tag`: Ed25519-sized, random but for two bytes chosen so the
// checksum comes out right (RFC 4034 Appendix B is a sum, so two bytes can set it).
std::vector<Bytes> colliding_keys(uint16_t tag, int n) {
  std::vector<Bytes> keys;
  for (int i = 0; i < n; ++i) {
    Bytes k{1, 0, 3, 15};
    for (int j = 0; j < 30; ++j)
      k.push_back(static_cast<uint8_t>(i * 37 + j * 11 + 5));
    k.push_back(0);
    k.push_back(0);
    const uint16_t have = key_tag(k);
    // The last two bytes add (hi << 8 | lo) before the carry fold; aim at the wanted tag.
    uint32_t want = (uint32_t{tag} + 0x10000 - have) & 0xffff;
    k[k.size() - 2] = static_cast<uint8_t>(want >> 8);
    k[k.size() - 1] = static_cast<uint8_t>(want);
    for (int tries = 0; key_tag(k) != tag && tries < 0x10000; ++tries) {
      want = (want + 1) & 0xffff;  // the fold can shift it by one: step until it lands
      k[k.size() - 2] = static_cast<uint8_t>(want >> 8);
      k[k.size() - 1] = static_cast<uint8_t>(want);
    }
    keys.push_back(k);
  }
  return keys;
}

TEST(RrsetCheck, AKeyTrapZoneCostsAtMostTheBudgetAndSaysSo) {
  const wire::Name zone = name("keytrap.test");
  const TestKey real(15);
  const uint16_t tag = key_tag(real.dnskey_rdata());
  auto keys = colliding_keys(tag, 200);
  for (const auto& k : keys)
    ASSERT_EQ(key_tag(k), tag);
  Rrset s = a_set("www.keytrap.test");
  // 50 RRSIGs naming the tag, none of them made by any key of the set.
  for (int i = 0; i < 50; ++i) {
    Bytes sig = test::sign_rrset(real, false, s, zone, valid_now());
    sig.back() ^= static_cast<uint8_t>(i + 1);
    s.rrsigs.push_back(sig);
  }
  Budget b;
  const auto r = check_rrset(s, zone, keys, kNow, b);
  EXPECT_EQ(r.security, Security::Bogus);
  EXPECT_EQ(r.why, Why::BudgetExhausted);
  // 200 keys × 50 signatures would be 10,000 checks; the budget allowed its failures only.
  EXPECT_EQ(b.failures, 0);
  EXPECT_EQ(Budget{}.verifications - b.verifications, Budget{}.failures);
  // What is spent is spent: the next RRset of the same query gets no more.
  Rrset next = a_set("mail.keytrap.test");
  next.rrsigs = {test::sign_rrset(real, false, next, zone, valid_now())};
  EXPECT_EQ(check_rrset(next, zone, std::vector<Bytes>{real.dnskey_rdata()}, kNow, b).why,
            Why::BudgetExhausted);
}

TEST(RrsetCheck, TheBudgetLeavesRoomForARealKeyAmongAFewCollidingOnes) {
  // The other side of the trade-off: a zone whose real key shares its tag with a few others
  // (a rollover, by chance) still validates, as long as the failures stay within budget.
  const wire::Name zone = name("collide.test");
  const TestKey real(15);
  const uint16_t tag = key_tag(real.dnskey_rdata());
  auto keys = colliding_keys(tag, Budget{}.failures - 1);
  keys.push_back(real.dnskey_rdata());
  Rrset s = a_set("www.collide.test");
  s.rrsigs = {test::sign_rrset(real, false, s, zone, valid_now())};
  Budget b;
  EXPECT_EQ(check_rrset(s, zone, keys, kNow, b).security, Security::Secure);
  EXPECT_EQ(b.failures, 1);
}

class DnskeyCheckTest : public ::testing::Test {
 protected:
  DnskeyCheckTest() {
    keys_.owner = zone_;
    keys_.type = 48;
    keys_.ttl = 3600;
    keys_.rdatas = {ksk_.dnskey_rdata(true), zsk_.dnskey_rdata()};
    keys_.rrsigs = {test::sign_rrset(ksk_, true, keys_, zone_, valid_now())};
  }
  CheckResult check(const std::vector<Bytes>& ds) {
    Budget b;
    return check_dnskeys(keys_, ds, kNow, b);
  }
  const wire::Name zone_ = name("example.test");
  TestKey ksk_{8};
  TestKey zsk_{13};
  Rrset keys_;
};

TEST_F(DnskeyCheckTest, AKeySetSignedByTheKeyADsNamesIsSecureWithEveryDigest) {
  for (const uint8_t digest : std::vector<uint8_t>{1, 2, 4}) {
    SCOPED_TRACE(static_cast<int>(digest));
    const auto r = check({ds_for(ksk_, true, zone_, digest)});
    EXPECT_EQ(r.security, Security::Secure);
    EXPECT_EQ(r.key_tag, key_tag(ksk_.dnskey_rdata(true)));
  }
  // The DS owner's case does not matter: the digest is over the canonical name.
  EXPECT_EQ(check({ds_for(ksk_, true, name("Example.TEST"), 2)}).security, Security::Secure);
}

TEST_F(DnskeyCheckTest, ADsForNoKeyOfTheSetOrAKeySetSignedOnlyByAnotherKeyIsBogus) {
  const TestKey stranger(8);
  EXPECT_EQ(check({ds_for(stranger, true, zone_, 2)}).why, Why::DnskeyMissing);
  // The set is signed by the ZSK only: the key the DS vouches for signed nothing.
  keys_.rrsigs = {test::sign_rrset(zsk_, false, keys_, zone_, valid_now())};
  EXPECT_EQ(check({ds_for(ksk_, true, zone_, 2)}).why, Why::DnskeyMissing);
  // A DS whose digest is wrong.
  Bytes wrong = ds_for(ksk_, true, zone_, 2);
  wrong.back() ^= 1;
  keys_.rrsigs = {test::sign_rrset(ksk_, true, keys_, zone_, valid_now())};
  EXPECT_EQ(check({wrong}).why, Why::DnskeyMissing);
  // A key set whose signature does not cover what was received.
  keys_.rdatas.push_back(stranger.dnskey_rdata());
  EXPECT_EQ(check({ds_for(ksk_, true, zone_, 2)}).why, Why::BadSignature);
}

TEST_F(DnskeyCheckTest, OnlyAlgorithmsOrDigestsWeDoNotDoMakeTheZoneInsecure) {
  Bytes rsasha1 = ds_for(ksk_, true, zone_, 2);
  rsasha1[2] = 5;  // RSA/SHA-1: not offered
  EXPECT_EQ(check({rsasha1}).security, Security::Insecure);
  EXPECT_EQ(check({rsasha1}).why, Why::NoSupportedAlgorithm);
  Bytes gost = ds_for(ksk_, true, zone_, 2);
  gost[3] = 3;  // GOST R 34.11-94
  EXPECT_EQ(check({gost}).security, Security::Insecure);
  // With one DS we can use beside them, that one decides.
  EXPECT_EQ(check({rsasha1, gost, ds_for(ksk_, true, zone_, 2)}).security, Security::Secure);
  Bytes wrong = ds_for(ksk_, true, zone_, 2);
  wrong.back() ^= 1;
  EXPECT_EQ(check({rsasha1, wrong}).security, Security::Bogus);
  // Nothing at all, or nothing readable, is not "insecure".
  EXPECT_EQ(check({}).security, Security::Bogus);
  EXPECT_EQ(check({Bytes{1, 2}}).security, Security::Bogus);
}

TEST_F(DnskeyCheckTest, ASha1DsIsIgnoredWhenTheSetHasAStrongerOne) {
  // RFC 4509 §3: otherwise a forged SHA-1 DS would be enough while a SHA-256 one is there.
  Bytes bad256 = ds_for(ksk_, true, zone_, 2);
  bad256.back() ^= 1;
  EXPECT_EQ(check({ds_for(ksk_, true, zone_, 1), bad256}).why, Why::DnskeyMissing);
  EXPECT_EQ(check({ds_for(ksk_, true, zone_, 1), ds_for(ksk_, true, zone_, 2)}).security,
            Security::Secure);
}

}  // namespace
}  // namespace hg::dnssec
