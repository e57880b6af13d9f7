// AnswerNormalizer: the one way an untrusted answer is made fit for a cache insert (the
// daemon's upstream and fleet answers, the cache file, the replay). The same bytes as the
// owned model written without its OPT record; a clear status, never a crash, on hostile input.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/wire/answer_cases.h"
#include "tests/wire/packet_builder.h"
#include "tests/wire/vectors.h"
#include "wire/owned.h"
#include "wire/reencode.h"
#include "wire/writer.h"

namespace hg::wire {
namespace {

// What the cache file and the replay did before there was one function: parse, convert to
// the owned model, drop EDNS, write with write_message(), refuse a truncated result.
std::optional<std::vector<uint8_t>> through_owned_model(std::span<const uint8_t> answer) {
  Message m;
  if (!m.parse(answer, ParseMode::Lenient)) return std::nullopt;
  auto owned = to_owned(m);
  if (!owned) return std::nullopt;
  owned->edns.reset();
  std::vector<uint8_t> buf(65535);
  WireWriter w(buf);
  const auto out = write_message(w, *owned);
  if (!out.ok || out.truncated) return std::nullopt;
  return std::vector<uint8_t>(w.written().begin(), w.written().end());
}

TEST(AnswerNormalizer, EveryCaseGetsItsStatus) {
  AnswerNormalizer n;
  for (const auto& c : test::answer_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(n.normalize(c.bytes), c.status) << to_string(n.normalize(c.bytes));
    if (c.parse_error) {
      EXPECT_EQ(n.parse_error().code, *c.parse_error) << to_string(n.parse_error().code);
    }
    if (c.status != NormalizeStatus::Ok) {
      // Nothing to insert after a refusal.
      EXPECT_TRUE(n.message().records().empty());
      EXPECT_TRUE(n.message().questions().empty());
      EXPECT_TRUE(n.bytes().empty());
    }
  }
}

TEST(AnswerNormalizer, SameBytesAsTheOwnedModelWithoutOpt) {
  AnswerNormalizer n;
  const auto good = test::odd_but_valid_answer();
  ASSERT_EQ(n.normalize(good), NormalizeStatus::Ok);
  const auto expected = through_owned_model(good);
  ASSERT_TRUE(expected.has_value());
  EXPECT_TRUE(std::ranges::equal(n.bytes(), *expected));
  // Our writer's output: OPT and the trailing junk gone, every record kept, and the view is
  // what a Strict parse of the bytes gives.
  Message again;
  ASSERT_TRUE(again.parse(n.bytes(), ParseMode::Strict).has_value());
  EXPECT_FALSE(again.edns().has_value());
  ASSERT_EQ(again.records().size(), 3u);
  ASSERT_EQ(n.message().records().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(n.message().records()[i].ttl_offset, again.records()[i].ttl_offset);
    EXPECT_EQ(n.message().records()[i].ttl, again.records()[i].ttl);
  }
  EXPECT_EQ(n.message().header().id, 0x4242);

  // And on every captured vector, the refusals included.
  for (const auto& name : test::vector_names()) {
    SCOPED_TRACE(name);
    const auto packet = test::read_vector(name);
    const auto owned = through_owned_model(packet);
    const bool ok = n.normalize(packet) == NormalizeStatus::Ok;
    ASSERT_EQ(ok, owned.has_value());
    if (ok) {
      EXPECT_TRUE(std::ranges::equal(n.bytes(), *owned));
    }
  }
}

TEST(AnswerNormalizer, ARefusalLeavesNothingOfThePreviousAnswer) {
  AnswerNormalizer n;
  const auto cases = test::answer_cases();
  for (const auto& c : cases) {
    if (c.status == NormalizeStatus::Ok) continue;
    SCOPED_TRACE(c.name);
    ASSERT_EQ(n.normalize(cases.front().bytes), NormalizeStatus::Ok);
    ASSERT_FALSE(n.message().records().empty());
    EXPECT_EQ(n.normalize(c.bytes), c.status);
    EXPECT_TRUE(n.message().records().empty());
  }
}

TEST(AnswerNormalizer, SetTtlWritesTheFieldAndTheView) {
  AnswerNormalizer n;
  ASSERT_EQ(n.normalize(test::odd_but_valid_answer()), NormalizeStatus::Ok);
  n.set_ttl(0, 7);
  n.set_ttl(2, 0x01020304);
  Message again;
  ASSERT_TRUE(again.parse(n.bytes(), ParseMode::Strict).has_value());
  EXPECT_EQ(again.records()[0].ttl, 7u);
  EXPECT_EQ(again.records()[1].ttl, 60u);
  EXPECT_EQ(again.records()[2].ttl, 0x01020304u);
  EXPECT_EQ(n.message().records()[0].ttl, 7u);
  EXPECT_EQ(n.message().records()[2].ttl, 0x01020304u);
}

TEST(AnswerNormalizer, StatusNames) {
  EXPECT_EQ(to_string(NormalizeStatus::Ok), "ok");
  EXPECT_EQ(to_string(NormalizeStatus::Malformed), "malformed");
  EXPECT_EQ(to_string(NormalizeStatus::TooLarge), "too-large");
}

// An answer as a broken or hostile upstream writes it: AD set, a signature and a denial
// proof although the query had no DO, TTLs of 2^32 - 1 and 2^31.
std::vector<uint8_t> signed_answer(uint16_t qtype) {
  const std::vector<uint8_t> sig(40, 0xab), bitmap = {0, 1, 0x40};
  return test::PacketBuilder()
      .flags(0x81a0)  // QR RD RA AD
      .question("s.example", qtype)
      .rr(0, "s.example", 1, 0xFFFFFFFFu, {192, 0, 2, 1})
      .rr(0, "s.example", 46, 300, sig)
      .rr(1, "s.example", 47, 0x80000000u, bitmap)
      .rr(2, "s.example", 50, 300, sig)
      .build();
}

TEST(AnswerNormalizer, RulesStripDnssecRecordsClampTtlsAndClearAd) {
  AnswerNormalizer n;
  ASSERT_EQ(n.normalize(signed_answer(1)), NormalizeStatus::Ok);
  EXPECT_EQ(n.message().records().size(), 4u) << "no rules: every record as it came";
  EXPECT_TRUE(n.message().header().ad());
  EXPECT_EQ(n.dropped(), 0u);

  const RewriteRules all{.strip_dnssec = true, .clamp_ttl = true, .clear_ad = true};
  ASSERT_EQ(n.normalize(signed_answer(1), all), NormalizeStatus::Ok);
  ASSERT_EQ(n.message().records().size(), 1u);
  EXPECT_EQ(n.message().records()[0].type, RRType::A);
  EXPECT_EQ(n.message().records()[0].ttl, 0u);
  EXPECT_FALSE(n.message().header().ad());
  EXPECT_EQ(n.message().header().ancount, 1);
  EXPECT_EQ(n.message().header().nscount, 0);
  EXPECT_EQ(n.message().header().arcount, 0);
  EXPECT_EQ(n.dropped(), 3u);
  EXPECT_EQ(n.clamped(), 1u);  // the NSEC's TTL was not written at all
  // The bytes say what the view says.
  Message again;
  ASSERT_TRUE(again.parse(n.bytes(), ParseMode::Strict).has_value());
  ASSERT_EQ(again.records().size(), 1u);
  EXPECT_EQ(again.records()[0].ttl, 0u);
  EXPECT_FALSE(again.header().ad());

  // Asked for by type (RFC 4035 §3.2.1), the RRSIG stays; the other proofs still go.
  ASSERT_EQ(n.normalize(signed_answer(46), all), NormalizeStatus::Ok);
  ASSERT_EQ(n.message().records().size(), 2u);
  EXPECT_EQ(n.message().records()[1].type, RRType::RRSIG);
  EXPECT_EQ(n.dropped(), 2u);
}

TEST(AnswerNormalizer, MaxTtlCapsEveryRecordButLeavesShorterOnesAlone) {
  // A validated answer whose signatures expire in 120 s (RFC 4035 §5.3.3).
  const std::vector<uint8_t> sig(40, 0xab);
  const auto answer = test::PacketBuilder()
                          .flags(0x8180)
                          .question("s.example", 1)
                          .rr(0, "s.example", 1, 3600, {192, 0, 2, 1})
                          .rr(0, "s.example", 46, 3600, sig)
                          .rr(1, "example", 6, 60, std::vector<uint8_t>(22, 0))
                          .build();
  AnswerNormalizer n;
  ASSERT_EQ(n.normalize(answer, RewriteRules{.max_ttl = 120}), NormalizeStatus::Ok);
  ASSERT_EQ(n.message().records().size(), 3u);
  EXPECT_EQ(n.message().records()[0].ttl, 120u);
  EXPECT_EQ(n.message().records()[1].ttl, 120u);
  EXPECT_EQ(n.message().records()[2].ttl, 60u) << "a shorter TTL stays";
  EXPECT_EQ(n.clamped(), 0u);
  // Without the rule, the TTLs as they came.
  ASSERT_EQ(n.normalize(answer), NormalizeStatus::Ok);
  EXPECT_EQ(n.message().records()[0].ttl, 3600u);
}

// What a poisoning upstream adds around a real answer, records in a shuffled order.
std::vector<uint8_t> poisoned_answer() {
  const auto name = [](std::string_view n) { return test::wire_name(n); };
  std::vector<uint8_t> mx = {0, 10};
  const auto mail = name("mail.example.net");
  mx.insert(mx.end(), mail.begin(), mail.end());
  return test::PacketBuilder()
      .flags(0x8180)
      .question("www.example.com", 15)                            // MX
      .rr(0, "web.example.net", 15, 300, mx)                      // 0 kept: chain
      .rr(0, "www.example.com", 5, 300, name("web.example.net"))  // 1 kept: CNAME
      .rr(0, "www.bank.test", 1, 300, {6, 6, 6, 6})               // 2 dropped
      .rr(1, ".", 2, 300, name("a.root-servers.net"))             // 3 dropped: root NS
      .rr(1, "example.net", 2, 300, name("ns1.example.net"))      // 4 kept: deepest
      .rr(1, "net", 2, 300, name("a.gtld-servers.net"))           // 5 dropped: shallower
      .rr(1, "bank.test", 2, 300, name("ns.evil.test"))           // 6 dropped: unrelated
      .rr(2, "ns1.example.net", 1, 300, {192, 0, 2, 53})          // 7 kept: NS target
      .rr(2, "mail.example.net", 1, 300, {192, 0, 2, 25})         // 8 kept: MX target
      .rr(2, "ns.evil.test", 1, 300, {6, 6, 6, 7})                // 9 dropped
      .rr(2, "www.bank.test", 1, 300, {6, 6, 6, 8})               // 10 dropped
      .build();
}

TEST(ChainRecords, KeepsTheQuestionsChainAndWhatItPointsToAndNothingElse) {
  Message m;
  const auto bytes = poisoned_answer();
  ASSERT_TRUE(m.parse(bytes, ParseMode::Strict).has_value());
  std::vector<uint8_t> keep;
  chain_records(m, keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0}));

