// OwnedMessage: round trips on every captured vector (parse → to_owned → write → parse →
// compare), and write_message's truncation at a record boundary with TC=1.
#include "wire/owned.h"

#include <gtest/gtest.h>

#include "tests/wire/packet_builder.h"
#include "tests/wire/test_names.h"
#include "tests/wire/vectors.h"
#include "wire/print.h"

namespace hg::wire {
namespace {

using test::Bytes;
using test::N;

OwnedMessage parse_owned(std::span<const uint8_t> p) {
  Message m;
  EXPECT_TRUE(m.parse(p, ParseMode::Strict).has_value());
  auto o = to_owned(m);
  EXPECT_TRUE(o.has_value());
  return o ? *o : OwnedMessage{};
}

TEST(OwnedRoundTrip, EveryVectorSurvivesWriteAndReparse) {
  const auto names = test::vector_names();
  ASSERT_GE(names.size(), 20u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const auto packet = test::read_vector(name);
    Message m;
    ASSERT_TRUE(m.parse(packet, ParseMode::Strict).has_value());
    auto owned = to_owned(m);
    ASSERT_TRUE(owned.has_value());
    const auto rewritten = to_wire(*owned);
    ASSERT_FALSE(rewritten.empty());
    Message m2;
    ASSERT_TRUE(m2.parse(rewritten, ParseMode::Strict).has_value());
    auto owned2 = to_owned(m2);
    ASSERT_TRUE(owned2.has_value());
    EXPECT_TRUE(identical(*owned, *owned2));
    EXPECT_EQ(print_message(m), print_message(m2));
    // Compression as good as knot's: never larger than the original.
    EXPECT_LE(rewritten.size(), packet.size());
  }
}

TEST(OwnedRoundTrip, MixedCaseIsPreserved) {
  auto o = parse_owned(test::read_vector("mixed_case"));
  ASSERT_EQ(o.answer.size(), 1u);
  EXPECT_EQ(o.questions[0].name.to_text(), "MiXeD.cAsE.hg.test.");
  EXPECT_EQ(o.answer[0].owner.to_text(), "MiXeD.cAsE.hg.test.");
}

TEST(OwnedModel, DecodesTypedRecords) {
  auto o = parse_owned(test::read_vector("mx"));
  ASSERT_EQ(o.answer.size(), 2u);
  const auto& mx = std::get<RdataMX>(o.answer[0].rdata);
  EXPECT_EQ(mx.preference, 10);
  EXPECT_EQ(mx.exchange, N("mail.hg.test"));
  ASSERT_TRUE(o.edns.has_value());
  EXPECT_TRUE(o.edns->dnssec_ok());
  EXPECT_EQ(o.rcode(), RCode::NoError);
  auto nx = parse_owned(test::read_vector("nxdomain"));
  EXPECT_EQ(nx.rcode(), RCode::NXDomain);
  ASSERT_EQ(nx.authority.size(), 1u);
  EXPECT_EQ(std::get<RdataSOA>(nx.authority[0].rdata).minimum, 300u);
}

TEST(OwnedModel, SetRcodeSplitsAcrossHeaderAndOpt) {
  OwnedMessage o;
  o.edns = OwnedEdns{};
  o.set_rcode(RCode::BadCookie);  // 23 = 1 << 4 | 7
  EXPECT_EQ(o.header.rcode_low(), 7);
  EXPECT_EQ(o.edns->ext_rcode_high, 1);
  EXPECT_EQ(o.rcode(), RCode::BadCookie);
}

TEST(WriteMessage, TruncatesAtARecordBoundaryAndSetsTc) {
  const auto big = test::read_vector("big");  // 928 octets: 8 TXT records + OPT
  auto o = parse_owned(big);
  ASSERT_EQ(o.answer.size(), 8u);
  Bytes buf(512);
  WireWriter w(buf);
  const auto out = write_message(w, o);
  ASSERT_TRUE(out.ok);
  EXPECT_TRUE(out.truncated);
  EXPECT_LE(w.size(), 512u);
  Message m;
  ASSERT_TRUE(m.parse(w.written(), ParseMode::Strict).has_value());
  EXPECT_TRUE(m.header().tc());
  EXPECT_EQ(m.records().size(), out.records);
  EXPECT_GT(out.records, 0u);
  EXPECT_LT(out.records, 8u);
  // RFC 6891 §7: the OPT record survives truncation.
  ASSERT_TRUE(m.edns().has_value());
  EXPECT_EQ(m.edns()->udp_size, 1232);
  // Exactly as many whole records as fit: one more would not have.
  EXPECT_GT(w.size() + 100 + 2 + 10 + 2, 512u);
}

TEST(WriteMessage, DroppingOnlyAdditionalRecordsIsNotTruncation) {
  auto o = parse_owned(test::read_vector("ns"));  // 2 NS + 2 glue + OPT
  ASSERT_EQ(o.additional.size(), 2u);
  const auto full = to_wire(o);
  Bytes buf(full.size() - 5);
  WireWriter w(buf);
  const auto out = write_message(w, o);
  ASSERT_TRUE(out.ok);
  EXPECT_FALSE(out.truncated);  // RFC 2181 §9
  EXPECT_EQ(out.records, 3u);
  Message m;
  ASSERT_TRUE(m.parse(w.written(), ParseMode::Strict).has_value());
  EXPECT_FALSE(m.header().tc());
  EXPECT_TRUE(m.edns().has_value());
}

TEST(WriteMessage, FailsWhenTheQuestionDoesNotFit) {
  auto o = parse_owned(test::read_vector("a"));
  Bytes buf(20);
  WireWriter w(buf);
  EXPECT_FALSE(write_message(w, o).ok);
  EXPECT_EQ(w.size(), 0u);
  // Header + question fit, OPT does not: also not ok (a response must keep its OPT).
  Bytes buf2(12 + 16 + 5);
  WireWriter w2(buf2);
  EXPECT_FALSE(write_message(w2, o).ok);
}

TEST(WriteMessage, BuildsAResponseFromScratch) {
  OwnedMessage o;
  o.header.id = 42;
  o.header.set(flag::QR, true);
  o.header.set(flag::RD, true);
  o.questions.push_back({N("Example.COM"), RRType::TXT, 1});
  o.answer.push_back({N("Example.COM"), RRType::TXT, 1, 60, RdataTXT{{Bytes{'h', 'i'}}}});
  o.edns = OwnedEdns{};
  o.edns->flags = kEdnsDoBit;
  o.edns->options = {OwnedOption{edns_option::ExtendedError, {0, 3}}};
  const auto wire = to_wire(o);
  // The answer owner compresses to a pointer at the question (same case).
  EXPECT_EQ(wire.size(), 12u + 13 + 4 + 2 + 10 + 3 + 11 + 6);
  auto back = parse_owned(wire);
  EXPECT_TRUE(identical(o, back) || (back.header.qdcount == 1 && back.answer == o.answer));
  EXPECT_EQ(back.edns, o.edns);
}

}  // namespace
}  // namespace hg::wire
