#include "cache/entry.h"

#include <gtest/gtest.h>

#include <malloc.h>

#include <array>

#include "cache/clock.h"
#include "cache_test_util.h"
#include "wire/edns.h"

namespace hg::cache {
namespace {

using namespace testing;
using wire::RCode;

struct Built {
  std::shared_ptr<const Entry> entry;
  InsertOutcome outcome;
};

Built build(const OwnedMessage& m, const CacheKey& k, Time now, const TtlSettings& s = {},
            const TtlCaps& caps = TtlCaps{}) {
  const Packet p(m);
  auto b = Entry::build(k, p.msg, s, caps, now, true);
  return {b.entry, b.outcome};
}

// www.example.com. CNAME cdn.example.net. (cname_ttl), cdn.example.net. A (a_ttl).
OwnedMessage cname_chain(uint32_t cname_ttl, uint32_t a_ttl) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(CNAME("www.example.com", cname_ttl, "cdn.example.net"));
  m.answer.push_back(A("cdn.example.net", a_ttl));
  return m;
}

// Renders `e` for a client that asked `qname` (its own case), returning the decoded answer.
struct Rendered {
  std::vector<uint8_t> bytes;
  RenderResult result;
  OwnedMessage msg;
};
Rendered render_for(const Entry& e, std::string_view qname, Time now, std::size_t limit = 65535,
                    std::optional<uint32_t> stale = std::nullopt, std::size_t reserve = 0,
                    RRType qtype = RRType::A) {
  const Packet q(query(qname, qtype));
  Rendered r;
  r.bytes.resize(65535);
  wire::WireWriter w(r.bytes, limit);
  ClientQuery c{.id = 0xBEEF, .flags = wire::flag::RD, .question = q.question()};
  r.result = render_entry(e, c, now, stale, w, reserve);
  r.bytes.resize(w.size());
  if (r.result.ok) r.msg = decode(r.bytes);
  return r;
}

const Time t0 = ManualClock{}.now();

TEST(EntryBuild, StoresPositiveAnswerWithoutOpt) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 300));
  m.edns = wire::OwnedEdns{};
  m.edns->options.push_back({wire::edns_option::NSID, {'x'}});
  auto b = build(m, key("www.example.com"), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->kind(), AnswerKind::Positive);
  EXPECT_EQ(b.entry->ancount(), 1);
  EXPECT_EQ(b.entry->arcount(), 0);  // OPT is the resolver's business, not the cache's
  EXPECT_EQ(b.entry->ttl(), 300u);
  EXPECT_EQ(b.entry->expires_at(), t0 + Seconds{300});
  const OwnedMessage out = decode(b.entry->to_wire(t0));
  EXPECT_FALSE(out.edns.has_value());
  EXPECT_EQ(out.answer, m.answer);
}

