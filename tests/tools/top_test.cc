// tools/ctl/top.h: the view drawn from two samples of stats, upstreams and top-names.
#include "tools/ctl/top.h"

#include <gtest/gtest.h>

#include <string>

namespace hg::ctl {
namespace {

const char* kStatsA =
    "cache.entries 3\nserver.queries_udp 100\nserver.queries_tcp 0\nserver.hits 80\n"
    "server.misses 20\nserver.stale_answers 0\nserver.servfail 1\nserver.upstream_queries 20\n"
    "inflight.queries 0\n";
const char* kStatsB =
    "cache.entries 4\nserver.queries_udp 300\nserver.queries_tcp 20\nserver.hits 260\n"
    "server.misses 40\nserver.stale_answers 4\nserver.servfail 3\nserver.upstream_queries 42\n"
    "inflight.queries 2\n";
const char* kUpA =
    "127.0.0.1:53 state=up srtt_ms=1.5 rttvar_ms=0.5 rto_ms=50.0 queries=20 timeouts=0\n";
const char* kUpB =
    "127.0.0.1:53 state=up srtt_ms=1.2 rttvar_ms=0.5 rto_ms=50.0 queries=40 timeouts=5\n";
const char* kNames =
    "busiest www.example.com. 160\nupstream cold.example.com. 7\n"
    "; estimates: busiest from 1 in 16 queries\n";

TEST(Top, RatesAreTheDifferencesOverTheIntervalAndTotalsTheSecondSample) {
  const auto a = parse_top_sample(kStatsA, kUpA, "");
  const auto b = parse_top_sample(kStatsB, kUpB, kNames);
  const std::string view = render_top(a, b, 2.0, "/run/hourglass/control", false);
  // (320 - 100) / 2 s; hits 180 of 200 resolved; misses 20 / 2 s; stale 4 / 2; servfail 2 / 2
  EXPECT_NE(view.find("queries/s 110.0  hit ratio 90.0%  misses/s 10.0  stale/s 2.0  "
                      "servfail/s 1.0  in flight 2\n"),
            std::string::npos)
      << view;
  EXPECT_NE(view.find("totals: queries 320 hits 260 misses 40 stale_answers 4 servfail 3 "
                      "upstream_queries 42\n"),
            std::string::npos)
      << view;
  // 5 timeouts of 20 queries sent in the interval: 25 % loss; 10 queries/s.
  EXPECT_NE(view.find("127.0.0.1:53"), std::string::npos);
  EXPECT_NE(view.find(" up            1.2   25.0%       10.0\n"), std::string::npos) << view;
  EXPECT_NE(view.find("www.example.com."), std::string::npos);
  EXPECT_NE(view.find("cold.example.com."), std::string::npos);
  EXPECT_EQ(view.find('\x1b'), std::string::npos);  // --once: no escape sequences
}

TEST(Top, NoQueriesInTheIntervalGiveZeroRatesAndNoRatio) {
  const auto a = parse_top_sample(kStatsB, kUpB, "");
  const std::string view = render_top(a, a, 1.0, "s", false);
  EXPECT_NE(view.find("queries/s 0.0  hit ratio -  misses/s 0.0"), std::string::npos) << view;
  EXPECT_NE(view.find(" up            1.2       -        0.0\n"), std::string::npos)
      << view;  // no query sent: loss unknown
}

TEST(Top, ControlBytesInNamesNeverReachTheTerminal) {
  const auto a = parse_top_sample("", "", "");
  const auto b = parse_top_sample("", "", "busiest a\x1b[2Jb.test. 16\n");
  const std::string view = render_top(a, b, 1.0, "s", true);
  EXPECT_NE(view.find("a?[2Jb.test."), std::string::npos) << view;
  EXPECT_EQ(view.find("\x1b[2J"), std::string::npos);
}

TEST(Top, MalformedRepliesAreIgnoredLineByLine) {
  const auto s = parse_top_sample("server.hits x\nserver.misses 5\njunk\n\n",
                                  "; no upstream servers\nbroken\n", "busiest a. notanumber\n");
  EXPECT_EQ(s.get("server.hits"), 0u);
  EXPECT_EQ(s.get("server.misses"), 5u);
  ASSERT_EQ(s.upstreams.size(), 1u);  // "broken": a server name with no fields
  EXPECT_EQ(s.upstreams[0].queries, 0u);
  EXPECT_TRUE(s.busiest.empty());
}

}  // namespace
}  // namespace hg::ctl
