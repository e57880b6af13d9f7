// Config tests: flags, the TOML file, their precedence, every error line's content (flag,
// value, what is allowed), Endpoint/Cidr parsing, the resolv.conf reader, and the
// forwarding-loop check.
#include "resolver/config.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "tests/resolver/parse_args.h"
#include "tests/support/temp_dir.h"

namespace hg::resolver {
namespace {

using namespace std::chrono_literals;
using test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

Endpoint ep(std::string_view text) {
  auto e = parse_endpoint(text, 53);
  EXPECT_TRUE(e.has_value()) << text;
  return e.value_or(Endpoint{});
}

Config ok(const std::variant<Config, ConfigExit>& r) {
  if (auto* e = std::get_if<ConfigExit>(&r)) {
    ADD_FAILURE() << "expected a Config, got exit " << e->exit_code << ": " << e->message;
    return Config{};
  }
  return std::get<Config>(r);
}

ConfigExit fails(const std::variant<Config, ConfigExit>& r) {
  if (auto* e = std::get_if<ConfigExit>(&r)) return *e;
  ADD_FAILURE() << "expected an error, got a Config";
  return ConfigExit{-1, ""};
}

// --- defaults and flags ----------------------------------------------------------------------

TEST(ParseConfig, DefaultsMatchTheDesign) {
  Config c = ok(parse_args({"--upstream", "192.0.2.1"}));
  ASSERT_EQ(c.listen.size(), 1u);
  EXPECT_EQ(c.listen[0], ep("127.0.0.1:53"));
  EXPECT_EQ(c.upstreams, std::vector<Endpoint>{ep("192.0.2.1:53")});
  EXPECT_FALSE(c.upstreams_from_file);
  EXPECT_EQ(c.upstream_file, "/etc/resolv.conf");
  EXPECT_EQ(c.cache_size, 64u << 20);
  EXPECT_EQ(c.cache_min_ttl, 0s);
  EXPECT_EQ(c.cache_max_ttl, 604800s);
  EXPECT_EQ(c.negative_max_ttl, 3600s);
  EXPECT_EQ(c.stale_max, 86400s);
  EXPECT_EQ(c.stale_ttl, 30s);
  EXPECT_EQ(c.client_timeout, 1800ms);
  EXPECT_EQ(c.upstream_timeout, 3000ms);
  ASSERT_EQ(c.allow.size(), 2u);
  EXPECT_EQ(c.allow[0].to_string(), "127.0.0.0/8");
  EXPECT_EQ(c.allow[1].to_string(), "::1/128");
  EXPECT_TRUE(c.ttl_caps.empty());
  EXPECT_EQ(c.threads, 1u);
  EXPECT_FALSE(c.log_queries);
  EXPECT_FALSE(c.check_config);
  EXPECT_TRUE(c.control_path.empty());
  EXPECT_FALSE(c.metrics.has_value());
}

TEST(ParseConfig, EveryFlagIsStored) {
  Config c = ok(parse_args({"--listen",
                            "127.0.0.1:5353",
                            "--listen",
                            "[::1]:5353",
                            "--upstream",
                            "192.0.2.1",
                            "--upstream",
                            "[2001:db8::1]:5300",
                            "--cache-size",
                            "1GiB",
                            "--cache-min-ttl",
                            "60",
                            "--cache-max-ttl",
                            "1d",
                            "--negative-max-ttl",
                            "5m",
                            "--stale-max",
                            "0",
                            "--stale-ttl",
                            "10s",
                            "--client-timeout",
                            "2s",
                            "--upstream-timeout",
                            "2500",
                            "--allow",
                            "10.0.0.0/8",
                            "--allow",
                            "2001:db8::/32",
                            "--ttl-cap",
                            "shop.example.com=60",
                            "--ttl-cap",
                            "example.org.=1h",
                            "--threads",
                            "4",
                            "--log-queries",
                            "--check-config",
                            "--control",
                            "/run/hourglass.sock",
                            "--metrics",
                            "127.0.0.1:9153"}));
  EXPECT_EQ(c.listen, (std::vector<Endpoint>{ep("127.0.0.1:5353"), ep("[::1]:5353")}));
  EXPECT_EQ(c.upstreams, (std::vector<Endpoint>{ep("192.0.2.1:53"), ep("[2001:db8::1]:5300")}));
  EXPECT_EQ(c.cache_size, uint64_t{1} << 30);
  EXPECT_EQ(c.cache_min_ttl, 60s);
  EXPECT_EQ(c.cache_max_ttl, 86400s);
  EXPECT_EQ(c.negative_max_ttl, 300s);
  EXPECT_EQ(c.stale_max, 0s);
  EXPECT_EQ(c.stale_ttl, 10s);
  EXPECT_EQ(c.client_timeout, 2000ms);
  EXPECT_EQ(c.upstream_timeout, 2500ms);
  ASSERT_EQ(c.allow.size(), 2u);  // replaces the default
  EXPECT_EQ(c.allow[0].to_string(), "10.0.0.0/8");
  EXPECT_EQ(c.allow[1].to_string(), "2001:db8::/32");
  EXPECT_EQ(c.ttl_caps, (std::vector<TtlCap>{{"shop.example.com", 60s}, {"example.org.", 3600s}}));
  EXPECT_EQ(c.threads, 4u);
  EXPECT_TRUE(c.log_queries);
  EXPECT_TRUE(c.check_config);
  EXPECT_EQ(c.control_path, "/run/hourglass.sock");
  ASSERT_TRUE(c.metrics.has_value());
  EXPECT_EQ(*c.metrics, ep("127.0.0.1:9153"));
}

TEST(ParseConfig, EqualsSyntaxAndLastScalarWins) {
  Config c = ok(parse_args({"--upstream=192.0.2.1", "--cache-size=1M", "--cache-size", "2M"}));
  EXPECT_EQ(c.cache_size, 2u << 20);
}

TEST(ParseConfig, CacheSizeAcceptsEverySuffix) {
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  for (Case k : {Case{"65536", 65536}, Case{"64K", 64u << 10}, Case{"64KiB", 64u << 10},
                 Case{"64M", 64u << 20}, Case{"64mib", 64u << 20}, Case{"2G", 2ull << 30},
                 Case{"2GiB", 2ull << 30}, Case{"100000B", 100000}}) {
    Config c = ok(parse_args({"--upstream", "192.0.2.1", "--cache-size", k.text}));
    EXPECT_EQ(c.cache_size, k.bytes) << k.text;
  }
}

TEST(ParseConfig, BadCacheSizeNamesFlagValueAndWhatIsAllowed) {
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--cache-size", "64XB"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--cache-size \"64XB\""));
  EXPECT_THAT(e.message, HasSubstr("MiB"));
  EXPECT_EQ(e.message.find('\n'), std::string::npos);
}

TEST(ParseConfig, CacheSizeOutOfRangeIsRejected) {
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--cache-size", "1K"})).exit_code, 2);
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--cache-size", "2048G"})).exit_code, 2);
  EXPECT_EQ(
      fails(parse_args({"--upstream", "192.0.2.1", "--cache-size", "99999999999999G"})).exit_code,
      2);
}

