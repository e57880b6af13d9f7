// dnssec/crypto.h: key tags and DS digests against the RFCs' worked examples; signatures of
// every supported algorithm against keys and signatures OpenSSL makes here; and the hostile
// inputs (short, long, malformed keys and signatures) each refused with its status.
#include "dnssec/crypto.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/dnssec/test_keys.h"

namespace hg::dnssec {
namespace {

using test::Bytes;
using test::TestKey;

Bytes from_hex(const std::string& hex) {
  Bytes out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

wire::Name name(const char* text) {
  return *wire::Name::from_text(text);
}

// RFC 4034 §5.4: the DNSKEY of dskey.example.com (RSA/SHA-1, tag 60485) and its DS.
const Bytes kExampleDnskey = from_hex(
    "0100030501039e8a247418e318903b215a848acfd5f37f026bd4062db26c774c690968d5d56df8bfda91e6f3"
    "6d9a279888f41333357c5e6029990d10fdf5663062a512763326980a615ddbf17a05ddfcce7e5fb3abcca05a"
    "31b0957452d4521e83870789063115bf97f6c308ccf57cdc9ce7fe10f6ed1bd0cc0660038c50dcdb0feb963c"
    "2f17");

TEST(KeyTag, TheRfc4034ExampleKeyHasTag60485) {
  EXPECT_EQ(key_tag(kExampleDnskey), 60485);
}

TEST(KeyTag, AnOddLengthAndAnEmptyRdataAreSummedWithoutReadingPastTheEnd) {
  EXPECT_EQ(key_tag(Bytes{}), 0);
  EXPECT_EQ(key_tag(Bytes{0x01}), 0x0100);
  EXPECT_EQ(key_tag(Bytes{0xff, 0xff, 0x00, 0x02}), 0x0002);  // 0x1_0001 folded: 0x0002
}

TEST(DsDigest, Sha1AndSha256OfTheRfcExamplesAndTheOwnersCaseDoesNotMatter) {
  const auto sha1 = ds_digest(name("dskey.example.com"), kExampleDnskey, 1);
  ASSERT_TRUE(sha1);
  EXPECT_EQ(*sha1, from_hex("2bb183af5f22588179a53b0a98631fad1a292118"));  // RFC 4034 §5.4
  const auto sha256 = ds_digest(name("DSKEY.Example.COM"), kExampleDnskey, 2);
  ASSERT_TRUE(sha256);
  EXPECT_EQ(*sha256,  // RFC 4509 §2.3
            from_hex("d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a"));
  EXPECT_EQ(ds_digest(name("dskey.example.com"), kExampleDnskey, 4)->size(), 48u);  // SHA-384
  EXPECT_FALSE(ds_digest(name("dskey.example.com"), kExampleDnskey, 3));  // GOST: not done
}

TEST(DsMatches, TheRightDsMatchesAndEveryOtherFieldOrDigestDoesNot) {
  const auto owner = name("dskey.example.com");
  const Bytes ds = from_hex("ec4505012bb183af5f22588179a53b0a98631fad1a292118");  // 60485 5 1
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, ds), DsMatch::Match);
  const Bytes ds256 =
      from_hex("ec450502d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a");
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, ds256), DsMatch::Match);
  EXPECT_EQ(ds_matches(name("other.example.com"), kExampleDnskey, ds256), DsMatch::Mismatch);
  Bytes wrong_digest = ds256;
  wrong_digest.back() ^= 1;
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, wrong_digest), DsMatch::Mismatch);
  Bytes wrong_tag = ds256;
  wrong_tag[1] ^= 1;
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, wrong_tag), DsMatch::Mismatch);
  Bytes wrong_algorithm = ds256;
  wrong_algorithm[2] = 8;
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, wrong_algorithm), DsMatch::Mismatch);
  Bytes short_digest(ds256.begin(), ds256.end() - 1);
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, short_digest), DsMatch::Mismatch);
  Bytes gost = ds256;
  gost[3] = 3;
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, gost), DsMatch::UnsupportedDigest);
  EXPECT_EQ(ds_matches(owner, kExampleDnskey, Bytes{0xec, 0x45, 5}), DsMatch::Malformed);
  EXPECT_EQ(ds_matches(owner, Bytes{1, 0, 3}, ds256), DsMatch::Malformed);
}

TEST(Algorithms, TheSupportedOnesAreThoseOfRfc8624) {
  for (int a = 0; a < 256; ++a) {
    const bool want = a == 8 || a == 10 || a == 13 || a == 14 || a == 15 || a == 16;
    EXPECT_EQ(algorithm_supported(static_cast<uint8_t>(a)), want) << a;
  }
  EXPECT_TRUE(digest_supported(1));
  EXPECT_TRUE(digest_supported(2));
  EXPECT_FALSE(digest_supported(3));
  EXPECT_TRUE(digest_supported(4));
}

