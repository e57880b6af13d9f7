// Operations from outside: hourglassd started with --control and --metrics 127.0.0.1:0,
// driven by the real hourglass-ctl binary and scraped over a plain TCP socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;

class ControlIntegrationTest : public ::testing::Test {
 protected:
  ControlIntegrationTest() { socket_ = dir_.file("control"); }

  void start() {
    daemon_ = Daemon::start(
        {"--upstream", upstream_.address(), "--control", socket_, "--metrics", "127.0.0.1:0"});
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
    const auto lines = daemon_->lines_with("metrics on 127.0.0.1:");
    ASSERT_EQ(lines.size(), 1u) << daemon_->output();
    const auto at = lines[0].find("127.0.0.1:") + 10;
    metrics_port_ = static_cast<uint16_t>(std::stoi(lines[0].substr(at)));
    ASSERT_NE(metrics_port_, 0);
    ASSERT_EQ(daemon_->lines_with("control socket on " + socket_).size(), 1u) << daemon_->output();
  }

  FakeUpstream upstream_;
  test::TempDir dir_{"hg-ctl-integ"};
  std::string socket_;
  std::unique_ptr<Daemon> daemon_;
  uint16_t metrics_port_ = 0;
};

TEST_F(ControlIntegrationTest, CtlShowsStatsDumpsAndFlushesTheRunningDaemonsCache) {
  upstream_.on("www.ops.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")}));
  start();
  auto a = udp_query(daemon_->port(), build_query({.name = "www.ops.test"}));
  ASSERT_TRUE(a);

  const CommandResult stats = ctl(socket_, "stats");
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_TRUE(stats.contains("cache.entries 1\n")) << stats.output;
  EXPECT_TRUE(stats.contains("server.misses 1\n")) << stats.output;
  EXPECT_TRUE(stats.contains("inflight.queries 0\n")) << stats.output;

  const CommandResult dump = ctl(socket_, "dump");
  EXPECT_EQ(dump.exit_code, 0) << dump.output;
  EXPECT_TRUE(dump.contains("; www.ops.test. IN A NOERROR fresh, expires in ")) << dump.output;
  EXPECT_TRUE(dump.contains("\tIN\tA\t192.0.2.7\n")) << dump.output;
  EXPECT_TRUE(dump.contains("; 1 entry\n")) << dump.output;

  const CommandResult flush = ctl(socket_, "flush www.ops.test");
  EXPECT_EQ(flush.exit_code, 0) << flush.output;
  EXPECT_EQ(flush.output, "flushed 1\n");
  EXPECT_TRUE(ctl(socket_, "stats").contains("cache.entries 0\n"));

  // Flushed: the next query goes upstream again.
  ASSERT_TRUE(udp_query(daemon_->port(), build_query({.name = "www.ops.test"})));
  EXPECT_EQ(upstream_.queries("www.ops.test"), 2u);
}

TEST_F(ControlIntegrationTest, CtlTtlCapShortensWhatTheDaemonAnswers) {
  upstream_.on("a.shop.test", FakeReply::records({FakeRecord::a("", 3600, "192.0.2.8")}));
  start();
  ASSERT_TRUE(udp_query(daemon_->port(), build_query({.name = "a.shop.test"})));
  const CommandResult cap = ctl(socket_, "ttl-cap shop.test 60");
  EXPECT_EQ(cap.exit_code, 0) << cap.output;
  auto hit = udp_query(daemon_->port(), build_query({.name = "a.shop.test"}));
  ASSERT_TRUE(hit);
  ASSERT_EQ(hit->ttls().size(), 1u);
  EXPECT_LE(hit->ttls()[0], 60u);
  EXPECT_EQ(ctl(socket_, "ttl-caps").output, "shop.test. 60\n");
}

TEST_F(ControlIntegrationTest, CtlExitsOneOnAnErrorReply) {
  start();
  const CommandResult r = ctl(socket_, "frobnicate");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "error: unknown command 'frobnicate'; try 'help'\n");
}

TEST_F(ControlIntegrationTest, MetricsEndpointServesCountersOfTheRunningDaemon) {
  upstream_.on("m.ops.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")}));
  start();
  ASSERT_TRUE(udp_query(daemon_->port(), build_query({.name = "m.ops.test"})));
  ASSERT_TRUE(udp_query(daemon_->port(), build_query({.name = "m.ops.test"})));
  const std::string r = http_get(metrics_port_, "/metrics");
  ASSERT_TRUE(r.starts_with("HTTP/1.1 200 OK\r\n")) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("# TYPE hourglass_queries_total counter\n"), std::string::npos) << r;
  // The harness's readiness probes are UDP queries too, hence >=.
  EXPECT_GE(metric_sample(r, "hourglass_queries_total{transport=\"udp\"}"), 2) << r;
  EXPECT_EQ(metric_sample(r, "hourglass_cache_hits_total"), 1) << r;
  EXPECT_EQ(metric_sample(r, "hourglass_cache_misses_total"), 1) << r;
  EXPECT_EQ(metric_sample(r, "hourglass_upstream_queries_total"), 1) << r;
  EXPECT_EQ(metric_sample(r, "hourglass_cache_entries"), 1) << r;
  EXPECT_EQ(metric_sample(r, "hourglass_inflight"), 0) << r;
  EXPECT_TRUE(http_get(metrics_port_, "/").starts_with("HTTP/1.1 404 Not Found\r\n"));
}

TEST_F(ControlIntegrationTest, SocketIsRemovedAtExitAndCtlThenExitsTwoNamingControl) {
  start();
  struct stat st = {};
  ASSERT_EQ(::lstat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  ASSERT_TRUE(daemon_->signal(SIGTERM));
  EXPECT_EQ(daemon_->wait_exit(Millis{10000}), 0) << daemon_->output();
  EXPECT_NE(::lstat(socket_.c_str(), &st), 0) << "the socket file must be gone";
  const CommandResult r = ctl(socket_, "stats");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(r.contains("--control")) << r.output;
}

TEST_F(ControlIntegrationTest, DaemonRefusesAControlPathThatIsNotASocket) {
  std::ofstream(socket_) << "not a socket\n";
  auto d = Daemon::start({"--upstream", upstream_.address(), "--control", socket_});
  EXPECT_FALSE(d->ready());
  EXPECT_EQ(d->wait_exit(Millis{10000}), 1) << d->output();
  EXPECT_NE(d->output().find("is not a socket"), std::string::npos) << d->output();
  EXPECT_TRUE(std::filesystem::is_regular_file(socket_));
}

}  // namespace
}  // namespace hg::integration