// One allocation: control block, entry, records and bytes. The charge (memory_bytes) is what
// malloc really handed out, within its rounding; with_cap's copy has storage of its own.
TEST(EntryBuild, OneAllocationHoldsTheEntryAndItsBytesAndIsChargedAsSuch) {
  OwnedMessage m = cname_chain(300, 60);
  auto b = build(m, key("www.example.com"), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  for (const auto& e : {b.entry, b.entry->with_cap(30, t0)}) {
    // The allocation begins with the control block, two words before the entry.
    auto* start = const_cast<char*>(reinterpret_cast<const char*>(e.get())) - 2 * sizeof(void*);
    const std::size_t usable = malloc_usable_size(start);
    const std::size_t requested = e->memory_bytes() - 16;  // less malloc's own overhead
    EXPECT_GE(usable, requested);
    EXPECT_LT(usable, requested + 32);
    const OwnedMessage out = decode(e->to_wire(t0));
    ASSERT_EQ(out.answer.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {  // the same records; the copy's TTLs capped at 30
      OwnedRecord want = m.answer[i];
      if (e != b.entry) want.ttl = std::min<uint32_t>(want.ttl, 30);
      EXPECT_EQ(out.answer[i], want);
    }
  }
  EXPECT_NE(b.entry->records().data(), b.entry->with_cap(30, t0)->records().data());
}

TEST(EntryBuild, RefusesTruncatedAnswer) {
  OwnedMessage m = response("www.example.com");
  m.header.set(wire::flag::TC, true);
  m.answer.push_back(A("www.example.com", 300));
  EXPECT_EQ(build(m, key("www.example.com"), t0).outcome, InsertOutcome::Truncated);
}

TEST(EntryBuild, RefusesServfailRefusedAndOtherRcodes) {
  for (RCode rc : {RCode::ServFail, RCode::Refused, RCode::FormErr, RCode::NotImp}) {
    OwnedMessage m = response("www.example.com", RRType::A, rc);
    m.authority.push_back(SOA("example.com", 300, 300));
    EXPECT_EQ(build(m, key("www.example.com"), t0).outcome, InsertOutcome::UncacheableRcode)
        << static_cast<int>(rc);
  }
}

TEST(EntryBuild, RefusesQueryAndOtherOpcodes) {
  OwnedMessage m = response("www.example.com");
  m.header.set(wire::flag::QR, false);
  m.answer.push_back(A("www.example.com", 300));
  EXPECT_EQ(build(m, key("www.example.com"), t0).outcome, InsertOutcome::NotResponse);
}

TEST(EntryBuild, RefusesAnswerToAnotherQuestion) {
  OwnedMessage m = response("www.example.org");
  m.answer.push_back(A("www.example.org", 300));
  EXPECT_EQ(build(m, key("www.example.com"), t0).outcome, InsertOutcome::QuestionMismatch);
  OwnedMessage t = response("www.example.com", RRType::AAAA);
  t.answer.push_back(AAAA("www.example.com", 300));
  EXPECT_EQ(build(t, key("www.example.com"), t0).outcome, InsertOutcome::QuestionMismatch);
  OwnedMessage none = response("www.example.com");
  none.questions.clear();
  none.answer.push_back(A("www.example.com", 300));
  EXPECT_EQ(build(none, key("www.example.com"), t0).outcome, InsertOutcome::QuestionMismatch);
}

TEST(EntryBuild, AcceptsAnswerWhoseQuestionDiffersOnlyInCase) {
  OwnedMessage m = response("WWW.Example.COM");
  m.answer.push_back(A("www.example.com", 300));
  EXPECT_EQ(build(m, key("www.example.com"), t0).outcome, InsertOutcome::Cached);
}

TEST(EntryBuild, RefusesNegativeAnswerWithoutSoa) {
  OwnedMessage nx = response("nope.example.com", RRType::A, RCode::NXDomain);
  EXPECT_EQ(build(nx, key("nope.example.com"), t0).outcome, InsertOutcome::NegativeWithoutSoa);
  OwnedMessage referral = response("www.example.com");
  referral.authority.push_back(NS("example.com", 3600, "ns1.example.com"));
  EXPECT_EQ(build(referral, key("www.example.com"), t0).outcome, InsertOutcome::NegativeWithoutSoa);
}

TEST(EntryBuild, ZeroTtlAnswerIsNotStored) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 0));
  EXPECT_EQ(build(m, key("www.example.com"), t0, TtlSettings{.min_ttl = 60}).outcome,
            InsertOutcome::RemovedZeroTtl);
}

TEST(EntryBuild, HighBitTtlIsTreatedAsZero) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 0x80000010u));
  EXPECT_EQ(build(m, key("www.example.com"), t0).outcome, InsertOutcome::RemovedZeroTtl);
}

TEST(EntryBuild, ClampsPositiveTtlsAtInsert) {
  OwnedMessage m = cname_chain(999999, 5);
  auto b = build(m, key("www.example.com"), t0, TtlSettings{.min_ttl = 10, .max_ttl = 3600});
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->records()[0].ttl, 3600u);
  EXPECT_EQ(b.entry->records()[1].ttl, 10u);
  EXPECT_EQ(b.entry->ttl(), 10u);
}

TEST(EntryBuild, NxdomainLivesForSoaMinimumWhenBelowSoaTtl) {
  OwnedMessage m = response("nope.example.com", RRType::A, RCode::NXDomain);
  m.authority.push_back(SOA("example.com", 900, 60));
  auto b = build(m, key("nope.example.com"), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->kind(), AnswerKind::NxDomain);
  EXPECT_EQ(b.entry->ttl(), 60u);
}

TEST(EntryBuild, NodataLivesForSoaTtlWhenBelowMinimum) {
  OwnedMessage m = response("www.example.com", RRType::AAAA);
  m.authority.push_back(SOA("example.com", 45, 600));
  auto b = build(m, key("www.example.com", RRType::AAAA), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->kind(), AnswerKind::NoData);
  EXPECT_EQ(b.entry->ttl(), 45u);
}

TEST(EntryBuild, NegativeTtlIsClampedByNegativeMaxTtl) {
  OwnedMessage m = response("nope.example.com", RRType::A, RCode::NXDomain);
  m.authority.push_back(SOA("example.com", 86400, 86400));
  auto b = build(m, key("nope.example.com"), t0, TtlSettings{.negative_max_ttl = 600});
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->ttl(), 600u);
}

