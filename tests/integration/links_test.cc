// Runtime links (docs/local-names.md, "Links") against the real hourglassd, driven by the real
// hourglass-ctl as a VPN's up/down script would drive it: a link's domain reaches the link's
// server within a second of `link`, the default upstream within a second of `--revert`, and
// no query of a client asking all the while is lost; links survive SIGHUP and upstream-file
// changes; a configured --forward zone wins over a link's; a default-route link's servers
// join the default upstreams. Then the control line's attacks: overlong and malformed words,
// thousands of words, NUL bytes, the 65th link — each one clear line, nothing changed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using Clock = std::chrono::steady_clock;

constexpr auto kDefaultAddr = "192.0.2.1";
constexpr auto kVpnAddr = "192.0.2.99";

class Links : public ::testing::Test {
 protected:
  Links() : socket_(dir_.file("control")) {
    upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, kDefaultAddr)}));
    vpn_.set_default(FakeReply::records({FakeRecord::a("", 300, kVpnAddr)}));
  }

  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--control", socket_};
    if (std::find(extra.begin(), extra.end(), "--upstream-file") == extra.end()) {
      args.push_back("--upstream");
      args.push_back(upstream_.address());
    }
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = Daemon::start(args);
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  }
  uint16_t port() const { return daemon_->port(); }
  CommandResult link(const std::string& args) { return ctl(socket_, "link " + args); }

  /// The A record a fresh name under `zone` gets ("" when no answer or none).
  std::string answer_for(const std::string& zone) {
    auto a = udp_query(port(), build_query({.name = random_label(12) + "." + zone}));
    if (!a) return "";
    const auto rs = a_records(*a);
    return rs.empty() ? "" : rs[0];
  }
  /// Milliseconds until a fresh name under `zone` is answered `want`, polled (bound 10 s).
  std::optional<int64_t> ms_until(const std::string& zone, const std::string& want) {
    const auto t0 = Clock::now();
    if (!test::eventually([&] { return answer_for(zone) == want; }, std::chrono::seconds{10},
                          Millis{5}))
      return std::nullopt;
    return std::chrono::duration_cast<Millis>(Clock::now() - t0).count();
  }

  FakeUpstream upstream_;
  FakeUpstream vpn_{"127.0.0.2"};
  test::TempDir dir_{"hg-links"};
  std::string socket_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(Links, VpnUpAndDownSwitchTheZoneWithinASecondAndNoQueryIsLost) {
  // Two workers: each switches its routing in a task posted to its own loop.
  start({"--threads", "2"});
  // A client asking fresh names under the zone the whole time, one after another (bounded:
  // 20,000 queries or until told to stop); every one must be answered with a record.
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0}, answered{0}, from_vpn{0}, from_default{0};
  std::vector<std::string> lost;
  std::thread client([&] {
    for (int i = 0; i < 20000 && !stop.load(); ++i) {
      ++sent;
      const std::string name = "c" + std::to_string(i) + "-" + random_label(6) + ".corp.example";
      auto a = udp_query(port(), build_query({.name = name}), Millis{3000});
      const auto rs = a ? a_records(*a) : std::vector<std::string>{};
      if (rs.empty()) {
        lost.push_back(name + (a ? " answered " + a->text() : std::string(" unanswered")));
        continue;
      }
      ++answered;
      if (rs[0] == kVpnAddr) ++from_vpn;
      if (rs[0] == kDefaultAddr) ++from_default;
    }
  });
  std::vector<int64_t> up_ms, down_ms;
  for (int round = 0; round < 5; ++round) {
    const CommandResult up =
        link("tun0.openvpn --dns " + vpn_.address() + " --domain ~corp.example");
    ASSERT_EQ(up.exit_code, 0) << up.output;
    ASSERT_EQ(up.output, "ok: link tun0.openvpn dns=" + vpn_.address() +
                             " domains=~corp.example default-route=no\n");
    const auto t_up = ms_until("corp.example", kVpnAddr);
    ASSERT_TRUE(t_up) << daemon_->output();
    up_ms.push_back(*t_up);
    const CommandResult down = link("tun0.openvpn --revert");
    ASSERT_EQ(down.exit_code, 0) << down.output;
    EXPECT_EQ(down.output, "ok: link tun0.openvpn reverted\n");
    const auto t_down = ms_until("corp.example", kDefaultAddr);
    ASSERT_TRUE(t_down) << daemon_->output();
    down_ms.push_back(*t_down);
  }
  // Let the client see the last state for a moment (bounded), then stop it.
  const int seen = sent.load();
  test::eventually([&] { return sent.load() >= seen + 20; }, std::chrono::seconds{5});
  stop = true;
  client.join();
  for (int64_t ms : up_ms)
    EXPECT_LE(ms, 1000) << "up: the zone went to the VPN server only after " << ms << " ms";
  for (int64_t ms : down_ms)
    EXPECT_LE(ms, 1000) << "down: the zone came back only after " << ms << " ms";
  EXPECT_TRUE(lost.empty()) << lost.size() << " lost, first: " << lost.front();
  EXPECT_EQ(answered.load(), sent.load());
  EXPECT_GT(from_vpn.load(), 0);
  EXPECT_GT(from_default.load(), 0);
  std::printf(
      "links: %d queries during 5 up/down rounds, %d answered (%d by the VPN server); "
      "up %lld..%lld ms, down %lld..%lld ms\n",
      sent.load(), answered.load(), from_vpn.load(),
      static_cast<long long>(*std::min_element(up_ms.begin(), up_ms.end())),
      static_cast<long long>(*std::max_element(up_ms.begin(), up_ms.end())),
      static_cast<long long>(*std::min_element(down_ms.begin(), down_ms.end())),
      static_cast<long long>(*std::max_element(down_ms.begin(), down_ms.end())));
  EXPECT_EQ(ctl(socket_, "links").output, "");
}

