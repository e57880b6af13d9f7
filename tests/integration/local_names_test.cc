// The machine's resolver (docs/local-names.md) against the real hourglassd: special-use names
// answered here and never sent upstream (dig, kdig, and glibc's getaddrinfo through `getent
// ahosts` in a private network namespace), forward zones reaching only their own servers,
// a hosts file and the upstream file followed while running, and `hourglass-ctl route`.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/integration/daemon_fixture.h"
#include "tests/support/requires.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using Clock = std::chrono::steady_clock;

// Polls (bounded: 10 s) until `pred` holds; the time it took, or nullopt.
template <class F>
std::optional<Millis> poll_until(F pred) {
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < std::chrono::seconds(10)) {
    if (pred()) return std::chrono::duration_cast<Millis>(Clock::now() - t0);
    std::this_thread::sleep_for(Millis{20});
  }
  return std::nullopt;
}

std::string control_path() {
  return "/tmp/hg-ln-" + std::to_string(::getpid()) + "-" + random_label(6) + ".sock";
}

struct Expect {
  std::string args;    // dig arguments: name and type
  std::string status;  // NOERROR / NXDOMAIN
  std::string data;    // text the output must contain ("" for none)
};

const std::vector<Expect>& special_names() {
  static const std::vector<Expect> v = {
      {"localhost A", "NOERROR", "127.0.0.1"},
      {"localhost AAAA", "NOERROR", "::1"},
      {"foo.localhost A", "NOERROR", "127.0.0.1"},
      {"foo.localhost AAAA", "NOERROR", "::1"},
      {"localhost MX", "NOERROR", "localhost.\t\t10800\tIN\tSOA"},
      {"invalid A", "NXDOMAIN", "invalid.\t\t10800\tIN\tSOA"},
      {"x.invalid A", "NXDOMAIN", "invalid.\t\t10800\tIN\tSOA"},
      {"1.0.0.127.in-addr.arpa PTR", "NOERROR", "PTR\tlocalhost."},
      {"-x ::1", "NOERROR", "PTR localhost."},
      {"1.0.168.192.in-addr.arpa PTR", "NXDOMAIN", "168.192.in-addr.arpa."},
      {"1.0.0.10.in-addr.arpa PTR", "NXDOMAIN", "10.in-addr.arpa."},
      {"1.0.16.172.in-addr.arpa PTR", "NXDOMAIN", "16.172.in-addr.arpa."},
      {"1.0.64.100.in-addr.arpa PTR", "NXDOMAIN", "64.100.in-addr.arpa."},
      {"1.1.254.169.in-addr.arpa PTR", "NXDOMAIN", "254.169.in-addr.arpa."},
      {"-x fe80::1", "NXDOMAIN", "8.e.f.ip6.arpa."},
      {"-x fd12::1", "NXDOMAIN", "d.f.ip6.arpa."},
      {"router.home.arpa A", "NXDOMAIN", "home.arpa."},
      {"x.onion A", "NXDOMAIN", "onion.\t\t\t10800\tIN\tSOA"},
      {"wpad A", "NOERROR", ""},
      {"myhost AAAA", "NOERROR", ""},
  };
  return v;
}

class LocalNames : public DaemonTest {};

