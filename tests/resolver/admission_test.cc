// Query admission: which client messages are resolved, answered with an error, or dropped.
#include "resolver/query/admission.h"

#include <gtest/gtest.h>

#include <array>

#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using wire::test::Bytes;
using wire::test::PacketBuilder;

constexpr uint16_t kRd = 0x0100;

struct Admitted {
  AdmissionResult result;
  ClientQuery query;
  wire::Message response;
  Bytes out;
  Bytes packet;
  wire::Message scratch;  // query.qname points into it (a move keeps the vector's buffer)
};

Admitted admit(const Bytes& packet, bool allowed = true) {
  Admitted a;
  a.packet = packet;
  a.out.resize(1232);
  a.result = admit_query(a.packet, allowed, a.scratch, a.query, a.out);
  if (a.result.action == Admission::Respond) {
    a.out.resize(a.result.response_size);
    EXPECT_TRUE(a.response.parse(a.out, wire::ParseMode::Strict).has_value());
  }
  return a;
}

std::optional<uint16_t> ede_code(const wire::Message& m) {
  std::optional<uint16_t> code;
  if (m.edns()) {
    m.edns()->for_each_option([&](const wire::EdnsOption& o) {
      if (o.code == wire::edns_option::ExtendedError)
        code = wire::parse_extended_error(o.data)->info_code;
    });
  }
  return code;
}

TEST(AdmitQuery, ResolvesAPlainQueryAndKeepsItsQuestionBytes) {
  auto a = admit(PacketBuilder().id(77).flags(kRd).question("WwW.Example.COM", 1).build());
  ASSERT_EQ(a.result.action, Admission::Resolve);
  EXPECT_EQ(a.query.id, 77);
  EXPECT_TRUE(a.query.rd());
  EXPECT_FALSE(a.query.has_edns);
  EXPECT_EQ(a.query.udp_size, 512);
  EXPECT_EQ(a.query.qname->to_text(), "WwW.Example.COM.");
  EXPECT_EQ(Bytes(a.query.question.begin(), a.query.question.end()),
            Bytes(a.packet.begin() + 12, a.packet.end()));
}

TEST(AdmitQuery, ReadsEdnsPayloadSizeAndDoBit) {
  auto a = admit(PacketBuilder().flags(kRd).question("a.example", 1).opt(4096, 0x8000).build());
  ASSERT_EQ(a.result.action, Admission::Resolve);
  EXPECT_TRUE(a.query.has_edns);
  EXPECT_TRUE(a.query.dnssec_ok);
  EXPECT_EQ(a.query.udp_size, 4096);
}

TEST(AdmitQuery, RaisesTinyEdnsPayloadTo512) {
  auto a = admit(PacketBuilder().flags(0).question("a.example", 1).opt(100, 0).build());
  ASSERT_EQ(a.result.action, Admission::Resolve);
  EXPECT_EQ(a.query.udp_size, 512);
}

TEST(AdmitQuery, DropsShorterThanHeader) {
  auto a = admit(Bytes{1, 2, 3, 4, 5});
  EXPECT_EQ(a.result.action, Admission::Drop);
  EXPECT_EQ(a.result.why, Rejection::TooShort);
}

TEST(AdmitQuery, DropsResponses) {
  auto a = admit(PacketBuilder().flags(0x8000).question("a.example", 1).build());
  EXPECT_EQ(a.result.action, Admission::Drop);
  EXPECT_EQ(a.result.why, Rejection::IsResponse);
}

TEST(AdmitQuery, AnswersFormerrToMalformedQueryWithItsIdAndRd) {
  // QDCOUNT says 1 but the name's pointer loops onto itself.
  auto a = admit(
      PacketBuilder().id(9).flags(kRd).counts(1, 0, 0, 0).raw({0xC0, 12, 0, 1, 0, 1}).build());
  ASSERT_EQ(a.result.action, Admission::Respond);
  EXPECT_EQ(a.result.why, Rejection::Malformed);
  EXPECT_EQ(a.result.parse_error.code, wire::ParseError::PointerNotBackward);
  EXPECT_EQ(a.response.header().id, 9);
  EXPECT_TRUE(a.response.header().qr());
  EXPECT_TRUE(a.response.header().rd());
  EXPECT_EQ(a.response.rcode(), wire::RCode::FormErr);
  EXPECT_EQ(a.response.header().qdcount, 0);
}

TEST(AdmitQuery, AnswersFormerrToTrailingBytes) {
  auto a = admit(PacketBuilder().flags(0).question("a.example", 1).raw({0xde, 0xad}).build());
  ASSERT_EQ(a.result.action, Admission::Respond);
  EXPECT_EQ(a.result.parse_error.code, wire::ParseError::TrailingBytes);
  EXPECT_EQ(a.response.rcode(), wire::RCode::FormErr);
}

