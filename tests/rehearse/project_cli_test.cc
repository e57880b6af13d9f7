// hourglass-rehearse project end to end (label: integration): the real binary on a pcap of an
// authoritative server's port 53 with queries only, then with its answers; its table and JSON,
// and its one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <random>
#include <string>

#include "tests/rehearse/tool_run.h"
#include "tests/rehearse/trace_test_util.h"

namespace hg::rehearse::test {
namespace {

ToolRun project(const std::string& args, const TempDir& dir) {
  return run_rehearse("project", args, dir);
}

constexpr int64_t kT0 = 1'767'225'600LL * 1'000'000'000;

// Four resolvers, each a TTL-300 cache with Poisson demand for www.example.com over 2 h, as
// seen on the authoritative server's port 53 (its answers too when `answers`).
void write_auth_pcap(const std::string& path, bool answers) {
  std::vector<Packet> pkts;
  std::mt19937_64 rng(9);
  const double rates[] = {0.005, 0.02, 0.1, 1.0};
  uint16_t id = 0;
  for (int r = 0; r < 4; ++r) {
    std::exponential_distribution<double> gap(rates[r]);
    double expiry = -1;
    for (double s = gap(rng); s < 7200; s += gap(rng)) {
      if (s < expiry) continue;
      expiry = s + 300;
      const auto t = kT0 + static_cast<int64_t>(s * 1e9);
      const Addr res = v4(198, 51, 100, static_cast<uint8_t>(10 + r)), auth = v4(192, 0, 2, 53);
      ++id;
      pkts.push_back(
          {t, link_frame(DLT_EN10MB,
                         ip_packet(res, auth, 17,
                                   udp(40000, 53, dns_message(id, "www.example.com", false))))});
      if (answers) {
        pkts.push_back(
            {t + 100'000,
             link_frame(DLT_EN10MB,
                        ip_packet(auth, res, 17,
                                  udp(53, 40000, dns_message(id, "www.example.com", true, 300))))});
      }
    }
  }
  std::sort(pkts.begin(), pkts.end(),
            [](const Packet& a, const Packet& b) { return a.t_ns < b.t_ns; });
  write_pcap(path, DLT_EN10MB, pkts);
}

TEST(ProjectCli, QueriesOnlyNeedTheTtlThenProject) {
  TempDir dir;
  const std::string trace = dir.file("auth.pcap");
  write_auth_pcap(trace, false);
  ToolRun r = project(trace + " --candidates 60,30", dir);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("queries only (no answers), so the TTL is unknown: give --ttl"),
            std::string::npos)
      << r.err;
  r = project(
      trace + " --candidates 60,30 --ttl 300 --price-per-million 0.40 --json " + dir.file("p.json"),
      dir);
  ASSERT_EQ(r.status, 0) << r.err;
  std::fputs(r.out.c_str(), stdout);  // the table, in the test's log
  EXPECT_NE(r.out.find("4 resolvers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("www.example.com. A"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cost/day"), std::string::npos) << r.out;
  const Bytes jb = read_file(dir.file("p.json"));
  const std::string json(jb.begin(), jb.end());
  for (const char* key : {"\"candidates\"", "\"ttl\": 60", "\"queries_lo\"", "\"cost_per_day\"",
                          "\"classes\"", "\"ttl_from\": \"--ttl\"", "\"price_per_million\": 0.4"})
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
}

TEST(ProjectCli, AnswersGiveTheTtl) {
  TempDir dir;
  const std::string trace = dir.file("auth.pcap");
  write_auth_pcap(trace, true);
  const ToolRun r = project(trace + " --candidates 60 --json -", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"ttl_from\": \"response\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"ttl\": 300"), std::string::npos) << r.out;
}

TEST(ProjectCli, BadFlagsAreOneLineAndExitTwo) {
  TempDir dir;
  const std::string trace = dir.file("auth.pcap");
  write_auth_pcap(trace, false);
  for (const std::string& args :
       {trace + " --candidates 60,x", trace + " --candidates 60 --prefix4 40",
        trace + " --candidates 60 --price-per-million cheap", trace,
        dir.file("missing.pcap") + " --candidates 60"}) {
    const ToolRun r = project(args, dir);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace hg::rehearse::test
