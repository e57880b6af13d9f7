// --threads 2 seen from outside: two workers share one cache and one in-flight table while
// clients on both transports ask hot and new names at once and SIGHUP reloads the upstream
// list under them; the same with the fleet (--redis: a Redis connection per worker, fleet
// messages applied to the shared cache, the control thread reading the fleet's counters) and
// with the dnstap writer (--dnstap: every worker hands frames to fstrm's I/O thread while a
// SIGHUP reopens the file). Every query must be answered correctly. CI also runs these tests
// against a ThreadSanitizer build of hourglassd (scripts/run-tests), where a data race ends
// the daemon (exit code 66, not 0) and so fails the test.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/integration/fleet_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/redis_server.h"
#include "tests/support/requires.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::RedisServer;
using wire::RCode;

// Bound of every wait below: generous, as the daemon may run under ThreadSanitizer (~10x slower).
constexpr Millis kWait{30'000};

// Clients on both transports, each asking every other query a name shared by all (hot) and
// the rest names of its own (new); counts the answers and the wrong ones.
struct ClientLoad {
  std::atomic<int> answered{0}, wrong{0};
  std::vector<std::thread> clients;

  void start(uint16_t port, const std::string& run, int n_clients, int per_client) {
    for (int c = 0; c < n_clients; ++c) {
      clients.emplace_back([this, port, run, c, per_client] {
        for (int i = 0; i < per_client; ++i) {
          const std::string name =
              i % 2 == 0 ? "hot" + std::to_string(i % 8) + "." + run + ".test"
                         : "n" + std::to_string(c) + "-" + std::to_string(i) + "." + run + ".test";
          const Bytes q = build_query({.name = name});
          auto a = (i % 5 == 0) ? tcp_query(port, q) : udp_query(port, q);
          if (!a) continue;
          ++answered;
          if (a->rcode() != RCode::NoError || a->msg.answer.size() != 1) ++wrong;
        }
      });
    }
  }
  void join() {
    for (auto& t : clients)
      t.join();
    clients.clear();
  }
};

/// The data frames of a Frame Streams file (a length of 0 escapes a control frame); -1 when
/// the file is cut short or does not end with STOP.
int count_data_frames(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  int frames = 0;
  std::size_t at = 0;
  while (at + 4 <= b.size()) {
    const uint32_t len = base::load_u32(&b[at]);
    at += 4;
    if (len == 0) {  // control frame: its length, then its type
      if (at + 8 > b.size()) return -1;
      const uint32_t clen = base::load_u32(&b[at]);
      const uint32_t type = base::load_u32(&b[at + 4]);
      if (clen < 4 || at + 4 + clen > b.size()) return -1;
      at += 4 + clen;
      if (type == 3) return at == b.size() ? frames : -1;  // STOP
      continue;
    }
    if (at + len > b.size()) return -1;
    at += len;
    ++frames;
  }
  return -1;
}

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

// The fleet under two workers: each worker's Redis connection stores and looks up values while
// the other does, a second instance's fleet flush is applied to the shared cache by worker 0
// under the clients' queries, and the control thread reads the fleet's counters meanwhile.
TEST(Threads, TwoWorkersShareTheFleetWhileFlushesArriveAndStatsAreRead) {
  if (!RedisServer::installed())
    HG_SKIP_UNLESS_CI("redis-server / redis-cli not installed (scripts/install-deps)");
  RedisServer redis;
  ASSERT_TRUE(redis.start()) << "redis-server did not start on port " << redis.port();
  FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")}));
  const std::string sock_a = "/tmp/hg-tfleet-" + random_label(12) + ".ctl";
  const std::string sock_b = "/tmp/hg-tfleet-" + random_label(12) + ".ctl";
  // A Redis deadline a loaded machine (and TSan) keeps: at the default 20 ms a late store is
  // dropped, and B would have nothing to answer from.
  auto a = Daemon::start({"--upstream", upstream.address(), "--redis", redis.address(), "--control",
                          sock_a, "--threads", "2", "--redis-timeout", "1000"});
  auto b = Daemon::start({"--upstream", upstream.address(), "--redis", redis.address(), "--control",
                          sock_b, "--redis-timeout", "1000"});
  ASSERT_TRUE(a->ready()) << a->output();
  ASSERT_TRUE(b->ready()) << b->output();
  ASSERT_TRUE(eventually([&] { return ctl_stat(sock_a, "fleet.connected_workers") >= 2; }, kWait))
      << ctl(sock_a, "stats").output;
  ASSERT_TRUE(eventually([&] { return ctl_stat(sock_b, "fleet.connected_workers") >= 1; }, kWait));

  constexpr int kClients = 4;
  constexpr int kPerClient = 40;
  const std::string run = random_label(6);
  ClientLoad load;
  load.start(a->port(), run, kClients, kPerClient);
  // Beside the clients: B flushes the fleet (A's worker 0 applies it to the shared cache) and
  // A's control thread reads the fleet counters the workers bump.
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(ctl(sock_b, "flush --fleet").output.find("fleet: sent"), std::string::npos);
    EXPECT_GE(ctl_stat(sock_a, "fleet.l2_misses"), 0);
  }
  load.join();
  EXPECT_EQ(load.answered.load(), kClients * kPerClient) << a->output();
  EXPECT_EQ(load.wrong.load(), 0);
  EXPECT_TRUE(eventually([&] { return ctl_stat(sock_a, "fleet.fleet_received") == 3; }, kWait))
      << ctl(sock_a, "stats").output;
  // After the flushes: what A stores in Redis answers B without a new upstream query.
  const std::string name = "after." + run + ".test";
  ASSERT_TRUE(udp_query(a->port(), build_query({.name = name})));
  const auto stored = [&] { return redis.cli({"EXISTS", "hg:c:" + name + ". 1 1 0"}) == "1"; };
  ASSERT_TRUE(eventually(stored, kWait));
  auto got = udp_query(b->port(), build_query({.name = name}));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->rcode(), RCode::NoError);
  EXPECT_EQ(upstream.queries(name), 1u) << "B answered from Redis";
  EXPECT_TRUE(a->signal(SIGTERM));
  EXPECT_TRUE(b->signal(SIGTERM));
  EXPECT_EQ(a->wait_exit(Millis{10000}), 0) << a->output();
  EXPECT_EQ(b->wait_exit(Millis{10000}), 0) << b->output();
}

