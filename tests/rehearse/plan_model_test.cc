// The linger timeline's arithmetic, with made-up chains and a fixed "now" (no network).
#include <gtest/gtest.h>

#include "tools/rehearse/plan_model.h"
#include "tools/rehearse/plan_report.h"

namespace hg::rehearse {
namespace {

using std::chrono::seconds;

SysSeconds at(const char* text) {
  auto t = parse_utc(text);
  EXPECT_TRUE(t.has_value()) << text;
  return t.value_or(SysSeconds{});
}

Hop hop(std::string owner, std::string type, uint32_t ttl) {
  Hop h;
  h.owner = std::move(owner);
  h.type = std::move(type);
  h.ttl = ttl;
  h.zone = "example.test.";
  return h;
}

NamePlan www_chain(uint32_t cname_ttl, uint32_t a_ttl) {
  NamePlan p;
  p.name = "www.example.test.";
  p.hops = {hop("www.example.test.", "CNAME", cname_ttl), hop("lb.example.test.", "A", a_ttl)};
  return p;
}

const PlanInput kIn{at("2026-12-03T10:00Z"), 60, at("2026-11-30T12:00Z")};

TEST(PlanTime, ParsesAndFormatsUtc) {
  EXPECT_EQ(format_utc(at("2026-12-03T10:00Z")), "2026-12-03T10:00:00Z");
  EXPECT_EQ(format_utc(at("2026-12-03T10:00:07Z")), "2026-12-03T10:00:07Z");
  EXPECT_EQ(format_utc(at("2024-02-29T23:59:59Z")), "2024-02-29T23:59:59Z");
  EXPECT_EQ(at("1970-01-01T00:00Z").time_since_epoch().count(), 0);
  for (const char* bad : {"2026-12-03T10:00", "2026-12-03 10:00Z", "2026-13-03T10:00Z",
                          "2026-02-30T10:00Z", "2026-12-03T24:00Z", "2026-12-03T10:60Z",
                          "2026-12-03T10:00+01:00", "", "tomorrow", "2026-12-03T1x:00Z"}) {
    EXPECT_FALSE(parse_utc(bad).has_value()) << bad;
  }
}

TEST(PlanTime, SpansReadable) {
  EXPECT_EQ(format_span(60), "60 s");
  EXPECT_EQ(format_span(3600), "3600 s (1 h)");
  EXPECT_EQ(format_span(5400), "5400 s (1 h 30 min)");
  EXPECT_EQ(format_span(86400), "86400 s (1 d)");
}

TEST(PlanTimeline, CnameAboveLimitsTheChain) {
  NamePlan p = www_chain(3600, 300);
  compute_timeline(p, kIn, Profile{});
  ASSERT_TRUE(p.planned);
  EXPECT_EQ(p.limiting_ttl, 3600u);
  EXPECT_EQ(p.limiting_hop, 0);
  EXPECT_EQ(format_utc(*p.lower_by), "2026-12-03T09:00:00Z");
  EXPECT_EQ(format_utc(*p.gone_by_ttl), "2026-12-03T10:01:00Z");
  ASSERT_FALSE(p.lines.empty());
  EXPECT_NE(p.lines[0].explanation.find("www.example.test. CNAME"), std::string::npos)
      << p.lines[0].explanation;
}

TEST(PlanTimeline, LoweringOnlyTheLastHopChangesNothing) {
  NamePlan before = www_chain(3600, 300);
  NamePlan after = www_chain(3600, 60);
  compute_timeline(before, kIn, Profile{});
  compute_timeline(after, kIn, Profile{});
  EXPECT_EQ(before.lower_by, after.lower_by);
  EXPECT_EQ(after.limiting_hop, 0);
  EXPECT_EQ(before.gone_by_ttl, after.gone_by_ttl);
}

TEST(PlanTimeline, AllLoweredTheLargestStillBounds) {
  NamePlan p = www_chain(30, 60);
  compute_timeline(p, kIn, Profile{});
  EXPECT_EQ(p.limiting_ttl, 60u);
  EXPECT_EQ(p.limiting_hop, 1);
  EXPECT_EQ(*p.lower_by, kIn.cutover - seconds{60});
  // Nothing is above the target: gone one (largest) TTL after the cut-over.
  EXPECT_EQ(*p.gone_by_ttl, kIn.cutover + seconds{60});
  EXPECT_NE(p.lines[0].explanation.find("already at or below"), std::string::npos);
}

TEST(PlanTimeline, HopsBelowTargetShortenGoneBy) {
  NamePlan p = www_chain(20, 10);
  compute_timeline(p, kIn, Profile{});
  EXPECT_EQ(*p.gone_by_ttl, kIn.cutover + seconds{20});
}

TEST(PlanTimeline, TooLateIsSaid) {
  NamePlan p = www_chain(86400 * 7, 300);
  compute_timeline(p, kIn, Profile{});
  EXPECT_LT(*p.lower_by, kIn.now);
  bool said = false;
  for (const auto& l : p.lines)
    said = said || l.label.find("too late") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(PlanTimeline, NewNameUsesNegativeTtl) {
  NamePlan p;
  p.name = "new.example.test.";
  p.hops = {hop("new.example.test.", "NXDOMAIN", 300)};
  p.missing = true;
  p.missing_what = "NXDOMAIN";
  p.negative_ttl = 300;
  compute_timeline(p, kIn, Profile{});
  ASSERT_TRUE(p.planned);
  EXPECT_EQ(*p.new_name_by, kIn.cutover + seconds{300});
  EXPECT_EQ(*p.lower_by, kIn.cutover - seconds{300});
  EXPECT_EQ(*p.gone_by_ttl, kIn.cutover + seconds{60});
}

TEST(PlanTimeline, FailedDiscoveryIsNotPlanned) {
  NamePlan p;
  p.name = "x.test.";
  p.failed = true;
  compute_timeline(p, kIn, Profile{});
  EXPECT_FALSE(p.planned);
  EXPECT_FALSE(p.lower_by.has_value());
}

TEST(PlanTimeline, ZoneNegativeTtlIsMinOfSoaTtlAndMinimum) {
  ZoneFacts z;
  EXPECT_FALSE(z.negative_ttl().has_value());
  z.soa_ttl = 3600;
  z.soa_minimum = 300;
  EXPECT_EQ(z.negative_ttl(), 300u);
  z.soa_ttl = 120;
  EXPECT_EQ(z.negative_ttl(), 120u);
}

TEST(PlanLayers, EachKindAddsItsHold) {
  const SysSeconds gone = at("2026-12-03T10:01Z");
  Layer fixed{"JVM", LayerKind::Fixed, 30, "", "", ""};
  Layer floor{"Chrome", LayerKind::Floor, 60, "", "", ""};
  Layer cap{"Windows", LayerKind::Cap, 86400, "", "", ""};
  Layer stale{"BIND", LayerKind::Stale, 86400, "", "", ""};
  Layer unlimited{"Unbound", LayerKind::Stale, std::nullopt, "", "", ""};
  Layer until{"nginx", LayerKind::Until, std::nullopt, "reload", "", ""};
  Layer until_known{"nginx nightly", LayerKind::Until, 86400, "reload", "", ""};
  EXPECT_EQ(layer_gone_by(fixed, gone), gone + seconds{30});
  EXPECT_EQ(layer_gone_by(floor, gone), gone + seconds{60});
  EXPECT_EQ(layer_gone_by(cap, gone), gone);
  EXPECT_EQ(layer_gone_by(stale, gone), gone + seconds{86400});
  EXPECT_FALSE(layer_gone_by(unlimited, gone).has_value());
  EXPECT_FALSE(layer_gone_by(until, gone).has_value());
  EXPECT_EQ(layer_gone_by(until_known, gone), gone + seconds{86400});
}

TEST(PlanLayers, DefaultProfileTimesOnTheWwwChain) {
  NamePlan p = www_chain(3600, 300);
  compute_timeline(p, kIn, default_profile());
  ASSERT_FALSE(p.layers.empty());
  auto find = [&](const std::string& name) -> const LayerLine* {
    for (const auto& l : p.layers)
      if (l.name == name) return &l;
    return nullptr;
  };
  const LayerLine* jvm = find("JVM");
  ASSERT_NE(jvm, nullptr);
  EXPECT_EQ(format_utc(*jvm->gone_by), "2026-12-03T10:01:30Z");
  const LayerLine* firefox = find("Firefox");
  ASSERT_NE(firefox, nullptr);
  EXPECT_EQ(format_utc(*firefox->gone_by), "2026-12-03T10:03:00Z");
  const LayerLine* hg = find("hourglass --stale-max");
  ASSERT_NE(hg, nullptr);
  EXPECT_EQ(format_utc(*hg->gone_by), "2026-12-04T10:01:00Z");
  const LayerLine* unbound = find("Unbound serve-expired");
  ASSERT_NE(unbound, nullptr);
  EXPECT_FALSE(unbound->gone_by.has_value());
}

TEST(PlanReport, JsonHasTheAgreedFields) {
  NamePlan p = www_chain(3600, 300);
  compute_timeline(p, kIn, Profile{});
  const std::string j = render_json({kIn, "test"}, {p});
  for (const char* want :
       {"\"cutover\": \"2026-12-03T10:00:00Z\"", "\"target_ttl\": 60",
        "\"lower_by\": \"2026-12-03T09:00:00Z\"", "\"limiting_ttl\": 3600",
        "\"gone_by_ttl\": \"2026-12-03T10:01:00Z\"", "\"owner\": \"www.example.test.\"",
        "\"type\": \"CNAME\", \"ttl\": 3600", "\"type\": \"A\", \"ttl\": 300"}) {
    EXPECT_NE(j.find(want), std::string::npos) << want << "\n" << j;
  }
}

TEST(PlanReport, JsonStringsAreEscaped) {
  EXPECT_EQ(json_string("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(PlanReport, SvgMarksTheCutoverAndHasOneBarPerLayer) {
  NamePlan p = www_chain(3600, 300);
  const Profile prof = default_profile();
  compute_timeline(p, kIn, prof);
  const std::string svg = render_svg({kIn, "default"}, {p});
  EXPECT_NE(svg.find(">cut-over<"), std::string::npos);
  EXPECT_NE(svg.find("lower by"), std::string::npos);
  std::size_t bars = 0;
  for (std::size_t i = svg.find("rx=\"2\""); i != std::string::npos;
       i = svg.find("rx=\"2\"", i + 1))
    ++bars;
  EXPECT_EQ(bars, prof.layers.size() + 1);  // + the TTL-obeying caches
}

}  // namespace
}  // namespace hg::rehearse
