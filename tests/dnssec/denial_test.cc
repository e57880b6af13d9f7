// dnssec/denial.h: NSEC, NSEC3 and NSEC3PARAM RDATA parsed (and refused when malformed), the
// NSEC3 hash against RFC 5155 Appendix A, base32hex against RFC 4648 §10, and the proofs
// against the responses of RFC 4035 Appendix B (NSEC) and RFC 5155 Appendix B (NSEC3), built
// from the records of their example zones, each also with a record missing or a bit changed.
#include "dnssec/denial.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "tests/wire/packet_builder.h"

namespace hg::dnssec {
namespace {

using Bytes = std::vector<uint8_t>;
using wire::test::wire_name;
using N = std::vector<NsecRecord>;
using N3 = std::vector<Nsec3Record>;

// RR type codes (IANA registry).
constexpr uint16_t A = 1, NS = 2, CNAME = 5, SOA = 6, HINFO = 13, MX = 15, AAAA = 28, DNAME = 39,
                   DS = 43, RRSIG = 46, NSEC = 47, DNSKEY = 48, NSEC3PARAM = 51;

constexpr DenialVerdict kProven = DenialVerdict::Proven;
constexpr DenialVerdict kInsecure = DenialVerdict::ProvenInsecure;
constexpr DenialVerdict kNotProven = DenialVerdict::NotProven;

wire::Name name(const char* text) {
  return *wire::Name::from_text(text);
}

// A Type Bit Maps field written here, not by encode_type_bitmap(): windows in order, each as
// long as its highest type needs (RFC 4034 §4.1.2).
Bytes bitmap(const std::vector<uint16_t>& types) {
  std::map<int, Bytes> windows;
  for (const uint16_t t : types) {
    Bytes& w = windows[t >> 8];
    const std::size_t octet = (t & 0xff) / 8;
    if (w.size() <= octet) w.resize(octet + 1, 0);
    w[octet] = static_cast<uint8_t>(w[octet] | (0x80 >> (t & 7)));
  }
  Bytes out;
  for (const auto& [window, bits] : windows) {
    out.push_back(static_cast<uint8_t>(window));
    out.push_back(static_cast<uint8_t>(bits.size()));
    out.insert(out.end(), bits.begin(), bits.end());
  }
  return out;
}

NsecRecord nsec(const char* owner, const char* next, const std::vector<uint16_t>& types) {
  Bytes rdata = wire_name(next);
  const Bytes b = bitmap(types);
  rdata.insert(rdata.end(), b.begin(), b.end());
  return {name(owner), rdata};
}

const Bytes kSalt{0xaa, 0xbb, 0xcc, 0xdd};  // RFC 5155 Appendix A

Bytes nsec3_rdata(uint8_t flags, uint16_t iterations, const Bytes& salt, const Bytes& next,
                  const Bytes& types, uint8_t algorithm = 1) {
  Bytes r{algorithm, flags, static_cast<uint8_t>(iterations >> 8), static_cast<uint8_t>(iterations),
          static_cast<uint8_t>(salt.size())};
  r.insert(r.end(), salt.begin(), salt.end());
  r.push_back(static_cast<uint8_t>(next.size()));
  r.insert(r.end(), next.begin(), next.end());
  r.insert(r.end(), types.begin(), types.end());
  return r;
}

Bytes unbase32(const std::string& text) {
  auto b = base32hex_decode(text);
  EXPECT_TRUE(b) << text;
  return b ? *b : Bytes{};
}

// An NSEC3 of the RFC 5155 Appendix A zone (salt aabbccdd, 12 iterations).
Nsec3Record nsec3(const std::string& owner, const std::string& next,
                  const std::vector<uint16_t>& types, uint8_t flags) {
  return {name((owner + ".example").c_str()),
          nsec3_rdata(flags, 12, kSalt, unbase32(next), bitmap(types))};
}

// The NSEC3 chain of RFC 5155 Appendix A, by the first four characters of the owner hash.
// The RFC signs every one with the Opt-Out flag; `flags` 0 gives the same chain without.
Nsec3Record rfc5155(const std::string& key, uint8_t flags = 1) {
  struct Row {
    const char* owner;
    const char* next;
    std::vector<uint16_t> types;
  };
  static const std::map<std::string, Row> chain = {
      {"0p9m",
       {"0p9mhaveqvm6t7vbl5lop2u3t2rp3tom",
        "2t7b4g4vsa5smi47k61mv5bv1a22bojr",
        {MX, DNSKEY, NS, SOA, NSEC3PARAM, RRSIG}}},  // example
      {"2t7b",
       {"2t7b4g4vsa5smi47k61mv5bv1a22bojr",
        "2vptu5timamqttgl4luu9kg21e0aor3s",
        {A, RRSIG}}},  // ns1.example
      {"2vpt",
       {"2vptu5timamqttgl4luu9kg21e0aor3s",
        "35mthgpgcu1qg68fab165klnsnk3dpvl",
        {MX, RRSIG}}},  // x.y.w.example
      {"35mt",
       {"35mthgpgcu1qg68fab165klnsnk3dpvl",
        "b4um86eghhds6nea196smvmlo4ors995",
        {NS, DS, RRSIG}}},  // a.example
      {"b4um",
       {"b4um86eghhds6nea196smvmlo4ors995",
        "gjeqe526plbf1g8mklp59enfd789njgi",
        {MX, RRSIG}}},  // x.w.example
      {"gjeq",
       {"gjeqe526plbf1g8mklp59enfd789njgi",
        "ji6neoaepv8b5o6k4ev33abha8ht9fgc",
        {A, HINFO, AAAA, RRSIG}}},  // ai.example
      {"ji6n",
       {"ji6neoaepv8b5o6k4ev33abha8ht9fgc",
        "k8udemvp1j2f7eg6jebps17vp3n8i58h",
        {}}},  // y.w.example, an empty non-terminal
      {"k8ud",
       {"k8udemvp1j2f7eg6jebps17vp3n8i58h",
        "kohar7mbb8dc2ce8a9qvl8hon4k53uhi",
        {}}},  // w.example, an empty non-terminal
      {"koha",
       {"kohar7mbb8dc2ce8a9qvl8hon4k53uhi",
        "q04jkcevqvmu85r014c7dkba38o0ji5r",
        {A, RRSIG}}},  // 2t7b4g4vsa5smi47k61mv5bv1a22bojr.example
      {"q04j",
       {"q04jkcevqvmu85r014c7dkba38o0ji5r",
        "r53bq7cc2uvmubfu5ocmm6pers9tk9en",
        {A, RRSIG}}},  // ns2.example
      {"r53b",
       {"r53bq7cc2uvmubfu5ocmm6pers9tk9en",
        "t644ebqk9bibcna874givr6joj62mlhv",
        {MX, RRSIG}}},  // *.w.example
      {"t644",
       {"t644ebqk9bibcna874givr6joj62mlhv",
        "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom",
        {A, HINFO, AAAA, RRSIG}}},  // xx.example
  };
  const Row& r = chain.at(key);
  return nsec3(r.owner, r.next, r.types, flags);
}

std::vector<Nsec3Record> rfc5155(std::initializer_list<const char*> keys, uint8_t flags = 1) {
  std::vector<Nsec3Record> out;
  for (const char* k : keys)
    out.push_back(rfc5155(k, flags));
  return out;
}

// The same record with another bitmap.
Nsec3Record with_types(const std::string& key, const std::vector<uint16_t>& types,
                       uint8_t flags = 1) {
  Nsec3Record r = rfc5155(key, flags);
  const auto p = parse_nsec3(r.rdata);
  Bytes next(p->next_hashed.begin(), p->next_hashed.end());
  r.rdata = nsec3_rdata(flags, 12, kSalt, next, bitmap(types));
  return r;
}

// A budget no proof here comes near.
HashBudget ample() {
  return HashBudget(1'000'000);
}

// --- Type bitmaps and RDATA ---

TEST(TypeBitmap, TypesInSeveralWindowsAreFoundAndOthersNot) {
  const Bytes b = bitmap({A, MX, RRSIG, NSEC, 1234, 65535});
  const auto t = TypeBitmap::parse(b);
  ASSERT_TRUE(t);
  for (uint16_t type : {A, MX, RRSIG, NSEC, uint16_t{1234}, uint16_t{65535}})
    EXPECT_TRUE(t->has(type)) << type;
  for (uint16_t type :
       {uint16_t{0}, NS, AAAA, DS, uint16_t{1233}, uint16_t{1235}, uint16_t{260}, uint16_t{65534}})
    EXPECT_FALSE(t->has(type)) << type;
  EXPECT_EQ(t->types(), (std::vector<uint16_t>{A, MX, RRSIG, NSEC, 1234, 65535}));
  EXPECT_EQ(encode_type_bitmap(t->types()), b);
  const std::vector<uint16_t> shuffled{65535, NSEC, A, 1234, RRSIG, MX, A};
  EXPECT_EQ(encode_type_bitmap(shuffled), b);

  const auto empty = TypeBitmap::parse({});
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->has(A));
  EXPECT_TRUE(empty->types().empty());
}

TEST(TypeBitmap, MalformedBitmapsAreRefused) {
  const std::vector<Bytes> bad = {
      {0},                       // a window number and no length
      {0, 0},                    // bitmap length 0
      {0, 33, 1},                // length above 32 (and short)
      {0, 2, 0x40},              // runs off the end
      {0, 1, 0x00},              // a block with no types
      {0, 2, 0x40, 0x00},        // a trailing zero octet
      {1, 1, 0x40, 0, 1, 0x40},  // windows out of order
      {0, 1, 0x40, 0, 1, 0x20},  // the same window twice
      {0, 1, 0x40, 4},           // a second block cut short
  };
  for (const Bytes& b : bad)
    EXPECT_FALSE(TypeBitmap::parse(b)) << ::testing::PrintToString(b);
  Bytes long_window{0, 33};
  long_window.insert(long_window.end(), 33, 0xff);
  EXPECT_FALSE(TypeBitmap::parse(long_window));
  Bytes full_window{0, 32};
  full_window.insert(full_window.end(), 32, 0xff);
  ASSERT_TRUE(TypeBitmap::parse(full_window));
  EXPECT_EQ(TypeBitmap::parse(full_window)->types().size(), 256u);
}

TEST(ParseNsec, TheNextNameAndTypesAreReadAndMalformedOnesRefused) {
  const NsecRecord r = nsec("ai.example", "B.example", {A, HINFO, AAAA, RRSIG, NSEC});
  const auto p = parse_nsec(r.rdata);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->next, name("b.example"));
  EXPECT_EQ(p->next.wire()[1], 'B');  // the case is kept (RFC 6840 §5.1)
  EXPECT_TRUE(p->types.has(HINFO));
  EXPECT_FALSE(p->types.has(MX));

