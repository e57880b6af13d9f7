// The process: SIGTERM/SIGINT exit 0 (answering what is in flight), SIGHUP re-reads the
// upstream file, a forwarding loop is refused at start with exit code 2 and a fix, --threads.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/ports.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::free_port;
using wire::RCode;
using Clock = std::chrono::steady_clock;

TEST(Lifecycle, SigtermExitsZero) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
  auto d = Daemon::start({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  ASSERT_TRUE(udp_query(d->port(), build_query({.name = "before-term.test"})));
  ASSERT_TRUE(d->signal(SIGTERM));
  EXPECT_EQ(d->wait_exit(Millis{5000}), 0) << d->output();
  EXPECT_TRUE(d->wait_for_output("stopped", Millis{1000})) << d->output();
}

TEST(Lifecycle, SigintExitsZero) {
  FakeUpstream upstream;
  auto d = Daemon::start({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  ASSERT_TRUE(d->signal(SIGINT));
  EXPECT_EQ(d->wait_exit(Millis{5000}), 0) << d->output();
}

TEST(Lifecycle, SigtermAnswersQueriesInFlightThenExitsZero) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::dropped());
  auto d = Daemon::start(
      {"--upstream", upstream.address(), "--upstream-timeout", "1000", "--client-timeout", "500"});
  ASSERT_TRUE(d->ready()) << d->output();
  UdpClient c;
  Bytes q = build_query({.name = "inflight.test"});
  ASSERT_TRUE(c.send(d->port(), q));
  // Wait (bounded) until the query reached the upstream, so it is in flight.
  for (int i = 0; i < 200 && upstream.queries("inflight.test") == 0; ++i)
    std::this_thread::sleep_for(Millis{5});
  ASSERT_EQ(upstream.queries("inflight.test"), 1u);
  const auto t0 = Clock::now();
  ASSERT_TRUE(d->signal(SIGTERM));
  auto got = c.receive(Millis{3000});
  ASSERT_TRUE(got) << "the in-flight client must be answered before exit\n" << d->output();
  auto a = parse_answer(*got);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::ServFail);
  EXPECT_EQ(d->wait_exit(Millis{5000}), 0) << d->output();
  EXPECT_LT(Clock::now() - t0, Millis{3000});
}

TEST(Lifecycle, ForwardingLoopViaUpstreamFlagIsRefused) {
  const uint16_t port = free_port();
  const std::string self = "127.0.0.1:" + std::to_string(port);
  auto d = Daemon::start({"--listen", self, "--upstream", self});
  EXPECT_FALSE(d->ready());
  EXPECT_EQ(d->wait_exit(Millis{5000}), 2) << d->output();
  EXPECT_NE(d->output().find("--upstream-file"), std::string::npos)
      << "the message must say how to fix it\n"
      << d->output();
}

TEST(Lifecycle, ForwardingLoopViaUpstreamFileIsRefused) {
  const uint16_t port = free_port();
  const std::string self = "127.0.0.1:" + std::to_string(port);
  TempFile conf("# resolv.conf pointing at ourselves\nnameserver " + self + "\n");
  auto d = Daemon::start({"--listen", self, "--upstream-file", conf.path()});
  EXPECT_FALSE(d->ready());
  EXPECT_EQ(d->wait_exit(Millis{5000}), 2) << d->output();
  const std::string out = d->output();
  EXPECT_NE(out.find("--upstream-file"), std::string::npos) << out;
  EXPECT_NE(out.find(conf.path()), std::string::npos) << "name the file that loops\n" << out;
}