TEST(AdmitQuery, AnswersNotimpToOtherOpcodes) {
  // Opcode 4 (NOTIFY) in bits 11-14.
  auto a = admit(PacketBuilder().flags(0x2000).question("a.example", 1).build());
  ASSERT_EQ(a.result.action, Admission::Respond);
  EXPECT_EQ(a.result.why, Rejection::NotQuery);
  EXPECT_EQ(a.response.rcode(), wire::RCode::NotImp);
  EXPECT_EQ(a.response.header().opcode(), static_cast<wire::Opcode>(4));
}

TEST(AdmitQuery, AnswersFormerrToTwoQuestionsOrNone) {
  auto two =
      admit(PacketBuilder().flags(0).question("a.example", 1).question("b.example", 1).build());
  EXPECT_EQ(two.result.why, Rejection::BadQuestionCount);
  EXPECT_EQ(two.response.rcode(), wire::RCode::FormErr);
  auto none = admit(PacketBuilder().flags(0).build());
  EXPECT_EQ(none.result.why, Rejection::BadQuestionCount);
  EXPECT_EQ(none.response.rcode(), wire::RCode::FormErr);
}

TEST(AdmitQuery, AnswersBadversWithOptToEdnsVersion1) {
  // TTL field: ext-rcode 0, version 1, flags 0.
  auto a = admit(PacketBuilder().flags(0).question("a.example", 1).opt(1232, 0x00010000).build());
  ASSERT_EQ(a.result.action, Admission::Respond);
  EXPECT_EQ(a.result.why, Rejection::BadEdnsVersion);
  ASSERT_TRUE(a.response.edns().has_value());
  EXPECT_EQ(a.response.edns()->version, 0);
  EXPECT_EQ(a.response.rcode(), wire::RCode::BadVers);
  EXPECT_EQ(a.response.header().rcode_low(), 0);
}

TEST(AdmitQuery, RefusesClientsOutsideTheAllowListWithEde18) {
  auto a =
      admit(PacketBuilder().flags(0).question("a.example", 1).opt().build(), /*allowed=*/false);
  ASSERT_EQ(a.result.action, Admission::Respond);
  EXPECT_EQ(a.response.rcode(), wire::RCode::Refused);
  EXPECT_EQ(ede_code(a.response), wire::ede::Prohibited);
  // The question is echoed.
  ASSERT_EQ(a.response.questions().size(), 1u);
  EXPECT_EQ(a.response.questions()[0].name.to_text(), "a.example.");
}

TEST(AdmitQuery, TellsClientsOutsideTheAllowListNothingButRefused) {
  // Malformed, another opcode, EDNS version 1: each would get its own error when allowed.
  for (const Bytes& p :
       {PacketBuilder().id(5).flags(0).counts(1, 0, 0, 0).raw({0xC0, 12, 0, 1, 0, 1}).build(),
        PacketBuilder().id(5).flags(0x2000).question("a.example", 1).build(),
        PacketBuilder().id(5).flags(0).question("a.example", 1).opt(1232, 0x00010000).build()}) {
    auto a = admit(p, /*allowed=*/false);
    ASSERT_EQ(a.result.action, Admission::Respond);
    EXPECT_EQ(a.result.why, Rejection::NotAllowed);
    EXPECT_EQ(a.response.rcode(), wire::RCode::Refused);
    EXPECT_EQ(a.response.header().id, 5);
  }
}

TEST(AdmitQuery, RefusesClassChaos) {
  auto a = admit(PacketBuilder().flags(0).question("version.bind", 16, 3).build());
  EXPECT_EQ(a.result.why, Rejection::BadClass);
  EXPECT_EQ(a.response.rcode(), wire::RCode::Refused);
}

TEST(AdmitQuery, RefusesZoneTransfers) {
  EXPECT_EQ(admit(PacketBuilder().flags(0).question("example.com", 252).build()).result.why,
            Rejection::ZoneTransfer);
  EXPECT_EQ(admit(PacketBuilder().flags(0).question("example.com", 251).build()).result.why,
            Rejection::ZoneTransfer);
}

TEST(AdmitQuery, AnswersFormerrToMetaTypesButResolvesAny) {
  EXPECT_EQ(admit(PacketBuilder().flags(0).question("example.com", 41).build()).result.why,
            Rejection::MetaType);
  EXPECT_EQ(admit(PacketBuilder().flags(0).question("example.com", 250).build()).result.why,
            Rejection::MetaType);
  EXPECT_EQ(admit(PacketBuilder().flags(0).question("example.com", 255).build()).result.action,
            Admission::Resolve);
}

TEST(AdmitQuery, ErrorAnswersCarryOptOnlyWhenTheClientSentOne) {
  auto without = admit(PacketBuilder().flags(0).question("example.com", 252).build());
  EXPECT_FALSE(without.response.edns().has_value());
  auto with =
      admit(PacketBuilder().flags(0).question("example.com", 252).opt(1232, 0x8000).build());
  ASSERT_TRUE(with.response.edns().has_value());
  EXPECT_TRUE(with.response.edns()->dnssec_ok());
  EXPECT_EQ(with.response.edns()->udp_size, 1232);
}

}  // namespace
}  // namespace hg::resolver