  EXPECT_FALSE(parse_nsec({}));
  Bytes pointer{0xc0, 0x0c, 0, 1, 0x40};  // a compressed next name
  EXPECT_FALSE(parse_nsec(pointer));
  Bytes unterminated{3, 'c', 'o', 'm'};
  EXPECT_FALSE(parse_nsec(unterminated));
  Bytes bad_bitmap = wire_name("b.example");
  bad_bitmap.insert(bad_bitmap.end(), {0, 2, 0x40, 0});
  EXPECT_FALSE(parse_nsec(bad_bitmap));
  Bytes too_long;
  for (int i = 0; i < 5; ++i) {
    too_long.push_back(63);
    too_long.insert(too_long.end(), 63, 'a');
  }
  too_long.push_back(0);
  EXPECT_FALSE(parse_nsec(too_long));  // a next name over 255 octets
}

TEST(ParseNsec3, TheFieldsAreReadAndMalformedOnesRefused) {
  const Nsec3Record r = rfc5155("35mt");
  const auto p = parse_nsec3(r.rdata);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->hash_algorithm, 1);
  EXPECT_EQ(p->flags, 1);
  EXPECT_TRUE(p->opt_out());
  EXPECT_EQ(p->iterations, 12);
  EXPECT_EQ(Bytes(p->salt.begin(), p->salt.end()), kSalt);
  EXPECT_EQ(base32hex_encode(p->next_hashed), "b4um86eghhds6nea196smvmlo4ors995");
  EXPECT_TRUE(p->types.has(DS));
  EXPECT_FALSE(p->types.has(SOA));

  const Bytes no_salt_rdata = nsec3_rdata(0, 0, {}, Bytes(20, 7), {});
  const auto no_salt = parse_nsec3(no_salt_rdata);
  ASSERT_TRUE(no_salt);
  EXPECT_TRUE(no_salt->salt.empty());
  EXPECT_FALSE(no_salt->opt_out());
  EXPECT_TRUE(no_salt->types.types().empty());

  EXPECT_FALSE(parse_nsec3(Bytes{1, 0, 0, 12}));                 // no salt length
  EXPECT_FALSE(parse_nsec3(Bytes{1, 0, 0, 12, 4, 0xaa, 0xbb}));  // salt cut short
  EXPECT_FALSE(parse_nsec3(Bytes{1, 0, 0, 0, 0}));               // no hash length
  EXPECT_FALSE(parse_nsec3(nsec3_rdata(0, 0, {}, {}, {})));      // hash length 0
  Bytes short_hash = nsec3_rdata(0, 0, {}, Bytes(20, 7), {});
  short_hash.resize(short_hash.size() - 1);
  EXPECT_FALSE(parse_nsec3(short_hash));
  EXPECT_FALSE(parse_nsec3(nsec3_rdata(0, 0, {}, Bytes(20, 7), {0, 1, 0})));  // bad bitmap
}

