// Rehearsing a TTL change on the real hourglassd, driven by the real hourglass-ctl: shadow
// zones set, listed, cleared and reloaded on SIGHUP, their counts in the metrics scrape; the
// drain view of cached chains holding an old and a new address, with stale copies, and
// --flush-old checked with dump afterwards.
//
// The daemon runs on the real clock, so the shadow counts are made exact by the shadow TTLs
// chosen: 0 (the shadow entry is expired at once: every real hit is a projected upstream
// query) and 3600 (above the record's 300 s: the shadow entry lives as long as the real one
// during the test, so projected = real).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;

class RehearsalIntegrationTest : public ::testing::Test {
 protected:
  RehearsalIntegrationTest() { socket_ = dir_.file("control"); }

  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--upstream", upstream_.address(), "--control",
                                     socket_,      "--metrics",         "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = Daemon::start(args);
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
    const auto lines = daemon_->lines_with("metrics on 127.0.0.1:");
    ASSERT_EQ(lines.size(), 1u) << daemon_->output();
    metrics_port_ =
        static_cast<uint16_t>(std::stoi(lines[0].substr(lines[0].find("127.0.0.1:") + 10)));
  }

  void ask(const std::string& name, int times = 1) {
    for (int i = 0; i < times; ++i)
      ASSERT_TRUE(udp_query(daemon_->port(), build_query({.name = name}))) << name;
  }

  FakeUpstream upstream_;
  test::TempDir dir_{"hg-rehearse-integ"};
  std::string socket_;
  std::unique_ptr<Daemon> daemon_;
  uint16_t metrics_port_ = 0;
};

TEST_F(RehearsalIntegrationTest, ShadowZonesCountProjectedUpstreamQueriesInMetricsAndCtl) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")}));
  start({"--shadow-ttl", "zero.test=0"});
  EXPECT_EQ(ctl(socket_, "shadow list").output, "zero.test. 0\n");
  const CommandResult set = ctl(socket_, "shadow set big.test 3600");
  EXPECT_EQ(set.exit_code, 0) << set.output;
  EXPECT_EQ(set.output, "ok: shadow-ttl big.test. 3600\n");
  EXPECT_EQ(ctl(socket_, "shadow list").output, "zero.test. 0\nbig.test. 3600\n");

  // zero.test: 1 miss + 4 hits → real 1, projected 5. big.test: 1 miss + 4 hits → 1 and 1.
  ask("www.zero.test", 5);
  ask("www.big.test", 5);
  ask("www.elsewhere.test", 2);  // in no zone
  EXPECT_EQ(upstream_.queries("www.zero.test"), 1u);

  const std::string m = http_get(metrics_port_, "/metrics");
  EXPECT_EQ(metric_sample(m, "hourglass_shadow_upstream_queries_total{zone=\"zero.test.\"}"), 5)
      << m;
  EXPECT_EQ(metric_sample(m, "hourglass_shadow_real_upstream_queries_total{zone=\"zero.test.\"}"),
            1);
  EXPECT_EQ(metric_sample(m, "hourglass_shadow_queries_total{zone=\"zero.test.\"}"), 5);
  EXPECT_DOUBLE_EQ(metric_sample(m, "hourglass_shadow_projected_hit_ratio{zone=\"zero.test.\"}"),
                   0);
  EXPECT_DOUBLE_EQ(metric_sample(m, "hourglass_shadow_real_hit_ratio{zone=\"zero.test.\"}"), 0.8);
  EXPECT_EQ(metric_sample(m, "hourglass_shadow_upstream_queries_total{zone=\"big.test.\"}"), 1);
  EXPECT_EQ(metric_sample(m, "hourglass_shadow_real_upstream_queries_total{zone=\"big.test.\"}"),
            1);
  EXPECT_DOUBLE_EQ(metric_sample(m, "hourglass_shadow_projected_hit_ratio{zone=\"big.test.\"}"),
                   0.8);
  EXPECT_EQ(metric_sample(m, "hourglass_shadow_entries"), 2);

  const CommandResult report = ctl(socket_, "shadow");
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_TRUE(report.contains("; ZONE")) << report.output;
  // zone TTL since queries real real/s projected proj/s mult ...
  std::istringstream rows(report.output);
  bool saw_zero = false;
  for (std::string l; std::getline(rows, l);) {
    if (!l.starts_with("zero.test.")) continue;
    std::istringstream f(l);
    std::string zone, ttl, since, queries, real, real_s, projected, proj_s, mult;
    f >> zone >> ttl >> since >> queries >> real >> real_s >> projected >> proj_s >> mult;
    EXPECT_EQ(ttl, "0");
    EXPECT_EQ(queries, "5");
    EXPECT_EQ(real, "1");
    EXPECT_EQ(projected, "5");
    EXPECT_EQ(mult, "5.00");
    saw_zero = true;
  }
  EXPECT_TRUE(saw_zero) << report.output;
  const CommandResult stats = ctl(socket_, "stats");
  EXPECT_TRUE(stats.contains("shadow[zero.test.].projected_upstream 5\n")) << stats.output;
  EXPECT_TRUE(stats.contains("shadow.entries 2\n"));

  EXPECT_EQ(ctl(socket_, "shadow clear zero.test").output, "ok: shadow clear zero.test.\n");
  EXPECT_EQ(ctl(socket_, "shadow list").output, "big.test. 3600\n");
  EXPECT_EQ(http_get(metrics_port_, "/metrics").find("zone=\"zero.test.\""), std::string::npos);
}

