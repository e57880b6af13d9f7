// The dig-style printer: golden files for every captured vector (checked once against dig 9.18
// on the same packets, see tests/vectors/README.md), and the pseudosection lines.
#include "wire/print.h"

#include <gtest/gtest.h>

#include "tests/wire/packet_builder.h"
#include "tests/wire/test_names.h"
#include "tests/wire/vectors.h"
#include "wire/format.h"

namespace hg::wire {
namespace {

using test::Bytes;
using test::N;

TEST(PrintMessage, MatchesGoldenFilesForEveryVector) {
  for (const auto& name : test::vector_names()) {
    SCOPED_TRACE(name);
    const auto packet = test::read_vector(name);
    Message m;
    ASSERT_TRUE(m.parse(packet).has_value());
    EXPECT_EQ(print_message(m), test::read_golden(name));
  }
}

TEST(PrintMessage, PrintsHeaderFlagsAndEde) {
  OwnedMessage o;
  o.header.id = 4660;
  o.header.flags = flag::QR | flag::RD | flag::RA;
  o.questions.push_back({N("www.example.com"), RRType::A, 1});
  o.answer.push_back({N("www.example.com"), RRType::A, 1, 30, RdataA{{192, 0, 2, 1}}});
  o.edns = OwnedEdns{};
  o.edns->flags = kEdnsDoBit;
  o.edns->options.push_back({edns_option::ExtendedError, {0, 3, 'o', 'l', 'd'}});
  o.edns->options.push_back({edns_option::ExtendedError, {0, 22}});
  o.edns->options.push_back({65001, {0x41, 0x00}});
  o.edns->options.push_back({edns_option::Cookie, {0xab, 0xcd}});
  o.set_rcode(RCode::ServFail);
  EXPECT_EQ(print_message(o),
            ";; ->>HEADER<<- opcode: QUERY, status: SERVFAIL, id: 4660\n"
            ";; flags: qr rd ra; QUERY: 1, ANSWER: 1, AUTHORITY: 0, ADDITIONAL: 1\n"
            "\n"
            ";; OPT PSEUDOSECTION:\n"
            "; EDNS: version: 0, flags: do; udp: 1232\n"
            "; EDE: 3 (Stale Answer): (old)\n"
            "; EDE: 22 (No Reachable Authority)\n"
            "; OPT=65001: 41 00 (\"A.\")\n"
            "; COOKIE: abcd\n"
            ";; QUESTION SECTION:\n"
            ";www.example.com.\t\tIN\tA\n"
            "\n"
            ";; ANSWER SECTION:\n"
            "www.example.com.\t30\tIN\tA\t192.0.2.1\n"
            "\n");
}

TEST(PrintMessage, PrintsUnusualHeaders) {
  OwnedMessage o;
  o.header.flags = flag::Z | flag::AA | flag::TC | flag::AD | flag::CD;
  o.header.set_opcode(Opcode::Notify);
  o.edns = OwnedEdns{};
  o.edns->udp_size = 512;
  o.edns->version = 1;
  o.edns->flags = 0x0001;
  o.set_rcode(RCode::BadVers);
  const auto text = print_message(o);
  EXPECT_NE(text.find("opcode: NOTIFY, status: BADVERS"), std::string::npos) << text;
  EXPECT_NE(text.find(";; flags: aa tc ad cd; MBZ: 0x4; QUERY: 0"), std::string::npos) << text;
  EXPECT_NE(text.find("; EDNS: version: 1, flags:; MBZ: 0x0001, udp: 512"), std::string::npos)
      << text;
}

TEST(PrintMessage, EdeTextCannotForgeLines) {
  EXPECT_EQ(edns_option_to_text(edns_option::ExtendedError, Bytes{0, 0, 'a', '\n', ';'}),
            "EDE: 0 (Other): (a.;)");
  EXPECT_EQ(edns_option_to_text(edns_option::ExtendedError, Bytes{1}), "OPT=15: 01 (\".\")");
  EXPECT_EQ(edns_option_to_text(edns_option::NSID, Bytes{}), "NSID:");
}

TEST(RecordText, AlignsColumnsLikeDig) {
  OwnedRecord rr{N("1.2.0.192.in-addr.arpa.hg.test"), RRType::PTR, 1, 3600,
                 RdataName{N("www.hg.test")}};
  // A 31-character owner overruns the TTL column; the TTL overruns the class column and is
  // followed by one space (BIND's indent rule).
  EXPECT_EQ(record_to_text(rr), "1.2.0.192.in-addr.arpa.hg.test.\t3600 IN\tPTR\twww.hg.test.");
  OwnedRecord unk{N("u.example"), static_cast<RRType>(65534), 3, 0, RdataOpaque{{1}}};
  EXPECT_EQ(record_to_text(unk), "u.example.\t\t0\tCH\tTYPE65534 \\# 1 01");
}

TEST(Format, FormatsWireTypes) {
  EXPECT_EQ(fmt::format("{} {} {} {}", N("a.b"), RRType::AAAA, RCode::NXDomain,
                        ParseError::PointerNotBackward),
            "a.b. AAAA NXDOMAIN pointer-not-backward");
  EXPECT_EQ(fmt::format("{}", Error{ParseError::Truncated, 12}), "truncated at offset 12");
  EXPECT_EQ(fmt::format("{}", static_cast<RRType>(65534)), "TYPE65534");
}

// The reverse of the printing above, as dig and zone files write them (RFC 3597 §5 for
// TYPEnnn and CLASSnnn): mnemonics in any case, numbers 0..65535, nothing else.
TEST(TypeText, MnemonicsAndRfc3597NumbersParseAndNothingElseDoes) {
  EXPECT_EQ(rrtype_from_text("A"), RRType::A);
  EXPECT_EQ(rrtype_from_text("aaaa"), RRType::AAAA);
  EXPECT_EQ(rrtype_from_text("TYPE1"), RRType::A);
  EXPECT_EQ(rrtype_from_text("type65535"), static_cast<RRType>(65535));
  EXPECT_EQ(rrtype_from_text("TYPE0"), static_cast<RRType>(0));
  for (const char* bad : {"TYPE65536", "TYPE", "TYPE-1", "TYPE+1", "TYPE 1", "TYPE1x", "TYPEx",
                          "TYPE99999999999999999999", "", "AA", "A "})
    EXPECT_FALSE(rrtype_from_text(bad)) << bad;
  EXPECT_EQ(rrclass_from_text("IN"), RRClass::IN);
  EXPECT_EQ(rrclass_from_text("CLASS3"), static_cast<RRClass>(3));
  for (const char* bad : {"CLASS65536", "CLASS", "CLASS-3", "TYPE1", "IN1"})
    EXPECT_FALSE(rrclass_from_text(bad)) << bad;
}

}  // namespace
}  // namespace hg::wire