TEST_F(Links, ListRouteAndIdempotentReplace) {
  start();
  ASSERT_EQ(link("wlan0.dhcp --dns 127.0.1.53 --dns [::1]:5353 --domain home.example").exit_code,
            0);
  ASSERT_EQ(link("tun0 --dns " + vpn_.address() + " --domain ~corp.example --domain eng.example")
                .exit_code,
            0);
  EXPECT_EQ(ctl(socket_, "links").output,
            "tun0 dns=" + vpn_.address() +
                " domains=~corp.example,eng.example default-route=no\n"
                "wlan0.dhcp dns=127.0.1.53:53,[::1]:5353 domains=home.example "
                "default-route=yes\n");
  EXPECT_EQ(ctl(socket_, "route www.corp.example").output,
            "www.corp.example. link tun0 zone corp.example. servers " + vpn_.address() + "\n");
  // The same command again changes nothing; another one replaces the whole state.
  const CommandResult again =
      link("tun0 --dns " + vpn_.address() + " --domain ~corp.example --domain eng.example");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  ASSERT_EQ(link("tun0 --dns " + vpn_.address() + " --domain ~lab.example").exit_code, 0);
  EXPECT_EQ(ctl(socket_, "route www.corp.example").output,
            "www.corp.example. default upstreams " + upstream_.address() +
                " 127.0.1.53:53 [::1]:5353; link wlan0.dhcp adds 127.0.1.53:53 "
                "[::1]:5353\n");
  EXPECT_EQ(answer_for("lab.example"), kVpnAddr);
  // No --dns and no --domain: the same as --revert.
  ASSERT_EQ(link("tun0").exit_code, 0);
  ASSERT_EQ(link("wlan0.dhcp --default-route yes").exit_code, 0);
  EXPECT_EQ(ctl(socket_, "links").output, "");
  EXPECT_EQ(ctl(socket_, "route www.example.com").output,
            "www.example.com. default upstreams " + upstream_.address() + "\n");
}

TEST_F(Links, LinksSurviveSighupAndUpstreamFileChanges) {
  FakeUpstream second("127.0.0.3");
  second.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.3")}));
  TempFile rc("nameserver " + upstream_.address() + "\n");
  start({"--upstream-file", rc.path()});
  ASSERT_EQ(link("tun0 --dns " + vpn_.address() + " --domain corp.example").exit_code, 0);
  ASSERT_TRUE(ms_until("corp.example", kVpnAddr));

  ASSERT_TRUE(daemon_->signal(SIGHUP));
  ASSERT_TRUE(daemon_->wait_for_output("SIGHUP: routing now 1 forward zones", Millis{10000}))
      << daemon_->output();
  EXPECT_EQ(answer_for("corp.example"), kVpnAddr);

  rc.rewrite("nameserver " + second.address() + "\n");
  ASSERT_TRUE(ms_until("example.com", "192.0.2.3")) << daemon_->output();
  EXPECT_EQ(answer_for("corp.example"), kVpnAddr);
  EXPECT_EQ(ctl(socket_, "links").output,
            "tun0 dns=" + vpn_.address() + " domains=corp.example default-route=yes\n");
  // tun0 is a default route too (no ~ domain): its server follows the file's.
  EXPECT_EQ(ctl(socket_, "route www.example.com").output,
            "www.example.com. default upstreams " + second.address() + " " + vpn_.address() +
                "; link tun0 adds " + vpn_.address() + "\n");
  ASSERT_EQ(link("tun0 --revert").exit_code, 0);
  EXPECT_TRUE(ms_until("corp.example", "192.0.2.3"));
}