TEST(EntryBuild, ZoneCapAppliesAtAndBelowZoneButNotToSibling) {
  TtlCaps caps;
  caps.set(N("example.com"), 60);
  OwnedMessage in = response("www.example.com");
  in.answer.push_back(A("www.example.com", 3600));
  auto b = build(in, key("www.example.com"), t0, {}, caps);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->ttl(), 60u);
  OwnedMessage out = response("badexample.com");
  out.answer.push_back(A("badexample.com", 3600));
  auto c = build(out, key("badexample.com"), t0, {}, caps);
  ASSERT_EQ(c.outcome, InsertOutcome::Cached);
  EXPECT_EQ(c.entry->ttl(), 3600u);
}

TEST(EntryBuild, ZoneCapBoundsNegativeAnswerForNameBelowZone) {
  TtlCaps caps;
  caps.set(N("shop.example.com"), 20);
  OwnedMessage m = response("gone.shop.example.com", RRType::A, RCode::NXDomain);
  m.authority.push_back(SOA("example.com", 3600, 3600));  // apex above the capped zone
  auto b = build(m, key("gone.shop.example.com"), t0, {}, caps);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->ttl(), 20u);
}

TEST(EntryBuild, DropsRecordsAfterAMisplacedOpt) {
  // OPT in the middle of the additional section: the record after it is dropped, never moved.
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 300));
  m.additional.push_back(A("ns1.example.com", 300));
  m.edns = wire::OwnedEdns{};
  std::vector<uint8_t> bytes = wire::to_wire(m);  // ... A(ns1) OPT
  // Append one more additional record after the OPT, by hand: root owner, TXT, IN, TTL 300.
  const std::array<uint8_t, 12> txt = {0, 0, 16, 0, 1, 0, 0, 1, 44, 0, 1, 0};
  bytes.insert(bytes.end(), txt.begin(), txt.end());
  bytes[11] = static_cast<uint8_t>(bytes[11] + 1);  // ARCOUNT + 1
  const Packet p(std::move(bytes));
  auto b = Entry::build(key("www.example.com"), p.msg, {}, TtlCaps{}, t0, true);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->arcount(), 1);
  EXPECT_EQ(decode(b.entry->to_wire(t0)).additional.size(), 1u);
}

TEST(EntryRender, EchoesClientIdRdAndQuestionCase) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 300));
  auto b = build(m, key("www.example.com"), t0);
  const Rendered r = render_for(*b.entry, "wWw.ExAmple.CoM", t0);
  ASSERT_TRUE(r.result.ok);
  EXPECT_EQ(r.msg.header.id, 0xBEEF);
  EXPECT_TRUE(r.msg.header.rd());
  EXPECT_TRUE(r.msg.header.qr());
  EXPECT_TRUE(r.msg.header.ra());
  EXPECT_FALSE(r.msg.header.aa());
  EXPECT_TRUE(r.msg.questions[0].name.identical(N("wWw.ExAmple.CoM")));
  ASSERT_EQ(r.msg.answer.size(), 1u);
  EXPECT_EQ(r.msg.answer[0].rdata, A("x", 1, 1).rdata);
}

TEST(EntryRender, CompressionPointersResolveToClientSpelling) {
  // to_wire compresses the answer's owner to a pointer at the question: after rendering it
  // must point at the client's question, which has the same length.
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(CNAME("www.example.com", 300, "web.example.com"));
  m.answer.push_back(A("web.example.com", 300));
  auto b = build(m, key("www.example.com"), t0);
  const Rendered r = render_for(*b.entry, "WWW.EXAMPLE.COM", t0);
  ASSERT_TRUE(r.result.ok);
  ASSERT_EQ(r.msg.answer.size(), 2u);
  EXPECT_EQ(r.msg.answer[0].owner, N("www.example.com"));
  EXPECT_EQ(std::get<wire::RdataName>(r.msg.answer[0].rdata).name, N("web.example.com"));
  EXPECT_EQ(r.msg.answer[1].owner, N("web.example.com"));
}

