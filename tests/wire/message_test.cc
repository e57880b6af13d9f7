// Message::parse: every ParseError with its exact offset, counts that lie, RDLENGTH against
// typed content, trailing bytes in Strict and Lenient mode, and the OPT rules of RFC 6891.
// Each hostile packet is also written to the fuzz corpus when HG_WRITE_CORPUS is set.
#include "wire/message.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/wire/packet_builder.h"
#include "wire/header.h"

namespace hg::wire {
namespace {

using test::be16;
using test::Bytes;
using test::cat;
using test::PacketBuilder;
using test::wire_name;

constexpr uint16_t kA = 1, kNS = 2, kSOA = 6, kMX = 15, kTXT = 16, kAAAA = 28, kSRV = 33, kOPT = 41,
                   kCAA = 257;

// Parses `p` and expects failure with exactly `code` at `offset`; saves p to the corpus.
void expect_error(const std::string& name, const Bytes& p, ParseError code, std::size_t offset,
                  ParseMode mode = ParseMode::Lenient) {
  test::save_to_corpus(name, p);
  Message m;
  auto st = m.parse(p, mode);
  ASSERT_FALSE(st.has_value()) << name;
  EXPECT_EQ(st.error(), (Error{code, offset}))
      << name << ": got " << to_string(st.error().code) << " at " << st.error().offset;
}

// A response with question www.example.com A (question ends at 12 + 17 + 4 = 33).
PacketBuilder response() {
  PacketBuilder b;
  b.question("www.example.com", kA);
  return b;
}
constexpr std::size_t kAfterQuestion = 33;
// The first record's RDATA starts after owner (17) + type, class, TTL, RDLENGTH (10).
constexpr std::size_t kFirstRdata = kAfterQuestion + 17 + 10;

TEST(MessageParse, ParsesAResponse) {
  auto p = response()
               .rr(0, "www.example.com", kA, 300, {192, 0, 2, 1})
               .rr(1, "example.com", kNS, 3600, wire_name("ns1.example.com"))
               .opt(1232, 0x8000)
               .build();
  Message m;
  ASSERT_TRUE(m.parse(p, ParseMode::Strict).has_value());
  EXPECT_EQ(m.header().id, 0x1234);
  ASSERT_EQ(m.questions().size(), 1u);
  EXPECT_EQ(m.questions()[0].name.to_text(), "www.example.com.");
  EXPECT_EQ(m.questions()[0].end, kAfterQuestion);
  ASSERT_EQ(m.records().size(), 2u);  // OPT is not among them
  EXPECT_EQ(m.section(Section::Answer).size(), 1u);
  EXPECT_EQ(m.section(Section::Authority).size(), 1u);
  EXPECT_EQ(m.section(Section::Additional).size(), 0u);
  const auto& a = m.records()[0];
  EXPECT_EQ(a.ttl, 300u);
  EXPECT_EQ(a.ttl_offset, kAfterQuestion + 17 + 4);
  EXPECT_EQ(a.rdata_offset, kFirstRdata);
  EXPECT_EQ(m.owner(m.records()[1]).to_text(), "example.com.");
  ASSERT_TRUE(m.edns().has_value());
  EXPECT_TRUE(m.edns()->dnssec_ok());
  EXPECT_EQ(m.edns()->udp_size, 1232);
  EXPECT_EQ(m.rcode(), RCode::NoError);
}

TEST(MessageParse, CombinesExtendedRcode) {
  // BADVERS = 16: header low bits 0, OPT high bits 1.
  auto p = response().flags(0x8000).opt(1232, 0x01000000).build();
  Message m;
  ASSERT_TRUE(m.parse(p).has_value());
  EXPECT_EQ(m.rcode(), RCode::BadVers);
}

TEST(MessageParse, RejectsShortHeader) {
  expect_error("short-header", Bytes{0x12, 0x34, 0x01}, ParseError::ShortHeader, 3);
  expect_error("empty", Bytes{}, ParseError::ShortHeader, 0);
}

TEST(MessageParse, RejectsQdcount65535OnA12BytePacket) {
  auto p = PacketBuilder().counts(65535, 0, 0, 0).build();
  ASSERT_EQ(p.size(), 12u);
  expect_error("qdcount-65535", p, ParseError::CountMismatch, 12);
}

TEST(MessageParse, RejectsCountsLargerThanContent) {
  // ANCOUNT=2 with one record: the record loop meets the end where the second should start.
  auto p = response().rr(0, "www.example.com", kA, 300, {192, 0, 2, 1}).counts(1, 2, 0, 0).build();
  expect_error("ancount-one-too-many", p, ParseError::CountMismatch, p.size());
  // ARCOUNT=1000 cannot fit even at 11 octets a record: caught before any loop, at the header.
  auto q = response().counts(1, 0, 0, 1000).build();
  expect_error("arcount-1000", q, ParseError::CountMismatch, 12);
  // The question's class is cut short.
  auto r = response().build();
  r.pop_back();
  expect_error("question-cut", r, ParseError::Truncated, r.size() - 1);
}

TEST(MessageParse, RejectsRecordLoopRunningOutOfBytes) {
  // ANCOUNT=2, and the bytes for a second minimum record are present but the first record's
  // RDATA swallows them: the loop then finds the end of the packet.
  auto p = response()
               .rr(0, "www.example.com", kTXT, 300, cat({{11}, Bytes(11, 'x')}))
               .counts(1, 2, 0, 0)
               .build();
  expect_error("ancount-runs-out", p, ParseError::CountMismatch, p.size());
}

TEST(MessageParse, RejectsTruncatedRecordHeader) {
  auto p = response().rr(0, "www.example.com", kA, 300, {192, 0, 2, 1}).build();
  p.resize(p.size() - 1);  // RDATA one octet short
  expect_error("rdata-cut", p, ParseError::Truncated, kFirstRdata - 2);
}

TEST(MessageParse, RejectsRdataLengthDisagreeingWithA) {
  auto p = response().rr(0, "www.example.com", kA, 300, {192, 0, 2}).build();
  expect_error("a-3-octets", p, ParseError::RdataLength, kFirstRdata);
  auto q = response().rr(0, "www.example.com", kAAAA, 300, Bytes(15, 0)).build();
  expect_error("aaaa-15-octets", q, ParseError::RdataLength, kFirstRdata);
}

TEST(MessageParse, RejectsRdataLengthDisagreeingWithMx) {
  // Preference and name, plus one stray octet inside RDLENGTH.
  auto p = response()
               .rr(0, "www.example.com", kMX, 300, cat({be16(10), wire_name("mx.example"), {0}}))
               .build();
  expect_error("mx-extra-octet", p, ParseError::RdataLength, kFirstRdata);
  // The name runs past RDLENGTH.
  auto q = response().rr(0, "www.example.com", kMX, 300, cat({be16(10), {2, 'm'}})).build();
  q.push_back('x');
  q.push_back(0);
  expect_error("mx-name-overruns", q, ParseError::RdataLength, kFirstRdata);
  auto r = response().rr(0, "www.example.com", kMX, 300, {0}).build();
  expect_error("mx-1-octet", r, ParseError::RdataLength, kFirstRdata);
}

TEST(MessageParse, RejectsRdataLengthDisagreeingWithSoa) {
  const Bytes names = cat({wire_name("ns.example"), wire_name("host.example")});
  auto p = response().rr(1, "example", kSOA, 300, cat({names, Bytes(19, 0)})).build();
  // Owner "example" is 9 octets.
  expect_error("soa-19-fixed-octets", p, ParseError::RdataLength, kAfterQuestion + 9 + 10);
  auto q = response().rr(1, "example", kSOA, 300, cat({names, Bytes(21, 0)})).build();
  expect_error("soa-21-fixed-octets", q, ParseError::RdataLength, kAfterQuestion + 9 + 10);
  Message m;
  auto ok = response().rr(1, "example", kSOA, 300, cat({names, Bytes(20, 0)})).build();
  EXPECT_TRUE(m.parse(ok, ParseMode::Strict).has_value());
}

TEST(MessageParse, RejectsRdataLengthDisagreeingWithTxt) {
  // A string length of 5 with only 3 octets left in RDATA.
  auto p = response().rr(0, "www.example.com", kTXT, 300, {5, 'a', 'b', 'c'}).build();
  expect_error("txt-string-overruns", p, ParseError::RdataLength, kFirstRdata);
  auto q = response().rr(0, "www.example.com", kTXT, 300, {}).build();
  expect_error("txt-empty-rdata", q, ParseError::RdataLength, kFirstRdata);
  // 255-octet strings are fine, several per record.
  auto ok = response()
                .rr(0, "www.example.com", kTXT, 300,
                    cat({{255}, Bytes(255, 'x'), {0}, {3, 'a', 'b', 'c'}}))
                .build();
  Message m;
  EXPECT_TRUE(m.parse(ok, ParseMode::Strict).has_value());
}

TEST(MessageParse, RejectsRdataLengthDisagreeingWithCaa) {
  // Tag length 10 with 5 octets left.
  auto p = response().rr(0, "www.example.com", kCAA, 300, {0, 10, 'i', 's', 's', 'u', 'e'}).build();
  expect_error("caa-tag-overruns", p, ParseError::RdataLength, kFirstRdata);
  auto q = response().rr(0, "www.example.com", kCAA, 300, {0, 0, 'x'}).build();
  expect_error("caa-empty-tag", q, ParseError::RdataLength, kFirstRdata);
  auto r = response().rr(0, "www.example.com", kCAA, 300, {0}).build();
  expect_error("caa-1-octet", r, ParseError::RdataLength, kFirstRdata);
}

TEST(MessageParse, RejectsRdataLengthDisagreeingWithSrv) {
  auto p = response().rr(0, "www.example.com", kSRV, 300, Bytes(5, 0)).build();
  expect_error("srv-5-octets", p, ParseError::RdataLength, kFirstRdata);
}

TEST(MessageParse, ReportsNameErrorsInsideRdata) {
  // An NS whose RDATA is a forward pointer: the name error, not a length error.
  auto p = response().rr(0, "www.example.com", kNS, 300, {0xC0, 0xFF}).build();
  expect_error("ns-forward-pointer", p, ParseError::PointerNotBackward, kFirstRdata);
}

TEST(MessageParse, AcceptsCompressedNamesInRdata) {
  // MX exchange "mail" + pointer to the qname's "example.com" (offset 12 + 4).
  auto p =
      response()
          .rr(0, "www.example.com", kMX, 300, cat({be16(10), {4, 'm', 'a', 'i', 'l', 0xC0, 16}}))
          .build();
  Message m;
  ASSERT_TRUE(m.parse(p, ParseMode::Strict).has_value());
}

TEST(MessageParse, TrailingBytesFailStrictAndPassLenient) {
  auto p = response().rr(0, "www.example.com", kA, 300, {192, 0, 2, 1}).build();
  const std::size_t end = p.size();
  p.insert(p.end(), {0xde, 0xad});
  expect_error("trailing-bytes", p, ParseError::TrailingBytes, end, ParseMode::Strict);
  Message m;
  ASSERT_TRUE(m.parse(p, ParseMode::Lenient).has_value());
  EXPECT_EQ(m.records().size(), 1u);
}

TEST(MessageParse, RejectsOptOutsideAdditional) {
  auto p = response().opt(1232, 0, {}, /*section=*/0).build();
  expect_error("opt-in-answer", p, ParseError::BadOpt, kAfterQuestion);
  auto q = response().opt(1232, 0, {}, /*section=*/1).build();
  expect_error("opt-in-authority", q, ParseError::BadOpt, kAfterQuestion);
}

TEST(MessageParse, RejectsOptWithNonRootOwner) {
  auto p = response().opt(1232, 0, {}, 2, "example").build();
  expect_error("opt-owner", p, ParseError::BadOpt, kAfterQuestion);
  // A pointer to the root is still not the root label in place.
  auto q = response().counts(1, 0, 0, 1).build();
  q.insert(q.end(), {0xC0, 28, 0, kOPT, 0x04, 0xD0, 0, 0, 0, 0, 0, 0});
  expect_error("opt-owner-pointer", q, ParseError::BadOpt, kAfterQuestion);
}

TEST(MessageParse, RejectsTwoOptRecords) {
  auto p = response().opt().opt().build();
  expect_error("opt-twice", p, ParseError::MultipleOpt, kAfterQuestion + 11);
}

TEST(MessageParse, RejectsBadOptionLength) {
  // Option 10, length 8, but 4 octets of data.
  const Bytes opts = {0, 10, 0, 8, 1, 2, 3, 4};
  auto p = response().opt(1232, 0, opts).build();
  expect_error("opt-option-overruns", p, ParseError::BadOpt, kAfterQuestion + 11);
  // Three stray octets: not even an option header.
  auto q = response().opt(1232, 0, {0, 10, 0}).build();
  expect_error("opt-option-header-cut", q, ParseError::BadOpt, kAfterQuestion + 11);
}

TEST(MessageParse, ReportsNameErrorsInQuestion) {
  auto p = PacketBuilder().counts(1, 0, 0, 0).raw({0xC0, 0x0C, 0, 1, 0, 1}).build();
  expect_error("question-self-pointer", p, ParseError::PointerNotBackward, 12);
  auto q = PacketBuilder().counts(1, 0, 0, 0).raw({0x40, 'a', 0, 0, 1, 0, 1}).build();
  expect_error("question-label-0x40", q, ParseError::BadLabelType, 12);
  auto r = PacketBuilder().counts(1, 0, 0, 0).raw({0xC0, 0x20, 0, 1, 0, 1, 0}).build();
  expect_error("question-forward-pointer", r, ParseError::PointerNotBackward, 12);
}

TEST(MessageParse, AcceptsA255OctetQnameAndRejects256) {
  PacketBuilder ok;
  ok.question(test::long_name({63, 63, 63, 61}), kA);
  Message m;
  ASSERT_TRUE(m.parse(ok.build(), ParseMode::Strict).has_value());
  EXPECT_EQ(m.questions()[0].name.size(), 255u);
  PacketBuilder bad;
  bad.question(test::long_name({63, 63, 63, 62}), kA);
  // The fourth label starts at 12 + 3 x 64.
  expect_error("qname-256-octets", bad.build(), ParseError::NameTooLong, 12 + 192);
}

TEST(MessageParse, RejectsPointerIntoHeader) {
  // An answer owner pointing at offset 4 (QDCOUNT): backward, but into the header.
  auto p = response().rr_raw_owner(0, {0xC0, 0x04}, kA, 0, {1, 2, 3, 4}).build();
  expect_error("pointer-into-header", p, ParseError::PointerIntoHeader, kAfterQuestion);
}

TEST(MessageParse, ReportsTooManyPointersInOwner) {
  // Answer 1 holds a chain of 200 backward pointers as opaque RDATA (TYPE65534); answer 2's
  // owner points at the last of them.
  auto b = response();
  const std::size_t chain = kFirstRdata - 17 + 1;  // first RDATA with a root owner (1 octet)
  Bytes rdata;
  for (std::size_t i = 0; i < 200; ++i) {
    // Pointer i points at pointer i-1; pointer 0 at the question's root label (offset 28).
    const std::size_t target = i == 0 ? 28 : chain + 2 * (i - 1);
    rdata.push_back(static_cast<uint8_t>(0xC0 | (target >> 8)));
    rdata.push_back(static_cast<uint8_t>(target));
  }
  b.rr(0, ".", 65534, 0, rdata);
  const std::size_t last = chain + 2 * 199;
  b.rr_raw_owner(0, {static_cast<uint8_t>(0xC0 | (last >> 8)), static_cast<uint8_t>(last)}, kA, 0,
                 {1, 2, 3, 4});
  auto p = b.build();
  // The owner's pointer is hop 1, pointer k is hop 201 - k: hop 128 is pointer 73.
  expect_error("too-many-pointers", p, ParseError::TooManyPointers, chain + 2 * 73);
}

TEST(MessageParse, KeepsParsingAfterReuse) {
  Message m;
  auto bad = PacketBuilder().counts(1, 0, 0, 0).build();
  EXPECT_FALSE(m.parse(bad).has_value());
  auto good = response().rr(0, "www.example.com", kA, 1, {1, 2, 3, 4}).build();
  ASSERT_TRUE(m.parse(good).has_value());
  EXPECT_EQ(m.records().size(), 1u);
}

TEST(ParseErrorText, EveryCauseHasADistinctName) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(ParseError::BadText); ++i)
    names.insert(to_string(static_cast<ParseError>(i)));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(ParseError::BadText) + 1);
  EXPECT_FALSE(names.contains("unknown"));
}

// RFC 6840 §5.8: AD in a response only when the data carried it and the query asked for it,
// with AD or with DO. (Upstream decides whether the data may carry it at all: --trust-ad.)
TEST(AnswerFlags, AdOnlyWhenTheDataHadItAndTheClientSetDoOrAd) {
  constexpr uint16_t data = flag::QR | flag::AD;
  EXPECT_FALSE(answer_flags(flag::RD, false, data) & flag::AD);
  EXPECT_TRUE(answer_flags(flag::RD | flag::AD, false, data) & flag::AD);
  EXPECT_TRUE(answer_flags(flag::RD, true, data) & flag::AD);
  EXPECT_FALSE(answer_flags(flag::RD | flag::AD, true, flag::QR) & flag::AD);
  // QR and RA set, RD and CD echoed, AA and TC never copied from the data.
  const uint16_t f = answer_flags(flag::RD | flag::CD, false, flag::QR | flag::AA | flag::TC | 3);
  EXPECT_EQ(f, flag::QR | flag::RA | flag::RD | flag::CD | 3);
}

}  // namespace
}  // namespace hg::wire