TEST(ParseNsec3Param, TheFieldsAreReadAndTrailingBytesRefused) {
  const Bytes rdata{1, 0, 0, 12, 4, 0xaa, 0xbb, 0xcc, 0xdd};
  const auto p = parse_nsec3param(rdata);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->hash_algorithm, 1);
  EXPECT_EQ(p->iterations, 12);
  EXPECT_EQ(Bytes(p->salt.begin(), p->salt.end()), kSalt);
  EXPECT_TRUE(parse_nsec3param(Bytes{1, 0, 0, 0, 0}));
  EXPECT_FALSE(parse_nsec3param(Bytes{1, 0, 0, 12}));
  EXPECT_FALSE(parse_nsec3param(Bytes{1, 0, 0, 12, 4, 0xaa}));
  EXPECT_FALSE(parse_nsec3param(Bytes{1, 0, 0, 0, 0, 0}));
}

// --- base32hex and the NSEC3 hash ---

TEST(Base32Hex, Rfc4648TestVectorsWithoutPadding) {
  // RFC 4648 §10, BASE32-HEX, lowercase and without the padding NSEC3 labels leave out.
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", ""},
      {"f", "co"},
      {"fo", "cpng"},
      {"foo", "cpnmu"},
      {"foob", "cpnmuog"},
      {"fooba", "cpnmuoj1"},
      {"foobar", "cpnmuoj1e8"},
  };
  for (const auto& [plain, encoded] : vectors) {
    const Bytes bytes(plain.begin(), plain.end());
    EXPECT_EQ(base32hex_encode(bytes), encoded);
    EXPECT_EQ(base32hex_decode(encoded), bytes) << encoded;
  }
  EXPECT_EQ(base32hex_decode("CPNMUOJ1E8"), Bytes({'f', 'o', 'o', 'b', 'a', 'r'}));
  EXPECT_FALSE(base32hex_decode("cpnmuoj1e8======"));  // padding
  EXPECT_FALSE(base32hex_decode("cw"));                // 'w' is not base32hex
  EXPECT_FALSE(base32hex_decode("c"));                 // no whole octet
  EXPECT_FALSE(base32hex_decode("cpn"));
  EXPECT_FALSE(base32hex_decode("cp"));  // "f" with a bit set in what is left over
}

