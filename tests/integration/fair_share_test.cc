// Fair shares of the in-flight table (docs/security.md, "Fair shares of the in-flight
// table"): the real hourglassd against a FakeUpstream, clients on distinct loopback addresses
// (each 127/8 address is its own source).
//
// The attack of issue 33 (item 6): random-subdomain ("water torture") queries from one client
// under a dead zone, at the ~13k q/s measured then, filled the 4096-entry in-flight table, and
// another client's new names got SERVFAIL meanwhile. Here the flooding client holds at most its
// share (512) and then the dead zone its cap (32); the other client's new names must be
// answered (>= 95 %) and cached names fast (p99 <= 10 ms) while the flood runs. Then the other
// side of each trade-off: an ordinary burst below the share is never refused, a zone that
// answers again is uncapped, and without --client-rate nothing is rate-limited.
//
// Every load loop is bounded in count and time; waits are bounded polls (test::eventually).
// The flood is paced (sleep_until the next 10 ms tick between bursts) only to hold its rate.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"
#include "wire/edns.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::TempDir;
using wire::RCode;
using Clock = std::chrono::steady_clock;

constexpr const char* kAttacker = "127.0.0.2";
constexpr const char* kVictim = "127.0.0.3";
constexpr const char* kProber = "127.0.0.4";

#if defined(__SANITIZE_ADDRESS__)
// The ASan build (-O0, every access checked) serves a fraction of the normal build's rate: it
// is flooded at what it can take, so the kernel's socket buffer does not decide what the other
// clients get, and its cached names get a looser bound. The normal build asserts the 13k q/s
// and 10 ms of the issue.
constexpr int kAttackRate = 3000;
constexpr double kCachedP99Ms = 50.0;
#else
constexpr int kAttackRate = 13000;  // queries per second, as measured in issue 33
constexpr double kCachedP99Ms = 10.0;
#endif
constexpr int kAttackMax = 60000;  // and at most this many
constexpr auto kAttackCap = std::chrono::seconds{5};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The random-subdomain flood from kAttacker: new names under dead.test (which the upstream
// never answers) at kAttackRate until `stop`, kAttackMax queries or kAttackCap. Answers are
// read and counted as they come, so the socket's buffer never decides what is measured.
struct Flood {
  std::atomic<bool> stop{false};
  std::atomic<bool> running{false};
  std::atomic<int> sent{0}, servfail{0}, answered{0};
  std::thread thread;

  void start(uint16_t port) {
    running = true;
    thread = std::thread([this, port] {
      UdpClient sock(kAttacker);
      const std::string salt = random_label(6);
      const auto t0 = Clock::now();
      auto tick = t0;
      int n = 0;
      while (!stop && n < kAttackMax && Clock::now() - t0 < kAttackCap) {
        for (int i = 0; i < kAttackRate / 100 && n < kAttackMax; ++i, ++n) {
          char label[32];
          std::snprintf(label, sizeof label, "%s%06d", salt.c_str(), n);
          sock.send(port, build_query({.name = std::string(label) + ".dead.test"}));
        }
        sent = n;
        tick += Millis{10};
        while (auto got = sock.receive(Millis{0})) {
          ++answered;
          if (got->size() > 3 && ((*got)[3] & 0x0f) == 2) ++servfail;
        }
        std::this_thread::sleep_until(tick);  // pacing, not waiting for an event
      }
      running = false;
    });
  }
  ~Flood() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
};

// One query from `from`, asked again (as a stub does) when no answer came in 700 ms; at most
// three tries.
std::optional<Answer> ask(uint16_t port, const std::string& name, const char* from) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (auto a = udp_query(port, build_query({.name = name}), Millis{700}, from)) return a;
  }
  return std::nullopt;
}