TEST_F(Links, ConfiguredForwardZoneWinsAndTheLatestLinkTakesASharedZone) {
  FakeUpstream conf("127.0.0.4"), other("127.0.0.5");
  conf.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.4")}));
  other.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.5")}));
  start({"--forward", "corp.example=" + conf.address()});
  ASSERT_EQ(link("tun0 --dns " + vpn_.address() + " --domain ~corp.example --domain ~lab.example")
                .exit_code,
            0);
  EXPECT_EQ(answer_for("corp.example"), "192.0.2.4");
  EXPECT_EQ(answer_for("lab.example"), kVpnAddr);
  EXPECT_TRUE(ctl(socket_, "route a.corp.example").contains("forward zone corp.example."));
  // A more specific zone of a link is its own.
  ASSERT_EQ(link("tun0 --dns " + vpn_.address() + " --domain ~eng.corp.example").exit_code, 0);
  EXPECT_EQ(answer_for("eng.corp.example"), kVpnAddr);
  EXPECT_EQ(answer_for("corp.example"), "192.0.2.4");

  // Two links with the same zone: the one set last.
  ASSERT_EQ(link("tun1 --dns " + other.address() + " --domain ~eng.corp.example").exit_code, 0);
  EXPECT_TRUE(ms_until("eng.corp.example", "192.0.2.5"));
  ASSERT_EQ(link("tun1 --revert").exit_code, 0);
  EXPECT_TRUE(ms_until("eng.corp.example", kVpnAddr));
}

TEST_F(Links, DefaultRouteLinkServersAreUsedWhenTheConfiguredOnesFail) {
  start();
  upstream_.stop();  // the configured upstream is gone: its port answers ICMP unreachable
  ASSERT_EQ(link("wlan0 --dns " + vpn_.address() + " --domain .").exit_code, 0);
  EXPECT_TRUE(ms_until("example.org", kVpnAddr)) << daemon_->output();
  EXPECT_EQ(ctl(socket_, "links").output,
            "wlan0 dns=" + vpn_.address() + " domains=. default-route=yes\n");
  // --default-route no: no longer a default upstream.
  const CommandResult no = link("wlan0 --dns " + vpn_.address() + " --default-route no");
  ASSERT_EQ(no.exit_code, 0) << no.output;
  EXPECT_EQ(ctl(socket_, "route www.example.org").output,
            "www.example.org. default upstreams " + upstream_.address() + "\n");
  EXPECT_TRUE(test::eventually([&] { return answer_for("example.org").empty(); }));
}

// --- attacks on the control line ---------------------------------------------------------

/// Sends raw bytes (a whole request line, '\n' included) to the control socket; the reply up
/// to the empty line that ends it ("" when none came within 5 s).
std::string raw_request(const std::string& socket, const std::string& bytes) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  std::memcpy(sun.sun_path, socket.data(), std::min(socket.size(), sizeof sun.sun_path - 1));
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&sun), sizeof sun) == 0 &&
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size())) {
    char buf[4096];
    for (int i = 0; i < 100 && reply.find("\n\n") == std::string::npos; ++i) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return reply;
}

