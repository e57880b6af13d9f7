// hourglass-rehearse report against a real knotd (label: integration): its numbers equal plan's
// and replay's JSON for the same inputs, the HTML is self-contained (no fetches), and a real
// browser (headless Chromium) renders it to a screenshot.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "tests/rehearse/knot.h"
#include "tests/rehearse/trace_test_util.h"

namespace hg::rehearse_test {
namespace {

namespace tt = hg::rehearse::test;

std::string report_zone() {
  return "$ORIGIN example.test.\n"
         "@ 3600 IN SOA ns.example.test. admin.example.test. 1 3600 600 86400 300\n"
         "@ 3600 IN NS ns\n"
         "ns 3600 IN A 127.0.0.1\n"
         "www 300 IN A 192.0.2.1\n"
         "api 300 IN A 192.0.2.2\n";
}

// A resolver's port 53 over an hour: clients asking www (1/s) and api (0.05/s), every answer
// with TTL 300 (the resolver is the recorder; no FORWARDER messages in a pcap).
void write_resolver_pcap(const std::string& path) {
  constexpr int64_t kT0 = 1'767'225'600LL * 1'000'000'000;
  std::vector<tt::Packet> pkts;
  std::mt19937_64 rng(4);
  uint16_t id = 0;
  for (auto [name, rate] : {std::pair{"www.example.test", 1.0}, {"api.example.test", 0.05}}) {
    std::exponential_distribution<double> gap(rate);
    for (double s = gap(rng); s < 3600; s += gap(rng)) {
      const auto t = kT0 + static_cast<int64_t>(s * 1e9);
      const tt::Addr client = tt::v4(192, 0, 2, 10), server = tt::v4(192, 0, 2, 53);
      ++id;
      pkts.push_back(
          {t, tt::link_frame(DLT_EN10MB,
                             tt::ip_packet(client, server, 17,
                                           tt::udp(40000, 53, tt::dns_message(id, name, false))))});
      pkts.push_back(
          {t + 1'000'000,
           tt::link_frame(
               DLT_EN10MB,
               tt::ip_packet(server, client, 17,
                             tt::udp(53, 40000, tt::dns_message(id, name, true, 300))))});
    }
  }
  std::sort(pkts.begin(), pkts.end(),
            [](const tt::Packet& a, const tt::Packet& b) { return a.t_ns < b.t_ns; });
  tt::write_pcap(path, DLT_EN10MB, pkts);
}

TEST(ReportKnot, NumbersEqualPlanAndReplayAndChromiumRendersIt) {
  auto knot = Knot::start({{"example.test", report_zone()}});
  ASSERT_NE(knot, nullptr);
  TempDir tmp;
  const std::string trace = tmp.file("resolver.pcap");
  write_resolver_pcap(trace);
  const std::string when =
      " --cutover 2026-12-03T10:00Z --now 2026-11-30T12:00Z --transfer-margin 0 --auth " +
      knot->address();
  auto r =
      rehearse("report www.example.test api.example.test --candidates 120,60" + when + " --trace " +
               trace + " --html " + tmp.file("r.html") + " --json " + tmp.file("r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto p = rehearse("plan www.example.test api.example.test --target-ttl 60" + when + " --json " +
                    tmp.file("p.json"));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  auto x = rehearse("replay " + trace +
                    " --schedule www.example.test=60 --schedule api.example.test=60 --json " +
                    tmp.file("x.json"));
  ASSERT_EQ(x.exit_code, 0) << x.output;

  const std::string rj = tmp.file("r.json"), pj = tmp.file("p.json"), xj = tmp.file("x.json");
  // Candidates are listed longest first: [1] is 60 s.
  ASSERT_EQ(json_get(rj, "[c['ttl'] for c in d['candidates']]"), "[120, 60]");
  for (int n = 0; n < 2; ++n) {
    const std::string rn = "d['candidates'][1]['names'][" + std::to_string(n) + "]";
    const std::string pn = "d['names'][" + std::to_string(n) + "]";
    EXPECT_EQ(json_get(rj, rn + "['lower_by']"), json_get(pj, pn + "['lower_by']"));
    EXPECT_EQ(json_get(rj, rn + "['gone_by_ttl']"), json_get(pj, pn + "['gone_by_ttl']"));
    EXPECT_EQ(json_get(rj, "[l['gone_by'] for l in " + rn + "['layers']]"),
              json_get(pj, "[l['gone_by'] for l in " + pn + "['layers']]"));
  }
  EXPECT_EQ(json_get(rj, "d['candidates'][1]['names'][0]['lower_by']"), "2026-12-03T09:55:00Z");
  EXPECT_EQ(json_get(rj, "d['candidates'][1]['cost']['source']"), "replay");
  EXPECT_EQ(json_get(rj, "d['candidates'][1]['cost']['queries_before']"),
            json_get(xj, "d['total']['upstream_before']"));
  EXPECT_EQ(json_get(rj, "int(d['candidates'][1]['cost']['queries_after'])"),
            json_get(xj, "d['total']['upstream_after']"));
  // Lowering costs something, and more at 60 s than at 120 s.
  EXPECT_EQ(json_get(rj,
                     "d['candidates'][0]['cost']['queries_after'] < "
                     "d['candidates'][1]['cost']['queries_after']"),
            "True");

  // Self-contained: nothing the browser would fetch.
  const std::string html = read_file(tmp.file("r.html"));
  ASSERT_FALSE(html.empty());
  for (const char* fetch : {"src=", "href=", "@import", "url(", "<script", "<link"})
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  EXPECT_NE(html.find("Decision table"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);

  // A real browser renders it. Chromium as root needs --no-sandbox; --headless writes the PNG.
  const std::string shot = tmp.file("shot.png");
  auto c =
      run("chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
          "--window-size=1280,2400 --screenshot=" +
              shot + " file://" + tmp.file("r.html") + " 2>&1",
          120);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  ASSERT_TRUE(std::filesystem::exists(shot)) << c.output;
  // A blank page of that size compresses to a few KB; tables, text and two figures do not.
  EXPECT_GT(std::filesystem::file_size(shot), 40'000u);
  if (const char* keep = std::getenv("HG_REPORT_SHOT"); keep != nullptr)
    std::filesystem::copy_file(shot, keep, std::filesystem::copy_options::overwrite_existing);
}

// The same with an authoritative server's trace: the cost comes from the projection and
// equals project --json's for the same trace, TTL and candidates.
TEST(ReportKnot, AuthoritativeTraceCostEqualsProject) {
  auto knot = Knot::start({{"example.test", report_zone()}});
  ASSERT_NE(knot, nullptr);
  TempDir tmp;
  // The pcap written above, read as what an authoritative server received: one resolver
  // asking for www and api.
  const std::string trace = tmp.file("auth.pcap");
  write_resolver_pcap(trace);
  auto r = rehearse(
      "report www.example.test api.example.test --candidates 120,60 --cutover "
      "2026-12-03T10:00Z --now 2026-11-30T12:00Z --transfer-margin 0 --auth " +
      knot->address() + " --side auth --trace " + trace + " --html " + tmp.file("r.html") +
      " --json " + tmp.file("r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto p = rehearse("project " + trace + " --candidates 120,60 --json " + tmp.file("p.json"));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const std::string rj = tmp.file("r.json"), pj = tmp.file("p.json");
  EXPECT_EQ(json_get(rj, "d['candidates'][1]['cost']['source']"), "project");
  EXPECT_EQ(json_get(rj, "d['candidates'][1]['cost']['queries_before']"),
            json_get(pj, "d['observed']"));
  for (int c = 0; c < 2; ++c) {
    const std::string k = std::to_string(c);
    EXPECT_EQ(json_get(rj, "round(d['candidates'][" + k + "]['cost']['queries_after'], 3)"),
              json_get(pj, "round(d['candidates'][" + k + "]['queries'], 3)"));
    EXPECT_EQ(json_get(rj, "round(d['candidates'][" + k + "]['cost']['queries_after_hi'], 3)"),
              json_get(pj, "round(d['candidates'][" + k + "]['queries_hi'], 3)"));
  }
}

}  // namespace
}  // namespace hg::rehearse_test