TEST(Lifecycle, SighupReloadsUpstreamFile) {
  FakeUpstream first, second;
  first.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
  second.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.2")}));
  TempFile conf("nameserver " + first.address() + "\n");
  auto d = Daemon::start({"--upstream-file", conf.path()});
  ASSERT_TRUE(d->ready()) << d->output();
  auto a = udp_query(d->port(), build_query({.name = "one.reload.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(first.queries("one.reload.test"), 1u);

  conf.rewrite("options timeout:1\nnameserver " + second.address() + "\n");
  ASSERT_TRUE(d->signal(SIGHUP));
  ASSERT_TRUE(d->wait_for_output("SIGHUP: upstreams now", Millis{3000})) << d->output();
  EXPECT_NE(d->output().find(second.address()), std::string::npos) << d->output();
  // The reload is posted to each worker's loop; a query read in the same loop iteration may
  // still go to the old upstream, so probe (bounded) until one reaches the new one.
  bool switched = false;
  for (int i = 0; i < 50 && !switched; ++i) {
    const std::string probe = "probe" + std::to_string(i) + ".reload.test";
    ASSERT_TRUE(udp_query(d->port(), build_query({.name = probe})));
    switched = second.queries(probe) == 1;
  }
  ASSERT_TRUE(switched) << "no query reached the new upstream after SIGHUP\n" << d->output();
  const std::size_t first_total = first.total_queries();
  auto b = udp_query(d->port(), build_query({.name = "two.reload.test"}));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->rcode(), RCode::NoError) << b->text();
  EXPECT_EQ(second.queries("two.reload.test"), 1u);
  EXPECT_EQ(first.queries("two.reload.test"), 0u);
  EXPECT_EQ(first.total_queries(), first_total) << "the old upstream gets nothing new";
  EXPECT_TRUE(d->running()) << "SIGHUP must not stop the daemon";
}

TEST(Lifecycle, SighupWithBrokenFileKeepsCurrentUpstreams) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
  TempFile conf("nameserver " + upstream.address() + "\n");
  auto d = Daemon::start({"--upstream-file", conf.path()});
  ASSERT_TRUE(d->ready()) << d->output();
  conf.rewrite("# nothing here\n");
  ASSERT_TRUE(d->signal(SIGHUP));
  // The file watch may say the same on its own (the file changed): count SIGHUP's answers.
  const std::string kept = "SIGHUP: keeping the current upstreams";
  ASSERT_TRUE(d->wait_for_output(kept, Millis{3000})) << d->output();
  // A loop in the new file is refused too.
  conf.rewrite("nameserver " + d->listen_addresses()[0] + "\n");
  ASSERT_TRUE(d->signal(SIGHUP));
  for (int i = 0; i < 300 && d->lines_with(kept).size() < 2; ++i)
    std::this_thread::sleep_for(Millis{10});
  EXPECT_EQ(d->lines_with(kept).size(), 2u) << d->output();
  auto a = udp_query(d->port(), build_query({.name = "still.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NoError);
  EXPECT_EQ(upstream.queries("still.test"), 1u);
}

TEST(Lifecycle, LogQueriesWritesOneLinePerQuery) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
  auto d = Daemon::start({"--upstream", upstream.address(), "--log-queries"});
  ASSERT_TRUE(d->ready()) << d->output();
  ASSERT_TRUE(udp_query(d->port(), build_query({.name = "logged.test"})));
  ASSERT_TRUE(udp_query(d->port(), build_query({.name = "logged.test"})));
  ASSERT_TRUE(d->wait_for_output("query logged.test. A NOERROR hit", Millis{2000})) << d->output();
  EXPECT_EQ(d->lines_with("query logged.test. A NOERROR miss").size(), 1u) << d->output();
}

// wait_exit() returns once everything the daemon wrote has been read, not merely once the
// process is gone: tests read the last lines (the shutdown summary) right after it. Under a
// loaded CI the reader thread once lagged and Dnstap.StalledReaderDropsMessagesNotAnswers
// missed its "dropped" line. --help writes ~3.6 KB and exits at once; its last option is
// --check-config. The race is timing-dependent, so it is run several times.
TEST(Lifecycle, WaitExitReturnsWithTheLastLineRead) {
  for (int i = 0; i < 20; ++i) {
    auto d = Daemon::start_with({"--help"}, StartOptions{.add_listen = false, .wait_ready = false});
    ASSERT_EQ(d->wait_exit(Millis{5000}), 0) << d->output();
    ASSERT_NE(d->output().find("--check-config"), std::string::npos)
        << "run " << i << ": " << d->output();
  }
}

// The UDP sockets set SO_REUSEPORT (the workers and the reply socket share the port), yet a
// second hourglassd on a port the first one holds is still refused, whatever its threads.
TEST(Lifecycle, ASecondDaemonOnTheSamePortIsRefused) {
  FakeUpstream upstream;
  auto first = Daemon::start({"--upstream", upstream.address(), "--threads", "2"});
  ASSERT_TRUE(first->ready()) << first->output();
  const std::string held = first->listen_addresses()[0];
  for (const char* threads : {"1", "2"}) {
    auto second = Daemon::start_with(
        {"--listen", held, "--upstream", upstream.address(), "--threads", threads},
        StartOptions{.wait_ready = false});
    EXPECT_EQ(second->wait_exit(Millis{5000}), 1) << second->output();
    EXPECT_NE(second->output().find("Address already in use"), std::string::npos)
        << second->output();
  }
  // The first still answers every query (none went to the refused daemon's sockets).
  for (int i = 0; i < 20; ++i)
    EXPECT_TRUE(udp_query(first->port(), build_query({.name = "still-mine.test"})));
}

TEST(Lifecycle, BadFlagValueExitsTwoNamingTheFlag) {
  auto d = Daemon::start({"--threads", "zero"});
  EXPECT_EQ(d->wait_exit(Millis{5000}), 2);
  EXPECT_NE(d->output().find("--threads"), std::string::npos) << d->output();
}

}  // namespace
}  // namespace hg::integration