TEST(Nsec3Hash, Rfc5155AppendixA) {
  // RFC 5155 Appendix A: the hashed owner names of the example zone, salt aabbccdd, 12
  // iterations.
  const std::vector<std::pair<const char*, const char*>> table = {
      {"example", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"},
      {"a.example", "35mthgpgcu1qg68fab165klnsnk3dpvl"},
      {"ai.example", "gjeqe526plbf1g8mklp59enfd789njgi"},
      {"ns1.example", "2t7b4g4vsa5smi47k61mv5bv1a22bojr"},
      {"ns2.example", "q04jkcevqvmu85r014c7dkba38o0ji5r"},
      {"w.example", "k8udemvp1j2f7eg6jebps17vp3n8i58h"},
      {"*.w.example", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"},
      {"x.w.example", "b4um86eghhds6nea196smvmlo4ors995"},
      {"y.w.example", "ji6neoaepv8b5o6k4ev33abha8ht9fgc"},
      {"x.y.w.example", "2vptu5timamqttgl4luu9kg21e0aor3s"},
      {"xx.example", "t644ebqk9bibcna874givr6joj62mlhv"},
      {"2t7b4g4vsa5smi47k61mv5bv1a22bojr.example", "kohar7mbb8dc2ce8a9qvl8hon4k53uhi"},
  };
  for (const auto& [owner, hashed] : table) {
    const auto h = nsec3_hash(name(owner), kSalt, 12);
    ASSERT_TRUE(h) << owner;
    EXPECT_EQ(base32hex_encode(*h), hashed) << owner;
    // The owner's hash label decodes back to the same 20 octets.
    const auto back =
        nsec3_owner_hash(name((std::string(hashed) + ".example").c_str()), name("example"));
    ASSERT_TRUE(back) << hashed;
    EXPECT_EQ(*back, *h);
  }
  // The canonical form is lowercase: case does not change the hash.
  EXPECT_EQ(nsec3_hash(name("X.W.Example"), kSalt, 12), nsec3_hash(name("x.w.example"), kSalt, 12));
  // Iterations and salt count.
  EXPECT_NE(nsec3_hash(name("example"), kSalt, 11), nsec3_hash(name("example"), kSalt, 12));
  EXPECT_NE(nsec3_hash(name("example"), {}, 12), nsec3_hash(name("example"), kSalt, 12));
}

TEST(Nsec3Hash, OwnerHashesAreOnlyTakenFromOneLabelOfBase32HexBelowTheZone) {
  const wire::Name zone = name("example");
  EXPECT_TRUE(nsec3_owner_hash(name("0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM.example"), zone));
  EXPECT_FALSE(nsec3_owner_hash(name("0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.org"), zone));
  EXPECT_FALSE(nsec3_owner_hash(name("0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.sub.example"), zone));
  EXPECT_FALSE(nsec3_owner_hash(name("0p9mhaveqvm6t7vbl5lop2u3t2rp3to.example"), zone));
  EXPECT_FALSE(nsec3_owner_hash(name("wp9mhaveqvm6t7vbl5lop2u3t2rp3tom.example"), zone));
  EXPECT_FALSE(nsec3_owner_hash(zone, zone));
}

// --- Canonical order and NSEC intervals ---

TEST(CanonicalOrder, WireNameOrdersAsRfc4034Section6_1) {
  // RFC 4034 §6.1's example, in order: wire::Name's operator<=> is the canonical order.
  const std::vector<wire::Name> names = {
      name("example"),         name("a.example"),      name("yljkjljk.a.example"),
      name("Z.a.example"),     name("zABC.a.EXAMPLE"), name("z.example"),
      name("\\001.z.example"), name("*.z.example"),    name("\\200.z.example"),
  };
  for (std::size_t i = 0; i + 1 < names.size(); ++i)
    EXPECT_LT(names[i], names[i + 1]) << names[i].to_text() << " " << names[i + 1].to_text();
}

TEST(NsecCovers, StrictlyBetweenAndWrappingAroundAtTheLastRecord) {
  EXPECT_TRUE(nsec_covers(name("b.example"), name("ns1.example"), name("ml.example")));
  EXPECT_TRUE(nsec_covers(name("b.example"), name("ns1.example"), name("mc.b.example")));
  EXPECT_FALSE(nsec_covers(name("b.example"), name("ns1.example"), name("b.example")));
  EXPECT_FALSE(nsec_covers(name("b.example"), name("ns1.example"), name("ns1.example")));
  EXPECT_FALSE(nsec_covers(name("b.example"), name("ns1.example"), name("a.example")));
  EXPECT_FALSE(nsec_covers(name("b.example"), name("ns1.example"), name("ns2.example")));
  // The last NSEC of the zone: from xx.example back to the apex.
  EXPECT_TRUE(nsec_covers(name("xx.example"), name("example"), name("zz.example")));
  EXPECT_TRUE(nsec_covers(name("xx.example"), name("example"), name("a.xx.example")));
  EXPECT_FALSE(nsec_covers(name("xx.example"), name("example"), name("xx.example")));
  EXPECT_FALSE(nsec_covers(name("xx.example"), name("example"), name("example")));
  EXPECT_FALSE(nsec_covers(name("xx.example"), name("example"), name("a.example")));
  // A zone of one name: its NSEC covers everything but itself.
  EXPECT_TRUE(nsec_covers(name("example"), name("example"), name("a.example")));
  EXPECT_FALSE(nsec_covers(name("example"), name("example"), name("example")));

  EXPECT_TRUE(nsec_matches(name("NS1.example"), name("ns1.EXAMPLE")));
  EXPECT_FALSE(nsec_matches(name("ns1.example"), name("ns2.example")));

  EXPECT_EQ(nsec_closest_encloser(name("b.example"), name("ns1.example"), name("ml.example")),
            name("example"));
  EXPECT_EQ(
      nsec_closest_encloser(name("x.w.example"), name("x.y.w.example"), name("a.c.x.w.example")),
      name("x.w.example"));
  EXPECT_EQ(nsec_closest_encloser(name("ns2.example"), name("*.w.example"), name("a.w.example")),
            name("w.example"));
}

// --- NSEC proofs: RFC 4035 Appendix A's zone, Appendix B's responses ---

// The NSEC chain of RFC 4035 Appendix A.
NsecRecord rfc4035(const char* owner) {
  static const std::map<std::string, std::pair<const char*, std::vector<uint16_t>>> chain = {
      {"example", {"a.example", {NS, SOA, MX, RRSIG, NSEC, DNSKEY}}},
      {"a.example", {"ai.example", {NS, DS, RRSIG, NSEC}}},
      {"ai.example", {"b.example", {A, HINFO, AAAA, RRSIG, NSEC}}},
      {"b.example", {"ns1.example", {NS, RRSIG, NSEC}}},
      {"ns1.example", {"ns2.example", {A, RRSIG, NSEC}}},
      {"ns2.example", {"*.w.example", {A, RRSIG, NSEC}}},
      {"*.w.example", {"x.w.example", {MX, RRSIG, NSEC}}},
      {"x.w.example", {"x.y.w.example", {MX, RRSIG, NSEC}}},
      {"x.y.w.example", {"xx.example", {MX, RRSIG, NSEC}}},
      {"xx.example", {"example", {A, HINFO, AAAA, RRSIG, NSEC}}},
  };
  const auto& [next, types] = chain.at(owner);
  return nsec(owner, next, types);
}

std::vector<NsecRecord> rfc4035(std::initializer_list<const char*> owners) {
  std::vector<NsecRecord> out;
  for (const char* o : owners)
    out.push_back(rfc4035(o));
  return out;
}

const wire::Name kExample = name("example");

TEST(NsecProof, B2NameError) {
  // ml.example: b.example's NSEC covers it, example's covers *.example.
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"b.example", "example"}), name("ml.example"), kExample),
            kProven);
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"b.example"}), name("ml.example"), kExample),
            kNotProven);  // a wildcard could have answered
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"example"}), name("ml.example"), kExample), kNotProven);
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"b.example", "example"}), name("ml.example"), name("org")),
            kNotProven);  // another zone's records
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"b.example", "example"}), name("ns1.example"), kExample),
            kNotProven);  // a name that exists
  // A name below an existing one: a.c.x.w.example is covered by x.w.example's NSEC, and the
  // wildcard at its closest encloser x.w.example by the same record.
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"x.w.example"}), name("a.c.x.w.example"), kExample),
            kProven);
}

