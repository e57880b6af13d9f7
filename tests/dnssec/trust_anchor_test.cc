// dnssec/trust_anchor.h: Debian's own root.key and root.ds (dns-root-data) parsed, and each DS
// there the digest of a key in root.key; the root's KSK-2017 as a fixed text too, so that
// what is checked does not change with the package; BIND's multi-line keys, comments and the
// other forms a zone file line may take; every malformed line refused with its line number;
// the size bounds; and the closest-anchor lookup a validator starts from.
#include "dnssec/trust_anchor.h"
#include "base/bytes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dnssec/crypto.h"

namespace hg::dnssec {
namespace {

using Bytes = std::vector<uint8_t>;

wire::Name name(const char* text) {
  return *wire::Name::from_text(text);
}

Bytes from_hex(const std::string& hex) {
  Bytes out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// The first 16-bit field: a DS's key tag, a DNSKEY's flags.
uint16_t first16(const Bytes& rdata) {
  return base::load_u16(&rdata[0]);
}

// The root's KSK-2017 (tag 20326) and KSK-2024 (tag 38696) and their SHA-256 DS, as
// dns-root-data 2024071801 ships them.
const std::string kKsk2017 =
    "AwEAAaz/tAm8yTn4Mfeh5eyI96WSVexTBAvkMgJzkKTOiW1vkIbzxeF3+/4R"
    "gWOq7HrxRixHlFlExOLAJr5emLvN7SWXgnLh4+B5xQlNVz8Og8kvArMtNROx"
    "VQuCaSnIDdD5LKyWbRd2n9WGe2R8PzgCmr3EgVLrjyBxWezF0jLHwVN8efS3"
    "rCj/EWgvIWgb9tarpVUDK/b58Da+sqqls3eNbuv7pr+eoZG+SrDK6nWeL3c6"
    "H5Apxz7LjVc1uTIdsIXxuOLYA4/ilBmSVIzuDWfdRUfhHdY6+cn8HFRm+2hM"
    "8AnXGXws9555KrUB5qihylGa8subX2Nn6UwNR1AkUTV74bU=";
const std::string kKsk2024 =
    "AwEAAa96jeuknZlaeSrvyAJj6ZHv28hhOKkx3rLGXVaC6rXTsDc449/cidlt"
    "pkyGwCJNnOAlFNKF2jBosZBU5eeHspaQWOmOElZsjICMQMC3aeHbGiShvZsx"
    "4wMYSjH8e7Vrhbu6irwCzVBApESjbUdpWWmEnhathWu1jo+siFUiRAAxm9qy"
    "JNg/wOZqqzL/dL/q8PkcRU5oUKEpUge71M3ej2/7CPqpdVwuMoTvoB+ZOT4Y"
    "eGyxMvHmbrxlFzGOHOijtzN+u1TQNatX2XBuzZNQ1K+s2CXkPIZo7s6JgZyv"
    "aBevYtxPvYLw4z9mR7K2vaF18UYH9Z9GNUUeayffKC73PYc=";
const std::string kRootKey = ". IN DNSKEY 257 3 8 " + kKsk2017 + " ; keytag 20326\n" +
                             ". IN DNSKEY 257 3 8 " + kKsk2024 + " ; keytag 38696\n";
const std::string kDs2017 = "E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D";
const std::string kDs2024 = "683D2D0ACB8C9B712A1948B27F741219298D0A450D612C483AF444A4C0FB2B16";
const std::string kRootDs =
    ". IN DS 20326 8 2 " + kDs2017 + "\n. IN DS 38696 8 2 " + kDs2024 + "\n";

// A SHA-256 digest for anchors whose digest nothing checks.
const std::string kDigest32 = std::string(64, 'a');

TrustAnchors parse_ok(const std::string& text) {
  auto r = parse_trust_anchors(text, "test.key");
  EXPECT_TRUE(r) << r.error();
  return r ? std::move(r).value() : TrustAnchors{};
}

std::string parse_error(const std::string& text) {
  auto r = parse_trust_anchors(text, "test.key");
  EXPECT_FALSE(r) << "accepted: " << text;
  return r ? std::string() : r.error();
}

// --- Debian's files --------------------------------------------------------------------------

// dns-root-data is in scripts/install-deps' build group, so that these run wherever the unit
// tests do.
constexpr const char* kRootDsFile = "/usr/share/dns/root.ds";

TEST(TrustAnchorFiles, DebiansRootKeyAndRootDsParseAndEachDsIsTheDigestOfAKeyInRootKey) {
  const auto keys = load_trust_anchors(std::string(kDefaultTrustAnchorFile));
  ASSERT_TRUE(keys) << keys.error() << " (install dns-root-data: scripts/install-deps build)";
  const auto dss = load_trust_anchors(kRootDsFile);
  ASSERT_TRUE(dss) << dss.error();
  ASSERT_EQ(keys->zones().size(), 1u);
  ASSERT_EQ(dss->zones().size(), 1u);
  const ZoneAnchors& k = keys->zones()[0];
  const ZoneAnchors& d = dss->zones()[0];
  EXPECT_TRUE(k.zone.is_root());
  EXPECT_TRUE(d.zone.is_root());
  EXPECT_TRUE(k.ds.empty());
  EXPECT_TRUE(d.dnskey.empty());
  ASSERT_FALSE(k.dnskey.empty());
  ASSERT_FALSE(d.ds.empty());
  // Whatever keys the installed version holds: root.ds is root.key's keys' digests.
  for (const Bytes& ds : d.ds) {
    bool matched = false;
    for (const Bytes& key : k.dnskey)
      matched = matched || ds_matches(k.zone, key, ds) == DsMatch::Match;
    EXPECT_TRUE(matched) << "DS with tag " << first16(ds) << " matches no key of root.key";
  }
  for (const Bytes& key : k.dnskey) {
    EXPECT_EQ(first16(key), 257);  // KSKs: Zone Key and SEP
    const auto ds = ds_of_dnskey(k.zone, key, 2);
    ASSERT_TRUE(ds);
    EXPECT_NE(std::find(d.ds.begin(), d.ds.end(), *ds), d.ds.end())
        << "root.key's key " << key_tag(key) << " has no DS in root.ds";
  }
}

// --- The root's keys as fixed text -----------------------------------------------------------

TEST(TrustAnchorParse, TheRootsKsk2017HasTag20326AndTheDsOfRootDs) {
  const TrustAnchors keys = parse_ok(kRootKey);
  const TrustAnchors dss = parse_ok(kRootDs);
  ASSERT_EQ(keys.count(), 2u);
  ASSERT_EQ(dss.count(), 2u);
  const ZoneAnchors* root = keys.find(wire::Name());
  ASSERT_NE(root, nullptr);
  const Bytes* ksk2017 = nullptr;
  for (const Bytes& key : root->dnskey)
    if (key_tag(key) == 20326) ksk2017 = &key;
  ASSERT_NE(ksk2017, nullptr);
  EXPECT_EQ(ksk2017->size(), 4u + 260u);  // RFC 3110: 1 + 3 (exponent) + 256 (2048 bits)
  EXPECT_EQ((*ksk2017)[0], 1);            // flags 257
  EXPECT_EQ((*ksk2017)[1], 1);
  EXPECT_EQ((*ksk2017)[2], 3);
  EXPECT_EQ((*ksk2017)[3], 8);
  const auto ds = ds_of_dnskey(wire::Name(), *ksk2017, 2);
  ASSERT_TRUE(ds);
  EXPECT_EQ(*ds, from_hex("4f660802" + kDs2017));  // 20326 = 0x4f66, algorithm 8, SHA-256
  const auto& root_ds = dss.find(wire::Name())->ds;
  EXPECT_NE(std::find(root_ds.begin(), root_ds.end(), *ds), root_ds.end());
  for (const Bytes& d : root_ds)
    EXPECT_TRUE(ds_matches(wire::Name(), root->dnskey[0], d) == DsMatch::Match ||
                ds_matches(wire::Name(), root->dnskey[1], d) == DsMatch::Match);
}

TEST(TrustAnchorParse, DsOfDnskeyRefusesAShortRdataAndADigestTypeNotComputed) {
  const Bytes key = parse_ok(kRootKey).zones()[0].dnskey[0];
  EXPECT_FALSE(ds_of_dnskey(wire::Name(), Bytes{1, 1, 3}, 2));
  EXPECT_FALSE(ds_of_dnskey(wire::Name(), key, 3));  // GOST
  EXPECT_EQ(ds_of_dnskey(wire::Name(), key, 1)->size(), 4u + 20u);
  EXPECT_EQ(ds_of_dnskey(wire::Name(), key, 4)->size(), 4u + 48u);
}

TEST(TrustAnchorParse, BindsMultiLineKeyWithCommentsIsTheOneLineKey) {
  const std::string bind =
      "; This file holds the root's key-signing key.\n"
      "\n"
      ".\t\t\t172800\tIN DNSKEY 257 3 8 (\n"
      "\t\t\t\t" +
      kKsk2017.substr(0, 60) + "\n\t\t\t\t" + kKsk2017.substr(60, 120) +
      " ; part of the key\n"
      "\t\t\t\t" +
      kKsk2017.substr(180) +
      "\n"
      "\t\t\t\t) ; KSK; alg = RSASHA256 ; key id = 20326\n"
      "   ; an indented comment line is no record\n";
  const TrustAnchors multi = parse_ok(bind);
  const TrustAnchors one = parse_ok(". IN DNSKEY 257 3 8 " + kKsk2017 + "\n");
  EXPECT_EQ(multi, one);
  EXPECT_EQ(key_tag(multi.zones()[0].dnskey[0]), 20326);
  // The parentheses may also sit anywhere, the key be cut anywhere, and words follow ')'.
  const std::string odd = ". (IN\nDNSKEY 257 3 8 " + kKsk2017.substr(0, 7) + "\n" +
                          kKsk2017.substr(7, 100) + ") " + kKsk2017.substr(107) + "\n";
  EXPECT_EQ(parse_ok(odd), one);
}

TEST(TrustAnchorParse, TtlClassCaseMnemonicsSpacesAndCrLfAreTheSameRecord) {
  const TrustAnchors plain = parse_ok(". IN DS 20326 8 2 " + kDs2017 + "\n");
  for (const std::string& line : std::vector<std::string>{
           ". 172800 IN DS 20326 8 2 " + kDs2017,
           ". IN 172800 DS 20326 8 2 " + kDs2017,
           ". 0 DS 20326 8 2 " + kDs2017,
           ". DS 20326 8 2 " + kDs2017,
           ". in ds 20326 RSASHA256 2 " + kDs2017,
           ". CLASS1 Ds 20326 rsasha256 2 " + kDs2017,
           ".  \t IN DS 20326 8 2 " + kDs2017.substr(0, 32) + " 58e880409bbc683457104237c7f8ec8d",
           ". IN DS 20326 8 2 " + kDs2017 + "\r",
           ". IN DS 20326 8 2 " + kDs2017 + ";no blank before the comment",
       })
    EXPECT_EQ(parse_ok(line + "\n"), plain) << line;
  EXPECT_EQ(parse_ok(". IN DS 20326 8 2 " + kDs2017), plain);  // no final newline
}

TEST(TrustAnchorParse, Base64PaddingIsCutOffAndOnlyAtTheEnd) {
  // EVP_DecodeBlock gives 3 octets for every 4 characters, padding included: the parser
  // must cut them off.
  const auto key_of = [](const std::string& b64) {
    return parse_ok("example. IN DNSKEY 256 3 13 " + b64 + "\n").zones()[0].dnskey[0];
  };
  EXPECT_EQ(key_of("AQ=="), (Bytes{1, 0, 3, 13, 0x01}));
  EXPECT_EQ(key_of("AQI="), (Bytes{1, 0, 3, 13, 0x01, 0x02}));
  EXPECT_EQ(key_of("AQID"), (Bytes{1, 0, 3, 13, 0x01, 0x02, 0x03}));
  EXPECT_EQ(key_of("AQID BA=="), (Bytes{1, 0, 3, 13, 0x01, 0x02, 0x03, 0x04}));
  EXPECT_EQ(key_of("AA=="), (Bytes{1, 0, 3, 13, 0x00}));
  // What EVP_DecodeBlock alone would take.
  EXPECT_NE(parse_error("example. IN DNSKEY 256 3 13 A===\n").find("more than two '='"),
            std::string::npos);
  EXPECT_NE(parse_error("example. IN DNSKEY 256 3 13 AA=A\n").find("'=' inside"),
            std::string::npos);
  EXPECT_NE(parse_error("example. IN DNSKEY 256 3 13 AQ== AQ==\n").find("'=' inside"),
            std::string::npos);
  EXPECT_NE(parse_error("example. IN DNSKEY 256 3 13 ====\n").find("more than two '='"),
            std::string::npos);
}

TEST(TrustAnchorParse, ToTextParsesBackToTheSameAnchors) {
  const TrustAnchors t = parse_ok(kRootKey + kRootDs + "Example.TEST. IN DS 1 13 2 " + kDigest32 +
                                  "\nexample.test. IN DNSKEY 256 3 15 AQ==\n" +
                                  "a\\.b\\032c.test. IN DS 2 13 1 " + std::string(40, 'F') + "\n");
  const std::string text = t.to_text();
  EXPECT_EQ(parse_ok(text), t);
  EXPECT_EQ(parse_ok(text).to_text(), text);
  EXPECT_NE(text.find(". IN DS 20326 8 2 " + kDs2017 + "\n"), std::string::npos);
  EXPECT_NE(text.find(". IN DNSKEY 257 3 8 " + kKsk2017 + "\n"), std::string::npos);
  EXPECT_NE(text.find("example.test. IN DNSKEY 256 3 15 AQ==\n"), std::string::npos);
}

// --- Zones, lookup, letter case --------------------------------------------------------------

TEST(TrustAnchorLookup, TheDeepestAnchoredAncestorIsChosen) {
  const TrustAnchors t = parse_ok(kRootDs + "example.test. IN DS 1 13 2 " + kDigest32 + "\n");
  ASSERT_EQ(t.zones().size(), 2u);
  const ZoneAnchors* root = t.find(wire::Name());
  const ZoneAnchors* example = t.find(name("example.test."));
  ASSERT_NE(root, nullptr);
  ASSERT_NE(example, nullptr);
  EXPECT_EQ(t.closest(name("www.example.test.")), example);
  EXPECT_EQ(t.closest(name("a.b.c.www.example.test.")), example);
  EXPECT_EQ(t.closest(name("example.test.")), example);
  EXPECT_EQ(t.closest(name("test.")), root);
  EXPECT_EQ(t.closest(name("badexample.test.")), root);
  EXPECT_EQ(t.closest(name("www.example.com.")), root);
  EXPECT_EQ(t.closest(wire::Name()), root);
  EXPECT_EQ(t.find(name("test.")), nullptr);
}

TEST(TrustAnchorLookup, AnInsecureZoneHidesTheAnchorsAboveItButNotOneBelowIt) {
  TrustAnchors t = parse_ok(kRootDs + "signed.corp.test. IN DS 1 13 2 " + kDigest32 + "\n");
  const ZoneAnchors* root = t.find(wire::Name());
  const ZoneAnchors* deeper = t.find(name("signed.corp.test."));
  ASSERT_NE(root, nullptr);
  ASSERT_NE(deeper, nullptr);
  EXPECT_EQ(t.closest(name("www.corp.test.")), root);
  t.add_insecure(name("Corp.TEST."));
  t.add_insecure(name("corp.test."));  // the same, kept once
  t.add_insecure(name("a.example."));
  ASSERT_EQ(t.insecure().size(), 2u);
  EXPECT_EQ(t.insecure()[0], name("a.example."));  // canonical order
  EXPECT_EQ(t.closest(name("corp.test.")), nullptr);
  EXPECT_EQ(t.closest(name("www.CORP.test.")), nullptr);
  EXPECT_EQ(t.closest(name("x.signed.corp.test.")), deeper) << "an anchor below it still holds";
  EXPECT_EQ(t.closest(name("test.")), root);
  EXPECT_EQ(t.closest(name("notcorp.test.")), root);
  EXPECT_EQ(t.closest(name("example.")), root);
  // Not part of the file.
  EXPECT_TRUE(parse_ok(t.to_text()).insecure().empty());
  EXPECT_TRUE(t.anchored_at_or_below(name("corp.test.")));
  EXPECT_TRUE(t.anchored_at_or_below(name("signed.corp.test.")));
  EXPECT_FALSE(t.anchored_at_or_below(name("www.signed.corp.test.")));
  EXPECT_FALSE(t.anchored_at_or_below(name("other.test.")));
  EXPECT_TRUE(t.anchored_at_or_below(wire::Name()));
}

TEST(TrustAnchorLookup, WithoutARootAnchorANameOutsideTheZonesHasNone) {
  const TrustAnchors t = parse_ok("example.test. IN DS 1 13 2 " + kDigest32 + "\n");
  EXPECT_EQ(t.closest(name("www.example.test.")), t.find(name("example.test.")));
  EXPECT_EQ(t.closest(name("example.com.")), nullptr);
  EXPECT_EQ(t.closest(wire::Name()), nullptr);
  EXPECT_EQ(TrustAnchors().closest(wire::Name()), nullptr);
}

TEST(TrustAnchorLookup, NamesIgnoreCaseAndTheSameAnchorTwiceIsKeptOnce) {
  const TrustAnchors t =
      parse_ok("EXAMPLE.Test. IN DS 1 13 2 " + kDigest32 + "\nexample.test. IN DS 1 13 2 " +
               kDigest32 + "\nexample.TEST. IN DS 2 13 2 " + kDigest32 + "\n");
  ASSERT_EQ(t.zones().size(), 1u);
  EXPECT_EQ(t.count(), 2u);
  EXPECT_TRUE(t.zones()[0].zone.identical(name("example.test.")));  // kept lowercased
  EXPECT_EQ(t.find(name("Example.TEST.")), &t.zones()[0]);
  EXPECT_EQ(t.closest(name("WWW.EXAMPLE.TEST.")), &t.zones()[0]);
  EXPECT_EQ(first16(t.zones()[0].ds[0]), 1);  // sorted
  EXPECT_EQ(first16(t.zones()[0].ds[1]), 2);
}

TEST(TrustAnchorLookup, ZonesAreInCanonicalOrder) {
  const TrustAnchors t =
      parse_ok("b.test. IN DS 1 13 2 " + kDigest32 + "\na.b.test. IN DS 1 13 2 " + kDigest32 +
               "\n. IN DS 1 13 2 " + kDigest32 + "\na.test. IN DS 1 13 2 " + kDigest32 + "\n");
  ASSERT_EQ(t.zones().size(), 4u);
  EXPECT_TRUE(t.zones()[0].zone.is_root());
  EXPECT_EQ(t.zones()[1].zone, name("a.test."));
  EXPECT_EQ(t.zones()[2].zone, name("b.test."));
  EXPECT_EQ(t.zones()[3].zone, name("a.b.test."));
}

// --- What is refused -------------------------------------------------------------------------

struct Bad {
  std::string text;
  std::string where;  ///< "test.key:N:"
  std::string says;   ///< a part of the message
};

TEST(TrustAnchorParse, EveryMalformedRecordIsRefusedWithItsLineAndWhatIsWrong) {
  const std::string ok = ". IN DS 20326 8 2 " + kDs2017 + "\n";
  const std::string ok2 = "; comment\n\n" + ok;  // the bad line is line 4
  const std::vector<Bad> cases = {
      {ok2 + ". IN A 192.0.2.1\n", "test.key:4:", "type 'A' cannot be a trust anchor"},
      {ok2 + ". IN RRSIG DNSKEY 8 0 172800\n", "test.key:4:", "type 'RRSIG'"},
      {ok2 + ". CH DS 20326 8 2 " + kDs2017 + "\n", "test.key:4:", "class 'CH'"},
      {ok2 + ". CLASS3 DS 20326 8 2 " + kDs2017 + "\n", "test.key:4:", "class 'CLASS3'"},
      {ok2 + ". IN DS 20326 8 2 " + kDs2017.substr(0, 62) + "GG\n",
       "test.key:4:", "'G' is not a hex digit"},
      {ok2 + ". IN DS 20326 8 2 " + kDs2017 + "0\n", "test.key:4:", "odd number (65)"},
      {ok2 + ". IN DS 20326 8 2 " + kDs2017.substr(0, 62) + "\n",
       "test.key:4:", "digest of 31 octets (62 hex digits), but digest type 2 (SHA-256) has 32"},
      {ok2 + ". IN DS 20326 8 1 " + kDs2017 + "\n", "test.key:4:", "digest type 1 (SHA-1) has 20"},
      {ok2 + ". IN DS 20326 8 4 " + kDs2017 + "\n",
       "test.key:4:", "digest type 4 (SHA-384) has 48"},
      {ok2 + ". IN DS 20326 8 2\n", "test.key:4:", "ends before its digest"},
      {ok2 + ". IN DS 65536 8 2 " + kDs2017 + "\n", "test.key:4:", "key tag '65536'"},
      {ok2 + ". IN DS 20326 0 2 " + kDs2017 + "\n", "test.key:4:", "algorithm 0 is reserved"},
      {ok2 + ". IN DS 20326 RSA 2 " + kDs2017 + "\n", "test.key:4:", "algorithm 'RSA'"},
      {ok2 + ". IN DS 20326 256 2 " + kDs2017 + "\n", "test.key:4:", "algorithm '256'"},
      {ok2 + ". IN DS 20326 8 0 " + kDs2017 + "\n", "test.key:4:", "digest type 0 is reserved"},
      {ok2 + ". IN DS 20326 8 SHA256 " + kDs2017 + "\n", "test.key:4:", "digest type 'SHA256'"},
      {ok2 + ". IN DNSKEY 257 4 8 " + kKsk2017 + "\n", "test.key:4:", "protocol '4' is not 3"},
      {ok2 + ". IN DNSKEY 1 3 8 " + kKsk2017 + "\n", "test.key:4:", "lack the Zone Key flag"},
      {ok2 + ". IN DNSKEY 385 3 8 " + kKsk2017 + "\n", "test.key:4:", "REVOKE flag"},
      {ok2 + ". IN DNSKEY 257 3 8\n", "test.key:4:", "ends before its public key"},
      {ok2 + ". IN DNSKEY 257 3 8 " + kKsk2017.substr(1) + "\n",
       "test.key:4:", "not a multiple of 4"},
      {ok2 + ". IN DNSKEY 257 3 8 AwEA!aaa\n", "test.key:4:", "'!' is not a base64 character"},
      {ok2 + "example.com IN DS 1 8 2 " + kDs2017 + "\n",
       "test.key:4:", "'example.com' is relative"},
      {ok2 + "example\\. IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "is relative"},
      {ok2 + "@ IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "'@' means the $ORIGIN"},
      {ok2 + "$ORIGIN .\n", "test.key:4:", "directive '$ORIGIN'"},
      {ok2 + "a..b. IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "empty label"},
      {ok2 + std::string(64, 'a') + ". IN DS 1 8 2 " + kDs2017 + "\n",
       "test.key:4:", "longer than 63"},
      {ok2 + "a\\300. IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "bad escape"},
      {ok2 + ".\n", "test.key:4:", "ends before its type"},
      {ok2 + ". 172800\n", "test.key:4:", "ends before its type"},
      {ok2 + ". 2d IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "TTL '2d'"},
      {ok2 + ". 2147483648 IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "TTL '2147483648'"},
      {ok2 + ". 1 IN 2 DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "a second TTL"},
      {ok2 + ". IN IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "class IN is given twice"},
      {ok2 + "  IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "has no owner name"},
      {ok2 + ". IN DS 1 8 2 ) " + kDs2017 + "\n", "test.key:4:", "')' without an '('"},
      {ok2 + ". IN DNSKEY 257 3 8 ( AwEA ( AwEA )\n", "test.key:4:", "do not nest"},
      {ok2 + ". IN DNSKEY 257 3 8 (\n AwEAAa==\n\n", "test.key:4:", "'(' is never closed"},
      {ok2 + ". IN DS 1 8 2 \"" + kDs2017 + "\"\n", "test.key:4:", "quoted string"},
      {ok2 + ". IN DS 1 8 2 " + kDs2017 + "\x01\n", "test.key:4:", "byte 1 is not printable"},
      {ok2 + ". IN DS 1 8 2 \xc3\xa9" + kDs2017 + "\n", "test.key:4:", "byte 195"},
      {ok2 + "a\\\x7f. IN DS 1 8 2 " + kDs2017 + "\n", "test.key:4:", "byte 127"},
      // The line of a multi-line record is the one it begins on.
      {ok2 + ". IN DNSKEY 257 3 8 (\n AwEA\n !!!! )\n", "test.key:4:", "'!'"},
      // The first line in error is the one reported, whatever is wrong further on.
      {". IN DNSKEY 1 3 8 AQ==\n  IN DS ) 1\n", "test.key:1:", "Zone Key flag"},
      {"", "test.key:", "no DS or DNSKEY record"},
      {"; only a comment\n\n   \n", "test.key:", "no DS or DNSKEY record"},
  };
  for (const Bad& b : cases) {
    const std::string e = parse_error(b.text);
    EXPECT_EQ(e.rfind(b.where, 0), 0u) << "text: " << b.text << "\nmessage: " << e;
    EXPECT_NE(e.find(b.says), std::string::npos) << "text: " << b.text << "\nmessage: " << e;
  }
}

TEST(TrustAnchorParse, ALongWordIsCutShortInTheMessage) {
  const std::string e = parse_error(". IN DS 1 8 2 " + kDs2017 + "\n" + std::string(1000, 'x') +
                                    " IN DS 1 8 2 " + kDs2017 + "\n");
  EXPECT_EQ(e.rfind("test.key:2: the owner name 'xxxx", 0), 0u) << e;
  EXPECT_LT(e.size(), 200u);
}

TEST(TrustAnchorParse, TheSizesAreBounded) {
  const std::string ok = ". IN DS 20326 8 2 " + kDs2017 + "\n";
  // A file just over 1 MiB, all comments.
  std::string big(kMaxTrustAnchorFileBytes + 1, ';');
  EXPECT_EQ(parse_error(big).rfind("test.key: 1048577 bytes, more than the 1048576", 0), 0u);
  big.resize(kMaxTrustAnchorFileBytes);
  for (std::size_t i = 1000; i < big.size(); i += 1000)
    big[i] = '\n';
  big.replace(0, ok.size(), ok);
  EXPECT_TRUE(parse_trust_anchors(big, "test.key"));
  // A line over 64 KiB, even a comment.
  const std::string long_line = ok + ";" + std::string(kMaxTrustAnchorLineBytes, 'x') + "\n";
  EXPECT_EQ(parse_error(long_line).rfind("test.key:2: the line is longer than 65536", 0), 0u);
  EXPECT_TRUE(parse_trust_anchors(ok + ";" + std::string(kMaxTrustAnchorLineBytes - 1, 'x') + "\n",
                                  "test.key"));
  // 1000 anchors, then one more.
  std::string many;
  for (std::size_t i = 0; i < kMaxTrustAnchors; ++i)
    many += ". IN DS " + std::to_string(i) + " 8 2 " + kDs2017 + "\n";
  const auto r = parse_trust_anchors(many, "test.key");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->count(), kMaxTrustAnchors);
  many += ok;
  EXPECT_EQ(parse_error(many).rfind("test.key:1001: more than 1000 trust anchors", 0), 0u);
  // A record of more than 65535 octets (over many lines in parentheses).
  std::string huge = ". IN DNSKEY 257 3 8 (\n";
  for (int i = 0; i < 1000; ++i)
    huge += std::string(88, 'A') + "\n";
  huge += ")\n";
  EXPECT_NE(parse_error(huge).find("more than the 65535"), std::string::npos);
}

// --- Files -----------------------------------------------------------------------------------

class TrustAnchorFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hg-trust-anchor-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& file, const std::string& text) {
    std::string path = dir_ / file;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(TrustAnchorFile, AFileIsReadAndItsErrorsNameItsPath) {
  const std::string good = write("good.key", kRootKey);
  const auto r = load_trust_anchors(good);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, parse_ok(kRootKey));
  const std::string bad = write("bad.key", kRootKey + ". IN NS a.root-servers.net.\n");
  const auto e = load_trust_anchors(bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().rfind(bad + ":3: type 'NS'", 0), 0u) << e.error();
}

TEST_F(TrustAnchorFile, AMissingFileSaysSoAndADirectoryIsNoFile) {
  const std::string missing = (dir_ / "missing.key").string();
  const auto r = load_trust_anchors(missing);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("cannot open the trust anchor file " + missing), std::string::npos);
  EXPECT_NE(r.error().find("No such file"), std::string::npos);
  // The dns-root-data hint is for the default path only.
  EXPECT_EQ(r.error().find("dns-root-data"), std::string::npos);
  const auto d = load_trust_anchors(dir_.string());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().find("is not a regular file"), std::string::npos) << d.error();
  const std::string big = write("big.key", std::string(kMaxTrustAnchorFileBytes + 1, ';'));
  const auto b = load_trust_anchors(big);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().find("is larger than 1048576 bytes"), std::string::npos) << b.error();
}

}  // namespace
}  // namespace hg::dnssec