// The dnstap writer under two workers: both hand frames to fstrm's I/O thread (one queue each)
// while SIGHUP reopens the file under them; both files hold whole frames, START to STOP.
TEST(Threads, TwoWorkersRecordDnstapWhileSighupReopensTheFile) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")}));
  const test::TempDir dir("hg-tdnstap");
  const std::string file = dir.file("threads.dnstap");
  const std::string rotated = dir.file("threads.dnstap.1");
  const std::string sock = dir.file("ctl");
  auto d = Daemon::start(
      {"--upstream", upstream.address(), "--threads", "2", "--dnstap", file, "--control", sock});
  ASSERT_TRUE(d->ready()) << d->output();

  constexpr int kClients = 4;
  constexpr int kPerClient = 40;
  ClientLoad load;
  load.start(d->port(), random_label(6), kClients, kPerClient);
  // Rotated as logrotate does: rename, then SIGHUP; the daemon opens a new file at the path.
  ASSERT_EQ(std::rename(file.c_str(), rotated.c_str()), 0);
  ASSERT_TRUE(d->signal(SIGHUP));
  load.join();
  EXPECT_EQ(load.answered.load(), kClients * kPerClient) << d->output();
  EXPECT_EQ(load.wrong.load(), 0);
  const int64_t dropped = ctl_stat(sock, "dnstap.dropped");
  EXPECT_GE(dropped, 0) << ctl(sock, "stats").output;
  EXPECT_TRUE(d->signal(SIGTERM));
  EXPECT_EQ(d->wait_exit(Millis{10000}), 0) << d->output();
  // Every answered query left a client query and a client response in one file or the other
  // (or was counted as dropped: a full queue drops frames, never answers).
  const int before = count_data_frames(rotated);
  const int after = count_data_frames(file);
  EXPECT_GE(before, 0) << "the rotated file is whole, START to STOP";
  EXPECT_GE(after, 0) << "the new file is whole, START to STOP";
  EXPECT_GE(before + after + dropped, 2 * kClients * kPerClient);
}

}  // namespace
}  // namespace hg::integration