TEST(NsecProof, NameErrorAfterTheLastNameWrapsAround) {
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"xx.example", "example"}), name("zz.example"), kExample),
            kProven);
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"xx.example"}), name("zz.example"), kExample),
            kNotProven);  // *.example is not covered
}

TEST(NsecProof, B3NoData) {
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"ns1.example"}), name("ns1.example"), MX, kExample),
            kProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"ns1.example"}), name("ns1.example"), A, kExample),
            kNotProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"ns2.example"}), name("ns1.example"), MX, kExample),
            kNotProven);
  // RFC 6840 §4.3: a CNAME at the name would have been the answer.
  EXPECT_EQ(nsec_prove_nodata(N{nsec("ns1.example", "ns2.example", {CNAME, RRSIG, NSEC})},
                              name("ns1.example"), MX, kExample),
            kNotProven);
}

TEST(NsecProof, EmptyNonTerminalNoData) {
  // y.w.example has no records but x.y.w.example below it: x.w.example's NSEC covers it and
  // points below it.
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"x.w.example"}), name("y.w.example"), A, kExample), kProven);
  // xx.example's does not point below y.w.example.
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"x.y.w.example"}), name("zz.w.example"), A, kExample),
            kNotProven);
  // The same NSEC proves that y.w.example exists: it can never prove it does not. Else an
  // attacker turns a NODATA into an NXDOMAIN by changing the RCODE, which no signature covers.
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"x.w.example", "example"}), name("y.w.example"), kExample),
            kNotProven);
  // Nor for an empty non-terminal two labels up, covered by the apex's NSEC.
  EXPECT_EQ(nsec_prove_nxdomain(N{nsec("example", "x.w.example", {NS, SOA, RRSIG, NSEC})},
                                name("w.example"), kExample),
            kNotProven);
}

TEST(NsecProof, B5ReferralToAnUnsignedZoneAndTheParentSideRule) {
  // b.example is delegated without DS: its NSEC (NS, no DS, no SOA) proves the delegation
  // insecure and its DS absent.
  EXPECT_EQ(nsec_prove_insecure_delegation(rfc4035({"b.example"}), name("b.example"), kExample),
            kProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"b.example"}), name("b.example"), DS, kExample), kProven);
  // a.example has a DS: not an insecure delegation.
  EXPECT_EQ(nsec_prove_insecure_delegation(rfc4035({"a.example"}), name("a.example"), kExample),
            kNotProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"a.example"}), name("a.example"), DS, kExample), kNotProven);
  // No NS: not a delegation at all.
  EXPECT_EQ(nsec_prove_insecure_delegation(rfc4035({"ns1.example"}), name("ns1.example"), kExample),
            kNotProven);
  // RFC 6840 §4.1: the parent side of a delegation proves nothing but DS's absence. Its A
  // or MX live in the child.
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"b.example"}), name("b.example"), A, kExample), kNotProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"b.example"}), name("b.example"), MX, kExample), kNotProven);
  // ... nor the absence of anything below it, though in canonical order it covers it.
  EXPECT_EQ(nsec_prove_nxdomain(rfc4035({"b.example", "example"}), name("mc.b.example"), kExample),
            kNotProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"b.example"}), name("mc.b.example"), A, kExample),
            kNotProven);
  // At the apex, NS and SOA together: the zone's own data, which it can deny.
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"example"}), kExample, A, kExample), kProven);
  // A DNAME redirects everything below its owner (RFC 6840 §4.1).
  const auto dname =
      std::vector<NsecRecord>{nsec("b.example", "ns1.example", {DNAME, RRSIG}), rfc4035("example")};
  EXPECT_EQ(nsec_prove_nxdomain(dname, name("mc.b.example"), kExample), kNotProven);
}

TEST(NsecProof, B8DsAtTheApexIsTheChildsRecordAndProvesNothing) {
  // RFC 4035 B.8 asks the child (example) for its own DS: the NSEC at its apex has SOA, it is
  // the child's, signed by the child. The DS lives in the parent, whose NSEC alone can deny
  // it (as Unbound does too): here NotProven.
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"example"}), kExample, DS, kExample), kNotProven);
  // The root has no parent: its apex NSEC denies its DS.
  EXPECT_EQ(nsec_prove_nodata(N{nsec(".", "aaa", {NS, SOA, RRSIG, NSEC, DNSKEY})}, name("."), DS,
                              name(".")),
            kProven);
}

TEST(NsecProof, B6WildcardAnswer) {
  // a.z.w.example MX from *.w.example, RRSIG Labels 2: z.w.example, the next closer name, is
  // covered by x.y.w.example's NSEC.
  EXPECT_EQ(
      nsec_prove_wildcard_answer(rfc4035({"x.y.w.example"}), name("a.z.w.example"), 2, kExample),
      kProven);
  EXPECT_EQ(
      nsec_prove_wildcard_answer(rfc4035({"x.w.example"}), name("a.z.w.example"), 2, kExample),
      kNotProven);
  // Labels 1 would be *.example: w.example exists, x.y.w.example's NSEC does not cover it.
  EXPECT_EQ(
      nsec_prove_wildcard_answer(rfc4035({"x.y.w.example"}), name("a.z.w.example"), 1, kExample),
      kNotProven);
  // Labels not smaller than the name's label count: no wildcard.
  EXPECT_EQ(
      nsec_prove_wildcard_answer(rfc4035({"x.y.w.example"}), name("a.z.w.example"), 4, kExample),
      kNotProven);
  // Labels 0 would be the wildcard above the zone.
  EXPECT_EQ(
      nsec_prove_wildcard_answer(rfc4035({"x.y.w.example"}), name("a.z.w.example"), 0, kExample),
      kNotProven);
}

TEST(NsecProof, B7WildcardNoData) {
  // a.z.w.example AAAA: x.y.w.example's NSEC covers it (closest encloser w.example) and
  // *.w.example's has no AAAA.
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"x.y.w.example", "*.w.example"}), name("a.z.w.example"),
                              AAAA, kExample),
            kProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"x.y.w.example", "*.w.example"}), name("a.z.w.example"), MX,
                              kExample),
            kNotProven);  // the wildcard has MX: that is an answer
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"x.y.w.example"}), name("a.z.w.example"), AAAA, kExample),
            kNotProven);
  EXPECT_EQ(nsec_prove_nodata(rfc4035({"*.w.example"}), name("a.z.w.example"), AAAA, kExample),
            kNotProven);
}

