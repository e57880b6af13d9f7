// The linger timeline's arithmetic, with made-up chains and a fixed "now" (no network).
#include <gtest/gtest.h>

#include "base/json.h"
#include "tools/rehearse/plan/model.h"
#include "tools/rehearse/plan/render.h"

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

PlanInput with(std::string moving, std::optional<uint32_t> margin = 0, uint32_t target = 60) {
  PlanInput in = kIn;
  in.moving = std::move(moving);
  in.transfer_margin = margin;
  in.target_ttl = target;
  return in;
}

const TimelineLine* line_with(const NamePlan& p, std::string_view label) {
  for (const auto& l : p.lines)
    if (l.label.find(label) != std::string::npos) return &l;
  return nullptr;
}

TEST(PlanTimeline, TheAddressRecordsMoveByDefault) {
  // www CNAME 3600 → lb A 300, the A record changes: lower it 300 s before the cut-over. The
  // CNAME does not hold the old address: caches re-fetch lb's A after its own 300 s.
  NamePlan p = www_chain(3600, 300);
  compute_timeline(p, with(""), Profile{});
  ASSERT_TRUE(p.planned);
  EXPECT_EQ(p.moving_hops, std::vector<int>{1});
  EXPECT_EQ(p.limiting_ttl, 300u);
  EXPECT_EQ(p.limiting_hop, 1);
  EXPECT_EQ(format_utc(*p.lower_by), "2026-12-03T09:55:00Z");
  EXPECT_EQ(format_utc(*p.gone_by_ttl), "2026-12-03T10:01:00Z");
  ASSERT_FALSE(p.lines.empty());
  EXPECT_EQ(p.lines[0].label, "lower A by");
  EXPECT_NE(p.lines[0].explanation.find("lb.example.test. A changes"), std::string::npos)
      << p.lines[0].explanation;
  const TimelineLine* cname = line_with(p, "www.example.test. CNAME 3600 s");
  ASSERT_NE(cname, nullptr);
  EXPECT_NE(cname->explanation.find("need not be lowered"), std::string::npos);
  EXPECT_NE(cname->explanation.find("RFC 2181"), std::string::npos);
  EXPECT_EQ(cname->explanation.find("does nothing"), std::string::npos);
  // "address" is the same as the default.
  NamePlan q = www_chain(3600, 300);
  compute_timeline(q, with("address"), Profile{});
  EXPECT_EQ(q.lower_by, p.lower_by);
}

TEST(PlanTimeline, MovingTheCnameOrAllHops) {
  NamePlan cname = www_chain(3600, 300);
  compute_timeline(cname, with("WWW.Example.Test"), Profile{});  // any case, dot optional
  ASSERT_TRUE(cname.planned);
  EXPECT_EQ(cname.limiting_hop, 0);
  EXPECT_EQ(format_utc(*cname.lower_by), "2026-12-03T09:00:00Z");
  const TimelineLine* below = line_with(cname, "lb.example.test. A 300 s");
  ASSERT_NE(below, nullptr);
  EXPECT_NE(below->explanation.find("below the hop that changes"), std::string::npos);

  NamePlan all = www_chain(3600, 300);
  compute_timeline(all, with("all"), Profile{});
  EXPECT_EQ(all.moving_hops, (std::vector<int>{0, 1}));
  EXPECT_EQ(format_utc(*all.lower_by), "2026-12-03T09:00:00Z");
  EXPECT_EQ(all.lines[0].label, "lower the moving hops by");
}

TEST(PlanTimeline, MovingAHopThatIsNotOnTheChainIsNotPlanned) {
  NamePlan p = www_chain(3600, 300);
  compute_timeline(p, with("api.example.test"), Profile{});
  EXPECT_FALSE(p.planned);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("--moving api.example.test: no hop of the chain"),
            std::string::npos);
}

TEST(PlanTimeline, TransferMarginComesFromSoaRefreshUnlessGiven) {
  NamePlan p = www_chain(3600, 300);
  ZoneFacts z;
  z.apex = "example.test.";
  z.soa_refresh = 1800;
  p.zones = {z};
  compute_timeline(p, with("", std::nullopt), Profile{});
  EXPECT_EQ(p.transfer_margin, 1800u);
  EXPECT_EQ(p.margin_source, "SOA REFRESH of zone example.test.");
  EXPECT_EQ(*p.lower_by, kIn.cutover - seconds{1800 + 300});
  EXPECT_EQ(*p.gone_by_ttl, kIn.cutover + seconds{1800 + 60});
  ASSERT_NE(line_with(p, "transfer margin"), nullptr);
  EXPECT_NE(line_with(p, "transfer margin")->explanation.find("NOTIFY"), std::string::npos);
  // --transfer-margin wins.
  compute_timeline(p, with("", 30), Profile{});
  EXPECT_EQ(p.transfer_margin, 30u);
  EXPECT_EQ(*p.lower_by, kIn.cutover - seconds{30 + 300});
  // No SOA REFRESH known: 0, and said so.
  NamePlan q = www_chain(3600, 300);
  compute_timeline(q, with("", std::nullopt), Profile{});
  EXPECT_EQ(q.transfer_margin, 0u);
  EXPECT_NE(q.margin_source.find("unknown"), std::string::npos);
}

TEST(PlanTimeline, TargetAboveTheTtlLowersNothing) {
  NamePlan p = www_chain(3600, 300);
  compute_timeline(p, with("", 0, 600), Profile{});
  EXPECT_EQ(p.lowered_ttl, 300u);
  EXPECT_EQ(*p.gone_by_ttl, kIn.cutover + seconds{300});
  EXPECT_EQ(p.lines[0].label, "nothing to lower");
  const TimelineLine* cut = line_with(p, "cut-over");
  ASSERT_NE(cut, nullptr);
  EXPECT_NE(cut->explanation.find("at most 300 s"), std::string::npos) << cut->explanation;
  EXPECT_EQ(cut->explanation.find("600"), std::string::npos) << cut->explanation;
  EXPECT_NE(line_with(p, "--target-ttl above the TTL"), nullptr);
}