  AnswerNormalizer n;
  ASSERT_EQ(n.normalize(bytes, RewriteRules{.chain_only = true}), NormalizeStatus::Ok);
  EXPECT_EQ(n.dropped(), 6u);
  EXPECT_EQ(n.message().header().ancount, 2);
  EXPECT_EQ(n.message().header().nscount, 1);
  EXPECT_EQ(n.message().header().arcount, 2);
}

TEST(ChainRecords, ANegativeAnswerKeepsItsSoaAndProofsAndADnameLeadsTheChain) {
  const auto name = [](std::string_view n) { return test::wire_name(n); };
  const std::vector<uint8_t> soa_rdata = [&] {
    std::vector<uint8_t> r = name("ns.example.org");
    const auto rn = name("host.example.org");
    r.insert(r.end(), rn.begin(), rn.end());
    r.insert(r.end(), 20, 0);
    return r;
  }();
  const auto bytes = test::PacketBuilder()
                         .flags(0x8183)  // NXDOMAIN
                         .question("a.b.old.example", 1)
                         .rr(0, "old.example", 39, 300, name("example.org"))  // DNAME: kept
                         .rr(0, "a.b.old.example", 5, 300, name("a.b.example.org"))
                         .rr(1, "example.org", 6, 300, soa_rdata)  // kept
                         .rr(1, "a.example.org", 47, 300, {0})     // NSEC: kept
                         .rr(1, "example.com", 6, 300, soa_rdata)  // dropped
                         .build();
  Message m;
  ASSERT_TRUE(m.parse(bytes, ParseMode::Strict).has_value());
  std::vector<uint8_t> keep;
  chain_records(m, keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 1, 1, 1, 0}));

  // Asked for by type at its owner, the DNAME is the answer itself (it redirects only the
  // names below the owner, but it belongs to the owner's question).
  const auto by_type = test::PacketBuilder()
                           .flags(0x8180)
                           .question("old.example", 39)
                           .rr(0, "old.example", 39, 300, name("example.org"))
                           .rr(0, "other.example", 39, 300, name("evil.test"))
                           .build();
  ASSERT_TRUE(m.parse(by_type, ParseMode::Strict).has_value());
  chain_records(m, keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 0}));
}

}  // namespace
}  // namespace hg::wire
