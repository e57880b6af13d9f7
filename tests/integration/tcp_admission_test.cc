// Connection admission against the real hourglassd (resolver/net/conn_admission.h): one host that
// opens thousands of idle TCP connections, allowed or not, cannot keep an ordinary client
// (real dig and queries from code) from its answers; the metrics endpoint answers only its
// allow list, and 16 idle connections do not block a scrape; and the daemon survives running
// out of descriptors without spinning. Every wait is polled with a bound.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/ports.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using Clock = std::chrono::steady_clock;
using test::eventually;
constexpr Millis kWait{15000};  // bound of the waits for 2000 connections to be counted

/// This process needs a few thousand descriptors for the attacker's connections.
bool raise_own_fd_limit(rlim_t want) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return false;
  if (r.rlim_cur >= want) return true;
  if (r.rlim_max < want) return false;
  r.rlim_cur = want;
  return ::setrlimit(RLIMIT_NOFILE, &r) == 0;
}

/// Connections opened and then left idle, all from one address; closed at the end.
class Attacker {
 public:
  explicit Attacker(const char* from) : from_(from) {}
  ~Attacker() {
    for (const int fd : fds_)
      ::close(fd);
  }
  Attacker(const Attacker&) = delete;
  Attacker& operator=(const Attacker&) = delete;
  /// Opens `n` more; returns how many connected (a connection the daemon reset before connect()
  /// returned counts: it was made).
  int open(int n, uint16_t port) {
    int ok = 0;
    for (int i = 0; i < n; ++i) {
      const int fd =
          test::connect_tcp(test::ipv4_address("127.0.0.1", port), from_, 0, Millis{3000});
      if (fd < 0 && errno == ECONNRESET) {
        // The handshake completed and the daemon reset the connection (refused at accept)
        // before connect() returned: a connection made, and refused.
        ++ok;
        continue;
      }
      if (fd < 0) {
        failures_ += std::string(failures_.empty() ? "" : ", ") + std::strerror(errno);
        continue;
      }
      fds_.push_back(fd);
      ++ok;
    }
    return ok;
  }
  std::size_t size() const noexcept { return fds_.size(); }
  /// Why connects failed, for messages.
  const std::string& failures() const noexcept { return failures_; }

 private:
  const char* from_;
  std::vector<int> fds_;
  std::string failures_;
};

class TcpAdmission : public ::testing::Test {
 protected:
  TcpAdmission() {
    socket_ = dir_.file("control");
    upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.53")}));
  }
  ~TcpAdmission() override { daemon_.reset(); }

  void start(std::vector<std::string> extra) {
    // 2,000 attacker connections and 1,000 more opened during the queries, kept open.
    ASSERT_TRUE(raise_own_fd_limit(4096))
        << "the test needs RLIMIT_NOFILE 4096: raise the hard limit (ulimit -Hn)";
    std::vector<std::string> args = {"--upstream", upstream_.address(), "--control", socket_};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = Daemon::start(args);
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
    const auto lines = daemon_->lines_with("metrics on 127.0.0.1:");
    if (!lines.empty())
      metrics_port_ =
          static_cast<uint16_t>(std::stoi(lines[0].substr(lines[0].find("127.0.0.1:") + 10)));
  }
  std::string stats() { return ctl(socket_, "stats").output; }
  int64_t stat(const std::string& key) { return stat_in(stats(), key); }

  /// 10 ordinary TCP queries with the real dig and 10 from code, all from 127.0.0.1; before
  /// each, `between` runs (the attacker opening more). Every one must be answered.
  void ten_and_ten_answered(const std::function<void()>& between) {
    for (int i = 0; i < 10; ++i) {
      between();
      const std::string name = "dig" + std::to_string(i) + "." + random_label() + ".test";
      const DigResult r = dig(daemon_->port(), "+tcp " + name + " A");
      EXPECT_EQ(r.status(), "NOERROR") << "dig #" << i << ":\n" << r.output;
      EXPECT_TRUE(r.contains("192.0.2.53")) << r.output;
    }
    for (int i = 0; i < 10; ++i) {
      between();
      const auto a =
          tcp_query(daemon_->port(),
                    build_query({.name = "code" + std::to_string(i) + ".tcp.test"}), Millis{4000});
      ASSERT_TRUE(a.has_value()) << "TCP query #" << i << " from code got no answer";
      EXPECT_EQ(a->rcode(), wire::RCode::NoError) << a->text();
    }
  }