TEST_F(RehearsalIntegrationTest, SighupReloadsShadowZonesFromTheConfigFile) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")}));
  const std::string conf = dir_.file("hourglass.toml");
  std::ofstream(conf) << "shadow-ttl = [\"a.test=60\", \"b.test=30\"]\n";
  start({"--config", conf});
  EXPECT_EQ(ctl(socket_, "shadow list").output, "a.test. 60\nb.test. 30\n");
  ask("www.a.test", 3);
  std::ofstream(conf) << "[shadow-ttl]\n\"a.test\" = 60\n\"c.test\" = 10\n";
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  ASSERT_TRUE(daemon_->wait_for_output("SIGHUP: shadow-ttl now", Millis{5000}))
      << daemon_->output();
  EXPECT_EQ(ctl(socket_, "shadow list").output, "a.test. 60\nc.test. 10\n");
  // a.test kept its counters: its settings did not change.
  const std::string m = http_get(metrics_port_, "/metrics");
  EXPECT_EQ(metric_sample(m, "hourglass_shadow_queries_total{zone=\"a.test.\"}"), 3) << m;
  // A broken file keeps the zones in force.
  std::ofstream(conf) << "shadow-ttl = [\"a.test=forever\"]\n";
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  ASSERT_TRUE(
      daemon_->wait_for_output("SIGHUP: keeping the current shadow-ttl zones", Millis{5000}));
  EXPECT_EQ(ctl(socket_, "shadow list").output, "a.test. 60\nc.test. 10\n");
  EXPECT_TRUE(daemon_->running());
}