TEST_F(LocalNames, SpecialUseNamesAreAnsweredAsTheRfcsSayAndNeverReachTheUpstream) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.99")}));
  const std::string ctl_sock = control_path();
  start({"--control", ctl_sock});
  for (const Expect& e : special_names()) {
    const DigResult d = dig(port(), e.args + " +noall +comments +answer +authority");
    EXPECT_EQ(d.status(), e.status) << e.args << "\n" << d.output;
    if (!e.data.empty()) {
      EXPECT_TRUE(d.contains(e.data)) << e.args << "\n" << d.output;
    }
    EXPECT_EQ(d.flags().find("aa") != std::string::npos,
              !e.args.starts_with("wpad") && !e.args.starts_with("myhost"))
        << e.args << " " << d.flags();
  }
  // kdig too, over TCP for a change.
  const auto k = run_command("kdig @127.0.0.1 -p " + std::to_string(port()) +
                             " +tcp +time=4 +retry=0 x.onion A");
  EXPECT_TRUE(k.contains("status: NXDOMAIN")) << k.output;
  EXPECT_EQ(upstream_.total_queries(), 0u);
  // The check can fail: an ordinary name does reach the upstream.
  EXPECT_EQ(dig(port(), "www.example.com A").status(), "NOERROR");
  EXPECT_EQ(upstream_.total_queries(), 1u);
  const auto stats = ctl(ctl_sock, "stats");
  EXPECT_TRUE(stats.contains("server.local_answers " + std::to_string(special_names().size() + 1)))
      << stats.output;
  EXPECT_TRUE(stats.contains("server.upstream_queries 1")) << stats.output;
}

TEST_F(LocalNames, NegativeLocalAnswersCarryTheSoaSoTheyCanBeCached) {
  start();
  const DigResult d = dig(port(), "1.0.168.192.in-addr.arpa PTR +noall +authority");
  // RFC 6303 §3's SOA: MINIMUM 10800, TTL 10800.
  EXPECT_TRUE(d.contains("SOA\t168.192.in-addr.arpa. nobody.invalid. 1 3600 1200 604800 10800"))
      << d.output;
}

TEST_F(LocalNames, AForwardZoneClaimsASpecialUseZone) {
  test::FakeUpstream router("127.0.0.2");
  router.set_default(FakeReply::records({FakeRecord::a("", 60, "192.168.1.1")}));
  start({"--forward", "home.arpa=" + router.address()});
  const DigResult d = dig(port(), "router.home.arpa A +short");
  EXPECT_TRUE(d.contains("192.168.1.1")) << d.output;
  EXPECT_EQ(router.queries("router.home.arpa"), 1u);
  EXPECT_EQ(upstream_.total_queries(), 0u);
  // Other special-use names stay local.
  EXPECT_EQ(dig(port(), "1.0.0.10.in-addr.arpa PTR").status(), "NXDOMAIN");
  EXPECT_EQ(router.total_queries() + upstream_.total_queries(), 1u);
}