  FakeUpstream upstream_;
  test::TempDir dir_{"hg-tcpadmit"};
  std::string socket_;
  std::unique_ptr<Daemon> daemon_;
  uint16_t metrics_port_ = 0;
};

TEST_F(TcpAdmission, TwoThousandIdleConnectionsFromAnAllowedAddressCannotLockOutTcp) {
  start({});
  Attacker attacker("127.0.0.1");  // the same address as the ordinary client
  ASSERT_EQ(attacker.open(2000, daemon_->port()), 2000);
  // The daemon keeps that address's 64 (--tcp-max-per-source) most recent; each one beyond
  // closed the address's oldest idle connection.
  ASSERT_TRUE(eventually(
      [&] {
        const std::string s = stats();
        return stat_in(s, "tcp.connections") + stat_in(s, "tcp.evicted_idle") == 2000;
      },
      kWait))
      << stats();
  const std::string held = stats();
  EXPECT_EQ(stat_in(held, "tcp.connections"), 64) << held;
  EXPECT_EQ(stat_in(held, "tcp.evicted_idle"), 2000 - 64) << held;
  EXPECT_EQ(stat_in(held, "tcp.per_source_limit"), 2000 - 64) << held;
  EXPECT_EQ(stat_in(held, "tcp.refused_no_room"), 0) << held;
  // Meanwhile, and with the attacker opening 50 more before each query: 10 of 10 and 10 of 10.
  ten_and_ten_answered([&] { attacker.open(50, daemon_->port()); });
  EXPECT_EQ(attacker.size(), 2000u + 20 * 50);
  EXPECT_EQ(stat("tcp.refused_no_room"), 0);
}

TEST_F(TcpAdmission, TwoThousandConnectionsFromADisallowedAddressAreResetAtAccept) {
  start({"--allow", "127.0.0.1/32"});
  Attacker attacker("127.0.0.2");
  ASSERT_EQ(attacker.open(2000, daemon_->port()), 2000) << attacker.failures();
  ASSERT_TRUE(eventually([&] { return stat("tcp.refused_not_allowed") == 2000; }, kWait))
      << stats();
  EXPECT_EQ(stat("tcp.connections"), 0) << "a refused connection holds no slot";
  ten_and_ten_answered([&] { attacker.open(50, daemon_->port()); });
  EXPECT_EQ(stat("tcp.refused_not_allowed"), 2000 + 20 * 50);
  // The disallowed address: no TCP answer at all (reset at accept), REFUSED over UDP as before.
  const DigResult tcp = dig(daemon_->port(), "-b 127.0.0.2 +tcp www.refused.test A");
  EXPECT_EQ(tcp.status(), "") << tcp.output;
  const DigResult udp = dig(daemon_->port(), "-b 127.0.0.2 www.refused.test A");
  EXPECT_EQ(udp.status(), "REFUSED") << udp.output;
}

TEST_F(TcpAdmission, MetricsAreServedOnlyToTheAllowList) {
  start({"--allow", "127.0.0.1/32", "--metrics", "127.0.0.1:0"});
  ASSERT_NE(metrics_port_, 0);
  const std::string denied = http_get(metrics_port_, "/metrics", "127.0.0.2");
  EXPECT_EQ(denied, "") << "a disallowed address got: " << denied.substr(0, 200);
  const std::string ok = http_get(metrics_port_, "/metrics", "127.0.0.1");
  EXPECT_TRUE(ok.starts_with("HTTP/1.1 200 OK\r\n")) << ok.substr(0, 200);
  EXPECT_EQ(metric_sample(ok,
                          "hourglass_connections_refused_total{listener=\"metrics\","
                          "reason=\"not-allowed\"}"),
            1)
      << ok;
  EXPECT_EQ(stat("metrics.refused_not_allowed"), 1);
}

TEST_F(TcpAdmission, MetricsAllowReplacesTheAllowListForMetrics) {
  start({"--metrics", "127.0.0.1:0", "--metrics-allow", "127.0.0.2/32"});
  ASSERT_NE(metrics_port_, 0);
  EXPECT_EQ(http_get(metrics_port_, "/metrics", "127.0.0.1"), "") << "127.0.0.1 is in --allow only";
  EXPECT_TRUE(http_get(metrics_port_, "/metrics", "127.0.0.2").starts_with("HTTP/1.1 200 OK\r\n"));
  // DNS itself still follows --allow (the default, loopback).
  EXPECT_EQ(dig(daemon_->port(), "+tcp www.still.test A").status(), "NOERROR");
}