std::vector<std::string> daemon_args(const FakeUpstream& up, const TempDir& dir,
                                     std::vector<std::string> more = {}) {
  std::vector<std::string> args = {
      "--upstream",         up.address(), "--control",        dir.file("ctl.sock"),
      "--upstream-timeout", "1000",       "--client-timeout", "500"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(FairShare, WaterTortureFromOneClientLeavesOthersTheirNewNamesAndFastCachedNames) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::dropped());  // dead.test, and anything not scripted
  constexpr int kVictimNames = 120, kCached = 20, kProbes = 200;
  const std::string salt = random_label(6);
  std::vector<std::string> victim_names, cached_names;
  for (int i = 0; i < kVictimNames; ++i) {
    victim_names.push_back("v" + std::to_string(i) + salt + ".live.test");
    upstream.on(victim_names.back(), FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")}));
  }
  for (int i = 0; i < kCached; ++i) {
    cached_names.push_back("c" + std::to_string(i) + ".live.test");
    upstream.on(cached_names.back(), FakeReply::records({FakeRecord::a("", 3600, "192.0.2.8")}));
  }
  TempDir dir;
  const std::string socket = dir.file("ctl.sock");
  auto d = Daemon::start(daemon_args(upstream, dir));
  ASSERT_TRUE(d->ready()) << d->output();
  for (const std::string& n : cached_names) {
    auto a = ask(d->port(), n, kProber);
    ASSERT_TRUE(a && a->rcode() == RCode::NoError) << n;
  }

  Flood flood;
  flood.start(d->port());
  // The flood has taken its whole share before the victim asks.
  ASSERT_TRUE(eventually([&] { return ctl_stat(socket, "server.share_refused") > 0; },
                         std::chrono::seconds{4}))
      << d->output();

  int victim_ok = 0, probes_ok = 0;
  std::vector<double> probe_ms;
  for (int i = 0; i < kProbes; ++i) {
    if (i % 2 == 0 && i / 2 < kVictimNames) {
      const auto a = ask(d->port(), victim_names[static_cast<std::size_t>(i / 2)], kVictim);
      if (a && a->rcode() == RCode::NoError && a_records(*a).size() == 1) ++victim_ok;
    }
    const auto t = Clock::now();
    const auto a = udp_query(
        d->port(),
        build_query({.name = cached_names[static_cast<std::size_t>(i) % cached_names.size()]}),
        Millis{1000}, kProber);
    probe_ms.push_back(ms_since(t));  // a lost probe counts as its full second
    if (a && a->rcode() == RCode::NoError) ++probes_ok;
  }
  for (int i = kProbes / 2; i < kVictimNames; ++i) {  // the names left, if any
    const auto a = ask(d->port(), victim_names[static_cast<std::size_t>(i)], kVictim);
    if (a && a->rcode() == RCode::NoError && a_records(*a).size() == 1) ++victim_ok;
  }
  const bool flooding = flood.running;
  // The dead zone's first queries time out (1.2 s: --upstream-timeout and c-ares's lifetime)
  // while the flood goes on; from then on the zone is capped too.
  const bool zone_was_capped = eventually(
      [&] { return ctl_stat(socket, "server.zone_capped") > 0; }, std::chrono::seconds{4});
  const bool still_flooding = flood.running;
  const std::string stats = ctl(socket, "stats").output;
  flood.stop = true;
  flood.thread.join();
  EXPECT_TRUE(flooding) << "the flood ended before the measurement did";
  EXPECT_TRUE(zone_was_capped && still_flooding) << d->output();

  std::sort(probe_ms.begin(), probe_ms.end());
  const double p50 = probe_ms[probe_ms.size() / 2];
  const double p99 = probe_ms[(probe_ms.size() * 99 + 99) / 100 - 1];
  const int64_t share_refused = stat_in(stats, "server.share_refused");
  const int64_t zone_capped = stat_in(stats, "server.zone_capped");
  std::printf(
      "water torture: %d queries from %s (%d answered, %d SERVFAIL); victim %d/%d new names "
      "answered; cached probes %d/%d answered, p50 %.2f ms, p99 %.2f ms, worst %.2f ms; "
      "share_refused %lld, zone_capped %lld, overload %lld, inflight %lld; upstream saw %zu\n",
      flood.sent.load(), kAttacker, flood.answered.load(), flood.servfail.load(), victim_ok,
      kVictimNames, probes_ok, kProbes, p50, p99, probe_ms.back(),
      static_cast<long long>(share_refused), static_cast<long long>(zone_capped),
      static_cast<long long>(stat_in(stats, "server.overload")),
      static_cast<long long>(stat_in(stats, "inflight.queries")), upstream.total_queries());
  RecordProperty("victim_answered", victim_ok);
  RecordProperty("probe_p99_us", static_cast<int>(p99 * 1000));

  EXPECT_GE(victim_ok * 100, kVictimNames * 95) << "another client's new names are answered";
  EXPECT_EQ(probes_ok, kProbes);
  EXPECT_LE(p99, kCachedP99Ms) << "cached names stay fast";
  EXPECT_GT(share_refused, 0);
  EXPECT_GT(zone_capped, 0) << "dead.test kept timing out: capped once the share was not enough";
  EXPECT_EQ(stat_in(stats, "server.overload"), 0) << "the table itself never filled";
  EXPECT_LE(stat_in(stats, "inflight.queries"), 512 + kCached + 16);
  EXPECT_EQ(stat_in(stats, "server.rate_limited"), 0) << "--client-rate is off by default";
  // The counts drain with the flood's last entries.
  EXPECT_TRUE(eventually([&] { return ctl_stat(socket, "inflight.queries") == 0; }));
}

TEST(FairShare, AnOrdinaryBurstOfMissesBelowTheShareIsNeverRefused) {
  FakeUpstream upstream;
  // Every answer late, so the whole burst is in flight at once.
  FakeReply slow = FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")});
  slow.delay = Millis{300};
  upstream.set_default(slow);
  TempDir dir;
  auto d = Daemon::start(daemon_args(upstream, dir));
  ASSERT_TRUE(d->ready()) << d->output();
  // 400 new names from one socket within a few tens of ms: 50 at a time, each batch after the
  // daemon had 5 ms to read the last (a slow build's socket buffer must not drop any), all
  // sent before the first answer comes back.
  constexpr int kBurst = 400;
  const std::string salt = random_label(6);
  UdpClient sock;
  // Room for every answer at once: they are read as they come, but a slow build may deliver
  // all 400 while this thread is not scheduled.
  const int rcvbuf = 1 << 20;
  setsockopt(sock.fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  int sent = 0, answered = 0;
  for (int i = 0; i < kBurst; ++i) {
    const std::string n = "b" + std::to_string(i) + salt + ".burst.test";
    sent += sock.send(d->port(), build_query({.name = n, .id = static_cast<uint16_t>(i + 1)}));
    if (i % 50 == 49 && sock.receive(Millis{5})) ++answered;  // a burst's early answers
  }
  const auto t0 = Clock::now();
  while (answered < kBurst && Clock::now() - t0 < std::chrono::seconds{5}) {
    if (!sock.receive(Millis{1000})) break;
    ++answered;
  }
  std::printf("burst: %d sent, %d answered, the last %.0f ms after the last query\n", sent,
              answered, ms_since(t0));
  EXPECT_EQ(sent, kBurst);
  EXPECT_EQ(answered, kBurst);
  const std::string stats = ctl(dir.file("ctl.sock"), "stats").output;
  EXPECT_EQ(stat_in(stats, "server.misses"), kBurst);
  EXPECT_EQ(stat_in(stats, "server.servfail"), 0);
  EXPECT_EQ(stat_in(stats, "server.share_refused"), 0);
  EXPECT_EQ(stat_in(stats, "server.zone_capped"), 0);
  EXPECT_EQ(stat_in(stats, "server.rate_limited"), 0);
}

TEST(FairShare, AFailingZoneIsCappedAndUncappedOnceItAnswersAgain) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::dropped());
  TempDir dir;
  const std::string socket = dir.file("ctl.sock");
  auto d = Daemon::start(daemon_args(upstream, dir, {"--failing-zone-cap", "2"}));
  ASSERT_TRUE(d->ready()) << d->output();
  const std::string salt = random_label(6);
  int serial = 0;
  auto next = [&] { return "f" + std::to_string(serial++) + salt + ".flaky.test"; };
  // Eight timeouts in a row (the streak that makes a zone failing; resolver/query/inflight.h).
  std::vector<std::string> first;
  for (int i = 0; i < 8; ++i)
    first.push_back(next());
  ask_all(d->port(), first, first.size(), Millis{3000});
  ASSERT_TRUE(eventually([&] { return ctl_stat(socket, "server.upstream_failures") >= 8; }))
      << d->output();
  ASSERT_TRUE(eventually([&] { return ctl_stat(socket, "inflight.queries") == 0; }));

  // Failing: two in flight, and the next new names of the zone get SERVFAIL + EDE 22 at once.
  std::vector<std::string> capped;
  for (int i = 0; i < 6; ++i)
    capped.push_back(next());
  const auto got = ask_all(d->port(), capped, capped.size(), Millis{3000});
  int fast_fail = 0;
  for (const auto& [name, a] : got) {
    if (a.answer.rcode() == RCode::ServFail && a.answer.ede() == wire::ede::NoReachableAuthority &&
        a.ms < 400)
      ++fast_fail;
  }
  EXPECT_EQ(fast_fail, 4);
  EXPECT_EQ(ctl_stat(socket, "server.zone_capped"), 4);
  // Other zones are not capped.
  upstream.on("ok.other.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.10")}));
  auto other = udp_query(d->port(), build_query({.name = "ok.other.test"}));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->rcode(), RCode::NoError);

  // The zone answers again: the first of its names let through is answered, and then it is
  // uncapped (more than two in flight at once).
  upstream.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.11")}));
  ASSERT_TRUE(eventually(
      [&] {
        auto a = udp_query(d->port(), build_query({.name = next()}), Millis{1500});
        return a && a->rcode() == RCode::NoError;
      },
      std::chrono::seconds{10}, Millis{50}));
  FakeReply slow = FakeReply::records({FakeRecord::a("", 300, "192.0.2.12")});
  slow.delay = Millis{150};
  upstream.set_default(slow);
  const int64_t capped_before = ctl_stat(socket, "server.zone_capped");
  std::vector<std::string> after;
  for (int i = 0; i < 10; ++i)
    after.push_back(next());
  const auto again = ask_all(d->port(), after, after.size(), Millis{3000});
  int ok = 0;
  for (const auto& [name, a] : again)
    ok += a.answer.rcode() == RCode::NoError ? 1 : 0;
  EXPECT_EQ(ok, 10);
  EXPECT_EQ(ctl_stat(socket, "server.zone_capped"), capped_before);
}