// --- NSEC3 proofs: RFC 5155 Appendix A's zone, Appendix B's responses ---

TEST(Nsec3Covers, StrictlyBetweenAndWrappingAround) {
  const Bytes lo(20, 0x10), mid(20, 0x50), hi(20, 0x90);
  EXPECT_TRUE(nsec3_covers(lo, hi, mid));
  EXPECT_FALSE(nsec3_covers(lo, hi, lo));
  EXPECT_FALSE(nsec3_covers(lo, hi, hi));
  EXPECT_FALSE(nsec3_covers(hi, lo, mid));
  EXPECT_TRUE(nsec3_covers(hi, lo, Bytes(20, 0xff)));  // the last record: after the owner
  EXPECT_TRUE(nsec3_covers(hi, lo, Bytes(20, 0x00)));  // ... or before the first
  EXPECT_FALSE(nsec3_covers(hi, lo, hi));
  EXPECT_TRUE(nsec3_covers(mid, mid, lo));  // a chain of one record
  EXPECT_FALSE(nsec3_covers(mid, mid, mid));
  // RFC 5155's last record, xx.example's, wraps to example's.
  const Nsec3Record last = rfc5155("t644");
  const auto t644 = parse_nsec3(last.rdata);
  const auto owner = unbase32("t644ebqk9bibcna874givr6joj62mlhv");
  EXPECT_TRUE(nsec3_covers(owner, t644->next_hashed, unbase32("vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv")));
  EXPECT_TRUE(nsec3_covers(owner, t644->next_hashed, unbase32("00000000000000000000000000000000")));
  EXPECT_FALSE(
      nsec3_covers(owner, t644->next_hashed, unbase32("35mthgpgcu1qg68fab165klnsnk3dpvl")));
}

TEST(Nsec3Proof, B1NameError) {
  // a.c.x.w.example: x.w.example (b4um) is the closest encloser, c.x.w.example (0va5...) the
  // next closer name, covered by example's record (0p9m), and *.x.w.example (92pq...) is
  // covered by a.example's (35mt).
  for (const uint8_t flags : {uint8_t{0}, uint8_t{1}}) {
    auto budget = ample();
    const auto records = rfc5155({"0p9m", "b4um", "35mt"}, flags);
    const auto ce = nsec3_closest_encloser(records, name("a.c.x.w.example"), kExample, budget);
    EXPECT_EQ(ce.closest, name("x.w.example"));
    EXPECT_EQ(ce.next_closer, name("c.x.w.example"));
    // The RFC's records have Opt-Out: the next closer name may be an unsigned delegation,
    // so the answer is insecure (RFC 5155 §9.2).
    const DenialVerdict want = flags != 0 ? kInsecure : kProven;
    EXPECT_EQ(ce.verdict, want);
    EXPECT_EQ(nsec3_prove_nxdomain(records, name("a.c.x.w.example"), kExample, budget), want);
    for (const char* missing : {"0p9m", "b4um", "35mt"}) {
      std::vector<Nsec3Record> fewer;
      for (const char* k : {"0p9m", "b4um", "35mt"})
        if (std::string(k) != missing) fewer.push_back(rfc5155(k, flags));
      EXPECT_EQ(nsec3_prove_nxdomain(fewer, name("a.c.x.w.example"), kExample, budget), kNotProven)
          << "without " << missing;
    }
  }
  auto budget = ample();
  // A closest encloser with DNAME, or at a delegation's parent side: a.c.x.w.example would
  // be redirected or in another zone (RFC 6840 §4.1).
  for (const auto& types : std::vector<std::vector<uint16_t>>{{DNAME, RRSIG}, {NS}}) {
    const std::vector<Nsec3Record> cut = {rfc5155("0p9m", 0), with_types("b4um", types, 0),
                                          rfc5155("35mt", 0)};
    EXPECT_EQ(nsec3_prove_nxdomain(cut, name("a.c.x.w.example"), kExample, budget), kNotProven);
  }
  // A name that exists is no name error.
  EXPECT_EQ(nsec3_prove_nxdomain(rfc5155({"b4um", "0p9m"}), name("x.w.example"), kExample, budget),
            kNotProven);
  // Out of the zone.
  EXPECT_EQ(nsec3_prove_nxdomain(rfc5155({"0p9m", "b4um", "35mt"}), name("a.c.x.w.example.org"),
                                 kExample, budget),
            kNotProven);
}

TEST(Nsec3Proof, B2NoDataAndB2_1EmptyNonTerminal) {
  auto budget = ample();
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"2t7b"}), name("ns1.example"), MX, kExample, budget),
            kProven);
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"2t7b"}), name("ns1.example"), A, kExample, budget),
            kNotProven);
  EXPECT_EQ(nsec3_prove_nodata(N3{with_types("2t7b", {CNAME, RRSIG})}, name("ns1.example"), MX,
                               kExample, budget),
            kNotProven);  // RFC 6840 §4.3
  EXPECT_EQ(nsec3_prove_nodata(N3{}, name("ns1.example"), MX, kExample, budget), kNotProven);
  // y.w.example is an empty non-terminal with an NSEC3 of its own, with no types.
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"ji6n"}), name("y.w.example"), A, kExample, budget),
            kProven);
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"35mt"}), name("y.w.example"), A, kExample, budget),
            kNotProven);
}

