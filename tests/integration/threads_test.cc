// --threads 2 seen from outside: two workers share one cache and one in-flight table while
// clients on both transports ask hot and new names at once and SIGHUP reloads the upstream
// list under them. Every query must be answered correctly. CI also runs this test against a
// ThreadSanitizer build of hourglassd (scripts/run-tests), where a data race ends the daemon
// and so fails the test.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using wire::RCode;

TEST(Threads, TwoWorkersAnswerHotAndNewNamesOverBothTransportsThroughReloads) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")}));
  auto d = Daemon::start({"--upstream", upstream.address(), "--threads", "2"});
  ASSERT_TRUE(d->ready()) << d->output();

  constexpr int kClients = 4;
  constexpr int kPerClient = 60;
  const std::string run = random_label(6);
  std::atomic<int> answered{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kPerClient; ++i) {
        // Every other query a hot name shared by all clients, the rest new names.
        const std::string name =
            i % 2 == 0 ? "hot" + std::to_string(i % 8) + "." + run + ".test"
                       : "n" + std::to_string(c) + "-" + std::to_string(i) + "." + run + ".test";
        const Bytes q = build_query({.name = name});
        auto a = (i % 5 == 0) ? tcp_query(d->port(), q) : udp_query(d->port(), q);
        if (!a) continue;
        ++answered;
        if (a->rcode() != RCode::NoError || a->msg.answer.size() != 1) ++wrong;
      }
    });
  }
  // Reloads while the clients run: each posts work to both workers' loops.
  for (int r = 0; r < 3; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(d->signal(SIGHUP));
  }
  for (auto& t : clients)
    t.join();
  EXPECT_EQ(answered.load(), kClients * kPerClient) << d->output();
  EXPECT_EQ(wrong.load(), 0);
  // Every name, hot or new, went upstream exactly once: a hot name's first miss is coalesced
  // across both workers and then cached; reloads must not lose or duplicate a query.
  for (int h = 0; h < 8; h += 2)
    EXPECT_EQ(upstream.queries("hot" + std::to_string(h) + "." + run + ".test"), 1u) << h;
  for (int c = 0; c < kClients; ++c)
    for (int i = 1; i < kPerClient; i += 2)
      EXPECT_EQ(
          upstream.queries("n" + std::to_string(c) + "-" + std::to_string(i) + "." + run + ".test"),
          1u);
  EXPECT_TRUE(d->signal(SIGTERM));
  EXPECT_EQ(d->wait_exit(Millis{10000}), 0) << d->output();
}

}  // namespace
}  // namespace hg::integration
