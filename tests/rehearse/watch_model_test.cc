// watch's classification of answers and its per-resolver state changes (no network, no clock).
#include <gtest/gtest.h>

#include "tools/rehearse/plan/watch_model.h"
#include "wire/rdata.h"

namespace hg::rehearse {
namespace {

wire::OwnedMessage answer(std::vector<std::pair<const char*, uint32_t>> addrs,
                          wire::RCode rc = wire::RCode::NoError, bool with_cname = false) {
  wire::OwnedMessage m;
  m.header.set(wire::flag::QR, true);
  m.set_rcode(rc);
  const auto www = wire::Name::from_text("www.example.test").value();
  const auto lb = wire::Name::from_text("lb.example.test").value();
  m.questions.push_back({www, wire::RRType::A, 1});
  if (with_cname) {
    m.answer.push_back({www, wire::RRType::CNAME, 1, 3600, wire::RdataName{lb}});
  }
  for (auto [text, ttl] : addrs) {
    wire::RdataA a;
    unsigned b0, b1, b2, b3;
    std::sscanf(text, "%u.%u.%u.%u", &b0, &b1, &b2, &b3);
    a.address = {uint8_t(b0), uint8_t(b1), uint8_t(b2), uint8_t(b3)};
    m.answer.push_back({with_cname ? lb : www, wire::RRType::A, 1, ttl, a});
  }
  return m;
}

const WatchExpect kExpect{wire::RRType::A, {"192.0.2.1"}, {"198.51.100.7"}};

TEST(WatchClassify, OldNewOtherAndMixed) {
  EXPECT_EQ(classify_answer(answer({{"192.0.2.1", 40}}), kExpect).state, WatchState::Old);
  auto n = classify_answer(answer({{"198.51.100.7", 60}}, wire::RCode::NoError, true), kExpect);
  EXPECT_EQ(n.state, WatchState::New);
  EXPECT_EQ(n.ttl, 60u);
  EXPECT_EQ(n.addresses, "198.51.100.7");
  // A mix still hands out the old address.
  EXPECT_EQ(classify_answer(answer({{"198.51.100.7", 60}, {"192.0.2.1", 30}}), kExpect).state,
            WatchState::Old);
  EXPECT_EQ(classify_answer(answer({{"203.0.113.5", 60}}), kExpect).state, WatchState::Other);
  auto nx = classify_answer(answer({}, wire::RCode::NXDomain), kExpect);
  EXPECT_EQ(nx.state, WatchState::Other);
  EXPECT_EQ(nx.detail, "NXDOMAIN");
  EXPECT_EQ(classify_answer(answer({}), kExpect).state, WatchState::Other);
}

TEST(WatchClassify, WithoutNewAnyOtherAddressIsNew) {
  const WatchExpect e{wire::RRType::A, {"192.0.2.1"}, {}};
  EXPECT_EQ(classify_answer(answer({{"203.0.113.5", 60}}), e).state, WatchState::New);
  EXPECT_EQ(classify_answer(answer({{"192.0.2.1", 60}}), e).state, WatchState::Old);
}

Observation obs(WatchState s, uint32_t ttl = 0, const char* addrs = "") {
  Observation o;
  o.state = s;
  o.ttl = ttl;
  o.addresses = addrs;
  if (s == WatchState::NoAnswer) o.detail = "no answer (timeout)";
  return o;
}

TEST(WatchTrack, FlipIsReportedOnceWithItsTtl) {
  ResolverTrack t("127.0.0.1:5300");
  auto first = t.observe(obs(WatchState::Old, 50, "192.0.2.1"), 0);
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("serves old: 192.0.2.1 (TTL 50)"), std::string::npos) << *first;
  EXPECT_FALSE(t.observe(obs(WatchState::Old, 40, "192.0.2.1"), 10'000));
  auto flip = t.observe(obs(WatchState::New, 60, "198.51.100.7"), 20'000);
  ASSERT_TRUE(flip);
  EXPECT_NE(flip->find("+20s"), std::string::npos) << *flip;
  EXPECT_NE(flip->find("flipped old → new: 198.51.100.7 (TTL 60)"), std::string::npos) << *flip;
  EXPECT_FALSE(t.observe(obs(WatchState::New, 50, "198.51.100.7"), 30'000));
  EXPECT_TRUE(t.serving_new());
  EXPECT_EQ(t.flipped_at_ms(), 20'000);
  EXPECT_EQ(t.flip_ttl(), 60u);
  EXPECT_EQ(t.last_old_ttl(), 40u);
  EXPECT_EQ(t.polls(), 4);
}

TEST(WatchTrack, GoingBackUndoesTheFlip) {
  ResolverTrack t("r");
  (void)t.observe(obs(WatchState::Old, 50, "192.0.2.1"), 0);
  (void)t.observe(obs(WatchState::New, 60, "198.51.100.7"), 1000);
  auto back = t.observe(obs(WatchState::Old, 10, "192.0.2.1"), 2000);
  ASSERT_TRUE(back);
  EXPECT_NE(back->find("went back from new to old"), std::string::npos) << *back;
  EXPECT_FALSE(t.serving_new());
  EXPECT_FALSE(t.flipped_at_ms().has_value());
}

TEST(WatchTrack, FailuresAreCountedAndNewAtStartIsSaid) {
  ResolverTrack t("r");
  auto l = t.observe(obs(WatchState::New, 60, "198.51.100.7"), 0);
  ASSERT_TRUE(l);
  EXPECT_NE(l->find("already new at the start"), std::string::npos);
  (void)t.observe(obs(WatchState::NoAnswer), 1000);
  EXPECT_EQ(t.failures(), 1);
  EXPECT_FALSE(t.serving_new());
}

TEST(WatchSummary, CountsResolversServingNew) {
  std::vector<ResolverTrack> ts{ResolverTrack("a:53"), ResolverTrack("b:53")};
  (void)ts[0].observe(obs(WatchState::Old, 5, "192.0.2.1"), 0);
  (void)ts[0].observe(obs(WatchState::New, 60, "198.51.100.7"), 5000);
  (void)ts[1].observe(obs(WatchState::Old, 5, "192.0.2.1"), 0);
  const std::string s = render_watch_summary(ts, 65'000);
  EXPECT_NE(s.find("summary after 1m05s"), std::string::npos) << s;
  EXPECT_NE(s.find("1 of 2 resolvers serve the new answer"), std::string::npos) << s;
}

TEST(WatchElapsed, Formats) {
  EXPECT_EQ(format_elapsed(0), "+0s");
  EXPECT_EQ(format_elapsed(59'999), "+59s");
  EXPECT_EQ(format_elapsed(65'000), "+1m05s");
  EXPECT_EQ(format_elapsed(7'260'000), "+2h01m");
}

TEST(WatchModel, ChainAndEffectiveTtlAreShown) {
  // www CNAME 3600 → lb A 250: the address records' TTL (250) and the chain's effective TTL
  // (the smallest of any record) are both given.
  Observation o =
      classify_answer(answer({{"192.0.2.1", 250}}, wire::RCode::NoError, true), kExpect);
  EXPECT_EQ(o.state, WatchState::Old);
  EXPECT_EQ(o.ttl, 250u);
  EXPECT_EQ(o.chain, "CNAME 3600 → A 250");
  EXPECT_EQ(o.chain_ttl, 250u);
  // No alias: no chain.
  Observation plain = classify_answer(answer({{"192.0.2.1", 40}}), kExpect);
  EXPECT_TRUE(plain.chain.empty());
  EXPECT_EQ(plain.chain_ttl, 40u);
}

TEST(WatchModel, EachResolverSaysWhenItLetsGo) {
  ResolverTrack t("127.0.0.1:5300");
  Observation o =
      classify_answer(answer({{"192.0.2.1", 250}}, wire::RCode::NoError, true), kExpect);
  auto first = t.observe(o, 10'000);
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("(TTL 250; chain CNAME 3600 → A 250, effective TTL 250)"),
            std::string::npos)
      << *first;
  // Asked at +10 s with 250 s left: lets go of the old address by +261 s (whole seconds).
  EXPECT_NE(first->find("lets go of the old address by +4m21s"), std::string::npos) << *first;
  EXPECT_EQ(t.lets_go_at_ms(), 261'000);
  const std::string s = render_watch_summary({t}, 20'000);
  EXPECT_NE(s.find("lets go by"), std::string::npos) << s;
  EXPECT_NE(s.find("+4m21s"), std::string::npos) << s;
}

}  // namespace
}  // namespace hg::rehearse
