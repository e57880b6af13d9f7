// hourglass-ctl top --once against a running hourglassd: its totals are the daemon's counters
// (the same numbers `hourglass-ctl stats` prints) at the time of its second sample, so under
// a bounded load they lie between a stats taken before and one taken after, and once the load
// has stopped they equal stats exactly with every rate at 0. The busiest names and the names
// causing upstream queries come from the daemon's top-names sketch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;

// The counters of a stats reply, or of top's "totals:" line, under the same names.
std::map<std::string, uint64_t> stats_totals(const std::string& stats) {
  std::map<std::string, uint64_t> s;
  std::istringstream in(stats);
  std::string key;
  uint64_t v = 0;
  while (in >> key >> v)
    s[key] = v;
  return {{"queries", s["server.queries_udp"] + s["server.queries_tcp"]},
          {"hits", s["server.hits"]},
          {"misses", s["server.misses"]},
          {"stale_answers", s["server.stale_answers"]},
          {"servfail", s["server.servfail"]},
          {"upstream_queries", s["server.upstream_queries"]}};
}

std::map<std::string, uint64_t> top_totals(const std::string& top) {
  std::map<std::string, uint64_t> out;
  const auto at = top.find("\ntotals: ");
  if (at == std::string::npos) return out;
  std::istringstream in(top.substr(at + 9, top.find('\n', at + 1) - at - 9));
  std::string key;
  uint64_t v = 0;
  while (in >> key >> v)
    out[key] = v;
  return out;
}

class TopIntegrationTest : public ::testing::Test {
 protected:
  TopIntegrationTest() { socket_ = dir_.file("control"); }
  FakeUpstream upstream_;
  test::TempDir dir_{"hg-top-integ"};
  std::string socket_;
};

TEST_F(TopIntegrationTest, OnceShowsTheCountersOfStatsAndTheBusiestNames) {
  for (int i = 0; i < 20; ++i) {
    upstream_.on("n" + std::to_string(i) + ".top.test",
                 FakeReply::records({FakeRecord::a("", 300, "192.0.2.1")}));
  }
  upstream_.on("hot.top.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.2")}));
  auto daemon = Daemon::start({"--upstream", upstream_.address(), "--control", socket_});
  ASSERT_TRUE(daemon->ready()) << daemon->output();
  const uint16_t port = daemon->port();

  // A bounded load (800 queries, most of them for one hot name) while top takes its samples.
  std::atomic<int> answered{0};
  std::thread load([&] {
    for (int i = 0; i < 800; ++i) {
      const std::string name =
          i % 4 == 0 ? "n" + std::to_string(i / 4 % 20) + ".top.test" : "hot.top.test";
      if (udp_query(port, build_query({.name = name}), Millis{2000})) answered.fetch_add(1);
    }
  });
  const auto before = stats_totals(ctl(socket_, "stats").output);
  const CommandResult during = ctl(socket_, "top --once --interval 0.3");
  const auto after = stats_totals(ctl(socket_, "stats").output);
  load.join();
  ASSERT_EQ(during.exit_code, 0) << during.output;
  const auto shown = top_totals(during.output);
  ASSERT_EQ(shown.size(), before.size()) << during.output;
  for (const auto& [key, value] : shown) {
    EXPECT_LE(before.at(key), value) << key << "\n" << during.output;
    EXPECT_LE(value, after.at(key)) << key << "\n" << during.output;
  }
  EXPECT_EQ(answered.load(), 800);

  // The load is over: top's totals are stats' numbers, and nothing happened in its window.
  const CommandResult idle = ctl(socket_, "top --once --interval 0.2");
  const auto now = stats_totals(ctl(socket_, "stats").output);
  ASSERT_EQ(idle.exit_code, 0) << idle.output;
  EXPECT_EQ(top_totals(idle.output), now) << idle.output;
  EXPECT_NE(idle.output.find("queries/s 0.0  hit ratio -  misses/s 0.0  stale/s 0.0  "
                             "servfail/s 0.0"),
            std::string::npos)
      << idle.output;
  EXPECT_GE(now.at("queries"), 800u);
  // 600 of the 800 queries were for hot.top.test, 10 for each other name: the busiest name
  // (the sketch samples 1 in 16 on average, so its count is an estimate, but nothing else
  // comes near). Every name went upstream
  // once: each is listed with 1.
  const std::string& v = idle.output;
  const auto busiest = v.find("busiest names");
  ASSERT_NE(busiest, std::string::npos) << v;
  const auto first_row = v.find('\n', busiest) + 1;
  EXPECT_EQ(v.compare(first_row, 13, "hot.top.test."), 0) << v;
  // The upstream list has what went upstream: 21 names, each once.
  const CommandResult names = ctl(socket_, "top-names 64");
  EXPECT_NE(names.output.find("upstream hot.top.test. 1\n"), std::string::npos) << names.output;
  EXPECT_NE(names.output.find("upstream n7.top.test. 1\n"), std::string::npos) << names.output;
  EXPECT_EQ(upstream_.queries("hot.top.test"), 1u);
  EXPECT_NE(v.find("; estimates:"), std::string::npos) << v;
}

TEST_F(TopIntegrationTest, TopNamesRejectsABadCount) {
  auto daemon = Daemon::start({"--upstream", upstream_.address(), "--control", socket_});
  ASSERT_TRUE(daemon->ready()) << daemon->output();
  EXPECT_EQ(ctl(socket_, "top-names 0").exit_code, 1);
  EXPECT_EQ(ctl(socket_, "top-names 65").exit_code, 1);
  EXPECT_EQ(ctl(socket_, "top-names x").exit_code, 1);
  EXPECT_EQ(ctl(socket_, "top --interval 0").exit_code, 2);
}

}  // namespace
}  // namespace hg::integration