TEST_F(LocalNames, ThreeForwardZonesEachReachOnlyTheirOwnServersLongestMatchWins) {
  // corp.example: two servers; 10.in-addr.arpa: a reverse zone (and a special-use one);
  // eng.corp.example: nested inside corp.example.
  test::FakeUpstream corp_a("127.0.0.2"), corp_b("127.0.0.3"), rev("127.0.0.4"), eng("127.0.0.5");
  corp_a.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.2")}));
  corp_b.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.3")}));
  eng.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.5")}));
  std::vector<uint8_t> ptr = {3, 'v', 'p', 'n', 0};
  rev.set_default(FakeReply::records({FakeRecord{"", 12, 60, ptr}}));
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
  const std::string ctl_sock = control_path();
  start({"--control", ctl_sock, "--forward",
         "corp.example=" + corp_a.address() + "," + corp_b.address(), "--forward",
         "10.in-addr.arpa=" + rev.address(), "--forward", "eng.corp.example=" + eng.address()});

  for (int i = 0; i < 6; ++i) {
    const DigResult d = dig(port(), "w" + std::to_string(i) + ".corp.example A +short");
    EXPECT_TRUE(d.contains("192.0.2.2") || d.contains("192.0.2.3")) << d.output;
  }
  EXPECT_TRUE(dig(port(), "a.eng.corp.example A +short").contains("192.0.2.5"));
  EXPECT_TRUE(dig(port(), "eng.corp.example A +short").contains("192.0.2.5"));
  EXPECT_TRUE(dig(port(), "-x 10.1.2.3 +short").contains("vpn."));
  EXPECT_TRUE(dig(port(), "www.example.com A +short").contains("192.0.2.1"));

  EXPECT_EQ(corp_a.total_queries() + corp_b.total_queries(), 6u);
  EXPECT_EQ(corp_a.queries("a.eng.corp.example") + corp_b.queries("a.eng.corp.example"), 0u);
  EXPECT_EQ(eng.total_queries(), 2u);
  EXPECT_EQ(eng.queries("a.eng.corp.example"), 1u);
  EXPECT_EQ(rev.total_queries(), 1u);
  EXPECT_EQ(rev.queries("3.2.1.10.in-addr.arpa"), 1u);
  EXPECT_EQ(upstream_.total_queries(), 1u);
  EXPECT_EQ(upstream_.queries("www.example.com"), 1u);

  // The zone's servers have their own health and RTT state, listed with the others.
  const auto ups = ctl(ctl_sock, "upstreams");
  EXPECT_TRUE(ups.contains(corp_a.address())) << ups.output;
  EXPECT_TRUE(ups.contains(eng.address())) << ups.output;
  const auto route = ctl(ctl_sock, "route x.eng.corp.example");
  EXPECT_TRUE(route.contains("forward zone eng.corp.example. servers " + eng.address()))
      << route.output;
  const auto route2 = ctl(ctl_sock, "route www.corp.example");
  EXPECT_TRUE(route2.contains("servers " + corp_a.address() + " " + corp_b.address()))
      << route2.output;
  EXPECT_TRUE(
      ctl(ctl_sock, "route example.org").contains("default upstreams " + upstream_.address()));
  EXPECT_TRUE(ctl(ctl_sock, "route 1.0.168.192.in-addr.arpa").contains("local zone"));
  EXPECT_TRUE(ctl(ctl_sock, "stats").contains("server.forwarded_queries 9"));
}

TEST_F(LocalNames, ForwardZonesAreReReadOnSighupAndTheirCachedAnswersFlushed) {
  test::FakeUpstream old_srv("127.0.0.2"), new_srv("127.0.0.3");
  old_srv.set_default(FakeReply::records({FakeRecord::a("", 3600, "192.0.2.2")}));
  new_srv.set_default(FakeReply::records({FakeRecord::a("", 3600, "192.0.2.3")}));
  TempFile conf("forward = [\"corp.example=" + old_srv.address() + "\"]\n");
  start({"--config", conf.path()});
  EXPECT_TRUE(dig(port(), "www.corp.example A +short").contains("192.0.2.2"));
  conf.rewrite("[forward]\n\"corp.example\" = [\"" + new_srv.address() + "\"]\n");
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  ASSERT_TRUE(daemon_->wait_for_output("SIGHUP: routing now 1 forward zones", Millis{10000}))
      << daemon_->output();
  const auto took =
      poll_until([&] { return dig(port(), "www.corp.example A +short").contains("192.0.2.3"); });
  EXPECT_TRUE(took.has_value()) << daemon_->output();
  EXPECT_EQ(new_srv.queries("www.corp.example"), 1u);
}