TEST(EntryRender, RecordsCountDownIndependentlyAcrossSeconds) {
  OwnedMessage m = cname_chain(3600, 60);
  auto b = build(m, key("www.example.com"), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  EXPECT_EQ(b.entry->expires_at(), t0 + Seconds{60});
  // 999 ms is not yet a whole second.
  Rendered r = render_for(*b.entry, "www.example.com", t0 + Millis{999});
  EXPECT_EQ(r.msg.answer[0].ttl, 3600u);
  EXPECT_EQ(r.msg.answer[1].ttl, 60u);
  r = render_for(*b.entry, "www.example.com", t0 + Millis{1000});
  EXPECT_EQ(r.msg.answer[0].ttl, 3599u);
  EXPECT_EQ(r.msg.answer[1].ttl, 59u);
  r = render_for(*b.entry, "www.example.com", t0 + Seconds{59} + Millis{500});
  EXPECT_EQ(r.msg.answer[0].ttl, 3541u);
  EXPECT_EQ(r.msg.answer[1].ttl, 1u);
  // Never negative, even rendered after expiry by a caller that kept the hit.
  r = render_for(*b.entry, "www.example.com", t0 + Seconds{100});
  EXPECT_EQ(r.msg.answer[1].ttl, 0u);
  // Never above the original, even if the clock went backwards.
  r = render_for(*b.entry, "www.example.com", t0 - Seconds{5});
  EXPECT_EQ(r.msg.answer[0].ttl, 3600u);
}

TEST(EntryRender, NegativeAnswerSoaCountsDown) {
  OwnedMessage m = response("nope.example.com", RRType::A, RCode::NXDomain);
  m.authority.push_back(SOA("example.com", 900, 300));
  auto b = build(m, key("nope.example.com"), t0);
  const Rendered r = render_for(*b.entry, "nope.example.com", t0 + Seconds{100});
  EXPECT_EQ(r.msg.rcode(), RCode::NXDomain);
  ASSERT_EQ(r.msg.authority.size(), 1u);
  EXPECT_EQ(r.msg.authority[0].ttl, 200u);
}

TEST(EntryRender, StaleTtlIsThirtyButNeverAboveOriginal) {
  OwnedMessage m = cname_chain(3600, 10);
  auto b = build(m, key("www.example.com"), t0);
  const Rendered r = render_for(*b.entry, "www.example.com", t0 + Seconds{500}, 65535, 30u);
  ASSERT_TRUE(r.result.ok);
  EXPECT_EQ(r.msg.answer[0].ttl, 30u);
  EXPECT_EQ(r.msg.answer[1].ttl, 10u);
}

OwnedMessage big_answer(int n) {
  OwnedMessage m = response("big.example.com", RRType::AAAA);
  for (int i = 0; i < n; ++i)
    m.answer.push_back(AAAA("big.example.com", 300));
  m.additional.push_back(A("ns1.example.com", 300));
  return m;
}

TEST(EntryRender, AnAnswerOverTheClientsSizeIsTcWithNoRecords) {
  // 40 AAAA records for a 512-byte client: TC=1 and nothing else, so the client asks again
  // over TCP; no filler records, no part of the RRset passed off as all of it.
  auto b = build(big_answer(40), key("big.example.com", RRType::AAAA), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  const Rendered r =
      render_for(*b.entry, "big.example.com", t0, 512, std::nullopt, 0, RRType::AAAA);
  ASSERT_TRUE(r.result.ok);
  EXPECT_TRUE(r.result.truncated);
  EXPECT_TRUE(r.msg.header.tc());
  EXPECT_EQ(r.msg.answer.size(), 0u);
  EXPECT_EQ(r.msg.authority.size(), 0u);
  EXPECT_EQ(r.msg.additional.size(), 0u);
  EXPECT_EQ(r.result.ancount, 0u);
  // Header and question: 12 + 17 + 4 bytes.
  EXPECT_EQ(r.bytes.size(), 12u + 17u + 4u);
}

TEST(EntryRender, DroppingOnlyAdditionalRecordsDoesNotSetTc) {
  auto b = build(big_answer(3), key("big.example.com", RRType::AAAA), t0);
  const std::size_t full = b.entry->to_wire(t0).size();
  const Rendered r =
      render_for(*b.entry, "big.example.com", t0, full - 1, std::nullopt, 0, RRType::AAAA);
  ASSERT_TRUE(r.result.ok);
  EXPECT_FALSE(r.result.truncated);
  EXPECT_FALSE(r.msg.header.tc());
  EXPECT_EQ(r.msg.answer.size(), 3u);
  EXPECT_EQ(r.msg.additional.size(), 0u);
}

TEST(EntryRender, DroppingAuthorityOfAPositiveAnswerDoesNotSetTc) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 300));
  m.authority.push_back(NS("example.com", 300, "ns1.example.com"));
  m.authority.push_back(NS("example.com", 300, "ns2.example.com"));
  auto b = build(m, key("www.example.com"), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  ASSERT_EQ(b.entry->kind(), AnswerKind::Positive);
  const std::size_t full = b.entry->to_wire(t0).size();
  const Rendered r = render_for(*b.entry, "www.example.com", t0, full - 1);
  ASSERT_TRUE(r.result.ok);
  EXPECT_FALSE(r.result.truncated);  // RFC 2181 §9: the answer is complete without its NS
  EXPECT_FALSE(r.msg.header.tc());
  EXPECT_EQ(r.msg.answer.size(), 1u);
  EXPECT_EQ(r.msg.authority.size(), 1u);
}

