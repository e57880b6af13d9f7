// Typed RDATA: decoding (with decompression), encoding (compression only for RFC 1035 types),
// and dig's presentation text for every type hourglass knows, plus RFC 3597 opaque data.
#include "wire/rdata.h"

#include <gtest/gtest.h>

#include "tests/wire/packet_builder.h"
#include "tests/wire/test_names.h"

namespace hg::wire {
namespace {

using test::be16;
using test::Bytes;
using test::cat;
using test::N;
using test::wire_name;

Result<Rdata> decode(RRType type, const Bytes& rdata) {
  return read_rdata(rdata, type, 0, rdata.size());
}

Bytes encode(RRType type, const Rdata& rd) {
  Bytes buf(1024);
  WireWriter w(buf);
  EXPECT_TRUE(write_rdata(w, type, rd));
  return Bytes(w.written().begin(), w.written().end());
}

TEST(ReadRdata, DecodesEachKnownType) {
  EXPECT_EQ(rdata_to_text(decode(RRType::A, {192, 0, 2, 1}).value()), "192.0.2.1");
  Bytes v6(16, 0);
  v6[0] = 0x20, v6[1] = 0x01, v6[2] = 0x0d, v6[3] = 0xb8, v6[15] = 1;
  EXPECT_EQ(rdata_to_text(decode(RRType::AAAA, v6).value()), "2001:db8::1");
  EXPECT_EQ(rdata_to_text(decode(RRType::NS, wire_name("ns1.example")).value()), "ns1.example.");
  EXPECT_EQ(rdata_to_text(decode(RRType::CNAME, wire_name("Www.Example")).value()), "Www.Example.");
  EXPECT_EQ(rdata_to_text(decode(RRType::PTR, wire_name("host.example")).value()), "host.example.");
  EXPECT_EQ(rdata_to_text(decode(RRType::MX, cat({be16(10), wire_name("mx.example")})).value()),
            "10 mx.example.");
  EXPECT_EQ(rdata_to_text(
                decode(RRType::SRV, cat({be16(0), be16(5), be16(5060), wire_name("sip.example")}))
                    .value()),
            "0 5 5060 sip.example.");
  const Bytes soa = cat({wire_name("ns.example"),
                         wire_name("hostmaster.example"),
                         {0x78, 0xA3, 0xF1, 0x75},  // 2024010101
                         {0, 0, 0x1C, 0x20},
                         {0, 0, 0x0E, 0x10},
                         {0, 0x12, 0x75, 0},
                         {0, 0, 1, 0x2C}});
  EXPECT_EQ(rdata_to_text(decode(RRType::SOA, soa).value()),
            "ns.example. hostmaster.example. 2024010101 7200 3600 1209600 300");
  EXPECT_EQ(rdata_to_text(decode(RRType::CAA, {0, 5, 'i', 's', 's', 'u', 'e', 'c', 'a'}).value()),
            "0 issue \"ca\"");
  EXPECT_EQ(rdata_to_text(decode(static_cast<RRType>(65534), {0xab, 0xcd, 0xef}).value()),
            "\\# 3 ABCDEF");
  EXPECT_EQ(rdata_to_text(decode(static_cast<RRType>(65534), {}).value()), "\\# 0");
  // Known to types.h but not typed here: still RFC 3597 generic form, bytes kept.
  EXPECT_EQ(rdata_to_text(decode(RRType::DS, {1, 2}).value()), "\\# 2 0102");
}

TEST(ReadRdata, DecodesTxtStrings) {
  auto rd = decode(RRType::TXT, cat({{3, 'a', '"', '\\'}, {0}, {255}, Bytes(255, 'x')}));
  ASSERT_TRUE(rd.has_value());
  const auto& t = std::get<RdataTXT>(*rd);
  ASSERT_EQ(t.strings.size(), 3u);
  EXPECT_EQ(t.strings[2].size(), 255u);
  EXPECT_EQ(rdata_to_text(*rd), "\"a\\\"\\\\\" \"\" \"" + std::string(255, 'x') + "\"");
  EXPECT_EQ(rdata_to_text(decode(RRType::TXT, {2, 9, 0xff}).value()), "\"\\009\\255\"");
}

TEST(ReadRdata, DecompressesNamesAgainstThePacket) {
  // Packet: 12 octets of header, "example" at 12, then MX RDATA at 21: preference 5, "mx" +
  // pointer to 12.
  Bytes packet(12, 0);
  const auto ex = wire_name("example");
  packet.insert(packet.end(), ex.begin(), ex.end());
  const Bytes rdata = {0, 5, 2, 'm', 'x', 0xC0, 12};
  packet.insert(packet.end(), rdata.begin(), rdata.end());
  auto rd = read_rdata(packet, RRType::MX, 21, rdata.size());
  ASSERT_TRUE(rd.has_value());
  EXPECT_EQ(rdata_to_text(*rd), "5 mx.example.");
}

TEST(ReadRdata, RejectsLengthDisagreement) {
  const Error bad{ParseError::RdataLength, 0};
  EXPECT_EQ(decode(RRType::A, {1, 2, 3}).error(), bad);
  EXPECT_EQ(decode(RRType::AAAA, Bytes(17, 0)).error(), bad);
  EXPECT_EQ(decode(RRType::MX, {0}).error(), bad);
  EXPECT_EQ(decode(RRType::MX, cat({be16(1), wire_name("a"), {0}})).error(), bad);
  EXPECT_EQ(decode(RRType::NS, {3, 'a'}).error(), bad);
  EXPECT_EQ(decode(RRType::SRV, {0, 0, 0, 0, 0}).error(), bad);
  EXPECT_EQ(decode(RRType::SOA, cat({wire_name("a"), wire_name("b"), Bytes(19, 0)})).error(), bad);
  EXPECT_EQ(decode(RRType::TXT, {}).error(), bad);
  EXPECT_EQ(decode(RRType::TXT, {4, 'a'}).error(), bad);
  EXPECT_EQ(decode(RRType::CAA, {0, 0}).error(), bad);
  EXPECT_EQ(decode(RRType::CAA, {0, 3, 'a'}).error(), bad);
  EXPECT_EQ(decode(RRType::NS, {0xC0, 0x05}).error(), (Error{ParseError::PointerNotBackward, 0}));
}

TEST(WriteRdata, CompressesOnlyRfc1035Types) {
  Bytes buf(512);
  WireWriter w(buf);
  ASSERT_TRUE(w.bytes(Bytes(12, 0)));     // a header: names there are never targets
  ASSERT_TRUE(w.name(N("example.com")));  // 13 octets at 12: a compression target
  const std::size_t mx_start = w.size();
  ASSERT_TRUE(write_rdata(w, RRType::MX, RdataMX{10, N("mail.example.com")}));
  // 2 (preference) + "mail" (5) + pointer (2).
  EXPECT_EQ(w.size() - mx_start, 9u);
  const std::size_t srv_start = w.size();
  ASSERT_TRUE(write_rdata(w, RRType::SRV, RdataSRV{1, 2, 3, N("sip.example.com")}));
  // RFC 2782: SRV targets are never compressed: 6 + 17 octets.
  EXPECT_EQ(w.size() - srv_start, 6u + 17u);
  const std::size_t dname_start = w.size();
  ASSERT_TRUE(write_rdata(w, RRType::DNAME, RdataName{N("example.com")}));
  EXPECT_EQ(w.size() - dname_start, 13u);
  EXPECT_TRUE(rdata_names_compressible(RRType::SOA));
  EXPECT_FALSE(rdata_names_compressible(RRType::SRV));
}

TEST(WriteRdata, RoundTripsEachType) {
  const std::pair<RRType, Rdata> cases[] = {
      {RRType::A, RdataA{{10, 0, 0, 1}}},
      {RRType::AAAA, RdataAAAA{{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}},
      {RRType::CNAME, RdataName{N("Target.Example")}},
      {RRType::MX, RdataMX{65535, N(".")}},
      {RRType::TXT, RdataTXT{{Bytes(255, 'a'), Bytes{}, Bytes{'b'}}}},
      {RRType::SRV, RdataSRV{1, 2, 3, N("t.example")}},
      {RRType::SOA, RdataSOA{N("m.example"), N("r.example"), 1, 2, 3, 4, 0xFFFFFFFF}},
      {RRType::CAA, RdataCAA{128, Bytes{'t', 'a', 'g'}, Bytes{'v', 0, '"'}}},
      {static_cast<RRType>(65534), RdataOpaque{Bytes{0, 1, 2}}},
  };
  for (const auto& [type, rd] : cases) {
    const Bytes wire = encode(type, rd);
    auto back = decode(type, wire);
    ASSERT_TRUE(back.has_value()) << to_string(type);
    EXPECT_EQ(*back, rd) << to_string(type);
  }
}

TEST(WriteRdata, RefusesOversizedValues) {
  Bytes buf(1024);
  WireWriter w(buf);
  EXPECT_FALSE(write_rdata(w, RRType::TXT, RdataTXT{{Bytes(256, 'a')}}));
  w.rollback(0);
  EXPECT_FALSE(write_rdata(w, RRType::CAA, RdataCAA{0, Bytes{}, Bytes{'v'}}));
  w.rollback(0);
  // With RDLENGTH: nothing is left behind on failure.
  WireWriter small(buf, 5);
  EXPECT_FALSE(write_rdata_with_length(small, RRType::AAAA, RdataAAAA{}));
  EXPECT_EQ(small.size(), 0u);
  EXPECT_FALSE(write_rdata_with_length(small, RRType::A, RdataA{}));  // 2 + 4 > 5
  EXPECT_EQ(small.size(), 0u);
  WireWriter enough(buf, 6);
  EXPECT_TRUE(write_rdata_with_length(enough, RRType::A, RdataA{}));
  EXPECT_EQ(enough.size(), 6u);
  EXPECT_EQ(buf[1], 4);  // RDLENGTH patched
}

TEST(RdataText, FormatsIpv6LikeInetNtop) {
  auto v6 = [](std::initializer_list<uint16_t> words) {
    std::array<uint8_t, 16> a{};
    std::size_t i = 0;
    for (uint16_t w : words) {
      a[i++] = static_cast<uint8_t>(w >> 8);
      a[i++] = static_cast<uint8_t>(w);
    }
    return ipv6_to_text(a);
  };
  EXPECT_EQ(v6({0, 0, 0, 0, 0, 0, 0, 0}), "::");
  EXPECT_EQ(v6({0, 0, 0, 0, 0, 0, 0, 1}), "::1");
  EXPECT_EQ(v6({1, 0, 0, 0, 0, 0, 0, 0}), "1::");
  EXPECT_EQ(v6({0x2001, 0xdb8, 0, 0, 1, 0, 0, 1}), "2001:db8::1:0:0:1");     // first longest run
  EXPECT_EQ(v6({0x2001, 0xdb8, 0, 1, 1, 1, 1, 1}), "2001:db8:0:1:1:1:1:1");  // one zero: no ::
  EXPECT_EQ(v6({0x2001, 0xdb8, 0, 0, 0, 0, 2, 1}), "2001:db8::2:1");
  EXPECT_EQ(v6({0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201}), "::ffff:192.0.2.1");
  EXPECT_EQ(v6({0xfe80, 0, 0, 0, 0xabcd, 0, 0, 0}), "fe80::abcd:0:0:0");
}

TEST(RdataText, QuotesAndEscapesCharacterStrings) {
  const Bytes s = {'a', ' ', '"', '\\', 0x7f, 0x1f};
  EXPECT_EQ(quoted_string(s), "\"a \\\"\\\\\\127\\031\"");
  EXPECT_EQ(rdata_to_text(RdataCAA{0, Bytes{'i', '-', 'x'}, Bytes{}}), "0 i\\045x \"\"");
}

}  // namespace
}  // namespace hg::wire