// Sends `n` queries for `name` from `from`, `window` at a time (so no socket buffer
// overflows), and returns how many were answered; a window waits for its answers until 300 ms
// pass without one.
int answered_of(uint16_t port, const std::string& name, int n, const char* from) {
  constexpr int kWindow = 50;
  int ok = 0;
  UdpClient sock(from);
  for (int start = 0; start < n; start += kWindow) {
    int pending = 0;
    for (int i = start; i < n && i < start + kWindow; ++i)
      pending += sock.send(port, build_query({.name = name, .id = static_cast<uint16_t>(i + 1)}));
    while (pending > 0) {
      auto bytes = sock.receive(Millis{300});
      if (!bytes) break;
      if (auto a = parse_answer(*bytes); a && a->rcode() == RCode::NoError) {
        ++ok;
        --pending;
      }
    }
  }
  return ok;
}

TEST(FairShare, ClientRateIsOffByDefaultAndLimitsOneSourceWhenSet) {
  FakeUpstream upstream;
  upstream.on("rate.test", FakeReply::records({FakeRecord::a("", 3600, "192.0.2.13")}));
  {
    TempDir dir;
    auto d = Daemon::start(daemon_args(upstream, dir));
    ASSERT_TRUE(d->ready()) << d->output();
    EXPECT_EQ(answered_of(d->port(), "rate.test", 2000, kAttacker), 2000);
    EXPECT_EQ(ctl_stat(dir.file("ctl.sock"), "server.rate_limited"), 0);
  }
  TempDir dir;
  const std::string socket = dir.file("ctl.sock");
  auto d = Daemon::start(daemon_args(upstream, dir, {"--client-rate", "50"}));
  ASSERT_TRUE(d->ready()) << d->output();
  // A burst of one second's worth passes, then about 50 a second: 400 queries sent within a
  // few seconds cannot all be answered. (Readiness probes came from 127.0.0.1, another source.)
  const auto t0 = Clock::now();
  const int ok = answered_of(d->port(), "rate.test", 400, kAttacker);
  const double secs = ms_since(t0) / 1000;
  EXPECT_GE(ok, 50);
  EXPECT_LE(ok, 50 + static_cast<int>(50 * secs) + 5) << secs << " s";
  EXPECT_GT(ctl_stat(socket, "server.rate_limited"), 0);
  // Another source has its own budget, and over TCP the refusal is a REFUSED answer.
  auto other = udp_query(d->port(), build_query({.name = "rate.test"}), Millis{1000}, kVictim);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->rcode(), RCode::NoError);
  int refused = 0;
  for (int i = 0; i < 200 && refused == 0; ++i) {
    auto a = tcp_query(d->port(), build_query({.name = "rate.test"}), Millis{1000});
    if (a && a->rcode() == RCode::Refused) ++refused;
  }
  EXPECT_EQ(refused, 1) << "TCP from 127.0.0.1 beyond 50/s gets REFUSED";
}

}  // namespace
}  // namespace hg::integration