TEST(ParseConfig, TtlAboveRfc2181LimitIsRejected) {
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--cache-max-ttl", "2147483648"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--cache-max-ttl \"2147483648\""));
  EXPECT_THAT(e.message, HasSubstr("2147483647"));
  EXPECT_EQ(
      ok(parse_args({"--upstream", "192.0.2.1", "--cache-max-ttl", "2147483647"})).cache_max_ttl,
      2147483647s);
}

TEST(ParseConfig, NegativeOrFractionalTtlIsRejected) {
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--stale-ttl=-1"})).exit_code, 2);
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--stale-ttl", "1.5"})).exit_code, 2);
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--stale-ttl", "30 s"})).exit_code, 2);
}

TEST(ParseConfig, MinTtlAboveMaxTtlNamesBoth) {
  ConfigExit e = fails(
      parse_args({"--upstream", "192.0.2.1", "--cache-min-ttl", "600", "--cache-max-ttl", "60"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--cache-min-ttl 600"));
  EXPECT_THAT(e.message, HasSubstr("--cache-max-ttl 60"));
}

TEST(ParseConfig, TimeoutOutsideRangeIsRejected) {
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--client-timeout", "0"}));
  EXPECT_THAT(e.message, HasSubstr("--client-timeout \"0\""));
  EXPECT_THAT(e.message, HasSubstr("1 to 60000"));
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--upstream-timeout", "61s"})).exit_code,
            2);
}

TEST(ParseConfig, DnssecModesTrustAnchorAndTheTrustAdConflict) {
  // Validating by default (when the upstreams deliver DNSSEC records: the probe decides).
  Config c = ok(parse_args({"--upstream", "192.0.2.1"}));
  EXPECT_EQ(c.dnssec, Config::Dnssec::Validate);
  EXPECT_FALSE(c.dnssec_given);
  EXPECT_EQ(to_toml(c).find("dnssec ="), std::string::npos) << "the default stays the default";
  EXPECT_EQ(c.trust_anchor_file, "/usr/share/dns/root.key");
  c = ok(parse_args({"--upstream", "192.0.2.1", "--dnssec", "validate", "--trust-anchor",
                     "/etc/hourglass/anchors"}));
  EXPECT_EQ(c.dnssec, Config::Dnssec::Validate);
  EXPECT_EQ(c.trust_anchor_file, "/etc/hourglass/anchors");
  EXPECT_THAT(to_toml(c), HasSubstr("dnssec = \"validate\""));
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--dnssec", "on"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("expected validate, require or off"));
  c = ok(parse_args({"--upstream", "192.0.2.1", "--dnssec", "require", "--insecure-domain",
                     "corp.example", "--insecure-domain", "home.arpa"}));
  EXPECT_EQ(c.dnssec, Config::Dnssec::Require);
  EXPECT_THAT(c.insecure_domains, ElementsAre("corp.example", "home.arpa"));
  EXPECT_THAT(to_toml(c), HasSubstr("dnssec = \"require\""));
  EXPECT_THAT(to_toml(c), HasSubstr("insecure-domain = [\"corp.example\", \"home.arpa\"]"));
  e = fails(parse_args({"--upstream", "192.0.2.1", "--insecure-domain", "a..b"}));
  EXPECT_EQ(e.exit_code, 2);
  e = fails(parse_args({"--upstream", "192.0.2.1", "--trust-anchor", ""}));
  EXPECT_EQ(e.exit_code, 2);
  // The AD bit is either an authenticated upstream's or this resolver's verdict, not both.
  e = fails(parse_args({"--upstream", "tls://192.0.2.1#dns.example", "--trust-ad", "192.0.2.1",
                        "--dnssec", "validate"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("give one or the other"));
  // Without --dnssec, trusting an upstream's AD is the choice not to validate here.
  c = ok(parse_args({"--upstream", "tls://192.0.2.1#dns.example", "--trust-ad", "192.0.2.1"}));
  EXPECT_EQ(c.dnssec, Config::Dnssec::Off);
}

TEST(ParseConfig, ClientTimeoutAboveUpstreamTimeoutIsRejected) {
  ConfigExit e = fails(parse_args(
      {"--upstream", "192.0.2.1", "--client-timeout", "4000", "--upstream-timeout", "3000"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--client-timeout 4000"));
  EXPECT_THAT(e.message, HasSubstr("--upstream-timeout 3000"));
}

TEST(ParseConfig, BadListenAddressIsRejected) {
  for (const char* bad : {"localhost:53", "127.0.0.1:99999", "[::1", "1.2.3:53", ""}) {
    ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--listen", bad}));
    EXPECT_EQ(e.exit_code, 2) << bad;
    EXPECT_THAT(e.message, HasSubstr("--listen \"" + std::string(bad) + "\""));
    EXPECT_THAT(e.message, HasSubstr("[::1]:53"));
  }
}

TEST(ParseConfig, DuplicateListenAddressIsRejected) {
  ConfigExit e = fails(
      parse_args({"--upstream", "192.0.2.1", "--listen", "127.0.0.1:53", "--listen", "127.0.0.1"}));
  EXPECT_THAT(e.message, HasSubstr("already listed"));
}

TEST(ParseConfig, UpstreamPortZeroOrHostNameIsRejected) {
  EXPECT_THAT(fails(parse_args({"--upstream", "192.0.2.1:0"})).message,
              HasSubstr("--upstream \"192.0.2.1:0\""));
  EXPECT_THAT(fails(parse_args({"--upstream", "dns.google"})).message, HasSubstr("numeric"));
}

TEST(ParseConfig, AllowWithHostBitsSuggestsTheNetwork) {
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--allow", "10.1.2.3/8"}));
  EXPECT_THAT(e.message, HasSubstr("--allow \"10.1.2.3/8\""));
  EXPECT_THAT(e.message, HasSubstr("did you mean 10.0.0.0/8"));
}

TEST(ParseConfig, PrivateAddressTakesBlocksAndThePresetPrivateDomainTakesZones) {
  Config c = ok(parse_args({"--upstream", "192.0.2.1", "--private-address", "private-ranges",
                            "--private-address", "198.18.0.0/15", "--private-domain",
                            "corp.example", "--pass-any"}));
  ASSERT_EQ(c.private_addresses.size(), 13u);
  const auto has = [&](const char* b) {
    return std::find(c.private_addresses.begin(), c.private_addresses.end(),
                     Cidr::parse(b).value()) != c.private_addresses.end();
  };
  for (const char* b : {"127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                        "169.254.0.0/16", "0.0.0.0/8", "100.64.0.0/10", "::1/128", "fc00::/7",
                        "fe80::/10", "::ffff:0:0/96", "198.18.0.0/15"})
    EXPECT_TRUE(has(b)) << b;
  EXPECT_EQ(c.private_domains, std::vector<std::string>{"corp.example"});
  EXPECT_FALSE(c.minimal_any);
  // Through the TOML file and back.
  TempDir dir;
  const std::string text = to_toml(c);
  Config back = ok(parse_args({"--config", dir.write("p.toml", text)}));
  EXPECT_EQ(back.private_addresses, c.private_addresses);
  EXPECT_EQ(back.private_domains, c.private_domains);
  EXPECT_FALSE(back.minimal_any);

  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--private-address", "lan"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--private-address \"lan\""));
  EXPECT_THAT(e.message, HasSubstr("private-ranges"));
  e = fails(parse_args({"--upstream", "192.0.2.1", "--private-domain", "a..b"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--private-domain \"a..b\""));
}

TEST(ParseConfig, BadTtlCapsAreRejected) {
  for (const char* bad : {"example.com", "example.com=", "=60", "a..b=60", "example.com=abc",
                          "example.com=2147483648", "bad zone=60"}) {
    ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--ttl-cap", bad}));
    EXPECT_EQ(e.exit_code, 2) << bad;
    EXPECT_THAT(e.message, HasSubstr("--ttl-cap \"" + std::string(bad) + "\""));
    EXPECT_THAT(e.message, HasSubstr("ZONE=SECONDS"));
  }
  std::string long_label(64, 'a');
  EXPECT_THAT(
      fails(parse_args({"--upstream", "192.0.2.1", "--ttl-cap", long_label + ".com=1"})).message,
      HasSubstr("63"));
}

TEST(ParseConfig, SameTtlCapZoneTwiceIsRejected) {
  ConfigExit e = fails(parse_args(
      {"--upstream", "192.0.2.1", "--ttl-cap", "Example.com=60", "--ttl-cap", "example.COM=30"}));
  EXPECT_THAT(e.message, HasSubstr("already has a cap"));
}

TEST(ParseConfig, RootZoneCapIsAccepted) {
  Config c = ok(parse_args({"--upstream", "192.0.2.1", "--ttl-cap", ".=300"}));
  ASSERT_EQ(c.ttl_caps.size(), 1u);
  EXPECT_EQ(c.ttl_caps[0].zone, ".");
}

TEST(ParseConfig, ZoneValidationHookCanRejectAZone) {
  ParseOptions o = no_local_addresses();
  o.validate_zone = [](std::string_view zone) -> std::optional<std::string> {
    if (zone == "forbidden.example") return "this zone is forbidden";
    return std::nullopt;
  };
  EXPECT_EQ(
      ok(parse_args({"--upstream", "192.0.2.1", "--ttl-cap", "fine.example=5"}, o)).ttl_caps.size(),
      1u);
  ConfigExit e =
      fails(parse_args({"--upstream", "192.0.2.1", "--ttl-cap", "forbidden.example=5"}, o));
  EXPECT_THAT(e.message, HasSubstr("this zone is forbidden"));
}

TEST(ParseConfig, ThreadsOutOfRangeIsRejected) {
  EXPECT_THAT(fails(parse_args({"--upstream", "192.0.2.1", "--threads", "0"})).message,
              HasSubstr("1 to 256"));
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--threads", "257"})).exit_code, 2);
}

TEST(ParseConfig, ControlPathLongerThanSunPathIsRejected) {
  std::string path = "/" + std::string(120, 'x');
  EXPECT_THAT(fails(parse_args({"--upstream", "192.0.2.1", "--control", path})).message,
              HasSubstr("107"));
}

TEST(ParseConfig, MetricsNeedsAPort) {
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--metrics", "127.0.0.1"})).exit_code, 2);
  EXPECT_EQ(*ok(parse_args({"--upstream", "192.0.2.1", "--metrics", "[::1]:9153"})).metrics,
            ep("[::1]:9153"));
}

TEST(ParseConfig, UnknownFlagExitsTwoNamingIt) {
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--cache-sise", "1M"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--cache-sise"));
  EXPECT_THAT(e.message, HasSubstr("--help"));
}

TEST(ParseConfig, MissingValueExitsTwo) {
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--cache-size"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--cache-size"));
}

TEST(ParseConfig, HelpExitsZeroListingEveryFlag) {
  ConfigExit e = fails(parse_args({"--help"}));
  EXPECT_EQ(e.exit_code, 0);
  for (const char* flag :
       {"--listen",        "--upstream",       "--upstream-file",    "--cache-size",
        "--cache-min-ttl", "--cache-max-ttl",  "--negative-max-ttl", "--stale-max",
        "--stale-ttl",     "--client-timeout", "--upstream-timeout", "--allow",
        "--ttl-cap",       "--threads",        "--log-queries",      "--check-config",
        "--version",       "--config",         "--control",          "--metrics"}) {
    EXPECT_THAT(e.message, HasSubstr(flag));
  }
  EXPECT_EQ(config_help().substr(0, 20), e.message.substr(0, 20));
}

TEST(ParseConfig, VersionExitsZero) {
  ConfigExit e = fails(parse_args({"--version"}));
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_THAT(e.message, HasSubstr("hourglass"));
}

// --- upstream file ---------------------------------------------------------------------------

TEST(ParseConfig, UpstreamFileIsReadWhenNoUpstreamIsGiven) {
  TempDir dir;
  std::string rc = dir.write("resolv.conf", "nameserver 192.0.2.53\nnameserver 2001:db8::53\n");
  Config c = ok(parse_args({"--upstream-file", rc}));
  EXPECT_TRUE(c.upstreams_from_file);
  EXPECT_EQ(c.upstreams, (std::vector<Endpoint>{ep("192.0.2.53"), ep("[2001:db8::53]:53")}));
}

TEST(ParseConfig, UpstreamFlagBeatsUpstreamFile) {
  TempDir dir;
  std::string rc = dir.write("resolv.conf", "nameserver 192.0.2.53\n");
  Config c = ok(parse_args({"--upstream-file", rc, "--upstream", "192.0.2.1"}));
  EXPECT_FALSE(c.upstreams_from_file);
  EXPECT_EQ(c.upstreams, std::vector<Endpoint>{ep("192.0.2.1")});
}

TEST(ParseConfig, UnreadableUpstreamFileNamesFlagPathAndFix) {
  TempDir dir;
  std::string missing = dir.file("nope.conf");
  ConfigExit e = fails(parse_args({"--upstream-file", missing}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--upstream-file \"" + missing + "\""));
  EXPECT_THAT(e.message, HasSubstr("No such file"));
  EXPECT_THAT(e.message, HasSubstr("--upstream ADDR"));
}

TEST(ParseConfig, UpstreamFileWithoutNameserversIsAnError) {
  TempDir dir;
  std::string rc = dir.write("resolv.conf", "search example.com\noptions ndots:2\n");
  ConfigExit e = fails(parse_args({"--upstream-file", rc}));
  EXPECT_THAT(e.message, HasSubstr(rc + "\": has no nameserver line; give --upstream"));
}

// Only invalid nameserver lines: said as such, with the lines, not as "no nameserver line".
TEST(ParseConfig, UpstreamFileWithOnlyInvalidNameserversSaysWhy) {
  TempDir dir;
  std::string rc = dir.write("resolv.conf", "nameserver dns.example\nnameserver 300.1.1.1\n");
  ConfigExit e = fails(parse_args({"--upstream-file", rc}));
  EXPECT_THAT(e.message,
              HasSubstr("has no usable nameserver line: line 1: nameserver \"dns.example\" is "
                        "not a numeric IPv4 or IPv6 address; line 2: nameserver \"300.1.1.1\""));
  EXPECT_THAT(e.message, ::testing::Not(HasSubstr("has no nameserver line")));
  // More than three: the first three, then how many more.
  rc = dir.write("many.conf",
                 "nameserver a\nnameserver b\nnameserver c\nnameserver d\n"
                 "nameserver e\n");
  e = fails(parse_args({"--upstream-file", rc}));
  EXPECT_THAT(e.message, HasSubstr("line 3: nameserver \"c\" is not a numeric IPv4 or IPv6 "
                                   "address; and 2 more"));
}

TEST(ParseConfig, UnusableNameserverLineBecomesAWarning) {
  TempDir dir;
  std::string rc = dir.write("resolv.conf", "nameserver dns.example\nnameserver 192.0.2.9\n");
  Config c = ok(parse_args({"--upstream-file", rc}));
  EXPECT_EQ(c.upstreams, std::vector<Endpoint>{ep("192.0.2.9")});
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr(rc + ": line 1"));
  EXPECT_THAT(c.warnings[0], HasSubstr("dns.example"));
}

// --- TOML ------------------------------------------------------------------------------------

// A list key takes an array, even of one value: a plain string is an error naming the key
// and the way to write it.
TEST(ParseConfigFile, AListKeyGivenAPlainStringIsAnErrorThatShowsTheFix) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", "listen = \"127.0.0.1:5300\"\n");
  ConfigExit e = fails(parse_args({"--config", toml, "--upstream", "192.0.2.1"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr(toml + ":1: listen = \"127.0.0.1:5300\""));
  EXPECT_THAT(e.message, HasSubstr("listen is a list, even of one value: write listen = "
                                   "[\"127.0.0.1:5300\"]"));
  toml = dir.write("x.toml", "listen = \"x\"\n");
  e = fails(parse_args({"--config", toml, "--upstream", "192.0.2.1"}));
  EXPECT_THAT(e.message, HasSubstr("write listen = [\"x\"]"));
  toml = dir.write("up.toml", "upstream = 5\n");
  e = fails(parse_args({"--config", toml}));
  EXPECT_THAT(e.message, HasSubstr("write upstream = [\"5\"]"));
  toml = dir.write("cap.toml", "ttl-cap = \"example.com=60\"\n");
  e = fails(parse_args({"--config", toml, "--upstream", "192.0.2.1"}));
  EXPECT_THAT(e.message, HasSubstr("write ttl-cap = [\"example.com=60\"] (or a [ttl-cap] "
                                   "table of \"ZONE\" = SECONDS)"));
  // The array form of the same is accepted.
  toml = dir.write("ok.toml", "listen = [\"127.0.0.1:5300\"]\n");
  Config c = ok(parse_args({"--config", toml, "--upstream", "192.0.2.1"}));
  EXPECT_EQ(c.listen, std::vector<Endpoint>{ep("127.0.0.1:5300")});
}

TEST(ParseConfig, CacheSaveIntervalTakesSecondsAndZeroTurnsItOff) {
  EXPECT_EQ(ok(parse_args({"--upstream", "192.0.2.1"})).cache_save_interval, 5min);
  EXPECT_EQ(ok(parse_args({"--upstream", "192.0.2.1", "--cache-save-interval", "90"}))
                .cache_save_interval,
            90s);
  EXPECT_EQ(ok(parse_args({"--upstream", "192.0.2.1", "--cache-save-interval", "1h"}))
                .cache_save_interval,
            1h);
  EXPECT_EQ(
      ok(parse_args({"--upstream", "192.0.2.1", "--cache-save-interval", "0"})).cache_save_interval,
      0s);
  for (const char* bad : {"soon", "8d", "1.5"}) {
    ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--cache-save-interval", bad}));
    EXPECT_EQ(e.exit_code, 2) << bad;
    EXPECT_THAT(e.message, HasSubstr("--cache-save-interval \"" + std::string(bad) + "\": "));
    EXPECT_THAT(e.message, HasSubstr("0 (off) to 604800"));
  }
  // --check-config's TOML carries it with the cache file, and reads back the same.
  TempDir dir;
  Config c = ok(parse_args({"--upstream", "192.0.2.1", "--cache-file", dir.file("cache"),
                            "--cache-save-interval", "2m"}));
  const std::string text = to_toml(c);
  EXPECT_THAT(text, HasSubstr("cache-save-interval = 120\n"));
  std::string toml = dir.write("round.toml", text);
  EXPECT_EQ(ok(parse_args({"--config", toml})).cache_save_interval, 2min);
}

TEST(ParseConfigFile, SetsEveryKindOfKey) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", R"(
listen = ["127.0.0.1:5300", "[::1]:5300"]
upstream = ["192.0.2.1"]
cache-size = "32MiB"
cache-min-ttl = 60
stale-max = "2d"
client-timeout = 1000
allow = ["10.0.0.0/8"]
log-queries = true
threads = 2

[ttl-cap]
"shop.example.com" = 60
"example.org" = "5m"
)");
  Config c = ok(parse_args({"--config", toml}));
  EXPECT_EQ(c.config_file, toml);
  EXPECT_EQ(c.listen, (std::vector<Endpoint>{ep("127.0.0.1:5300"), ep("[::1]:5300")}));
  EXPECT_EQ(c.upstreams, std::vector<Endpoint>{ep("192.0.2.1")});
  EXPECT_EQ(c.cache_size, 32u << 20);
  EXPECT_EQ(c.cache_min_ttl, 60s);
  EXPECT_EQ(c.stale_max, 172800s);
  EXPECT_EQ(c.client_timeout, 1000ms);
  ASSERT_EQ(c.allow.size(), 1u);
  EXPECT_TRUE(c.log_queries);
  EXPECT_EQ(c.threads, 2u);
  ASSERT_EQ(c.ttl_caps.size(), 2u);
  EXPECT_EQ(c.ttl_caps[0].cap + c.ttl_caps[1].cap, 360s);
}

