// RTT estimator and server selection: pure logic, driven with explicit times (no clock).
#include "resolver/upstream/upstream_health.h"
#include "resolver/upstream/upstream_wire.h"
#include "wire/header.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <vector>

namespace hg::resolver {
namespace {

using namespace std::chrono_literals;

TEST(PathEstimator, AQuietPathGetsThreeCopiesAndWaitsAtLeastAQuarterSecond) {
  PathEstimator p;
  for (int i = 0; i < 100; ++i)
    p.delivered();
  EXPECT_FALSE(p.lossy());
  EXPECT_EQ(p.max_sends(16), 3);
  EXPECT_EQ(p.patience(50ms), 250ms);   // the RTO of a sub-ms server is not enough
  EXPECT_EQ(p.patience(800ms), 800ms);  // a distant server's RTO is
}

TEST(PathEstimator, LossMakesThePathLossyWithRtoRetriesAndMoreCopies) {
  PathEstimator p;
  p.lost();  // one copy lost: 1/16
  EXPECT_TRUE(p.lossy());
  EXPECT_EQ(p.patience(50ms), 50ms);
  EXPECT_EQ(p.max_sends(16), 4);   // 0.0625^4 < 0.01 %, and never under 4 on a lossy path
  for (int i = 0; i < 200; ++i) {  // half of the copies lost
    if (i % 2 == 0)
      p.lost();
    else
      p.delivered();
  }
  EXPECT_NEAR(p.loss_rate(), 0.5, 0.05);
  EXPECT_GE(p.max_sends(16), 12);  // 0.5^n <= 0.01 % needs 14 (time allows 9 in 3 s)
  EXPECT_EQ(p.max_sends(16), std::min(16, p.max_sends(100)));
  for (int i = 0; i < 200; ++i)  // the loss ends: the path is quiet again
    p.delivered();
  EXPECT_FALSE(p.lossy());
  EXPECT_EQ(p.max_sends(16), 3);
}

TEST(PathEstimator, ALateAnswerTakesTheLossBack) {
  PathEstimator p;
  p.lost();
  p.unlost();
  p.delivered();
  EXPECT_EQ(p.loss_rate(), 0.0);
  EXPECT_FALSE(p.lossy());
}

TEST(PathEstimator, SlowAnswersLengthenThePatienceAtOnceAndShortenItSlowly) {
  PathEstimator p;
  p.slow_answer(400ms, 1000ms);
  EXPECT_EQ(p.patience(50ms), 600ms);  // 1.5 x the slow answer
  p.slow_answer(2000ms, 1000ms);
  EXPECT_EQ(p.patience(50ms), 1000ms);  // never over the ceiling
  p.slow_answer(100ms, 1000ms);         // 250 ms (the floor) pulls by an eighth
  EXPECT_EQ(p.patience(50ms), Micros{1000000 - (1000000 - 250000) / 8});
  for (int i = 0; i < 100; ++i)
    p.slow_answer(10ms, 1000ms);
  EXPECT_LT(p.patience(50ms), 260ms);
  EXPECT_GE(p.patience(50ms), 250ms);
}

TEST(RttEstimator, StartsAtTheInitialRtoOfOneSecond) {
  RttEstimator r;
  EXPECT_FALSE(r.has_sample());
  EXPECT_EQ(r.rto(), 1000ms);
}

TEST(RttEstimator, FirstSampleSetsSrttAndHalfOfItAsVariance) {
  RttEstimator r;
  r.sample(200ms);
  EXPECT_EQ(r.srtt(), 200ms);
  EXPECT_EQ(r.rttvar(), 100ms);
  EXPECT_EQ(r.rto(), 600ms);  // 200 + 4 x 100
}

TEST(RttEstimator, LaterSamplesAreSmoothedAsRfc6298Says) {
  RttEstimator r;
  r.sample(200ms);
  r.sample(100ms);
  // RTTVAR = 3/4 x 100 + 1/4 x |200 - 100| = 100; SRTT = 7/8 x 200 + 1/8 x 100 = 187.5
  EXPECT_EQ(r.rttvar(), 100ms);
  EXPECT_EQ(r.srtt(), 187500us);
  EXPECT_EQ(r.rto(), 587500us);
}

TEST(RttEstimator, FastPathIsClampedToTheMinimumRto) {
  RttEstimator r;
  for (int i = 0; i < 20; ++i)
    r.sample(300us);
  EXPECT_LT(r.srtt(), 1ms);
  EXPECT_EQ(r.rto(), 50ms);
}

TEST(RttEstimator, SlowPathIsClampedToTheMaximumRto) {
  RttEstimator r;
  r.sample(900ms);
  EXPECT_EQ(r.rto(), 1000ms);
}

TEST(RttEstimator, TwoTimeoutsAreLossAndLaterOnesDoubleTheRto) {
  RttEstimator r;
  for (int i = 0; i < 20; ++i)
    r.sample(10ms);
  const auto base = r.rto();
  ASSERT_EQ(base, 50ms);
  r.timeout();
  EXPECT_EQ(r.rto(), base);
  r.timeout();
  EXPECT_EQ(r.rto(), base);
  r.timeout();
  EXPECT_EQ(r.rto(), 2 * base);
  r.timeout();
  EXPECT_EQ(r.rto(), 4 * base);
  for (int i = 0; i < 10; ++i)
    r.timeout();
  EXPECT_EQ(r.rto(), 1000ms);  // backoff stops at the maximum
}

TEST(RttEstimator, AnyAnswerEndsTheBackoffButGivesNoSample) {
  RttEstimator r;
  r.sample(10ms);
  const auto srtt = r.srtt();
  for (int i = 0; i < 5; ++i)
    r.timeout();
  EXPECT_GT(r.rto(), 50ms);
  r.answered();  // an answer to a retransmitted query (Karn: not a sample)
  EXPECT_EQ(r.srtt(), srtt);
  EXPECT_EQ(r.timeout_streak(), 0);
  EXPECT_EQ(r.rto(), 50ms);
}

TEST(ServerHealth, RepeatedTimeoutsOrFailuresMakeASuspectAndAnAnswerClearsIt) {
  ServerHealth h;
  h.rtt.timeout();
  h.rtt.timeout();
  EXPECT_FALSE(h.suspect());
  h.rtt.timeout();
  EXPECT_TRUE(h.suspect());
  h.on_answer();
  EXPECT_FALSE(h.suspect());
  for (int i = 0; i < 3; ++i)
    h.on_failure();
  EXPECT_TRUE(h.suspect());
  h.on_answer();
  EXPECT_FALSE(h.suspect());
}

TEST(ServerHealth, CaseFailuresSwitch0x20OffForTenMinutesThenItIsTriedAgain) {
  ServerHealth h;
  const MonoTime t0{Millis{1'000'000}};
  EXPECT_TRUE(h.use_0x20(t0));
  EXPECT_FALSE(h.on_case_failure(t0, 1));
  EXPECT_FALSE(h.on_case_failure(t0, 2));
  EXPECT_TRUE(h.use_0x20(t0));
  EXPECT_TRUE(h.on_case_failure(t0, 3));
  EXPECT_FALSE(h.use_0x20(t0));
  EXPECT_FALSE(h.use_0x20(t0 + 599s));
  EXPECT_TRUE(h.use_0x20(t0 + 600s));
}

// Only different names count: one name asked again and again (a forger's favourite, or a
// client retrying) is one piece of evidence, and an echoed case ends the streak.
TEST(ServerHealth, CaseFailuresCountOnlyDifferentNamesInARow) {
  ServerHealth h;
  const MonoTime t0{Millis{1'000'000}};
  for (int i = 0; i < 10; ++i)
    EXPECT_FALSE(h.on_case_failure(t0, 7));
  EXPECT_FALSE(h.on_case_failure(t0, 8));
  h.on_case_echo();
  EXPECT_FALSE(h.on_case_failure(t0, 9));
  EXPECT_FALSE(h.on_case_failure(t0, 10));
  EXPECT_TRUE(h.use_0x20(t0));
  EXPECT_TRUE(h.on_case_failure(t0, 11));
  EXPECT_FALSE(h.use_0x20(t0));
}

TEST(ServerHealth, EdnsStateExpires) {
  ServerHealth h;
  const MonoTime t0{Millis{5'000}};
  EXPECT_TRUE(h.edns_ok(t0));
  h.no_edns_until = t0 + ServerHealth::kRemember;
  EXPECT_FALSE(h.edns_ok(t0 + 1s));
  EXPECT_TRUE(h.edns_ok(t0 + 10min));
}

std::optional<std::size_t> choose(const std::vector<ServerHealth>& hs, uint64_t excluded = 0) {
  std::vector<const ServerHealth*> p;
  for (const auto& h : hs)
    p.push_back(&h);
  return choose_server(p, excluded);
}

TEST(ChooseServer, UnknownServersGoInConfigurationOrder) {
  std::vector<ServerHealth> hs(3);
  EXPECT_EQ(choose(hs), 0u);
}

TEST(ChooseServer, PrefersTheFastestMeasuredServer) {
  std::vector<ServerHealth> hs(3);
  hs[0].rtt.sample(40ms);
  hs[1].rtt.sample(5ms);
  hs[2].rtt.sample(20ms);
  EXPECT_EQ(choose(hs), 1u);
  // A measured server beats one never measured (taken at the initial RTO, 1 s).
  std::vector<ServerHealth> hs2(2);
  hs2[1].rtt.sample(300ms);
  EXPECT_EQ(choose(hs2), 1u);
}

TEST(ChooseServer, TimeoutsPushAServerDownTheRanking) {
  std::vector<ServerHealth> hs(2);
  hs[0].rtt.sample(5ms);
  hs[1].rtt.sample(20ms);
  hs[0].rtt.timeout();
  EXPECT_EQ(choose(hs), 0u);  // 10 ms against 20 ms
  hs[0].rtt.timeout();
  EXPECT_EQ(choose(hs), 1u);  // a little over 20 ms against 20 ms
  hs[0].on_answer();
  EXPECT_EQ(choose(hs), 0u);  // the streak ended
}

TEST(ChooseServer, ASuspectServerIsChosenOnlyWhenAllAreSuspect) {
  std::vector<ServerHealth> hs(2);
  hs[0].rtt.sample(1ms);
  for (int i = 0; i < 3; ++i)
    hs[0].on_failure();
  hs[1].rtt.sample(500ms);
  EXPECT_EQ(choose(hs), 1u);
  for (int i = 0; i < 5; ++i)
    hs[1].rtt.timeout();
  EXPECT_EQ(choose(hs), 0u);  // both suspect: the better score
}

TEST(ChooseServer, ExcludedServersAreNeverChosen) {
  std::vector<ServerHealth> hs(2);
  EXPECT_EQ(choose(hs, 0b01), 1u);
  EXPECT_EQ(choose(hs, 0b11), std::nullopt);
}

}  // namespace
}  // namespace hg::resolver

// --- upstream_wire: the datagram looks ---------------------------------------------------

namespace hg::resolver::upstream_wire {
namespace {

// The question-end walk is wire/header.h's, shared with hourglass-rehearse's classifier.
using wire::question_end;

// "ab.c" A IN, then `extra` appended; counts in the header as given.
std::vector<uint8_t> message(uint16_t ancount, uint16_t arcount,
                             const std::vector<uint8_t>& extra) {
  std::vector<uint8_t> m;
  // (Built byte by byte: GCC 12 warns falsely about vector::insert of arrays here.)
  for (int b : std::initializer_list<int>{0x12, 0x34, 0x81, 0x80,
                                          0,    1,    0,    static_cast<int>(ancount),
                                          0,    0,    0,    static_cast<int>(arcount),
                                          2,    'a',  'b',  1,
                                          'c',  0,    0,    1,
                                          0,    1})
    m.push_back(static_cast<uint8_t>(b));
  for (uint8_t b : extra)
    m.push_back(b);
  return m;
}

TEST(UpstreamWire, QuestionEndAndCaseMatch) {
  auto m = message(0, 0, {});
  EXPECT_EQ(question_end(m), m.size());
  const std::vector<uint8_t> question(m.begin() + 12, m.end());
  EXPECT_EQ(match_question(m, question), QuestionMatch::Exact);
  auto upper = m;
  upper[13] = 'A';
  EXPECT_EQ(match_question(upper, question), QuestionMatch::CaseOnly);
  auto other = m;
  other[13] = 'x';
  EXPECT_EQ(match_question(other, question), QuestionMatch::Other);
  auto type = m;
  type.back() = 3;  // class CH: not a case difference
  EXPECT_EQ(match_question(type, question), QuestionMatch::Other);
}

TEST(UpstreamWire, ApplyCaseChangesOnlyLetters) {
  std::vector<uint8_t> name = {2, 'a', '1', 1, 'c', 0};
  CaseBits bits{};
  bits[0] = ~uint64_t{0};
  apply_case(name, bits);
  EXPECT_EQ(name, (std::vector<uint8_t>{2, 'A', '1', 1, 'C', 0}));
  apply_case(name, CaseBits{});
  EXPECT_EQ(name, (std::vector<uint8_t>{2, 'a', '1', 1, 'c', 0}));
}

TEST(UpstreamWire, MatchQuestionCasedComparesWithTheCaseAsSent) {
  // Header, then "ab.c" A IN; the bits ask for upper case at byte 2 ('b') of the name.
  std::vector<uint8_t> reply(12, 0);
  const std::vector<uint8_t> question = {2, 'a', 'b', 1, 'c', 0, 0, 1, 0, 1};
  CaseBits bits{};
  bits[0] = uint64_t{1} << 2;
  auto with = [&](std::vector<uint8_t> q) {
    std::vector<uint8_t> m = reply;
    m.insert(m.end(), q.begin(), q.end());
    return m;
  };
  EXPECT_EQ(match_question_cased(with({2, 'a', 'B', 1, 'c', 0, 0, 1, 0, 1}), question, bits),
            QuestionMatch::Exact);
  EXPECT_EQ(match_question_cased(with(question), question, bits), QuestionMatch::CaseOnly);
  EXPECT_EQ(match_question_cased(with({2, 'a', 'B', 1, 'd', 0, 0, 1, 0, 1}), question, bits),
            QuestionMatch::Other);
  EXPECT_EQ(match_question_cased(with({2, 'a', 'B', 1, 'c', 0, 0, 1}), question, bits),
            QuestionMatch::Other);  // too short
}

// apply_case() and match_question_cased() case a well-formed name eight bytes at a time;
// this holds them to a byte-by-byte reference over names of every length up to the 255-byte
// maximum, with bytes chosen around the letters' edges ('@' '[' '`' '{', 0xc1, 0xe1).
TEST(UpstreamWire, WordAtATimeCasingAgreesWithTheByteWiseReference) {
  const std::array<uint8_t, 14> alphabet = {'a', 'z', 'A', 'Z', 'm',  '@',  '[',
                                            '`', '{', '0', '-', 0xc1, 0xe1, 0x7f};
  uint64_t seed = 0x243f6a8885a308d3ULL;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  auto reference = [](std::vector<uint8_t> name, const CaseBits& bits) {
    for (std::size_t at = 0; at < name.size() && name[at] != 0; at += 1 + name[at])
      for (std::size_t i = at + 1; i <= at + name[at] && i < name.size(); ++i) {
        const auto low = static_cast<uint8_t>(name[i] | 0x20);
        if (low >= 'a' && low <= 'z')
          name[i] = ((bits[i / 64] >> (i % 64)) & 1) ? static_cast<uint8_t>(low - 32) : low;
      }
    return name;
  };
  int checked = 0;
  for (std::size_t target = 2; target <= 255; ++target) {
    // A name of exactly `target` bytes: labels of 1..63 bytes, then the root.
    std::vector<uint8_t> name;
    while (name.size() + 1 < target) {
      const std::size_t room = target - 1 - name.size() - 1;  // bytes left for label data
      std::size_t len = 1 + next() % 63;
      if (len > room) len = room;
      if (room - len == 1) len = room > 1 ? len - 1 : len;  // never leave a single byte
      if (len == 0) break;
      name.push_back(static_cast<uint8_t>(len));
      for (std::size_t i = 0; i < len; ++i)
        name.push_back(alphabet[next() % alphabet.size()]);
    }
    name.push_back(0);
    // Header (QDCOUNT 1), then the name, type A, class IN. Built by size and copy: g++ 12
    // warns falsely (-Warray-bounds) on inserting into a 12-byte vector.
    auto reply_with = [](const std::vector<uint8_t>& n) {
      std::vector<uint8_t> m(12 + n.size() + 4, 0);
      m[5] = 1;
      std::copy(n.begin(), n.end(), m.begin() + 12);
      m[12 + n.size() + 1] = 1;
      m[12 + n.size() + 3] = 1;
      return m;
    };
    ASSERT_EQ(question_end(reply_with(name)), 12 + name.size() + 4) << "length " << target;
    const CaseBits bits = {next(), next(), next(), next()};
    const std::vector<uint8_t> want = reference(name, bits);
    std::vector<uint8_t> cased = name;
    apply_case(cased, bits);
    ASSERT_EQ(cased, want) << "name of " << name.size() << " bytes";

    const std::vector<uint8_t> reply = reply_with(name);
    const std::vector<uint8_t> question(reply.begin() + 12, reply.end());
    EXPECT_EQ(match_question_cased(reply_with(want), question, bits), QuestionMatch::Exact);
    // Each letter in the other case: CaseOnly; each other byte changed: Other.
    for (std::size_t i = 0; i < want.size(); ++i) {
      std::vector<uint8_t> changed = want;
      const auto low = static_cast<uint8_t>(want[i] | 0x20);
      const bool letter = low >= 'a' && low <= 'z';
      changed[i] =
          letter ? static_cast<uint8_t>(want[i] ^ 0x20) : static_cast<uint8_t>(want[i] ^ 0x01);
      EXPECT_EQ(match_question_cased(reply_with(changed), question, bits),
                letter ? QuestionMatch::CaseOnly : QuestionMatch::Other)
          << "byte " << i << " of " << want.size();
      ++checked;
    }
    // The type after the name differs: Other.
    auto wrong_type = reply_with(want);
    wrong_type[12 + want.size() + 1] = 28;
    EXPECT_EQ(match_question_cased(wrong_type, question, bits), QuestionMatch::Other);
  }
  EXPECT_GT(checked, 30000);
}

// A name that is not plain (bytes after its root, or a length byte over 63) skips the
// eight-bytes-at-a-time path: only the letters inside its labels, up to the root or the bad
// length, take the case; the bytes after stay as they are, in apply_case() and in the
// question check alike.
TEST(UpstreamWire, ANameThatIsNotPlainIsCasedOnlyWithinItsLabels) {
  CaseBits all_upper{};
  all_upper.fill(~uint64_t{0});
  std::vector<uint8_t> after_root = {3, 'a', 'b', 'c', 0, 'x', 'y', 'z', 'w', 'v'};
  apply_case(after_root, all_upper);
  EXPECT_EQ(after_root, (std::vector<uint8_t>{3, 'A', 'B', 'C', 0, 'x', 'y', 'z', 'w', 'v'}));
  std::vector<uint8_t> bad_length = {2, 'a', 'b', 64, 'c', 'd', 'e', 'f', 'g', 'h', 0};
  apply_case(bad_length, all_upper);
  EXPECT_EQ(bad_length, (std::vector<uint8_t>{2, 'A', 'B', 64, 'c', 'd', 'e', 'f', 'g', 'h', 0}));

  // The question: that second name, then type A class IN.
  std::vector<uint8_t> question = {2, 'a', 'b', 64, 'c', 'd', 'e', 'f', 'g', 'h', 0, 0, 1, 0, 1};
  auto reply_with = [](std::vector<uint8_t> q) {
    std::vector<uint8_t> m(12 + q.size(), 0);
    std::copy(q.begin(), q.end(), m.begin() + 12);
    return m;
  };
  std::vector<uint8_t> echoed = question;
  echoed[1] = 'A';
  echoed[2] = 'B';
  EXPECT_EQ(match_question_cased(reply_with(echoed), question, all_upper), QuestionMatch::Exact);
  echoed[4] = 'C';  // past the bad length: not cased by us, so a case difference
  EXPECT_EQ(match_question_cased(reply_with(echoed), question, all_upper), QuestionMatch::CaseOnly);
}

TEST(UpstreamWire, FindsOptAndItsExtendedRcode) {
  // OPT: root, type 41, payload 1232, ext-rcode 1 (BADVERS with header rcode 0), version 0.
  const std::vector<uint8_t> opt = {0, 0, 41, 0x04, 0xd0, 1, 0, 0, 0, 0, 0};
  auto with = message(0, 1, opt);
  auto o = find_opt(with);
  EXPECT_TRUE(o.valid);
  EXPECT_TRUE(o.present);
  EXPECT_EQ(o.ext_rcode, 1);
  auto without = message(0, 0, {});
  EXPECT_TRUE(find_opt(without).valid);
  EXPECT_FALSE(find_opt(without).present);
  // An OPT record followed by a count the bytes cannot hold: not trusted.
  auto damaged = message(0, 9, opt);
  EXPECT_FALSE(find_opt(damaged).valid);
  EXPECT_FALSE(find_opt(damaged).present);
}

}  // namespace
}  // namespace hg::resolver::upstream_wire