TEST_F(LocalNames, HostsFileEditedWhileRunningIsAnsweredWithinASecond) {
  TempFile hosts("192.0.2.10 box.lan box\n# a comment\n2001:db8::10 v6box\n");
  start({"--hosts-file", hosts.path()});
  EXPECT_TRUE(dig(port(), "box A +short").contains("192.0.2.10"));
  const DigResult ttl = dig(port(), "box.lan A");
  EXPECT_EQ(ttl.ttls(), std::vector<uint32_t>{5}) << ttl.output;
  // A name present for one family answers NODATA for the other.
  const DigResult nodata = dig(port(), "box AAAA");
  EXPECT_EQ(nodata.status(), "NOERROR");
  EXPECT_TRUE(nodata.ttls().empty()) << nodata.output;
  EXPECT_TRUE(dig(port(), "-x 192.0.2.10 +short").contains("box.lan."));
  EXPECT_TRUE(dig(port(), "v6box AAAA +short").contains("2001:db8::10"));

  // Replaced by rename (as editors and configuration tools do), with a malformed line.
  hosts.rewrite("192.0.2.11 box.lan box\nnot-an-address oops\n192.0.2.12 newbox\n");
  auto took = poll_until([&] { return dig(port(), "newbox A +short").contains("192.0.2.12"); });
  ASSERT_TRUE(took.has_value()) << daemon_->output();
  std::printf("hosts file renamed over: answered after %lld ms\n",
              static_cast<long long>(took->count()));
  EXPECT_TRUE(dig(port(), "box A +short").contains("192.0.2.11"));
  EXPECT_EQ(daemon_->lines_with(":2: 'not-an-address' is not a numeric").size(), 1u)
      << daemon_->output();

  // Written in place (truncate and write); the malformed line is not reported again.
  {
    std::ofstream out(hosts.path(), std::ios::trunc);
    out << "192.0.2.11 box.lan box\nnot-an-address oops\n192.0.2.13 thirdbox\n";
  }
  took = poll_until([&] { return dig(port(), "thirdbox A +short").contains("192.0.2.13"); });
  ASSERT_TRUE(took.has_value()) << daemon_->output();
  std::printf("hosts file written in place: answered after %lld ms\n",
              static_cast<long long>(took->count()));
  EXPECT_EQ(daemon_->lines_with("is not a numeric").size(), 1u) << daemon_->output();
  // newbox is gone from the file, so it goes upstream now.
  EXPECT_EQ(upstream_.queries("newbox"), 0u);
  dig(port(), "newbox MX");
  EXPECT_EQ(upstream_.queries("newbox"), 1u);

  // Deleted: what it said before stays in force, and the daemon says so.
  ASSERT_EQ(std::remove(hosts.path().c_str()), 0);
  ASSERT_TRUE(daemon_->wait_for_output("keeping what it said before", Millis{10000}))
      << daemon_->output();
  EXPECT_TRUE(dig(port(), "thirdbox A +short").contains("192.0.2.13"));
}

TEST_F(LocalNames, UpstreamFileReplacedByRenameIsUsedWithinASecondWithoutSighup) {
  test::FakeUpstream second("127.0.0.2");
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 1, "192.0.2.1")}));
  second.set_default(FakeReply::records({FakeRecord::a("", 1, "192.0.2.2")}));
  TempFile rc("nameserver " + upstream_.address() + "\n");
  daemon_ = Daemon::start({"--upstream-file", rc.path()});
  ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  EXPECT_TRUE(dig(port(), "a.example A +short").contains("192.0.2.1"));

  rc.rewrite("# written by a DHCP client\nnameserver " + second.address() + "\n");
  int n = 0;
  auto took = poll_until([&] {
    return dig(port(), "n" + std::to_string(n++) + ".example A +short").contains("192.0.2.2");
  });
  ASSERT_TRUE(took.has_value()) << daemon_->output();
  std::printf("upstream file renamed over: in use after %lld ms\n",
              static_cast<long long>(took->count()));
  EXPECT_TRUE(daemon_->wait_for_output("upstream-file changed: upstreams now", Millis{5000}));

  // A file naming no usable server keeps the previous list and says so once.
  rc.rewrite("nameserver not-an-address\n");
  ASSERT_TRUE(daemon_->wait_for_output("keeping the current upstreams", Millis{10000}));
  rc.rewrite("nameserver not-an-address\n# again\n");
  rc.rewrite("# nothing\n");
  EXPECT_TRUE(dig(port(), "z.example A +short").contains("192.0.2.2"));
  // Back to the first server: once that is in use, every rewrite before it has been read.
  // The complaint about the unusable server was said once, though two versions of the file
  // carried it; the file without a nameserver line is a different complaint, said at most
  // once (only if the daemon read the file between the last two rewrites).
  rc.rewrite("nameserver " + upstream_.address() + "\n");
  EXPECT_TRUE(poll_until([&] {
                return daemon_->lines_with("upstream-file changed: upstreams now").size() == 2;
              }).has_value())
      << daemon_->output();
  EXPECT_EQ(daemon_
                ->lines_with("keeping the current upstreams: " + rc.path() +
                             " has no usable nameserver line")
                .size(),
            1u)
      << daemon_->output();
  EXPECT_LE(daemon_->lines_with("has no nameserver line").size(), 1u) << daemon_->output();
  EXPECT_EQ(daemon_->lines_with("SIGHUP").size(), 0u);
}