TEST(ParseConfigFile, CommandLineOverridesTheFile) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", R"(
cache-size = "32MiB"
listen = ["127.0.0.1:5300", "127.0.0.2:5300"]
upstream = ["192.0.2.1"]
log-queries = true
)");
  Config c =
      ok(parse_args({"--config", toml, "--cache-size", "16MiB", "--listen", "127.0.0.3:53"}));
  EXPECT_EQ(c.cache_size, 16u << 20);
  EXPECT_EQ(c.listen, std::vector<Endpoint>{ep("127.0.0.3:53")});  // replaced, not appended
  EXPECT_EQ(c.upstreams, std::vector<Endpoint>{ep("192.0.2.1")});  // untouched
  EXPECT_TRUE(c.log_queries);
}

TEST(ParseConfigFile, UpstreamFileFlagBeatsUpstreamsFromTheFile) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", "upstream = [\"192.0.2.1\"]\n");
  std::string rc = dir.write("resolv.conf", "nameserver 192.0.2.53\n");
  Config c = ok(parse_args({"--config", toml, "--upstream-file", rc}));
  EXPECT_TRUE(c.upstreams_from_file);
  EXPECT_EQ(c.upstreams, std::vector<Endpoint>{ep("192.0.2.53")});
}

TEST(ParseConfigFile, BadValueNamesFileKeyValueAndWhatIsAllowed) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", "upstream = [\"192.0.2.1\"]\ncache-size = \"64XB\"\n");
  ConfigExit e = fails(parse_args({"--config", toml}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr(toml + ":2: cache-size = \"64XB\""));
  EXPECT_THAT(e.message, HasSubstr("MiB"));
}