TEST(PlanTimeline, HopsBelowTargetShortenGoneBy) {
  NamePlan p = www_chain(20, 10);
  compute_timeline(p, with(""), Profile{});
  EXPECT_EQ(*p.gone_by_ttl, kIn.cutover + seconds{10});
}

TEST(PlanTimeline, TooLateIsSaid) {
  NamePlan p = www_chain(300, 86400 * 7);
  compute_timeline(p, with(""), Profile{});
  EXPECT_LT(*p.lower_by, kIn.now);
  EXPECT_NE(line_with(p, "too late"), nullptr);
}

NamePlan new_name(const char* what) {
  NamePlan p;
  p.name = "new.example.test.";
  p.hops = {hop("new.example.test.", what, 300)};
  p.missing = true;
  p.missing_what = std::string(what) == "NODATA" ? "NODATA (no A record)" : "NXDOMAIN";
  p.negative_ttl = 300;
  return p;
}

TEST(PlanTimeline, NewNameUsesNegativeTtlAndSaysOneThing) {
  NamePlan p = new_name("NXDOMAIN");
  compute_timeline(p, with(""), Profile{});
  ASSERT_TRUE(p.planned);
  EXPECT_EQ(*p.lower_by, kIn.cutover - seconds{300});
  // Lowered to the target (SOA MINIMUM 60): visible one lowered negative TTL after.
  EXPECT_EQ(*p.new_name_by, kIn.cutover + seconds{60});
  EXPECT_EQ(p.gone_by_ttl, p.new_name_by);
  EXPECT_EQ(p.lines[0].label, "lower SOA TTL/MINIMUM by");
  EXPECT_NE(line_with(p, "new name visible everywhere"), nullptr);
  // No line about an old address being gone: there is none.
  EXPECT_EQ(line_with(p, "gone from TTL-obeying caches"), nullptr);
}

TEST(PlanTimeline, NodataSaysTheNameExistsWithoutTheType) {
  NamePlan p = new_name("NODATA");
  compute_timeline(p, with(""), Profile{});
  const TimelineLine* cut = line_with(p, "cut-over");
  ASSERT_NE(cut, nullptr);
  EXPECT_NE(cut->explanation.find("the name exists but has no record of this type"),
            std::string::npos)
      << cut->explanation;
  EXPECT_EQ(line_with(p, "gone from TTL-obeying caches"), nullptr);
}

TEST(PlanTimeline, LayersUseTheirNegativeHoldForANewName) {
  NamePlan p = new_name("NXDOMAIN");
  compute_timeline(p, with(""), default_profile());
  const LayerLine* jvm = nullptr;
  for (const auto& l : p.layers)
    if (l.name == "JVM") jvm = &l;
  ASSERT_NE(jvm, nullptr);
  // networkaddress.cache.negative.ttl 10 s, not the positive 30 s.
  EXPECT_EQ(*jvm->gone_by, *p.new_name_by + seconds{10});
  EXPECT_NE(jvm->explanation.find("a negative answer"), std::string::npos);
  // The same layer on a positive answer holds 30 s.
  NamePlan q = www_chain(3600, 300);
  compute_timeline(q, with(""), default_profile());
  for (const auto& l : q.layers) {
    if (l.name == "JVM") {
      EXPECT_EQ(*l.gone_by, *q.gone_by_ttl + seconds{30});
    }
  }
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
  compute_timeline(p, with("", 0), Profile{});
  const std::string j = render_json({with("", 0), "test"}, {p});
  for (const char* want :
       {"\"cutover\": \"2026-12-03T10:00:00Z\"", "\"target_ttl\": 60",
        "\"lower_by\": \"2026-12-03T09:55:00Z\"", "\"limiting_ttl\": 300", "\"transfer_margin\": 0",
        "\"moves\": true", "\"moves\": false", "\"gone_by_ttl\": \"2026-12-03T10:01:00Z\"",
        "\"owner\": \"www.example.test.\"", "\"type\": \"CNAME\", \"ttl\": 3600",
        "\"type\": \"A\", \"ttl\": 300"}) {
    EXPECT_NE(j.find(want), std::string::npos) << want << "\n" << j;
  }
}

TEST(PlanReport, JsonStringsAreEscaped) {
  EXPECT_EQ(base::json::quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
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
  EXPECT_EQ(bars, prof.layers.size() + 2);  // + the old-TTL copies, the TTL-obeying caches
  // Bars after the cut-over start at the cut-over, not at "now".
  EXPECT_NE(svg.find("logarithmic on both sides"), std::string::npos);
}

TEST(PlanReport, SvgShowsNamesThatWereNotPlanned) {
  NamePlan ok = www_chain(3600, 300);
  compute_timeline(ok, kIn, Profile{});
  NamePlan bad;
  bad.name = "gone.example.test.";
  bad.failed = true;
  bad.problems = {"found no zone for gone.example.test."};
  compute_timeline(bad, kIn, Profile{});
  const std::string svg = render_svg({kIn, "default"}, {ok, bad});
  EXPECT_NE(svg.find("gone.example.test."), std::string::npos);
  EXPECT_NE(svg.find("NOT PLANNED"), std::string::npos);
  EXPECT_NE(svg.find("found no zone for gone.example.test."), std::string::npos);
}

}  // namespace
}  // namespace hg::rehearse
