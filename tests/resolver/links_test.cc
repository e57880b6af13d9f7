// Runtime links (resolver/query/links.h): the `link` parser's words, and LinkTable's merge
// with the configuration — which zones it adds, who wins a shared zone, the default
// upstreams' order — without a daemon (tests/integration/links_test.cc runs the real one).
#include "resolver/query/links.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "resolver/ops/control.h"
#include "resolver/ops/metrics.h"
#include "resolver/query/shared.h"

namespace hg::resolver {
namespace {

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    const std::size_t j = std::min(line.find(' ', i), line.size());
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

Checked<LinkCommand> parse(std::string_view line) {
  const auto words = split(line);
  return parse_link_command(words);
}

Endpoint ep(const char* text) {
  return *parse_endpoint(text, 53);
}

std::string set(LinkTable& t, std::string_view line) {
  auto c = parse(line);
  if (!c) return "parse error: " + c.error();
  std::string reply;
  bool changed = false;
  if (auto err = t.apply(c.value(), reply, changed)) return "error: " + *err;
  return reply;
}

TEST(LinkParse, DefaultRouteFollowsSystemdResolved) {
  auto a = parse("link tun0 --dns 10.8.0.1 --domain ~corp.example");
  ASSERT_TRUE(a) << a.error();
  EXPECT_FALSE(a->link.default_route);
  EXPECT_EQ(a->link.text(), "tun0 dns=10.8.0.1:53 domains=~corp.example default-route=no");
  auto b = parse("link wlan0 --dns 192.0.2.1 --domain Home.Example.");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->link.default_route);
  EXPECT_EQ(b->link.text(), "wlan0 dns=192.0.2.1:53 domains=home.example default-route=yes");
  auto c = parse("link tun0 --dns 10.8.0.1 --domain ~corp.example --domain ~.");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->link.default_route);
  auto d = parse("link tun0 --dns 10.8.0.1 --domain corp.example --default-route no");
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->link.default_route);
  auto e = parse("link tun0 --revert");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->revert);
}

TEST(LinkParse, DuplicatesMergeAndPortsAndIpv6AreKept) {
  auto a = parse(
      "link tun0 --dns 10.8.0.1 --dns 10.8.0.1:53 --dns [2001:db8::1]:5353 --domain ~corp.example "
      "--domain corp.example");
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->link.text(),
            "tun0 dns=10.8.0.1:53,[2001:db8::1]:5353 domains=corp.example default-route=yes");
}

TEST(LinkParse, MalformedWordsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"link", "usage: link IFACE"},
      {"link tun/0 --dns 10.8.0.1", "link 'tun/0': not an interface name"},
      {"link tun0 --dns 10.8.0.256", "--dns '10.8.0.256'"},
      {"link tun0 --dns [::1", "--dns '[::1'"},
      {"link tun0 --dns 10.8.0.1:99999", "--dns '10.8.0.1:99999'"},
      {"link tun0 --domain a..b", "--domain 'a..b'"},
      {"link tun0 --domain " + std::string(64, 'a') + ".example", "not a domain name"},
      {"link tun0 --dns 10.8.0.1 --revert", "--revert takes nothing else"},
      {"link tun0 --domain . --default-route no", "contradicts"},
      {"link tun0 --default-route", "--default-route needs a value"},
      {"link tun0 dns 10.8.0.1", "unexpected word 'dns'"},
      {"link tun0 --dns 10.8.0.1 --domain ~LocalHost", "localhost names are always the loopback"},
      {"link tun0 --dns 10.8.0.1 --domain a.localhost.", "a link cannot route them"},
  };
  for (const auto& [line, want] : cases) {
    auto r = parse(line);
    ASSERT_FALSE(r) << line;
    EXPECT_NE(r.error().find(want), std::string::npos) << line << ": " << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos) << line;
  }
  EXPECT_TRUE(valid_link_name(std::string(64, 'x')));
  EXPECT_FALSE(valid_link_name(std::string(65, 'x')));
  EXPECT_TRUE(valid_link_name("tun0.openvpn"));
  EXPECT_TRUE(valid_link_name("wlan0:1@x+y_z-w"));
  EXPECT_FALSE(valid_link_name(std::string("tun\0", 4)));
}