TEST(ParseConfigFile, WrongTypeIsRejected) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", "upstream = [\"192.0.2.1\"]\ncache-size = 1.5\n");
  EXPECT_THAT(fails(parse_args({"--config", toml})).message, HasSubstr("string or an integer"));
  toml = dir.write("hg2.toml", "upstream = [\"192.0.2.1\"]\nlog-queries = \"yes\"\n");
  EXPECT_THAT(fails(parse_args({"--config", toml})).message, HasSubstr("true or false"));
}

TEST(ParseConfigFile, UnknownKeyIsNamedWithASuggestion) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", "cache_size = \"1M\"\n");
  ConfigExit e = fails(parse_args({"--config", toml}));
  EXPECT_THAT(e.message, HasSubstr("unknown key \"cache_size\""));
  EXPECT_THAT(e.message, HasSubstr("did you mean cache-size"));
}

TEST(ParseConfigFile, SyntaxErrorNamesTheLine) {
  TempDir dir;
  std::string toml = dir.write("hg.toml", "upstream = [\"192.0.2.1\"]\ncache-size = \n");
  ConfigExit e = fails(parse_args({"--config", toml}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--config \"" + toml + "\""));
  EXPECT_THAT(e.message, HasSubstr("line 2"));
}

TEST(ParseConfigFile, MissingFileIsAnError) {
  TempDir dir;
  ConfigExit e = fails(parse_args({"--config", dir.file("absent.toml")}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr(dir.file("absent.toml")));
}

TEST(ConfigToToml, ReadsBackToTheSameConfig) {
  TempDir dir;
  Config c = ok(parse_args({"--listen",          "127.0.0.1:5300",
                            "--listen",          "[::1]:5300",
                            "--upstream",        "192.0.2.1",
                            "--upstream",        "[2001:db8::1]:5300",
                            "--cache-size",      "1536K",
                            "--cache-min-ttl",   "5",
                            "--stale-max",       "1h",
                            "--client-timeout",  "900",
                            "--allow",           "10.0.0.0/8",
                            "--ttl-cap",         "shop.example.com=60",
                            "--threads",         "3",
                            "--log-queries",     "--control",
                            "/run/a \"b\".sock", "--metrics",
                            "127.0.0.1:9153"}));
  std::string text = to_toml(c);
  std::string file = dir.write("round.toml", text);
  Config back = ok(parse_args({"--config", file}));
  EXPECT_EQ(to_toml(back), text);
  EXPECT_EQ(back.listen, c.listen);
  EXPECT_EQ(back.upstreams, c.upstreams);
  EXPECT_EQ(back.cache_size, 1536u << 10);
  EXPECT_EQ(back.ttl_caps, c.ttl_caps);
  EXPECT_EQ(back.control_path, "/run/a \"b\".sock");
  EXPECT_EQ(back.metrics, c.metrics);
}

TEST(ParseConfig, FairShareKeys) {
  const Config d = ok(parse_args({"--upstream", "192.0.2.1"}));
  EXPECT_EQ(d.client_share, 512u) << "an eighth of the 4096-entry in-flight table";
  EXPECT_EQ(d.failing_zone_cap, 32u);
  EXPECT_EQ(d.client_rate, 0u) << "off";
  const std::pair<const char*, unsigned> shares[] = {
      {"1/8", 512},   {"0.125", 512}, {".25", 1024}, {"1/1", 4096}, {"1.0", 4096}, {"100", 100},
      {"4096", 4096}, {"off", 0},     {"1/4096", 1}, {"0.0001", 1}, {"1/5000", 1}};
  for (const auto& [text, want] : shares)
    EXPECT_EQ(ok(parse_args({"--upstream", "192.0.2.1", "--client-share", text})).client_share,
              want)
        << text;
  for (const char* bad : {"0", "4097", "0/8", "9/8", "1/0", "0.0", "1.5", "-1", "1e-3", "x", "",
                          "1/", "/8", ".", "0.1234567890"}) {
    const ConfigExit e = fails(parse_args({"--client-share", bad}));
    EXPECT_THAT(e.message, HasSubstr("--client-share")) << bad;
    EXPECT_THAT(e.message, HasSubstr("expected a fraction")) << bad;
  }
  for (const char* bad : {"0", "4097", "x"}) {
    EXPECT_THAT(fails(parse_args({"--failing-zone-cap", bad})).message,
                HasSubstr("--failing-zone-cap \"" + std::string(bad) + "\": expected"));
    EXPECT_THAT(
        fails(parse_args({"--client-rate", bad == std::string("4097") ? "1000001" : bad})).message,
        HasSubstr("--client-rate"));
  }
  const Config c = ok(parse_args({"--upstream", "192.0.2.1", "--client-share", "1/16",
                                  "--failing-zone-cap", "off", "--client-rate", "200"}));
  EXPECT_EQ(c.client_share, 256u);
  EXPECT_EQ(c.failing_zone_cap, 0u);
  EXPECT_EQ(c.client_rate, 200u);
  TempDir dir;
  const std::string text = to_toml(c);
  EXPECT_THAT(text, HasSubstr("client-share = 256\n"));
  EXPECT_THAT(text, HasSubstr("failing-zone-cap = \"off\"\n"));
  EXPECT_THAT(text, HasSubstr("client-rate = 200\n"));
  const Config back = ok(parse_args({"--config", dir.write("round.toml", text)}));
  EXPECT_EQ(back.client_share, 256u);
  EXPECT_EQ(back.failing_zone_cap, 0u);
  EXPECT_EQ(back.client_rate, 200u);
  EXPECT_THAT(to_toml(d), Not(HasSubstr("client-rate")));
}

TEST(ParseConfig, ConnectionAdmissionKeys) {
  const Config d = ok(parse_args({"--upstream", "192.0.2.1"}));
  EXPECT_EQ(d.tcp_max_per_source, 64u);
  EXPECT_TRUE(d.metrics_allow.empty()) << "empty: --metrics follows --allow";
  const Config c =
      ok(parse_args({"--upstream", "192.0.2.1", "--tcp-max-per-source", "8", "--metrics-allow",
                     "192.0.2.0/24", "--metrics-allow", "2001:db8::/32"}));
  EXPECT_EQ(c.tcp_max_per_source, 8u);
  ASSERT_EQ(c.metrics_allow.size(), 2u);
  EXPECT_EQ(c.metrics_allow[1].to_string(), "2001:db8::/32");
  for (const char* bad : {"0", "257", "x"}) {
    const ConfigExit e = fails(parse_args({"--tcp-max-per-source", bad}));
    EXPECT_THAT(e.message, HasSubstr("--tcp-max-per-source")) << bad;
    EXPECT_THAT(e.message, HasSubstr("from 1 to 256")) << bad;
  }
  EXPECT_THAT(fails(parse_args({"--metrics-allow", "10.0.0.1/8"})).message,
              HasSubstr("--metrics-allow"));
  TempDir dir;
  const std::string text = to_toml(c);
  EXPECT_THAT(text, HasSubstr("tcp-max-per-source = 8\n"));
  const Config back = ok(parse_args({"--config", dir.write("round.toml", text)}));
  EXPECT_EQ(back.tcp_max_per_source, 8u);
  EXPECT_EQ(back.metrics_allow, c.metrics_allow);
}

TEST(ConfigToToml, UpstreamsFromTheFileStayAComment) {
  TempDir dir;
  std::string rc = dir.write("resolv.conf", "nameserver 192.0.2.53\n");
  std::string text = to_toml(ok(parse_args({"--upstream-file", rc})));
  EXPECT_THAT(text, HasSubstr("# upstream (from upstream-file) = [\"192.0.2.53:53\"]"));
  Config back = ok(parse_args({"--config", dir.write("round.toml", text)}));
  EXPECT_TRUE(back.upstreams_from_file);
  EXPECT_EQ(back.upstreams, std::vector<Endpoint>{ep("192.0.2.53")});
}

// --- forwarding loop -------------------------------------------------------------------------

TEST(ParseConfig, UpstreamEqualToListenAddressIsALoop) {
  ConfigExit e = fails(parse_args({"--listen", "127.0.0.1:5353", "--upstream", "127.0.0.1:5353"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("forwarding loop"));
  EXPECT_THAT(e.message, HasSubstr("--upstream-file"));
}

TEST(ParseConfig, ResolvConfPointingAtUsIsALoopNamingTheFile) {
  TempDir dir;
  std::string rc = dir.write("resolv.conf", "nameserver 127.0.0.1\n");
  ConfigExit e = fails(parse_args({"--upstream-file", rc}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("forwarding loop"));
  EXPECT_THAT(e.message, HasSubstr(rc));
  EXPECT_THAT(e.message, HasSubstr("point --upstream-file at the real servers"));
}

TEST(ParseConfig, WildcardListenAndLocalInterfaceAddressIsALoop) {
  ParseOptions o;
  o.local_addresses = std::vector<Endpoint>{ep("192.168.1.5:0")};
  EXPECT_EQ(fails(parse_args({"--listen", "0.0.0.0:53", "--upstream", "192.168.1.5"}, o)).exit_code,
            2);
  EXPECT_EQ(
      ok(parse_args({"--listen", "0.0.0.0:53", "--upstream", "192.168.1.6"}, o)).upstreams.size(),
      1u);
}

TEST(FindForwardingLoop, SameAddressAndPortIsALoop) {
  std::vector<Endpoint> listen = {ep("127.0.0.1:53")};
  std::vector<Endpoint> up = {ep("192.0.2.1:53"), ep("127.0.0.1:53")};
  auto loop = find_forwarding_loop(listen, up, {});
  ASSERT_TRUE(loop.has_value());
  EXPECT_EQ(loop->upstream, ep("127.0.0.1:53"));
  EXPECT_EQ(loop->listen, ep("127.0.0.1:53"));
}

TEST(FindForwardingLoop, DifferentPortIsNotALoop) {
  std::vector<Endpoint> listen = {ep("127.0.0.1:5353")};
  std::vector<Endpoint> up = {ep("127.0.0.1:53")};
  EXPECT_FALSE(find_forwarding_loop(listen, up, {}).has_value());
}

TEST(FindForwardingLoop, SpecificListenDoesNotCatchAnotherLoopbackAddress) {
  // systemd-resolved on 127.0.0.53 is a fine upstream for hourglass on 127.0.0.1.
  std::vector<Endpoint> listen = {ep("127.0.0.1:53")};
  std::vector<Endpoint> up = {ep("127.0.0.53:53")};
  EXPECT_FALSE(find_forwarding_loop(listen, up, {}).has_value());
}

TEST(FindForwardingLoop, V4WildcardCatchesAnyV4LoopbackButNotV6) {
  std::vector<Endpoint> listen = {ep("0.0.0.0:53")};
  EXPECT_TRUE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("127.0.0.53:53")}, {}));
  EXPECT_FALSE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("[::1]:53")}, {}));
  EXPECT_FALSE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("192.0.2.1:53")}, {}));
}