TEST(Nsec3Proof, B3ReferralToAnOptOutUnsignedZone) {
  // c.example is delegated, unsigned, in an Opt-Out span: example (0p9m) is the closest
  // encloser, and a.example's record (35mt, Opt-Out) covers c.example. Insecure, not bogus.
  auto budget = ample();
  EXPECT_EQ(nsec3_prove_insecure_delegation(rfc5155({"0p9m", "35mt"}), name("c.example"), kExample,
                                            budget),
            kInsecure);
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"0p9m", "35mt"}), name("c.example"), DS, kExample, budget),
            kInsecure);  // RFC 5155 §8.6
  // Without Opt-Out the cover proves c.example does not exist: no delegation to refer to.
  EXPECT_EQ(nsec3_prove_insecure_delegation(rfc5155({"0p9m", "35mt"}, 0), name("c.example"),
                                            kExample, budget),
            kNotProven);
  EXPECT_EQ(
      nsec3_prove_nodata(rfc5155({"0p9m", "35mt"}, 0), name("c.example"), DS, kExample, budget),
      kNotProven);
  // A delegation with its own NSEC3: NS, no DS, no SOA (RFC 6840 §4.4).
  EXPECT_EQ(nsec3_prove_insecure_delegation(N3{with_types("2t7b", {NS})}, name("ns1.example"),
                                            kExample, budget),
            kProven);
  EXPECT_EQ(nsec3_prove_insecure_delegation(rfc5155({"35mt"}), name("a.example"), kExample, budget),
            kNotProven);  // a.example has a DS
  // The parent side of a delegation denies DS, and nothing else (RFC 6840 §4.1).
  EXPECT_EQ(
      nsec3_prove_nodata(N3{with_types("2t7b", {NS})}, name("ns1.example"), DS, kExample, budget),
      kProven);
  EXPECT_EQ(
      nsec3_prove_nodata(N3{with_types("2t7b", {NS})}, name("ns1.example"), MX, kExample, budget),
      kNotProven);
  // Below a delegation, even an Opt-Out cover proves nothing: a.example (NS) would be the
  // closest encloser of b.a.example.
  const auto below = nsec3_hash(name("b.a.example"), kSalt, 12);
  Bytes before = Bytes(below->begin(), below->end());
  before.back() = static_cast<uint8_t>(before.back() - 1);
  Bytes after = Bytes(below->begin(), below->end());
  after.back() = static_cast<uint8_t>(after.back() + 1);
  const Nsec3Record cover{name((base32hex_encode(before) + ".example").c_str()),
                          nsec3_rdata(1, 12, kSalt, after, {})};
  EXPECT_EQ(nsec3_prove_nodata(N3{rfc5155("0p9m"), with_types("35mt", {NS}), cover},
                               name("b.a.example"), DS, kExample, budget),
            kNotProven);
}

TEST(Nsec3Proof, B4WildcardExpansion) {
  // a.z.w.example MX from *.w.example (RRSIG Labels 2): ns2.example's record (q04j) covers
  // z.w.example.
  for (const uint8_t flags : {uint8_t{0}, uint8_t{1}}) {
    auto budget = ample();
    const DenialVerdict want = flags != 0 ? kInsecure : kProven;
    EXPECT_EQ(nsec3_prove_wildcard_answer(rfc5155({"q04j"}, flags), name("a.z.w.example"), 2,
                                          kExample, budget),
              want);
    EXPECT_EQ(nsec3_prove_wildcard_answer(rfc5155({"r53b"}, flags), name("a.z.w.example"), 2,
                                          kExample, budget),
              kNotProven);
    EXPECT_EQ(nsec3_prove_wildcard_answer(rfc5155({"q04j"}, flags), name("a.z.w.example"), 4,
                                          kExample, budget),
              kNotProven);
    EXPECT_EQ(nsec3_prove_wildcard_answer(rfc5155({"q04j"}, flags), name("a.z.w.example"), 0,
                                          kExample, budget),
              kNotProven);
  }
}

TEST(Nsec3Proof, B5WildcardNoData) {
  // a.z.w.example AAAA: w.example (k8ud) is the closest encloser, q04j covers z.w.example,
  // and *.w.example (r53b) has no AAAA.
  for (const uint8_t flags : {uint8_t{0}, uint8_t{1}}) {
    auto budget = ample();
    const DenialVerdict want = flags != 0 ? kInsecure : kProven;
    EXPECT_EQ(nsec3_prove_nodata(rfc5155({"k8ud", "q04j", "r53b"}, flags), name("a.z.w.example"),
                                 AAAA, kExample, budget),
              want);
    EXPECT_EQ(nsec3_prove_nodata(rfc5155({"k8ud", "q04j", "r53b"}, flags), name("a.z.w.example"),
                                 MX, kExample, budget),
              kNotProven);  // the wildcard has MX
    EXPECT_EQ(nsec3_prove_nodata(rfc5155({"q04j", "r53b"}, flags), name("a.z.w.example"), AAAA,
                                 kExample, budget),
              kNotProven);
    EXPECT_EQ(nsec3_prove_nodata(rfc5155({"k8ud", "r53b"}, flags), name("a.z.w.example"), AAAA,
                                 kExample, budget),
              kNotProven);
    EXPECT_EQ(nsec3_prove_nodata(rfc5155({"k8ud", "q04j"}, flags), name("a.z.w.example"), AAAA,
                                 kExample, budget),
              kNotProven);
    const std::vector<Nsec3Record> cname = {rfc5155("k8ud", flags), rfc5155("q04j", flags),
                                            with_types("r53b", {CNAME, RRSIG}, flags)};
    EXPECT_EQ(nsec3_prove_nodata(cname, name("a.z.w.example"), AAAA, kExample, budget), kNotProven);
  }
}

TEST(Nsec3Proof, B6DsAtTheApexIsTheChildsRecordAndProvesNothing) {
  // As with NSEC (RFC 4035 B.8): the apex's NSEC3 has SOA, it is the child's.
  auto budget = ample();
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"0p9m"}), kExample, DS, kExample, budget), kNotProven);
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"0p9m"}), kExample, A, kExample, budget), kProven);
}