TEST_F(Links, EveryMalformedRequestIsOneClearErrorAndChangesNothing) {
  start();
  ASSERT_EQ(link("keep0 --dns " + vpn_.address() + " --domain ~keep.example").exit_code, 0);
  const std::string before = ctl(socket_, "links").output;
  struct Case {
    std::string args;
    std::string names;  // the error must contain this
  };
  const std::string name65(65, 'a');
  const std::vector<Case> cases = {
      {name65 + " --dns 192.0.2.1", "link '" + std::string(64, 'a') + "...': not an interface"},
      {"'tun0;rm' --dns 192.0.2.1", "link 'tun0;rm': not an interface name"},
      {"tun0 --dns 300.1.1.1", "--dns '300.1.1.1': expected a numeric"},
      {"tun0 --dns 192.0.2.1:0", "--dns '192.0.2.1:0'"},
      {"tun0 --dns 192.0.2.1:65536", "--dns '192.0.2.1:65536'"},
      {"tun0 --dns '[2001:db8::1'", "--dns '[2001:db8::1'"},
      {"tun0 --dns vpn.example", "--dns 'vpn.example'"},
      {"tun0 --dns '[fe80::1%lo]:53'", "link-local IPv6 servers"},
      {"tun0 --dns tls://192.0.2.1", "DNS over TLS is not available for links"},
      {"tun0 --dns", "--dns needs a value"},
      {"tun0 --domain 'a..example'", "--domain 'a..example': not a domain name"},
      {"tun0 --domain '~'", "--domain '~': not a domain name"},
      {"tun0 --domain " + std::string(64, 'x') + ".example", "not a domain name"},
      {"tun0 --dns 192.0.2.1 --default-route maybe", "--default-route 'maybe'"},
      {"tun0 --dns 192.0.2.1 --default-route yes --default-route no", "given twice"},
      {"tun0 --domain '~.' --default-route no", "contradicts --default-route no"},
      {"tun0 --dns 192.0.2.1 --revert", "--revert takes nothing else"},
      {"tun0 --dns 192.0.2.1 --frobnicate", "unexpected word '--frobnicate'"},
      {"", "usage: link IFACE"},
      {"tun0 --dns 127.0.0.1:" + std::to_string(port()), "is this hourglassd's own listen address"},
  };
  for (const Case& c : cases) {
    const CommandResult r = link(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.output;
    EXPECT_TRUE(r.output.starts_with("error: ")) << c.args << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << c.args << ": " << r.output;
    EXPECT_TRUE(r.contains(c.names)) << c.args << ": " << r.output;
  }
  // Over the limits: 17 servers, 65 domains.
  std::string many_dns = "tun0", many_domains = "tun0 --dns 192.0.2.1";
  for (int i = 0; i < 17; ++i)
    many_dns += " --dns 192.0.2." + std::to_string(i + 1);
  for (int i = 0; i < 65; ++i)
    many_domains += " --domain d" + std::to_string(i) + ".example";
  EXPECT_TRUE(link(many_dns).contains("error: link tun0: more than 16 --dns servers"));
  EXPECT_TRUE(link(many_domains).contains("error: link tun0: more than 64 --domain zones"));

  // Raw lines no client would send: NUL bytes, thousands of words, a line over the limit.
  const std::string nul = raw_request(socket_, std::string("link tu\0n0 --dns 192.0.2.1\n", 27));
  EXPECT_EQ(nul,
            "error: link 'tu\\x00n0': not an interface name; expected 1 to 64 characters of "
            "A-Z a-z 0-9 . _ : @ + -\n\n");
  const std::string nul_dns =
      raw_request(socket_, std::string("link tun0 --dns 192.0.2.1\0:53\n", 31));
  EXPECT_TRUE(nul_dns.starts_with("error: link tun0: --dns '192.0.2.1\\x00:53'")) << nul_dns;
  std::string words = "link tun0";
  while (words.size() < 4000)
    words += " --dns";
  const std::string thousands = raw_request(socket_, words + "\n");
  EXPECT_EQ(std::count(thousands.begin(), thousands.end(), '\n'), 2) << thousands;
  EXPECT_TRUE(thousands.starts_with("error: link tun0: --dns '--dns'")) << thousands;
  std::string domains = "link tun0 --dns 192.0.2.1";
  while (domains.size() < 4000)
    domains += " --domain a";
  EXPECT_TRUE(raw_request(socket_, domains + "\n")
                  .starts_with("error: link tun0: more than 64 --domain zones"));
  const std::string overlong =
      raw_request(socket_, "link tun0 --domain " + std::string(5000, 'a') + "\n");
  EXPECT_TRUE(overlong.starts_with("error: request line longer than 4095 bytes")) << overlong;

  EXPECT_EQ(ctl(socket_, "links").output, before);

  // The 65th link is refused; the 64 stay, and reverting one makes room.
  for (int i = 1; i < 64; ++i)
    ASSERT_EQ(link("l" + std::to_string(i) + " --dns 127.0.1." + std::to_string(i) +
                   " --domain ~l" + std::to_string(i) + ".example")
                  .exit_code,
              0);
  const CommandResult full = link("l64 --dns 127.0.1.64 --domain ~l64.example");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(full.output,
            "error: link l64: 64 links are set already, the most there may be; revert one "
            "first (hourglass-ctl links lists them)\n");
  const std::string listed = ctl(socket_, "links").output;
  EXPECT_EQ(std::count(listed.begin(), listed.end(), '\n'), 64);
  EXPECT_EQ(listed.find("l64 "), std::string::npos);
  ASSERT_EQ(link("l1 --revert").exit_code, 0);
  EXPECT_EQ(link("l64 --dns 127.0.1.64 --domain ~l64.example").exit_code, 0);
  // Still serving, and still routing the first link's zone.
  EXPECT_EQ(answer_for("keep.example"), kVpnAddr);
}

}  // namespace
}  // namespace hg::integration