TEST(FindForwardingLoop, V6WildcardCatchesBothFamilies) {
  std::vector<Endpoint> listen = {ep("[::]:53")};
  EXPECT_TRUE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("[::1]:53")}, {}));
  EXPECT_TRUE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("127.0.0.1:53")}, {}));
  std::vector<Endpoint> locals = {ep("[2001:db8::5]:0")};
  EXPECT_TRUE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("[2001:db8::5]:53")}, locals));
}

TEST(FindForwardingLoop, MappedV4ListenMatchesV4Upstream) {
  std::vector<Endpoint> listen = {ep("[::ffff:127.0.0.1]:53")};
  EXPECT_TRUE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("127.0.0.1:53")}, {}));
}

TEST(FindForwardingLoop, UnspecifiedUpstreamReachesALocalListener) {
  std::vector<Endpoint> listen = {ep("127.0.0.1:53")};
  EXPECT_TRUE(find_forwarding_loop(listen, std::vector<Endpoint>{ep("0.0.0.0:53")}, {}));
}

TEST(FindForwardingLoop, DescriptionNamesBothAddressesAndTheFix) {
  std::string msg = describe(ForwardingLoop{ep("127.0.0.1:53"), ep("0.0.0.0:53")}, "/x/resolv");
  EXPECT_THAT(msg, HasSubstr("127.0.0.1:53"));
  EXPECT_THAT(msg, HasSubstr("0.0.0.0:53"));
  EXPECT_THAT(msg, HasSubstr("/x/resolv"));
  EXPECT_THAT(msg, HasSubstr("--upstream-file"));
}