TEST_F(TcpAdmission, SixteenIdleMetricsConnectionsDoNotBlockAScrape) {
  start({"--metrics", "127.0.0.1:0"});
  ASSERT_NE(metrics_port_, 0);
  // The daemon accepts in arrival order, so when it accepts the scrape, every attacker
  // connection opened before it has been accepted (or made room for another): no waiting.
  // Idle connections also end at the metrics request timeout (3 s); a round in which more
  // than 2 s passed could have been helped by that instead of eviction, so its counts are
  // not checked (the scrape must succeed either way).
  int conclusive = 0;
  double evicted_before = 0;
  std::vector<std::unique_ptr<Attacker>> attackers;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    // Two sources: 127.0.0.1 (the scraper's own address) and 127.0.0.3, 16 each, so that
    // both the per-source share (8) and the table (16) are full.
    attackers.push_back(std::make_unique<Attacker>("127.0.0.1"));
    attackers.push_back(std::make_unique<Attacker>("127.0.0.3"));
    ASSERT_EQ(attackers[attackers.size() - 2]->open(16, metrics_port_), 16);
    ASSERT_EQ(attackers.back()->open(16, metrics_port_), 16);
    const std::string r = http_get(metrics_port_, "/metrics", "127.0.0.1");
    const bool quick = Clock::now() - t0 < std::chrono::seconds(2);
    ASSERT_TRUE(r.starts_with("HTTP/1.1 200 OK\r\n")) << "scrape " << round << ": " << r;
    const double evicted =
        metric_sample(r, "hourglass_connections_evicted_total{listener=\"metrics\"}");
    const double open = metric_sample(r, "hourglass_connections{listener=\"metrics\"}");
    if (quick) {
      ++conclusive;
      // The table held 16 (8 per source) when the scrape came: it took a slot of its own
      // source's, and is counted among the 16 open while rendering.
      EXPECT_EQ(open, 16) << r;
      EXPECT_GE(evicted - evicted_before, 16 + 1) << r;
    }
    evicted_before = evicted;
  }
  EXPECT_GE(conclusive, 1) << "every round took over 2 s: the machine is too loaded to tell";
}

// --- running out of descriptors -------------------------------------------------------------

/// The soft "Max open files" of `pid`, from /proc/PID/limits; 0 if unreadable.
uint64_t soft_fd_limit(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("Max open files")) continue;
    std::istringstream fields(line.substr(14));
    uint64_t soft = 0;
    fields >> soft;
    return soft;
  }
  return 0;
}

TEST_F(TcpAdmission, TheDaemonRaisesASmallDescriptorLimitToWhatItsTablesNeed) {
  rlimit mine{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &mine), 0);
  if (mine.rlim_max < 2048) GTEST_SKIP() << "the hard limit is too low to show the raise";
  rlimit low = mine;
  low.rlim_cur = 256;  // inherited by the daemon
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  daemon_ = Daemon::start({"--upstream", upstream_.address(), "--threads", "4"});
  ::setrlimit(RLIMIT_NOFILE, &mine);
  ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  // Four workers' TCP tables alone are 4 x 256 connections.
  EXPECT_GE(soft_fd_limit(daemon_->pid()), 4u * 256) << daemon_->output();
  EXPECT_TRUE(daemon_->lines_with("descriptor limit").empty()) << daemon_->output();
}

/// The daemon's open descriptor numbers, from /proc/PID/fd.
std::set<int> open_fds(pid_t pid) {
  std::set<int> fds;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (!n.empty() && std::isdigit(static_cast<unsigned char>(n[0]))) fds.insert(std::stoi(n));
  }
  return fds;
}

/// Sets the daemon's soft descriptor limit so that exactly `free` more can be opened.
bool leave_free_fds(pid_t pid, int free) {
  const std::set<int> used = open_fds(pid);
  int limit = 0;
  for (int left = free; left > 0 || used.contains(limit); ++limit) {
    if (!used.contains(limit)) --left;
  }
  rlimit r{};
  if (::prlimit(pid, RLIMIT_NOFILE, nullptr, &r) != 0) return false;
  r.rlim_cur = static_cast<rlim_t>(limit);
  return ::prlimit(pid, RLIMIT_NOFILE, &r, nullptr) == 0;
}