TEST_F(RehearsalIntegrationTest, BadShadowAndDrainLinesAreErrorsNeverACrash) {
  start();
  for (const char* args :
       {"shadow set", "shadow set x.test", "shadow set x.test soon", "shadow clear x.test",
        "shadow frobnicate", "drain", "drain x.test --old", "drain x.test --old 999.1.1.1",
        "drain x.test --flush-old", "drain x.test --old MX=1.2.3.4", "drain a..test"}) {
    const CommandResult r = ctl(socket_, args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.output;
    EXPECT_TRUE(r.output.starts_with("error: ")) << args << ": " << r.output;
  }
  EXPECT_TRUE(daemon_->running());
  EXPECT_EQ(ctl(socket_, "shadow list").exit_code, 0);
}

TEST_F(RehearsalIntegrationTest, DrainShowsChainsOldAndNewAndFlushOldRemovesExactlyTheOld) {
  // Before the change: lb.drain.test was 192.0.2.1, reached through www and alias.
  upstream_.on("www.drain.test", FakeReply::records({
                                     FakeRecord::cname("www.drain.test", 3600, "lb.drain.test"),
                                     FakeRecord::a("lb.drain.test", 300, "192.0.2.1"),
                                 }));
  upstream_.on("alias.drain.test",
               FakeReply::records({
                   FakeRecord::cname("alias.drain.test", 7200, "www.drain.test"),
                   FakeRecord::cname("www.drain.test", 3600, "lb.drain.test"),
                   FakeRecord::a("lb.drain.test", 300, "192.0.2.1"),
               }));
  // A copy that goes stale in a second.
  upstream_.on("quick.drain.test", FakeReply::records({
                                       FakeRecord::cname("quick.drain.test", 1, "lb.drain.test"),
                                       FakeRecord::a("lb.drain.test", 1, "192.0.2.1"),
                                   }));
  // After the change: lb.drain.test itself answers with the new address.
  upstream_.on("lb.drain.test",
               FakeReply::records({FakeRecord::a("lb.drain.test", 60, "198.51.100.7")}));
  upstream_.on("other.drain.test",
               FakeReply::records({FakeRecord::a("other.drain.test", 300, "192.0.2.1")}));
  start();
  for (const char* n : {"www.drain.test", "alias.drain.test", "quick.drain.test", "lb.drain.test",
                        "other.drain.test"})
    ask(n);

  // Wait (bounded) until quick.drain.test's copy has expired: it is then served only stale.
  CommandResult d;
  EXPECT_TRUE(eventually([&] {
    d = ctl(socket_, "drain lb.drain.test --old 192.0.2.1");
    return d.contains("quick.drain.test. IN A NOERROR stale");
  })) << d.output;
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_TRUE(d.contains("; [old] quick.drain.test. IN A NOERROR stale, expired ")) << d.output;
  EXPECT_TRUE(d.contains("; [old] www.drain.test. IN A NOERROR fresh, expires in "));
  EXPECT_TRUE(d.contains("; [old] alias.drain.test. IN A NOERROR fresh, expires in "));
  EXPECT_TRUE(d.contains("; lb.drain.test. IN A NOERROR fresh, expires in "));
  EXPECT_TRUE(d.contains("\tIN\tA\t198.51.100.7\n"));
  EXPECT_TRUE(d.contains("\tIN\tA\t192.0.2.1\t; old\n"));
  EXPECT_FALSE(d.contains("other.drain.test"));
  EXPECT_TRUE(
      d.contains("; 4 entries lead to lb.drain.test.; 3 hold an old address (A "
                 "192.0.2.1)\n"));
  EXPECT_TRUE(d.contains("; last old copy served fresh until "));
  EXPECT_TRUE(d.contains("; worst case, served stale while the upstream fails (stale-max 86400s)"));

  const CommandResult f = ctl(socket_, "drain lb.drain.test --old A=192.0.2.1 --flush-old");
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_TRUE(f.contains("; flushed 3 entries holding an old address\n")) << f.output;

  const CommandResult dump = ctl(socket_, "dump");
  EXPECT_FALSE(dump.contains("; www.drain.test.")) << dump.output;
  EXPECT_FALSE(dump.contains("; alias.drain.test."));
  EXPECT_FALSE(dump.contains("; quick.drain.test."));
  EXPECT_TRUE(dump.contains("; lb.drain.test. IN A"));
  EXPECT_TRUE(dump.contains("; other.drain.test. IN A"));
  EXPECT_TRUE(dump.contains("; 2 entries\n"));

  // Asked again, www now follows the chain to the new address.
  upstream_.on("www.drain.test", FakeReply::records({
                                     FakeRecord::cname("www.drain.test", 3600, "lb.drain.test"),
                                     FakeRecord::a("lb.drain.test", 60, "198.51.100.7"),
                                 }));
  ask("www.drain.test");
  const CommandResult after = ctl(socket_, "drain lb.drain.test --old 192.0.2.1");
  EXPECT_TRUE(after.contains("; 2 entries lead to lb.drain.test.; 0 hold an old address"))
      << after.output;
  EXPECT_TRUE(after.contains("; no old copy in this cache\n"));
}

}  // namespace
}  // namespace hg::integration