// --- Endpoint --------------------------------------------------------------------------------

TEST(ParseEndpoint, AcceptsEveryDocumentedForm) {
  struct Case {
    const char* text;
    const char* printed;
  };
  for (Case k :
       {Case{"192.0.2.1", "192.0.2.1:53"}, Case{"192.0.2.1:5353", "192.0.2.1:5353"},
        Case{"2001:db8::1", "[2001:db8::1]:53"}, Case{"[2001:db8::1]", "[2001:db8::1]:53"},
        Case{"[2001:db8::1]:5353", "[2001:db8::1]:5353"}, Case{"[::]:0", "[::]:0"},
        Case{"[fe80::1%lo]:53", "[fe80::1%lo]:53"}, Case{"[fe80::1%1]", "[fe80::1%lo]:53"}}) {
    auto e = parse_endpoint(k.text, 53);
    ASSERT_TRUE(e.has_value()) << k.text;
    EXPECT_EQ(e->to_string(), k.printed) << k.text;
    EXPECT_EQ(parse_endpoint(e->to_string(), std::nullopt), e) << k.text;  // round trip
  }
}

TEST(ParseEndpoint, RejectsNonNumericAndMalformed) {
  for (const char* bad :
       {"", "localhost", "1.2.3", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:0x35", "[::1",
        "[::1]x", "[::1]:", "[1.2.3.4]:53", "[fe80::1%nosuchif0]:53", " 1.2.3.4", "01.2.3.4"}) {
    EXPECT_FALSE(parse_endpoint(bad, 53).has_value()) << bad;
  }
}

TEST(ParseEndpoint, WithoutDefaultPortRequiresOne) {
  EXPECT_FALSE(parse_endpoint("192.0.2.1", std::nullopt).has_value());
  EXPECT_EQ(parse_endpoint("192.0.2.1:8", std::nullopt)->port(), 8);
}

TEST(EndpointCompare, SameIpTreatsMappedV4AsV4) {
  EXPECT_TRUE(ep("[::ffff:192.0.2.1]:1").same_ip(ep("192.0.2.1:2")));
  EXPECT_FALSE(ep("[::ffff:192.0.2.1]:1") == ep("192.0.2.1:1"));  // different sockaddrs
  EXPECT_TRUE(ep("127.1.2.3").is_loopback());
  EXPECT_TRUE(ep("[::1]").is_loopback());
  EXPECT_TRUE(ep("[::]").is_unspecified());
  EXPECT_FALSE(ep("192.0.2.1").is_loopback());
}

// --- Cidr ------------------------------------------------------------------------------------

TEST(Cidr, ContainsAddressesInsideItsPrefixOnly) {
  Cidr c = Cidr::parse("10.16.0.0/12").value();
  EXPECT_TRUE(c.contains(ep("10.16.0.1")));
  EXPECT_TRUE(c.contains(ep("10.31.255.255")));
  EXPECT_FALSE(c.contains(ep("10.32.0.0")));
  EXPECT_FALSE(c.contains(ep("10.15.255.255")));
  EXPECT_FALSE(c.contains(ep("[::1]")));
}

TEST(Cidr, V6BlockMatchesV6Only) {
  Cidr c = Cidr::parse("2001:db8::/32").value();
  EXPECT_TRUE(c.contains(ep("[2001:db8:ffff::1]")));
  EXPECT_FALSE(c.contains(ep("[2001:db9::1]")));
  EXPECT_FALSE(c.contains(ep("192.0.2.1")));
}

TEST(Cidr, MappedV4ClientMatchesV4Block) {
  // A dual-stack socket sees IPv4 clients as ::ffff:a.b.c.d.
  EXPECT_TRUE(Cidr::parse("127.0.0.0/8").value().contains(ep("[::ffff:127.0.0.1]")));
  EXPECT_FALSE(Cidr::parse("127.0.0.0/8").value().contains(ep("[::ffff:10.0.0.1]")));
}

TEST(Cidr, BareAddressIsAHostRouteAndZeroPrefixIsEverything) {
  Cidr host = Cidr::parse("192.0.2.1").value();
  EXPECT_EQ(host.prefix(), 32u);
  EXPECT_TRUE(host.contains(ep("192.0.2.1")));
  EXPECT_FALSE(host.contains(ep("192.0.2.2")));
  Cidr all = Cidr::parse("0.0.0.0/0").value();
  EXPECT_TRUE(all.contains(ep("203.0.113.9")));
  EXPECT_TRUE(Cidr::parse("::/0").value().contains(ep("[2001:db8::1]")));
}

TEST(Cidr, ContainsRejectsNullAndOtherFamilies) {
  Cidr c = Cidr::parse("0.0.0.0/0").value();
  EXPECT_FALSE(c.contains(static_cast<const sockaddr*>(nullptr)));
  sockaddr un{};
  un.sa_family = AF_UNIX;
  EXPECT_FALSE(c.contains(&un));
}

TEST(Cidr, ParseErrorsSayWhatIsWrong) {
  EXPECT_THAT(Cidr::parse("10.0.0.0/33").error(), HasSubstr("larger than the address"));
  EXPECT_THAT(Cidr::parse("10.0.0.0/x").error(), HasSubstr("not a number"));
  EXPECT_THAT(Cidr::parse("ten/8").error(), HasSubstr("not a numeric"));
  EXPECT_THAT(Cidr::parse("2001:db8::1/32").error(), HasSubstr("did you mean 2001:db8::/32"));
}

// --- resolv.conf -----------------------------------------------------------------------------

TEST(ParseResolvConf, ReadsNameserversAndIgnoresEverythingElse) {
  ResolvConf rc = parse_resolv_conf(
      "# generated by NetworkManager\n"
      "; another comment\n"
      "search example.com corp.example\n"
      "options edns0 trust-ad ndots:2\n"
      "nameserver 192.0.2.1\n"
      "  nameserver\t2001:db8::53   # inline comment\n"
      "nameserver fe80::1%lo\n"
      "nameserver 192.0.2.2:5353\n"
      "nameserver [2001:db8::54]:5300\n"
      "domain example.com\n"
      "nameserver 192.0.2.3\r\n"
      "nameservers 192.0.2.99\n"
      "nameserver");
  std::vector<std::string> got;
  for (const auto& e : rc.nameservers)
    got.push_back(e.to_string());
  EXPECT_EQ(got,
            (std::vector<std::string>{"192.0.2.1:53", "[2001:db8::53]:53", "[fe80::1%lo]:53",
                                      "192.0.2.2:5353", "[2001:db8::54]:5300", "192.0.2.3:53"}));
  ASSERT_EQ(rc.warnings.size(), 1u);  // the bare "nameserver" on line 13
  EXPECT_THAT(rc.warnings[0], HasSubstr("line 13"));
}

TEST(ParseResolvConf, EmptyInputHasNoNameservers) {
  EXPECT_TRUE(parse_resolv_conf("").nameservers.empty());
  EXPECT_TRUE(parse_resolv_conf("\n\n#\n").nameservers.empty());
}

TEST(ReadResolvConf, MissingFileNamesPathAndReason) {
  auto rc = read_resolv_conf("/nonexistent/hourglass/resolv.conf");
  ASSERT_FALSE(rc.has_value());
  EXPECT_THAT(rc.error(), HasSubstr("/nonexistent/hourglass/resolv.conf"));
  EXPECT_THAT(rc.error(), HasSubstr("No such file"));
}

TEST(ReadResolvConf, AFileWithANulByteIsRefusedNamingTheLine) {
  const std::string path =
      ::testing::TempDir() + "hg_rc_nul_" + std::to_string(::getpid()) + ".conf";
  const char raw[] = "nameserver 192.0.2.1\nnameserver 192.0.2.2\0 192.0.2.3\n";
  const std::string text(raw, sizeof raw - 1);
  std::ofstream(path, std::ios::binary) << text;
  auto rc = read_resolv_conf(path);
  ::unlink(path.c_str());
  ASSERT_FALSE(rc.has_value());
  EXPECT_THAT(rc.error(), HasSubstr(path + ": line 2 contains a NUL byte"));
}

// The upstream file is re-read whenever it changes (the watch) or on SIGHUP, on the event
// loop: a FIFO planted at its path (no writer: a blocking open never returns) or a huge file
// is refused at once, and the previous upstreams stay.
TEST(ReadResolvConf, AFifoOrAHugeFileAtThePathIsRefusedWithoutBlocking) {
  const std::string base = ::testing::TempDir() + "hg_rc_planted_" + std::to_string(::getpid());
  const std::string fifo = base + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto rc = read_resolv_conf(fifo);
  ::unlink(fifo.c_str());
  ASSERT_FALSE(rc.has_value());
  EXPECT_THAT(rc.error(), HasSubstr("not a regular file"));

  const std::string big = base + ".big";
  std::ofstream(big) << "nameserver 192.0.2.1\n";
  ASSERT_EQ(::truncate(big.c_str(), off_t{2} << 20), 0);
  auto b = read_resolv_conf(big);
  ::unlink(big.c_str());
  ASSERT_FALSE(b.has_value());
  EXPECT_THAT(b.error(), HasSubstr("larger than"));
}

// --- value syntax ----------------------------------------------------------------------------

TEST(ParseBytes, RejectsUnknownSuffixesSignsAndOverflow) {
  EXPECT_EQ(parse_bytes("1k"), 1024u);
  EXPECT_FALSE(parse_bytes("1KB").has_value());  // ambiguous between 1000 and 1024
  EXPECT_FALSE(parse_bytes("-1").has_value());
  EXPECT_FALSE(parse_bytes("M").has_value());
  EXPECT_FALSE(parse_bytes("1 M").has_value());
  EXPECT_FALSE(parse_bytes("999999999999999G").has_value());
}

TEST(ParseSeconds, AcceptsUnits) {
  EXPECT_EQ(parse_seconds("45"), 45s);
  EXPECT_EQ(parse_seconds("45s"), 45s);
  EXPECT_EQ(parse_seconds("2m"), 120s);
  EXPECT_EQ(parse_seconds("3h"), 10800s);
  EXPECT_EQ(parse_seconds("1d"), 86400s);
  EXPECT_FALSE(parse_seconds("1w").has_value());
  EXPECT_FALSE(parse_seconds("").has_value());
  EXPECT_EQ(parse_seconds("1.5m"), 90s);
  EXPECT_FALSE(parse_seconds("1500ms").has_value()) << "not whole seconds";
}

TEST(ParseMillis, AcceptsMsAndSeconds) {
  EXPECT_EQ(parse_millis("1800"), 1800ms);
  EXPECT_EQ(parse_millis("1800ms"), 1800ms);
  EXPECT_EQ(parse_millis("2s"), 2000ms);
  // The one duration grammar (base/duration.h): a fraction that comes to whole milliseconds.
  EXPECT_EQ(parse_millis("1.8s"), 1800ms);
  EXPECT_FALSE(parse_millis("1.8ms").has_value());
  EXPECT_FALSE(parse_millis("1.8").has_value()) << "bare digits count in milliseconds";
}

}  // namespace
}  // namespace hg::resolver