// glibc's getaddrinfo (getent ahosts) reads /etc/resolv.conf and talks to port 53: in a
// private user, mount and network namespace a test resolv.conf and an empty hosts file are
// mounted over /etc's, and hourglassd listens on 127.0.0.1:53 inside it. Its upstream there
// (127.0.0.1:1) does not exist: the counters show no query was ever sent.
TEST(LocalNamesGetaddrinfo, GetentAhostsSeesLoopbackForLocalhostAndNothingForSpecialNames) {
  if (run_command("unshare -rmn true", 10).exit_code != 0)
    GTEST_SKIP() << "unprivileged user namespaces are not available here";
  TempFile resolv("nameserver 127.0.0.1\noptions attempts:1 timeout:2\n");
  TempFile hosts("# empty\n");
  TempFile my_hosts("192.0.2.77 fromfile.test\n");
  const std::string sock = control_path();
  const std::string ctl_cmd = std::string(HOURGLASS_CTL) + " -s " + sock;
  const std::string script =
      "ip link set lo up && mount --bind " + resolv.path() + " /etc/resolv.conf && mount --bind " +
      hosts.path() + " /etc/hosts || exit 99\n" + HOURGLASSD +
      " --listen 127.0.0.1:53 --upstream 127.0.0.1:1 --allow-root --hosts-file " + my_hosts.path() +
      " --control " + sock + " 2>/dev/null & pid=$!\n" + "i=0; until " + ctl_cmd +
      " stats >/dev/null 2>&1; do i=$((i+1)); " + "[ $i -gt 100 ] && exit 98; sleep 0.05; done\n" +
      "for n in localhost foo.localhost fromfile.test x.invalid x.onion router.home.arpa wpad; do\n"
      "  echo \"== $n\"; getent ahosts $n | awk '{print $1}' | sort -u; echo \"rc=$?\"\n"
      "done\n" +
      ctl_cmd + " stats | grep -E 'upstream_queries|local_answers|hosts_answers'\n" +
      "kill $pid; wait $pid\n";
  TempFile sh(script);
  const auto r = run_command("unshare -rmn sh " + sh.path(), 60);
  ASSERT_NE(r.exit_code, 99) << "mount in a namespace failed: " << r.output;
  ASSERT_NE(r.exit_code, 98) << "hourglassd did not start: " << r.output;
  auto block = [&](const std::string& name) {
    const auto b = r.output.find("== " + name + "\n");
    if (b == std::string::npos) return std::string();
    const auto e = r.output.find("rc=", b);
    return r.output.substr(b, e - b);
  };
  EXPECT_NE(block("localhost").find("127.0.0.1"), std::string::npos) << r.output;
  EXPECT_NE(block("localhost").find("::1"), std::string::npos) << r.output;
  EXPECT_NE(block("foo.localhost").find("127.0.0.1"), std::string::npos) << r.output;
  EXPECT_NE(block("fromfile.test").find("192.0.2.77"), std::string::npos) << r.output;
  for (const char* n : {"x.invalid", "x.onion", "router.home.arpa", "wpad"}) {
    EXPECT_EQ(block(n), std::string("== ") + n + "\n") << r.output;
  }
  EXPECT_NE(r.output.find("server.upstream_queries 0"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("server.local_answers 0"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("server.hosts_answers 0"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace hg::integration