TEST(EntryRender, DroppingTheSoaOfANegativeAnswerSetsTc) {
  OwnedMessage m = response("www.example.com", RRType::AAAA);
  m.authority.push_back(SOA("example.com", 300, 300));
  auto b = build(m, key("www.example.com", RRType::AAAA), t0);
  ASSERT_EQ(b.outcome, InsertOutcome::Cached);
  ASSERT_EQ(b.entry->kind(), AnswerKind::NoData);
  const std::size_t full = b.entry->to_wire(t0).size();
  const Rendered r =
      render_for(*b.entry, "www.example.com", t0, full - 1, std::nullopt, 0, RRType::AAAA);
  ASSERT_TRUE(r.result.ok);
  EXPECT_TRUE(r.result.truncated);  // RFC 2308 §5: the SOA is what makes it cacheable
  EXPECT_TRUE(r.msg.header.tc());
  EXPECT_EQ(r.msg.authority.size(), 0u);
}

TEST(EntryRender, KeepsReserveFreeForTheCallersOpt) {
  auto b = build(big_answer(60), key("big.example.com", RRType::AAAA), t0);
  const Packet q(query("big.example.com", RRType::AAAA, /*edns=*/true));
  std::vector<uint8_t> buf(1232);
  wire::WireWriter w(buf, 1232);
  wire::OptSpec opt;
  opt.udp_size = 1232;
  const std::size_t reserve = wire::opt_size(opt);
  const RenderResult res =
      render_entry(*b.entry, {.id = 1, .flags = wire::flag::RD, .question = q.question()}, t0,
                   std::nullopt, w, reserve);
  ASSERT_TRUE(res.ok);
  EXPECT_TRUE(res.truncated);
  EXPECT_LE(w.size() + reserve, 1232u);
  ASSERT_TRUE(wire::append_opt(w, opt));
  buf.resize(w.size());
  const OwnedMessage out = decode(buf);
  ASSERT_TRUE(out.edns.has_value());
  EXPECT_EQ(out.edns->udp_size, 1232);
  EXPECT_EQ(out.answer.size(), res.ancount);
}

TEST(EntryRender, FailsCleanlyOnQuestionOfOtherLength) {
  OwnedMessage m = response("www.example.com");
  m.answer.push_back(A("www.example.com", 300));
  auto b = build(m, key("www.example.com"), t0);
  const Rendered r = render_for(*b.entry, "www.example.co", t0);
  EXPECT_FALSE(r.result.ok);
  EXPECT_TRUE(r.bytes.empty());
}

TEST(EntryRender, SetsAdOnlyForClientsAskingForIt) {
  OwnedMessage m = response("www.example.com");
  m.header.set(wire::flag::AD, true);
  m.answer.push_back(A("www.example.com", 300));
  auto b = build(m, key("www.example.com"), t0);
  const Packet q(query("www.example.com"));
  std::vector<uint8_t> buf(512);
  for (bool ad : {false, true}) {
    wire::WireWriter w(buf, 512);
    ASSERT_TRUE(
        render_entry(*b.entry,
                     {.flags = static_cast<uint16_t>(wire::flag::RD | (ad ? wire::flag::AD : 0)),
                      .question = q.question()},
                     t0, std::nullopt, w)
            .ok);
    wire::Message out;
    ASSERT_TRUE(out.parse(w.written()).has_value());
    EXPECT_EQ(out.header().ad(), ad);
  }
}

TEST(EntryWithCap, ShortensEveryRecordToCapFromNow) {
  OwnedMessage m = cname_chain(3600, 30);
  auto b = build(m, key("www.example.com"), t0);
  auto capped = b.entry->with_cap(60, t0 + Seconds{10});
  EXPECT_EQ(capped->remaining_ttl(0, t0 + Seconds{10}), 60u);
  EXPECT_EQ(capped->remaining_ttl(1, t0 + Seconds{10}), 20u);
  EXPECT_EQ(capped->expires_at(), t0 + Seconds{30});
}

}  // namespace
}  // namespace hg::cache
