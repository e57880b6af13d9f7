// dnssec/signed_data.h: the RRSIG RDATA parsed (and refused when malformed), the canonical
// RDATA of records in a message (names uncompressed and lowercased only where RFC 4034 §6.2
// says), and the signed data (canonical owner, wildcard owner, order, duplicates), then a
// signature over it made by OpenSSL checked with dnssec/crypto.h — the whole path a validator
// takes for one RRset.
#include "dnssec/signed_data.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dnssec/crypto.h"
#include "tests/dnssec/test_keys.h"
#include "tests/wire/packet_builder.h"

namespace hg::dnssec {
namespace {

using test::Bytes;
using test::TestKey;
using wire::test::PacketBuilder;
using wire::test::wire_name;

wire::Name name(const char* text) {
  return *wire::Name::from_text(text);
}

// An RRSIG RDATA: the fixed fields, the signer's name (as given: any case), the signature.
Bytes rrsig_rdata(uint16_t covered, uint8_t alg, uint8_t labels, uint32_t ttl, uint16_t tag,
                  const char* signer, const Bytes& signature) {
  Bytes r;
  auto u16 = [&](uint16_t v) {
    r.push_back(static_cast<uint8_t>(v >> 8));
    r.push_back(static_cast<uint8_t>(v));
  };
  auto u32 = [&](uint32_t v) {
    u16(static_cast<uint16_t>(v >> 16));
    u16(static_cast<uint16_t>(v));
  };
  u16(covered);
  r.push_back(alg);
  r.push_back(labels);
  u32(ttl);
  u32(2000000000);  // expiration (2033)
  u32(1700000000);  // inception (2023)
  u16(tag);
  const Bytes s = wire_name(signer);
  r.insert(r.end(), s.begin(), s.end());
  r.insert(r.end(), signature.begin(), signature.end());
  return r;
}

TEST(ParseRrsig, TheFieldsAndTheSignatureAreReadAndMalformedOnesRefused) {
  const Bytes rdata = rrsig_rdata(1, 13, 2, 3600, 4242, "Example.COM", Bytes(64, 0xaa));
  const auto s = parse_rrsig(rdata);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->type_covered, 1);
  EXPECT_EQ(s->algorithm, 13);
  EXPECT_EQ(s->labels, 2);
  EXPECT_EQ(s->original_ttl, 3600u);
  EXPECT_EQ(s->expiration, 2000000000u);
  EXPECT_EQ(s->inception, 1700000000u);
  EXPECT_EQ(s->key_tag, 4242);
  EXPECT_EQ(s->signer, name("example.com"));
  EXPECT_EQ(s->signature.size(), 64u);

  EXPECT_FALSE(parse_rrsig(Bytes(18, 0)));  // nothing after the fixed fields
  EXPECT_FALSE(parse_rrsig(rrsig_rdata(1, 13, 2, 3600, 1, "example.com", {})));  // no signature
  Bytes pointer = rrsig_rdata(1, 13, 2, 3600, 1, "example.com", Bytes(64, 1));
  pointer[18] = 0xc0;  // the signer's name compressed (RFC 4034 §3.1.7 forbids it)
  EXPECT_FALSE(parse_rrsig(pointer));
  Bytes unterminated(18, 0);
  unterminated.insert(unterminated.end(), {3, 'c', 'o', 'm'});  // runs off the end
  EXPECT_FALSE(parse_rrsig(unterminated));
  Bytes long_label(18, 0);
  long_label.push_back(63);
  long_label.insert(long_label.end(), 10, 'a');  // a label longer than what is left
  EXPECT_FALSE(parse_rrsig(long_label));
}

TEST(CanonicalRdata, NamesInTheRfc4034ListAreLoweredAndDecompressedOthersKeptAsSent) {
  // MX whose exchange is compressed against the owner, in upper case; a TXT with capitals
  // (not a name: kept); an NSEC whose next name has capitals (RFC 6840 §5.1: kept).
  Bytes mx{0, 10, 4, 'M', 'A', 'I', 'L', 0xc0, 12};
  Bytes nsec = wire_name("Next.Example.COM");
  nsec.insert(nsec.end(), {0, 1, 0x40});
  const Bytes packet = PacketBuilder()
                           .rr(1, "Example.COM", 15, 3600, mx)
                           .rr(1, "example.com", 16, 3600, {3, 'A', 'b', 'C'})
                           .rr(1, "example.com", 47, 3600, nsec)
                           .rr(1, "example.com", 17, 3600, Bytes{1, 'a', 0, 1, 'b', 0})  // RP
                           .build();
  wire::Message m;
  ASSERT_TRUE(m.parse(packet));
  const auto rrs = m.records();
  ASSERT_EQ(rrs.size(), 4u);
  Bytes want_mx{0, 10};
  const Bytes lowered = wire_name("mail.example.com");
  want_mx.insert(want_mx.end(), lowered.begin(), lowered.end());
  EXPECT_EQ(canonical_rdata(m, rrs[0]), want_mx);
  EXPECT_EQ(canonical_rdata(m, rrs[1]), (Bytes{3, 'A', 'b', 'C'}));
  EXPECT_EQ(canonical_rdata(m, rrs[2]), nsec);
  EXPECT_FALSE(canonical_rdata(m, rrs[3]));  // RP: names this does not decode
}

// The RRset of example.com MX in two records, asked in mixed case, signed over its canonical
// form by a fresh key of each algorithm: the signature verifies over what signed_data()
// builds, whatever order the records come in, with a duplicate, and with the owner's case.
TEST(SignedData, ASignatureOverTheCanonicalRrsetVerifiesWhateverTheOrderAndCase) {
  const Bytes a{0,   20,  4,   'm', 'x', '2', '0', 7,   'e', 'x',
                'a', 'm', 'p', 'l', 'e', 3,   'c', 'o', 'm', 0};
  const Bytes b{0,   10,  4,   'm', 'x', '1', '0', 7,   'e', 'x',
                'a', 'm', 'p', 'l', 'e', 3,   'c', 'o', 'm', 0};
  for (const int number : {8, 10, 13, 14, 15, 16}) {
    const auto alg = static_cast<uint8_t>(number);
    const TestKey key(alg);
    const uint16_t tag = key_tag(key.dnskey_rdata());
    const Bytes unsigned_rrsig = rrsig_rdata(15, alg, 2, 3600, tag, "example.com", Bytes{0});
    auto sig = parse_rrsig(unsigned_rrsig);
    ASSERT_TRUE(sig);
    const auto data = signed_data(*sig, name("example.com"), 15, 1, {b, a});
    ASSERT_TRUE(data);
    const Bytes signature = key.sign(*data);
    const Bytes rdata = rrsig_rdata(15, alg, 2, 3600, tag, "EXAMPLE.com", signature);
    const auto parsed = parse_rrsig(rdata);
    ASSERT_TRUE(parsed);
    const auto again = signed_data(*parsed, name("ExAmPlE.cOm"), 15, 1, {a, b, a});
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *data) << int{alg};
    EXPECT_EQ(verify(alg, key.public_key(), *again, parsed->signature), VerifyResult::Valid)
        << int{alg};
    // One record more, or one less, or another TTL: not what was signed.
    const Bytes c{0, 30, 1, 'x', 0};
    EXPECT_NE(
        verify(alg, key.public_key(), *signed_data(*parsed, name("example.com"), 15, 1, {a, b, c}),
               parsed->signature),
        VerifyResult::Valid);
    EXPECT_NE(verify(alg, key.public_key(), *signed_data(*parsed, name("example.com"), 15, 1, {a}),
                     parsed->signature),
              VerifyResult::Valid);
  }
}