TEST(LinkTableTest, ConfiguredZoneWinsAndTheLatestLinkTakesASharedZone) {
  LinkTable t;
  set(t, "link a --dns 10.0.0.1 --domain ~corp.example --domain ~x.example");
  set(t, "link b --dns 10.0.0.2 --domain ~x.example --domain . --domain ~c.example");
  ForwardZone configured;
  configured.zone = "Corp.Example";
  configured.servers = {ep("192.0.2.1")};
  const auto zones = t.forward_zones(std::vector<ForwardZone>{configured});
  ASSERT_EQ(zones.size(), 2u);  // c.example and x.example; not corp (configured), not the root
  EXPECT_EQ(zones[0].zone, "c.example.");
  EXPECT_EQ(zones[1].zone, "x.example.");
  EXPECT_EQ(zones[1].link, "b");
  // Re-sending a's state changes nothing; a new state makes a the latest.
  EXPECT_EQ(set(t, "link a --dns 10.0.0.1 --domain ~corp.example --domain ~x.example"),
            "ok: link a dns=10.0.0.1:53 domains=~corp.example,~x.example default-route=no\n");
  EXPECT_EQ(t.forward_zones({})[2].link, "b");
  set(t, "link a --dns 10.0.0.1 --domain ~x.example");
  EXPECT_EQ(t.forward_zones({})[1].link, "a");
}

TEST(LinkTableTest, DefaultUpstreamsAreTheConfiguredThenTheLinksInTheOrderSet) {
  LinkTable t;
  set(t, "link z --dns 10.0.0.3 --dns 192.0.2.1");
  set(t, "link a --dns 10.0.0.1");
  set(t, "link vpn --dns 10.0.0.9 --domain ~corp.example");  // not a default route
  const std::vector<Endpoint> base = {ep("192.0.2.1"), ep("192.0.2.2")};
  EXPECT_EQ(t.default_upstreams(base), (std::vector<Endpoint>{ep("192.0.2.1"), ep("192.0.2.2"),
                                                              ep("10.0.0.3"), ep("10.0.0.1")}));
  EXPECT_EQ(t.text(),
            "a dns=10.0.0.1:53 domains=- default-route=yes\n"
            "vpn dns=10.0.0.9:53 domains=~corp.example default-route=no\n"
            "z dns=10.0.0.3:53,192.0.2.1:53 domains=- default-route=yes\n");
}

TEST(LinkTableTest, TheSixtyFifthLinkIsRefusedAndRevertIsIdempotent) {
  LinkTable t;
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(set(t, "link l" + std::to_string(i) + " --dns 10.0.0.1").substr(0, 3), "ok:");
  EXPECT_EQ(set(t, "link l64 --dns 10.0.0.1"),
            "error: link l64: 64 links are set already, the most there may be; revert one first "
            "(hourglass-ctl links lists them)");
  EXPECT_EQ(t.size(), 64u);
  EXPECT_EQ(set(t, "link l3 --revert"), "ok: link l3 reverted\n");
  EXPECT_EQ(set(t, "link l3 --revert"), "ok: link l3 has no settings\n");
  EXPECT_EQ(set(t, "link l64 --dns 10.0.0.1"),
            "ok: link l64 dns=10.0.0.1:53 domains=- default-route=yes\n");
}

TEST(LinkControl, ControlLinesWithoutAServerUpdateTheTable) {
  Shared shared{Config{}};
  const MonoTime now{};
  EXPECT_EQ(Control::execute_all(shared, "links", now), "");
  EXPECT_EQ(Control::execute_all(shared, "link tun0 --dns 10.8.0.1 --domain ~corp.example", now),
            "ok: link tun0 dns=10.8.0.1:53 domains=~corp.example default-route=no\n");
  EXPECT_EQ(Control::execute_all(shared, "links", now),
            "tun0 dns=10.8.0.1:53 domains=~corp.example default-route=no\n");
  EXPECT_EQ(Control::execute_all(shared, "link tun0 --dns 10.8.0.1 --fleet", now),
            "error: --fleet goes only with flush, flush-zone, ttl-cap and ttl-cap-clear\n");
  EXPECT_EQ(Control::execute_all(shared, "links x", now), "error: usage: links (no arguments)\n");
  const std::string metrics = metrics_http_response(shared, "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_NE(metrics.find("\nhourglass_links 1\n"), std::string::npos) << metrics;
  // A hook that refuses: nothing changes.
  shared.links_changed = [](const LinkTable&, const std::string& what) {
    return std::optional<std::string>(what + ": refused");
  };
  EXPECT_EQ(Control::execute_all(shared, "link tun0 --revert", now), "error: link tun0: refused\n");
  EXPECT_EQ(shared.links.size(), 1u);
}

}  // namespace
}  // namespace hg::resolver