// --- the fleet (--redis) ---------------------------------------------------------------------

namespace hg::resolver {
namespace {

TEST(ParseConfig, RedisFlags) {
  Config off = ok(parse_args({"--upstream", "192.0.2.1"}));
  EXPECT_FALSE(off.redis.enabled());
  EXPECT_EQ(off.redis.prefix, "hg:");
  EXPECT_EQ(off.redis.timeout, 20ms);

  Config c = ok(parse_args({"--upstream", "192.0.2.1", "--redis", "127.0.0.1:6380", "--redis-db",
                            "3", "--redis-prefix", "dns:", "--redis-timeout", "50"}));
  EXPECT_TRUE(c.redis.enabled());
  EXPECT_FALSE(c.redis.unix_socket);
  EXPECT_EQ(c.redis.host, "127.0.0.1");
  EXPECT_EQ(c.redis.port, 6380);
  EXPECT_EQ(c.redis.db, 3u);
  EXPECT_EQ(c.redis.prefix, "dns:");
  EXPECT_EQ(c.redis.timeout, 50ms);

  Config u = ok(parse_args({"--upstream", "192.0.2.1", "--redis", "unix:/run/redis/redis.sock"}));
  EXPECT_TRUE(u.redis.unix_socket);
  EXPECT_EQ(u.redis.path, "/run/redis/redis.sock");

  // The effective configuration reads back to the same settings.
  const std::string toml = to_toml(c);
  EXPECT_NE(toml.find("redis = \"127.0.0.1:6380\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("redis-timeout = 50"), std::string::npos) << toml;
}

TEST(ParseConfig, RedisErrorsNameTheFlagAndWhatIsAllowed) {
  for (auto [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--redis", "localhost:6379"},
           {"--redis", "127.0.0.1"},
           {"--redis", "unix:"},
           {"--redis-db", "x"},
           {"--redis-prefix", "a b"},
           {"--redis-timeout", "0"},
           {"--redis-password-file", "/nonexistent/hg-password"}}) {
    const ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", flag, value}));
    EXPECT_EQ(e.exit_code, 2);
    EXPECT_NE(e.message.find(flag + " \"" + value + "\""), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("expected"), std::string::npos) << e.message;
  }
}

// --log-queries=json: the query log as JSON lines (docs/packaging.md).
TEST(ParseConfig, LogQueriesTakesTextOrJson) {
  Config c = ok(parse_args({"--upstream", "192.0.2.1", "--log-queries"}));
  EXPECT_TRUE(c.log_queries);
  EXPECT_FALSE(c.log_queries_json);
  c = ok(parse_args({"--upstream", "192.0.2.1", "--log-queries=json"}));
  EXPECT_TRUE(c.log_queries);
  EXPECT_TRUE(c.log_queries_json);
  c = ok(parse_args({"--upstream", "192.0.2.1", "--log-queries=text"}));
  EXPECT_FALSE(c.log_queries_json);
  ConfigExit e = fails(parse_args({"--upstream", "192.0.2.1", "--log-queries=xml"}));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.message, HasSubstr("--log-queries=\"xml\""));
  EXPECT_THAT(e.message, HasSubstr("json"));
  EXPECT_EQ(fails(parse_args({"--upstream", "192.0.2.1", "--no-0x20=maybe"})).exit_code, 2);

  TempDir dir;
  const std::string toml =
      dir.write("q.toml", "upstream = [\"192.0.2.1\"]\nlog-queries = \"json\"\n");
  c = ok(parse_args({"--config", toml}));
  EXPECT_TRUE(c.log_queries_json);
  EXPECT_THAT(to_toml(c), HasSubstr("log-queries = \"json\"\n"));
  // The printed configuration reads back to the same setting.
  const std::string again = dir.write("again.toml", to_toml(c));
  EXPECT_TRUE(ok(parse_args({"--config", again})).log_queries_json);
}

}  // namespace
}  // namespace hg::resolver