TEST(SignedData, TheRecordsAreInCanonicalOrderWithoutDuplicatesAndTheOriginalTtl) {
  const auto sig = parse_rrsig(rrsig_rdata(1, 13, 2, 300, 7, "Example.com", Bytes{1}));
  ASSERT_TRUE(sig);
  const auto data = signed_data(*sig, name("Example.COM"), 1, 1,
                                {Bytes{192, 0, 2, 2}, Bytes{192, 0, 2, 1}, Bytes{192, 0, 2, 2}});
  ASSERT_TRUE(data);
  Bytes want = rrsig_rdata(1, 13, 2, 300, 7, "example.com", {});
  const Bytes owner = wire_name("example.com");
  for (const uint8_t last : {uint8_t{1}, uint8_t{2}}) {
    want.insert(want.end(), owner.begin(), owner.end());
    want.insert(want.end(), {0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, last});
  }
  EXPECT_EQ(*data, want);
  // A shorter RDATA sorts before a longer one it begins (RFC 4034 §6.3).
  const auto txt = signed_data(*sig, name("example.com"), 16, 1, {Bytes{1, 'a', 1}, Bytes{1, 'a'}});
  ASSERT_TRUE(txt);
  Bytes want_txt = rrsig_rdata(1, 13, 2, 300, 7, "example.com", {});
  for (const Bytes& rdata : {Bytes{1, 'a'}, Bytes{1, 'a', 1}}) {
    want_txt.insert(want_txt.end(), owner.begin(), owner.end());
    want_txt.insert(want_txt.end(),
                    {0, 16, 0, 1, 0, 0, 1, 44, 0, static_cast<uint8_t>(rdata.size())});
    want_txt.insert(want_txt.end(), rdata.begin(), rdata.end());
  }
  EXPECT_EQ(*txt, want_txt);
}

TEST(SignedData, AWildcardExpansionIsSignedForTheStarOwnerAndTooManyLabelsIsRefused) {
  const auto sig = parse_rrsig(rrsig_rdata(1, 13, 2, 300, 7, "example.com", Bytes{1}));
  ASSERT_TRUE(sig);
  const auto expanded = signed_data(*sig, name("a.b.Example.com"), 1, 1, {Bytes{192, 0, 2, 1}});
  const auto star = signed_data(*sig, name("*.example.com"), 1, 1, {Bytes{192, 0, 2, 1}});
  ASSERT_TRUE(expanded && star);
  EXPECT_EQ(*expanded, *star);
  const auto three = parse_rrsig(rrsig_rdata(1, 13, 3, 300, 7, "example.com", Bytes{1}));
  ASSERT_TRUE(three);
  EXPECT_FALSE(signed_data(*three, name("example.com"), 1, 1, {Bytes{192, 0, 2, 1}}));
}

}  // namespace
}  // namespace hg::dnssec
