// hourglass-rehearse plan against a real knotd on loopback (label: integration): the chain
// www CNAME (3600) → lb A (300) with the A record moving, the CNAME or every hop moving, the
// transfer margin from SOA REFRESH, lame and unreachable servers, missing names, loops, DNAME,
// servers that disagree, finding the servers through a resolver, and — measured — when
// hourglassd in front of knotd serves a changed A record under a long CNAME.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/daemon.h"
#include "tests/rehearse/knot.h"
#include "wire/rdata.h"

namespace hg::rehearse_test {
namespace {

const char* kPlanTimes =
    "--target-ttl 60 --cutover 2026-12-03T10:00Z --now 2026-11-30T12:00Z --transfer-margin 0";

std::string zone(uint32_t serial, uint32_t www_ttl, uint32_t lb_ttl) {
  return "$ORIGIN example.test.\n"
         "@ 3600 IN SOA ns.example.test. admin.example.test. " +
         std::to_string(serial) +
         " 3600 600 86400 300\n"
         "@ 3600 IN NS ns\n"
         "ns 3600 IN A 127.0.0.1\n"
         "www " +
         std::to_string(www_ttl) +
         " IN CNAME lb\n"
         "lb " +
         std::to_string(lb_ttl) +
         " IN A 192.0.2.1\n"
         "loop1 600 IN CNAME loop2\n"
         "loop2 600 IN CNAME loop1\n"
         "legacy 1800 IN DNAME example.test.\n"
         "out 900 IN CNAME www.other.test.\n";
}

std::string other_zone() {
  return "$ORIGIN other.test.\n"
         "@ 7200 IN SOA ns.other.test. admin.other.test. 1 3600 600 86400 120\n"
         "@ 7200 IN NS ns\n"
         "ns 7200 IN A 127.0.0.1\n"
         "www 120 IN A 198.51.100.7\n";
}

class PlanKnot : public testing::Test {
 protected:
  void SetUp() override {
    knot_ = Knot::start({{"example.test", zone(1, 3600, 300)}, {"other.test", other_zone()}});
    ASSERT_NE(knot_, nullptr);
  }
  RunResult plan(const std::string& args) {
    return rehearse("plan " + args + " " + kPlanTimes + " --auth " + knot_->address());
  }
  std::unique_ptr<Knot> knot_;
  TempDir tmp_;
};

TEST_F(PlanKnot, TheAddressRecordMovesAndTheCnameAboveNeedNotBeLowered) {
  const std::string json = tmp_.file("plan.json");
  auto r = plan("www.example.test --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "d['cutover']"), "2026-12-03T10:00:00Z");
  EXPECT_EQ(json_get(json, "d['target_ttl']"), "60");
  EXPECT_EQ(json_get(json, "d['moving']"), "address");
  EXPECT_EQ(json_get(json, "d['names'][0]['name']"), "www.example.test.");
  // cut-over − lb's 300 s, not − the CNAME's 3600 s.
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:55:00Z");
  EXPECT_EQ(json_get(json, "d['names'][0]['limiting_ttl']"), "300");
  EXPECT_EQ(json_get(json, "d['names'][0]['limiting_hop']"),
            "{'owner': 'lb.example.test.', 'type': 'A'}");
  EXPECT_EQ(json_get(json, "d['names'][0]['gone_by_ttl']"), "2026-12-03T10:01:00Z");
  EXPECT_EQ(json_get(json,
                     "[(h['owner'], h['type'], h['ttl'], h['moves']) for h in "
                     "d['names'][0]['hops']]"),
            "[('www.example.test.', 'CNAME', 3600, False), ('lb.example.test.', 'A', 300, True)]");
  EXPECT_EQ(json_get(json, "d['names'][0]['zones'][0]['negative_ttl']"), "300");
  EXPECT_EQ(json_get(json, "d['names'][0]['zones'][0]['ns_ttl']"), "3600");
  EXPECT_EQ(json_get(json, "d['names'][0]['zones'][0]['soa_refresh']"), "3600");
  EXPECT_NE(r.output.find("2026-12-03T09:55:00Z  lower A by"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not change, need not be lowered"), std::string::npos) << r.output;
}

TEST_F(PlanKnot, TransferMarginDefaultsToSoaRefresh) {
  const std::string json = tmp_.file("plan.json");
  auto r = rehearse(
      "plan www.example.test --target-ttl 60 --cutover 2026-12-03T10:00Z --now "
      "2026-11-30T12:00Z --auth " +
      knot_->address() + " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The zone's SOA REFRESH is 3600: cut-over − 3600 − 300.
  EXPECT_EQ(json_get(json, "d['names'][0]['transfer_margin']"), "3600");
  EXPECT_EQ(json_get(json, "d['names'][0]['margin_source']"), "SOA REFRESH of zone example.test.");
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T08:55:00Z");
  EXPECT_EQ(json_get(json, "d['names'][0]['gone_by_ttl']"), "2026-12-03T11:01:00Z");
  EXPECT_NE(r.output.find("--transfer-margin 0"), std::string::npos) << r.output;
}

TEST_F(PlanKnot, MovingTheCnameOrEveryHop) {
  const std::string json = tmp_.file("plan.json");
  auto r = plan("www.example.test --moving www.example.test --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:00:00Z");
  r = plan("www.example.test --moving all --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:00:00Z");
  // A hop that is not on the chain: not planned, exit 1, the chain's owners named.
  r = plan("www.example.test --moving api.example.test");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--moving api.example.test: no hop of the chain"), std::string::npos)
      << r.output;
}

TEST_F(PlanKnot, LoweredAddressLeavesNothingToLower) {
  ASSERT_TRUE(knot_->replace_zone({"example.test", zone(2, 3600, 60)}, 2));
  const std::string json = tmp_.file("plan.json");
  auto r = plan("www.example.test --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "d['names'][0]['hops'][1]['ttl']"), "60");
  EXPECT_EQ(json_get(json, "d['names'][0]['hops'][1]['at_or_below_target']"), "True");
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:59:00Z");
  EXPECT_NE(r.output.find("nothing to lower"), std::string::npos) << r.output;
}

TEST_F(PlanKnot, UnreachableAndLameServersAreReportedNotFatal) {
  SilentPort silent;
  Knot* k = knot_.get();
  // A second "server" that never answers, and a name in a zone knotd does not serve. The
  // timeout leaves knotd time to answer on a loaded machine (300 ms once was not enough).
  auto r = rehearse("plan www.example.test www.nowhere.test " + std::string(kPlanTimes) +
                        " --timeout 1s --auth " + k->address() +
                        " --auth 127.0.0.1:" + std::to_string(silent.port()),
                    90);
  EXPECT_EQ(r.exit_code, 0) << r.output;  // www.example.test was planned
  EXPECT_NE(r.output.find("127.0.0.1:" + std::to_string(silent.port()) +
                          " for zone example.test.: no answer (timeout)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("found no zone for www.nowhere.test."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(k->address() + ": REFUSED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no --auth server is authoritative for it (lame)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2026-12-03T09:55:00Z  lower A by"), std::string::npos);
}

TEST_F(PlanKnot, NothingPlannableExitsOne) {
  auto r = plan("www.nowhere.test");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("NOT PLANNED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no name could be planned"), std::string::npos) << r.output;
}

TEST_F(PlanKnot, MissingNameIsPlannedAsANewName) {
  const std::string json = tmp_.file("plan.json");
  auto r = plan("fresh.example.test --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "d['names'][0]['missing']"), "True");
  EXPECT_EQ(json_get(json, "d['names'][0]['negative_ttl']"), "300");  // min(3600, 300)
  // Lowered to the target TTL (60 s) ahead: visible 60 s after the cut-over.
  EXPECT_EQ(json_get(json, "d['names'][0]['new_name_by']"), "2026-12-03T10:01:00Z");
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:55:00Z");
  EXPECT_NE(r.output.find("does not exist yet (NXDOMAIN"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("gone from TTL-obeying caches"), std::string::npos) << r.output;
}

TEST_F(PlanKnot, ChainLoopIsReported) {
  auto r = plan("loop1.example.test");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("chain loop: loop1.example.test. CNAME → loop2.example.test. CNAME → "
                          "loop1.example.test. again"),
            std::string::npos)
      << r.output;
}

TEST_F(PlanKnot, DnameAndCrossZoneHopsAreFollowed) {
  const std::string json = tmp_.file("plan.json");
  auto r = plan("lb.legacy.example.test out.example.test --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "[(h['owner'], h['type'], h['ttl']) for h in d['names'][0]['hops']]"),
            "[('legacy.example.test.', 'DNAME', 1800), ('lb.example.test.', 'A', 300)]");
  EXPECT_EQ(json_get(json, "[(h['type'], h['ttl'], h['zone']) for h in d['names'][1]['hops']]"),
            "[('CNAME', 900, 'example.test.'), ('A', 120, 'other.test.')]");
  EXPECT_EQ(json_get(json, "d['names'][1]['zones'][1]['negative_ttl']"), "120");
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:55:00Z");
  EXPECT_EQ(json_get(json, "d['names'][1]['lower_by']"), "2026-12-03T09:58:00Z");
}

TEST_F(PlanKnot, ServersThatDisagreeAreReported) {
  auto second = Knot::start({{"example.test", zone(1, 300, 300)}, {"other.test", other_zone()}});
  ASSERT_NE(second, nullptr);
  const std::string json = tmp_.file("plan.json");
  auto r = rehearse("plan www.example.test " + std::string(kPlanTimes) + " --auth " +
                    knot_->address() + " --auth " + second->address() + " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("servers disagree on www.example.test."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(knot_->address() + " says CNAME 3600"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(second->address() + " says CNAME 300"), std::string::npos) << r.output;
  // Planned with the larger TTL.
  EXPECT_EQ(json_get(json, "d['names'][0]['hops'][0]['ttl']"), "3600");
}

TEST_F(PlanKnot, ProfileAndPlotAreUsed) {
  const std::string prof = tmp_.file("p.toml");
  {
    std::FILE* f = std::fopen(prof.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "[[layer]]\nname = \"our app\"\nkind = \"fixed\"\nseconds = 600\n"
        "source = \"app.yaml dns_cache\"\n",
        f);
    std::fclose(f);
  }
  const std::string json = tmp_.file("plan.json");
  const std::string svg = tmp_.file("plan.svg");
  auto r = plan("www.example.test --profile " + prof + " --json " + json + " --plot " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "[(l['name'], l['gone_by']) for l in d['names'][0]['layers']]"),
            "[('our app', '2026-12-03T10:11:00Z')]");
  const std::string s = read_file(svg);
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  EXPECT_NE(s.find("our app"), std::string::npos);
  // rsvg-convert renders it (a malformed SVG fails here).
  auto png = run("rsvg-convert -o " + tmp_.file("plan.png") + " " + svg, 30);
  EXPECT_EQ(png.exit_code, 0) << png.output;
}

TEST_F(PlanKnot, ServersAreFoundThroughAResolver) {
  // Without --auth: the zone apex (SOA walk), its NS names and their addresses come through a
  // recursive resolver — here hourglassd forwarding to knotd — and the servers found are then
  // asked directly, on --auth-port.
  auto d = integration::Daemon::start({"--upstream=" + knot_->address()});
  ASSERT_TRUE(d->ready()) << d->output();
  const std::string json = tmp_.file("plan.json");
  auto r = rehearse("plan www.example.test out.example.test " + std::string(kPlanTimes) +
                    " --resolver 127.0.0.1:" + std::to_string(d->port()) + " --auth-port " +
                    std::to_string(knot_->port()) + " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:55:00Z");
  EXPECT_EQ(json_get(json, "d['names'][0]['zones'][0]['servers']"), "['" + knot_->address() + "']");
  EXPECT_EQ(json_get(json, "[z['apex'] for z in d['names'][1]['zones']]"),
            "['example.test.', 'other.test.']");
}

// The claim behind "lower by = cut-over − the TTL of the RRset that changes", measured: knotd
// serves www CNAME (60 s) → lb A (3 s) — the 3600 s → 300 s chain scaled down by 20 — and the
// A record changes. hourglassd (one cache entry per answer) and Unbound (one per RRset) in
// front of it each fetched the chain just before the change; each must serve the new address
// within the A record's TTL (+ the 1 s granularity of TTLs and the polling), long before the
// CNAME's 60 s run out. plan's "lower by" for the same chain is cut-over − 3 s.
std::string move_zone(uint32_t serial, const char* addr) {
  return "$ORIGIN move.test.\n"
         "@ 3600 IN SOA ns.move.test. admin.move.test. " +
         std::to_string(serial) +
         " 3600 600 86400 60\n"
         "@ 3600 IN NS ns\n"
         "ns 3600 IN A 127.0.0.1\n"
         "www 60 IN CNAME lb\n"
         "lb 3 IN A " +
         addr + "\n";
}

// The A address a resolver on `port` gives for www.move.test, "" when it does not answer.
std::string address_of(uint16_t port) {
  auto a = integration::udp_query(port, integration::build_query({"www.move.test"}),
                                  integration::Millis{2000});
  if (!a) return "";
  for (const auto& rr : a->msg.answer) {
    if (rr.type == wire::RRType::A) return wire::rdata_to_text(rr.rdata);
  }
  return "";
}

TEST(PlanKnotMeasured, NewAddressIsServedAfterTheARecordsTtlNotTheCnames) {
  auto knot = Knot::start({{"move.test", move_zone(1, "192.0.2.1")}});
  ASSERT_NE(knot, nullptr);
  TempDir tmp;
  const std::string json = tmp.file("plan.json");
  auto r = rehearse(
      "plan www.move.test --target-ttl 1 --cutover 2026-12-03T10:00Z --now 2026-12-03T09:00Z "
      "--transfer-margin 0 --auth " +
      knot->address() + " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(json_get(json, "d['names'][0]['limiting_hop']"),
            "{'owner': 'lb.move.test.', 'type': 'A'}");
  EXPECT_EQ(json_get(json, "d['names'][0]['lower_by']"), "2026-12-03T09:59:57Z");
  const int planned_ttl = std::stoi(json_get(json, "d['names'][0]['limiting_ttl']"));
  ASSERT_EQ(planned_ttl, 3);

  auto hg = integration::Daemon::start({"--upstream=" + knot->address()});
  ASSERT_TRUE(hg->ready()) << hg->output();
  auto ub = Unbound::start("move.test", knot->port());
  ASSERT_NE(ub, nullptr);
  const uint16_t ports[] = {hg->port(), ub->port()};
  const char* names[] = {"hourglassd", "unbound"};

  using Clock = std::chrono::steady_clock;
  Clock::time_point fetched[2];
  for (int i = 0; i < 2; ++i) {
    fetched[i] = Clock::now();  // before the query: the copy cannot be older than this
    ASSERT_EQ(address_of(ports[i]), "192.0.2.1") << names[i];
  }
  ASSERT_TRUE(knot->replace_zone({"move.test", move_zone(2, "198.51.100.7")}, 2));

  // Poll each resolver (bounded: 30 s, every 50 ms) until it serves the new address.
  for (int i = 0; i < 2; ++i) {
    const auto deadline = Clock::now() + std::chrono::seconds{30};
    std::string got;
    while (Clock::now() < deadline) {
      got = address_of(ports[i]);
      if (got == "198.51.100.7") break;
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    ASSERT_EQ(got, "198.51.100.7") << names[i] << " never served the new address";
    const double held = std::chrono::duration<double>(Clock::now() - fetched[i]).count();
    std::printf(
        "%s: new address served %.2f s after its copy was fetched (A TTL %d s, CNAME "
        "TTL 60 s)\n",
        names[i], held, planned_ttl);
    // The A record's TTL bounds it: +1 s for whole-second TTLs, +1 s for polling and load.
    EXPECT_LE(held, planned_ttl + 2.0) << names[i];
    EXPECT_LT(held, 60.0) << names[i] << " held the old address for the CNAME's TTL";
  }
}

TEST(PlanUsage, BadFlagsAreOneLineAndExitTwo) {
  struct Case {
    const char* args;
    const char* says;
  } cases[] = {
      // Every case that reaches the cut-over's check gives --now on the same line, so none
      // depends on today's date.
      {"plan www.example.test --target-ttl 60 --cutover tomorrow --auth 127.0.0.1",
       "--cutover 'tomorrow': expected a UTC time"},
      {"plan www.example.test --target-ttl sixty --auth 127.0.0.1 "
       "--cutover 2026-12-03T10:00Z --now 2026-12-01T11:00Z",
       "--target-ttl 'sixty'"},
      {"plan www.example.test --target-ttl 60 --auth nohost "
       "--cutover 2026-12-03T10:00Z --now 2026-12-01T11:00Z",
       "--auth 'nohost'"},
      {"plan www.example.test --target-ttl 60 --auth 127.0.0.1 --profile /nonexistent.toml "
       "--cutover 2026-12-03T10:00Z --now 2026-12-01T11:00Z",
       "--profile /nonexistent.toml: cannot be read"},
      {"plan www.example.test --cutover 2026-12-03T10:00Z --now 2026-12-01T11:00Z",
       "--target-ttl is required"},
      {"plan www.example.test --target-ttl 60 --auth 127.0.0.1 "
       "--cutover 2026-12-03T10:00Z --now 2026-12-03T11:00Z",
       "--cutover '2026-12-03T10:00Z': expected a time in the future (now 2026-12-03T11:00:00Z)"},
      {"plan www.example.test --target-ttl 60 --auth 127.0.0.1 --transfer-margin soon "
       "--cutover 2026-12-03T10:00Z --now 2026-12-01T11:00Z",
       "--transfer-margin 'soon'"},
      {"plan www.example.test --target-ttl 60 --auth 127.0.0.1 --moving '' "
       "--cutover 2026-12-03T10:00Z --now 2026-12-01T11:00Z",
       "--moving ''"},
  };
  for (const auto& c : cases) {
    auto r = rehearse(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  }
}

}  // namespace
}  // namespace hg::rehearse_test