/// User plus system CPU time of `pid`, in clock ticks (/proc/PID/stat fields 14 and 15).
long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close_paren = s.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(s.substr(close_paren + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

TEST_F(TcpAdmission, OutOfDescriptorsTheDaemonNeitherSpinsNorCrashesAndTcpStillAnswers) {
  start({});
  const pid_t pid = daemon_->pid();
  rlimit saved{};
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, nullptr, &saved), 0);
  // Cached first: the answers under the lowered limit need no upstream socket.
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(
        udp_query(daemon_->port(), build_query({.name = "fd" + std::to_string(i) + ".test"})));
  ASSERT_TRUE(leave_free_fds(pid, 0));
  // Connections the daemon cannot accept: one DNS over TCP, one to the control socket (whose
  // accept used to fail and be retried on every loop iteration).
  Attacker pending("127.0.0.1");
  ASSERT_EQ(pending.open(1, daemon_->port()), 1);
  const int ctl_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::snprintf(un.sun_path, sizeof un.sun_path, "%s", socket_.c_str());
  ASSERT_EQ(::connect(ctl_fd, reinterpret_cast<sockaddr*>(&un), sizeof un), 0);
  // A spinning loop burns a CPU for as long as the connections wait. This window measures;
  // nothing waits on it. A correct daemon uses next to nothing here (a retry per 100 ms); the
  // check can only fail if the loop spins.
  const long before = cpu_ticks(pid);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(Millis{1000});
  const long used = cpu_ticks(pid) - before;
  const double wall_ticks = std::chrono::duration<double>(Clock::now() - t0).count() *
                            static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_LT(static_cast<double>(used), 0.3 * wall_ticks) << "CPU ticks used: " << used;
  ASSERT_TRUE(daemon_->running()) << daemon_->output();

  // Three descriptors free: 40 idle connections from one address take them, and then each
  // new one closes the oldest idle to take its descriptor. Ordinary clients get through.
  ASSERT_TRUE(leave_free_fds(pid, 3));
  Attacker attacker("127.0.0.1");
  ASSERT_EQ(attacker.open(40, daemon_->port()), 40);
  // With three descriptors for 40 connections a client can lose its connection to the next
  // one that needs room (CI once saw a dig and the query after it reset at once; not
  // reproduced in 200 runs here). A client retries: one round of the ten may need retries,
  // each within 5 s, and the counters of the first failure are printed.
  int rounds_retried = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string name = "fd" + std::to_string(i) + ".test";
    bool retried = false;
    auto note = [&](const std::string& what) {
      if (!retried) std::cerr << what << "\nstats:\n" << stats();
      retried = true;
    };
    DigResult r = dig(daemon_->port(), "+tcp " + name + " A");
    if (r.status() != "NOERROR") {
      note("dig #" + std::to_string(i) + " is retried:\n" + r.output);
      EXPECT_TRUE(eventually(
          [&] {
            r = dig(daemon_->port(), "+tcp " + name + " A");
            return r.status() == "NOERROR";
          },
          Millis{5000}))
          << "dig #" << i << ", retried for 5 s:\n"
          << r.output;
    }
    auto a = tcp_query(daemon_->port(), build_query({.name = name}), Millis{4000});
    if (!a) {
      note("TCP query #" + std::to_string(i) + " is retried");
      EXPECT_TRUE(eventually(
          [&] {
            a = tcp_query(daemon_->port(), build_query({.name = name}), Millis{4000});
            return a.has_value();
          },
          Millis{5000}))
          << "TCP query #" << i << ", retried for 5 s";
    }
    if (a) {
      EXPECT_EQ(a->rcode(), wire::RCode::NoError);
    }
    rounds_retried += retried ? 1 : 0;
  }
  EXPECT_LE(rounds_retried, 1) << "clients needed retries in this many rounds of ten";
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &saved, nullptr), 0);
  ::close(ctl_fd);
  const std::string s = stats();
  EXPECT_GT(stat_in(s, "tcp.fd_limit"), 0) << s;
  EXPECT_GT(stat_in(s, "tcp.evicted_idle"), 0) << s;
  ASSERT_TRUE(daemon_->running()) << daemon_->output();
}

}  // namespace
}  // namespace hg::integration