class Signatures : public ::testing::TestWithParam<int> {};

TEST_P(Signatures, OpenSslsSignatureIsValidAndAnyChangeMakesItInvalid) {
  const auto alg = static_cast<uint8_t>(GetParam());
  const TestKey key(alg);
  const TestKey other(alg);
  const Bytes data = from_hex("0001080200000e10aabbccdd");  // any bytes will do here
  const Bytes sig = key.sign(data);
  const Bytes pub = key.public_key();
  EXPECT_EQ(verify(alg, pub, data, sig), VerifyResult::Valid);

  Bytes changed_data = data;
  changed_data[5] ^= 0x40;
  EXPECT_EQ(verify(alg, pub, changed_data, sig), VerifyResult::Invalid);
  Bytes changed_sig = sig;
  changed_sig[sig.size() / 2] ^= 0x01;
  EXPECT_EQ(verify(alg, pub, data, changed_sig), VerifyResult::Invalid);
  EXPECT_EQ(verify(alg, other.public_key(), data, sig), VerifyResult::Invalid);
  EXPECT_EQ(verify(alg, pub, data, Bytes(sig.begin(), sig.end() - 1)), VerifyResult::Invalid);
  EXPECT_EQ(verify(alg, pub, data, Bytes{}), VerifyResult::Invalid);
  EXPECT_EQ(verify(alg, Bytes(pub.begin(), pub.end() - 1), data, sig) == VerifyResult::Valid,
            false);
  EXPECT_EQ(verify(alg, Bytes{}, data, sig), VerifyResult::BadKey);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, Signatures, ::testing::Values(8, 10, 13, 14, 15, 16),
                         [](const auto& p) { return "alg" + std::to_string(p.param); });

TEST(Signatures, AnAlgorithmNotSupportedSaysSoAndNeverValid) {
  const Bytes any{1, 2, 3};
  for (int a : {0, 1, 3, 5, 6, 7, 12, 17, 253, 254, 255})
    EXPECT_EQ(verify(static_cast<uint8_t>(a), any, any, any), VerifyResult::UnsupportedAlgorithm)
        << a;
}

// RSA keys a zone could make verification dear with, or that are not keys at all.
TEST(Signatures, RsaKeysOutsideRfc3110sBoundsAreBadKeys) {
  const Bytes data{1, 2, 3};
  const Bytes sig(256, 0x55);
  Bytes huge{3, 1, 0, 1};  // e = 65537, then an 8200-bit modulus
  huge.insert(huge.end(), 1025, 0xab);
  EXPECT_EQ(verify(8, huge, data, sig), VerifyResult::BadKey);
  Bytes tiny{3, 1, 0, 1};  // a 256-bit modulus
  tiny.insert(tiny.end(), 32, 0xab);
  EXPECT_EQ(verify(8, tiny, data, sig), VerifyResult::BadKey);
  Bytes long_exponent{9};  // a 72-bit exponent
  long_exponent.insert(long_exponent.end(), 9 + 256, 0xab);
  EXPECT_EQ(verify(8, long_exponent, data, sig), VerifyResult::BadKey);
  EXPECT_EQ(verify(8, Bytes{0}, data, sig), VerifyResult::BadKey);        // no length
  EXPECT_EQ(verify(8, Bytes{0, 0, 0}, data, sig), VerifyResult::BadKey);  // zero-length exponent
  EXPECT_EQ(verify(8, Bytes{3, 1, 0}, data, sig), VerifyResult::BadKey);  // exponent cut short
  Bytes leading_zero{3, 1, 0, 1, 0};  // a modulus with a leading zero octet
  leading_zero.insert(leading_zero.end(), 255, 0xab);
  EXPECT_EQ(verify(8, leading_zero, data, sig), VerifyResult::BadKey);
}

TEST(Signatures, EcdsaAndEddsaKeysOfTheWrongSizeOrOffTheCurveAreBadKeys) {
  const Bytes data{1, 2, 3};
  EXPECT_EQ(verify(13, Bytes(63, 1), data, Bytes(64, 1)), VerifyResult::BadKey);
  EXPECT_EQ(verify(13, Bytes(64, 1), data, Bytes(64, 1)), VerifyResult::BadKey);  // not on P-256
  EXPECT_EQ(verify(14, Bytes(64, 1), data, Bytes(96, 1)), VerifyResult::BadKey);
  EXPECT_EQ(verify(15, Bytes(31, 1), data, Bytes(64, 1)), VerifyResult::BadKey);
  EXPECT_EQ(verify(16, Bytes(32, 1), data, Bytes(114, 1)), VerifyResult::BadKey);
}

}  // namespace
}  // namespace hg::dnssec