TEST(Nsec3Proof, RecordsRfc5155Section8IgnoresProveNothing) {
  auto budget = ample();
  const Nsec3Record ns1 = rfc5155("2t7b");
  const auto next = parse_nsec3(ns1.rdata)->next_hashed;
  const Bytes next_bytes(next.begin(), next.end());
  const wire::Name owner = ns1.owner;
  const std::vector<Nsec3Record> ignored = {
      {owner, nsec3_rdata(0, 12, kSalt, next_bytes, bitmap({A, RRSIG}), 2)},  // algorithm 2
      {owner, nsec3_rdata(2, 12, kSalt, next_bytes, bitmap({A, RRSIG}))},     // flags 2
      {owner, nsec3_rdata(0, 12, kSalt, Bytes(19, 1), bitmap({A, RRSIG}))},   // 19-octet hash
      {name("2t7b4g4vsa5smi47k61mv5bv1a22bojr.sub.example"),
       nsec3_rdata(0, 12, kSalt, next_bytes, bitmap({A, RRSIG}))},  // not below the zone
  };
  for (const auto& r : ignored)
    EXPECT_EQ(nsec3_prove_nodata(N3{r}, name("ns1.example"), MX, kExample, budget), kNotProven);
  // Beside a record that counts, they change nothing.
  std::vector<Nsec3Record> mixed = ignored;
  mixed.push_back(rfc5155("2t7b", 0));
  EXPECT_EQ(nsec3_prove_nodata(mixed, name("ns1.example"), MX, kExample, budget), kProven);
}

TEST(Nsec3Proof, AnotherChainBesideTheRightOneChangesNothing) {
  // A zone between two chains (another salt): each is tried on its own.
  auto budget = ample();
  std::vector<Nsec3Record> records = {
      {rfc5155("2t7b").owner, nsec3_rdata(0, 3, {0x01}, Bytes(20, 0x42), bitmap({A}))}};
  EXPECT_EQ(nsec3_prove_nodata(records, name("ns1.example"), MX, kExample, budget), kNotProven);
  records.push_back(rfc5155("2t7b", 0));
  EXPECT_EQ(nsec3_prove_nodata(records, name("ns1.example"), MX, kExample, budget), kProven);
}

// An NSEC3 chain of one record matching `owner`, with `iterations`.
Nsec3Record one_record_chain(const char* owner, uint16_t iterations) {
  const auto h = nsec3_hash(name(owner), kSalt, iterations);
  Bytes next(h->begin(), h->end());
  return {name((base32hex_encode(*h) + ".example").c_str()),
          nsec3_rdata(0, iterations, kSalt, next, bitmap({A, RRSIG}))};
}

TEST(Nsec3Proof, MoreIterationsThanTheLimitAreInsecureAndNeverHashed) {
  // RFC 9276 §3.2: above the limit (150 by default) the answer is insecure, EDE 27.
  const std::vector<Nsec3Record> at_limit = {one_record_chain("ns1.example", 150)};
  const std::vector<Nsec3Record> over = {one_record_chain("ns1.example", 151)};
  auto budget = ample();
  EXPECT_EQ(nsec3_prove_nodata(at_limit, name("ns1.example"), MX, kExample, budget), kProven);
  const std::size_t used = budget.used();
  EXPECT_EQ(used, 151u);  // one name, 150 iterations and the first hash
  EXPECT_EQ(nsec3_prove_nodata(over, name("ns1.example"), MX, kExample, budget),
            DenialVerdict::IterationsTooHigh);
  EXPECT_EQ(nsec3_prove_nxdomain(over, name("nx.example"), kExample, budget),
            DenialVerdict::IterationsTooHigh);
  EXPECT_EQ(nsec3_prove_wildcard_answer(over, name("a.ns1.example"), 2, kExample, budget),
            DenialVerdict::IterationsTooHigh);
  EXPECT_EQ(nsec3_prove_insecure_delegation(over, name("ns1.example"), kExample, budget),
            DenialVerdict::IterationsTooHigh);
  EXPECT_EQ(budget.used(), used);  // nothing hashed
  // The limit is the caller's.
  EXPECT_EQ(nsec3_prove_nodata(over, name("ns1.example"), MX, kExample, budget, 151), kProven);
  EXPECT_EQ(nsec3_prove_nodata(at_limit, name("ns1.example"), MX, kExample, budget, 100),
            DenialVerdict::IterationsTooHigh);
  // A name outside the zone is not a question of iterations.
  EXPECT_EQ(nsec3_prove_nodata(over, name("ns1.example.org"), MX, kExample, budget), kNotProven);
}

TEST(Nsec3Proof, TheHashBudgetIsNeverExceeded) {
  // B.1 hashes four names (a.c.x.w.example, c.x.w.example, x.w.example, *.x.w.example), 13
  // SHA-1 computations each at 12 iterations.
  const auto records = rfc5155({"0p9m", "b4um", "35mt"}, 0);
  HashBudget enough(52);
  EXPECT_EQ(nsec3_prove_nxdomain(records, name("a.c.x.w.example"), kExample, enough), kProven);
  EXPECT_EQ(enough.used(), 52u);
  HashBudget short_one(51);
  EXPECT_EQ(nsec3_prove_nxdomain(records, name("a.c.x.w.example"), kExample, short_one),
            DenialVerdict::BudgetExhausted);
  EXPECT_EQ(short_one.used(), 39u);  // three names hashed, the fourth refused
  // One budget for a whole response: a second proof finds it spent.
  EXPECT_EQ(nsec3_prove_nodata(rfc5155({"2t7b"}), name("ns1.example"), MX, kExample, enough),
            DenialVerdict::BudgetExhausted);
  EXPECT_EQ(enough.used(), 52u);
  // A long name walks up one label at a time: the budget ends it.
  std::string deep = "example";
  for (int i = 0; i < 100; ++i)
    deep.insert(0, "a.");
  HashBudget budget(50 * 13);
  const auto ce = nsec3_closest_encloser(records, name(deep.c_str()), kExample, budget);
  EXPECT_EQ(ce.verdict, DenialVerdict::BudgetExhausted);
  EXPECT_EQ(budget.used(), budget.limit());
  EXPECT_EQ(ce.closest, name("."));
  // With enough, the walk goes through the 100 names up to a.example, whose record matches:
  // a delegation (NS, no SOA), which no closest encloser can be (RFC 6840 §4.1).
  auto more = ample();
  EXPECT_EQ(nsec3_closest_encloser(records, name(deep.c_str()), kExample, more).verdict,
            kNotProven);
  EXPECT_EQ(more.used(), 100u * 13);
}

}  // namespace
}  // namespace hg::dnssec
