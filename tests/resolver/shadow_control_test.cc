// shadow-ttl and drain at the resolver level: a QueryEngine with a scripted upstream and a test
// clock; the projected count is worked out by hand, and the metrics, `stats` and the control
// `shadow` reply must all say the same. The drain view runs against a cache filled with
// CNAME chains holding old and new addresses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "base/bytes.h"
#include "cache/shadow.h"
#include "resolver/config.h"
#include "resolver/ops/control.h"
#include "resolver/ops/metrics.h"
#include "resolver/ops/shadow_control.h"
#include "resolver/query/query_engine.h"
#include "tests/resolver/engine_harness.h"
#include "tests/resolver/parse_args.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using wire::test::Bytes;
using wire::test::PacketBuilder;

Bytes addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {a, b, c, d};
}

std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

/// The first line of `text` that starts with `prefix`.
std::string line_starting(const std::string& text, std::string_view prefix) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.starts_with(prefix)) return l;
  return {};
}

class RehearsalEngineTest : public EngineHarness {
 protected:
  explicit RehearsalEngineTest(const Config& config = Config{}) : EngineHarness(config) {
    sink_ = [this](std::span<const uint8_t>) { ++deferred_; };
  }

  void at(int64_t seconds) {
    now_ = start_ + std::chrono::seconds{seconds};
    tick();
  }

  /// Sends a client query; true when it was answered at once (a cache hit).
  bool ask(std::string_view name) {
    PacketBuilder b;
    b.id(7).flags(0x0100).question(name, 1).opt(1232, 0);
    Bytes out(1232);
    return engine_.on_query(b.build(), nullptr, route_, out).size > 0;
  }

  /// Answers the oldest upstream query with A records of TTL `ttl`.
  void upstream_answers(std::string_view name, uint32_t ttl) {
    ASSERT_FALSE(sent_.empty());
    Sent s = take_sent();
    PacketBuilder b;
    b.id(base::load_u16(&s.query[0])).flags(0x8180).question(name, 1);
    b.rr(0, name, 1, ttl, addr(192, 0, 2, 1));
    const Bytes r = b.build();
    s.done(UpstreamStatus::Ok, r);
  }

  std::string control(std::string_view line) { return Control::execute_all(shared_, line, now_); }

  MonoTime start_ = now_;
  int deferred_ = 0;
};

TEST_F(RehearsalEngineTest, ScriptedQueriesGiveTheHandCountedProjectionEverywhere) {
  EXPECT_EQ(control("shadow set Example.COM 60"), "ok: shadow-ttl example.com. 60\n");
  // www.example.com, real TTL 300, shadow TTL 60 (prefetch fires only in the last 10 % of a
  // TTL, 270-300 s: no hit lands there):
  //   t=0 miss: real 1 (shadow to 60)     t=10 hit, shadow fresh
  //   t=60 hit, shadow miss (to 120)      t=100 hit, shadow fresh
  //   t=200 hit, shadow miss (to 260)     t=301 stale: refresh, real 2 (shadow to 361)
  //   t=330 hit, shadow fresh             t=400 hit, shadow miss (to 460)
  // b.example.com: two clients coalesce into real 1. other.example.org: not in the zone.
  at(0);
  EXPECT_FALSE(ask("www.example.com"));
  upstream_answers("www.example.com", 300);
  EXPECT_FALSE(ask("b.example.com"));
  EXPECT_FALSE(ask("B.example.com"));
  upstream_answers("b.example.com", 300);
  EXPECT_FALSE(ask("other.example.org"));
  upstream_answers("other.example.org", 300);
  for (int64_t t : {10, 60, 100, 200}) {
    at(t);
    EXPECT_TRUE(ask("www.example.com")) << t;
  }
  at(301);
  EXPECT_FALSE(ask("www.example.com"));  // stale: waits for the refresh
  upstream_answers("www.example.com", 300);
  for (int64_t t : {330, 400}) {
    at(t);
    EXPECT_TRUE(ask("www.example.com")) << t;
  }
  EXPECT_TRUE(sent_.empty());
  EXPECT_EQ(deferred_, 5);  // the miss, two coalesced, other, and the refreshed one

  // queries 10 (www 8, b 2); real 3; shadow misses 3; projected 6.
  const auto zs = shared_.shadow.zone_stats();
  ASSERT_EQ(zs.size(), 1u);
  EXPECT_EQ(zs[0].queries, 10u);
  EXPECT_EQ(zs[0].real_upstream, 3u);
  EXPECT_EQ(zs[0].shadow_misses, 3u);
  EXPECT_EQ(zs[0].projected_upstream(), 6u);
  EXPECT_EQ(shared_.stats.upstream_queries.load(), 4u);  // other.example.org is the 4th

  const std::string m = render_metrics(shared_);
  EXPECT_NE(m.find("hourglass_shadow_upstream_queries_total{zone=\"example.com.\"} 6\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("hourglass_shadow_real_upstream_queries_total{zone=\"example.com.\"} 3\n"),
            std::string::npos);
  EXPECT_NE(m.find("hourglass_shadow_queries_total{zone=\"example.com.\"} 10\n"),
            std::string::npos);
  EXPECT_NE(m.find("hourglass_shadow_projected_hit_ratio{zone=\"example.com.\"} 0.4\n"),
            std::string::npos);
  EXPECT_NE(m.find("hourglass_shadow_real_hit_ratio{zone=\"example.com.\"} 0.7\n"),
            std::string::npos);
  EXPECT_NE(m.find("hourglass_shadow_entries 2\n"), std::string::npos);

  const std::string report = control("shadow");
  const auto row = fields(line_starting(report, "example.com."));
  ASSERT_EQ(row.size(), 11u) << report;
  EXPECT_EQ(row[1], "60");      // TTL
  EXPECT_EQ(row[2], "400s");    // since
  EXPECT_EQ(row[3], "10");      // queries
  EXPECT_EQ(row[4], "3");       // real
  EXPECT_EQ(row[5], "0.007");   // real/s: 3 / 400
  EXPECT_EQ(row[6], "6");       // projected
  EXPECT_EQ(row[7], "0.015");   // projected/s
  EXPECT_EQ(row[8], "2.00");    // multiplier
  EXPECT_EQ(row[9], "0.700");   // real hit ratio
  EXPECT_EQ(row[10], "0.400");  // projected hit ratio
  EXPECT_NE(report.find("; shadow table: 2 entries, 176 of "), std::string::npos) << report;

  const std::string stats = control("stats");
  EXPECT_NE(stats.find("shadow[example.com.].projected_upstream 6\n"), std::string::npos);
  EXPECT_NE(stats.find("shadow[example.com.].real_upstream 3\n"), std::string::npos);
  EXPECT_NE(stats.find("shadow.entries 2\n"), std::string::npos);

  EXPECT_EQ(control("shadow list"), "example.com. 60\n");
  EXPECT_EQ(control("shadow clear example.com"), "ok: shadow clear example.com.\n");
  EXPECT_EQ(control("shadow list"), "; no shadow zones\n");
  EXPECT_EQ(render_metrics(shared_).find("zone=\"example.com.\""), std::string::npos);
  // With no zone set, queries are not counted anywhere.
  at(401);
  EXPECT_TRUE(ask("www.example.com"));
  EXPECT_TRUE(shared_.shadow.zone_stats().empty());
}

// shadow-size bounds the shadow table in the daemon: 16 shards of 2 entries each here, 40
// names filled; every fill either stays or pushed an older one out, and the table reports
// exactly that (shadow, stats and metrics) without ever going over its budget.
class ShadowBudgetTest : public RehearsalEngineTest {
 protected:
  static Config small() {
    Config c;
    c.shadow_size = 16 * 2 * cache::ShadowTable::kBytesPerEntry;
    return c;
  }
  ShadowBudgetTest() : RehearsalEngineTest(small()) {}
};

TEST_F(ShadowBudgetTest, TableStaysWithinShadowSizeAndReportsEvictions) {
  EXPECT_EQ(control("shadow set example.com 60"), "ok: shadow-ttl example.com. 60\n");
  constexpr uint64_t kNames = 40;
  for (uint64_t i = 0; i < kNames; ++i) {
    const std::string name = "n" + std::to_string(i) + ".example.com";
    EXPECT_FALSE(ask(name));
    upstream_answers(name, 300);
  }
  const cache::ShadowTableStats t = shared_.shadow.stats();
  const uint64_t capacity = 16 * 2 * cache::ShadowTable::kBytesPerEntry;
  EXPECT_EQ(t.capacity_bytes, capacity);
  EXPECT_LE(t.entries, 32u);
  EXPECT_LE(t.bytes, capacity);
  EXPECT_EQ(t.bytes, t.entries * cache::ShadowTable::kBytesPerEntry);
  EXPECT_GE(t.evictions, kNames - 32);
  EXPECT_EQ(t.entries + t.evictions, kNames);  // each name filled once
  const std::string report = control("shadow");
  EXPECT_NE(report.find(fmt::format("; shadow table: {} entries, {} of {} bytes, {} evictions",
                                    t.entries, t.bytes, capacity, t.evictions)),
            std::string::npos)
      << report;
  const std::string m = render_metrics(shared_);
  EXPECT_NE(m.find(fmt::format("hourglass_shadow_bytes {}\n", t.bytes)), std::string::npos) << m;
  EXPECT_NE(m.find(fmt::format("hourglass_shadow_evictions_total {}\n", t.evictions)),
            std::string::npos);
  const std::string stats = control("stats");
  EXPECT_NE(stats.find(fmt::format("shadow.capacity_bytes {}\n", capacity)), std::string::npos);
}

TEST_F(RehearsalEngineTest, BadShadowLinesAreErrors) {
  for (std::string_view line : {"shadow set", "shadow set example.com", "shadow set example.com -1",
                                "shadow set example.com 2147483648", "shadow set example..com 60",
                                "shadow clear", "shadow clear example.com", "shadow bogus",
                                "shadow list extra", "shadow set example.com 60 extra"}) {
    const std::string r = control(line);
    EXPECT_TRUE(r.starts_with("error: ")) << line << " → " << r;
    EXPECT_EQ(r.find('\n'), r.size() - 1) << line;
  }
  EXPECT_TRUE(shared_.shadow.list().empty());
}

// --- drain ------------------------------------------------------------------------------

class DrainTest : public ::testing::Test {
 protected:
  DrainTest() : shared_(Config{}) {}

  /// Stores an answer for (qname, qtype) whose answer section is `records`.
  void cache(std::string_view qname, uint16_t qtype,
             const std::vector<std::tuple<std::string, uint16_t, uint32_t, Bytes>>& records) {
    PacketBuilder b;
    b.id(1).flags(0x8180).question(qname, qtype);
    for (const auto& [owner, type, ttl, rdata] : records)
      b.rr(0, owner, type, ttl, rdata);
    bytes_.push_back(b.build());
    wire::Message m;
    ASSERT_TRUE(m.parse(bytes_.back(), wire::ParseMode::Strict).has_value());
    const auto key = cache::CacheKey::make(*wire::Name::from_text(qname),
                                           static_cast<wire::RRType>(qtype), 1, false, false);
    ASSERT_EQ(shared_.cache.insert(key, m, now_), cache::InsertOutcome::Cached);
  }
  static Bytes name(std::string_view n) { return wire::test::wire_name(n); }

  /// The cache of the test: lb.example.net moved from 192.0.2.1 to 198.51.100.7.
  void fill() {
    cache("www.example.com", 1,
          {{"www.example.com", 5, 3600, name("lb.example.net")},
           {"lb.example.net", 1, 300, addr(192, 0, 2, 1)}});
    cache("alias.example.org", 1,
          {{"alias.example.org", 5, 7200, name("www.example.com")},
           {"www.example.com", 5, 3600, name("lb.example.net")},
           {"lb.example.net", 1, 600, addr(192, 0, 2, 1)}});
    cache("lb.example.net", 1, {{"lb.example.net", 1, 60, addr(198, 51, 100, 7)}});
    // CNAME-type entries: www leads to lb directly, top only through alias (recursion).
    cache("www.example.com", 5, {{"www.example.com", 5, 3600, name("lb.example.net")}});
    cache("top.example.org", 5, {{"top.example.org", 5, 900, name("alias.example.org")}});
    // Not on the way to lb.example.net.
    cache("other.example.com", 1, {{"other.example.com", 1, 300, addr(192, 0, 2, 1)}});
  }

  std::string control(std::string_view line) { return Control::execute_all(shared_, line, now_); }

  MonoTime now_{Millis{10'000'000}};
  Shared shared_;
  std::vector<Bytes> bytes_;
};

TEST_F(DrainTest, ListsEveryEntryLeadingToTheNameAndMarksTheOldOnes) {
  fill();
  const std::string r = control("drain LB.example.net --old 192.0.2.1");
  // Five entries lead to lb.example.net; sorted by expiry, latest first.
  EXPECT_NE(r.find("; 5 entries lead to lb.example.net.; 2 hold an old address (A 192.0.2.1)\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("; top.example.org. IN CNAME NOERROR fresh, expires in 900s\n"),
            std::string::npos);
  EXPECT_NE(r.find("; www.example.com. IN CNAME NOERROR fresh, expires in 3600s\n"),
            std::string::npos);
  EXPECT_NE(r.find("; [old] alias.example.org. IN A NOERROR fresh, expires in 600s\n"),
            std::string::npos);
  EXPECT_NE(r.find("; [old] www.example.com. IN A NOERROR fresh, expires in 300s\n"),
            std::string::npos);
  EXPECT_NE(r.find("; lb.example.net. IN A NOERROR fresh, expires in 60s\n"), std::string::npos);
  EXPECT_NE(r.find("\t600\tIN\tA\t192.0.2.1\t; old\n"), std::string::npos);
  EXPECT_NE(r.find("\t60\tIN\tA\t198.51.100.7\n"), std::string::npos);
  EXPECT_EQ(r.find("other.example.com"), std::string::npos);
  // The last old copy is alias.example.org's (600 s); stale-max 86400 s on top.
  EXPECT_NE(r.find("; last old copy served fresh until "), std::string::npos);
  EXPECT_NE(r.find(" (in 600s)\n"), std::string::npos);
  EXPECT_NE(r.find("(stale-max 86400s), until "), std::string::npos);
  EXPECT_NE(r.find(" (in 87000s)\n"), std::string::npos);
  EXPECT_EQ(shared_.cache.stats().entries, 6u);  // nothing flushed
}

TEST_F(DrainTest, StaleCopiesAndFlushOldRemovesExactlyTheOldOnes) {
  fill();
  now_ += std::chrono::seconds{310};  // www.example.com A (300 s) is now stale
  std::string r = control("drain lb.example.net --old=A=192.0.2.1 --old AAAA=2001:db8::1");
  EXPECT_NE(r.find("; [old] www.example.com. IN A NOERROR stale, expired 10s ago, servable stale "
                   "for 86390s more\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("(A 192.0.2.1, AAAA 2001:db8::1)"), std::string::npos);
  EXPECT_NE(r.find(" (in 290s)\n"), std::string::npos);  // alias's copy, fresh until 600 s

  r = control("drain lb.example.net --old 192.0.2.1 --flush-old");
  EXPECT_NE(r.find("; flushed 2 entries holding an old address\n"), std::string::npos) << r;
  EXPECT_NE(r.find("; [old] alias.example.org. IN A NOERROR fresh, expires in 290s; flushed\n"),
            std::string::npos);
  EXPECT_EQ(shared_.cache.stats().entries, 4u);
  const std::string dump = control("dump");
  EXPECT_EQ(dump.find("; alias.example.org. IN A"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("; www.example.com. IN A "), std::string::npos);
  EXPECT_NE(dump.find("; www.example.com. IN CNAME"), std::string::npos);
  EXPECT_NE(dump.find("; lb.example.net. IN A"), std::string::npos);
  EXPECT_NE(dump.find("; other.example.com. IN A"), std::string::npos);  // old address, other name

  r = control("drain lb.example.net --old 192.0.2.1");
  // top.example.org's CNAME led to lb.example.net only through alias's flushed answer.
  EXPECT_NE(r.find("; 2 entries lead to lb.example.net.; 0 hold an old address"), std::string::npos)
      << r;
  EXPECT_NE(r.find("; no old copy in this cache\n"), std::string::npos);
}

TEST_F(DrainTest, BadDrainLinesAreErrors) {
  fill();
  for (std::string_view line :
       {"drain", "drain --old 192.0.2.1", "drain a.example b.example", "drain a..example",
        "drain a.example --old", "drain a.example --old 300.1.1.1",
        "drain a.example --old MX=1.2.3.4", "drain a.example --old A=2001:db8::1",
        "drain a.example --old AAAA=192.0.2.1", "drain a.example --flush-old",
        "drain a.example --bogus", "drain a.example --old="}) {
    const std::string r = control(line);
    EXPECT_TRUE(r.starts_with("error: ")) << line << " → " << r;
    EXPECT_EQ(r.find('\n'), r.size() - 1) << line;
  }
  EXPECT_EQ(shared_.cache.stats().entries, 6u);
}

TEST(OldAddress, ParsesTypedAndUntypedAddresses) {
  auto a = parse_old_address("192.0.2.1");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->type, wire::RRType::A);
  EXPECT_EQ(a->text, "A 192.0.2.1");
  auto b = parse_old_address("aaaa=2001:DB8::1");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->type, wire::RRType::AAAA);
  EXPECT_EQ(b->bytes[0], 0x20);
  EXPECT_EQ(b->bytes[15], 1);
  EXPECT_TRUE(parse_old_address("2001:db8::1").has_value());
  EXPECT_FALSE(parse_old_address("").has_value());
  EXPECT_FALSE(parse_old_address("example.com").has_value());
}

TEST(ShadowConfig, FlagsFileAndReload) {
  ParseOptions o;
  o.local_addresses = std::vector<Endpoint>{};
  const char* argv[] = {"hourglassd",   "--upstream",     "192.0.2.53",
                        "--shadow-ttl", "Example.com=60", "--shadow-ttl",
                        "b.test=1h",    "--shadow-size",  "1MiB"};
  auto r = parse_config(static_cast<int>(std::size(argv)), argv, o);
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  const Config& c = std::get<Config>(r);
  ASSERT_EQ(c.shadow_ttls.size(), 2u);
  EXPECT_EQ(c.shadow_ttls[1].zone, "b.test");
  EXPECT_EQ(c.shadow_ttls[1].cap.count(), 3600);
  EXPECT_TRUE(c.shadow_ttls_from_cli);
  EXPECT_EQ(c.shadow_size, 1u << 20);
  const std::string toml = to_toml(c);
  EXPECT_NE(toml.find("shadow-ttl = [\"Example.com=60\", \"b.test=3600\"]\n"), std::string::npos)
      << toml;
  EXPECT_NE(toml.find("shadow-size = \"1MiB\"\n"), std::string::npos);

  char path[] = "/tmp/hg-shadow-conf-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "[shadow-ttl]\n\"a.test\" = 60\n\"c.test\" = \"5m\"\n";
  auto read = read_shadow_ttls(path);
  ASSERT_TRUE(read.has_value()) << read.error();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ(read.value()[1].cap.count(), 300);
  std::ofstream(path) << "shadow-ttl = [\"a.test=60\", \"a.test=30\"]\n";
  EXPECT_FALSE(read_shadow_ttls(path).has_value());
  std::ofstream(path) << "cache-size = \"1MiB\"\n";
  read = read_shadow_ttls(path);
  ASSERT_TRUE(read.has_value());
  EXPECT_TRUE(read->empty());
  std::remove(path);

  const char* bad[] = {"hourglassd", "--upstream", "192.0.2.53", "--shadow-ttl", "example.com"};
  auto e = parse_config(static_cast<int>(std::size(bad)), bad, o);
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(e));
  EXPECT_EQ(std::get<ConfigExit>(e).exit_code, 2);
  EXPECT_NE(std::get<ConfigExit>(e).message.find("--shadow-ttl \"example.com\""),
            std::string::npos);
}

// Found by the control fuzz target: `shadow set` with ever new zones grew the per-query zone
// scan and the `stats` reply without bound. The control socket refuses the zone past the bound
// with one error line, and the configuration refuses more --shadow-ttl flags than that.
TEST_F(RehearsalEngineTest, ShadowZonesPastTheBoundAreRefusedWithOneErrorLine) {
  for (std::size_t i = 0; i < cache::ShadowTable::kMaxZones; ++i)
    ASSERT_TRUE(control(fmt::format("shadow set z{}.test 60", i)).starts_with("ok: ")) << i;
  const std::string r = control("shadow set one-too-many.test 60");
  EXPECT_EQ(r, fmt::format("error: {} shadow zones are set, the most there can be; clear one "
                           "first (shadow clear ZONE)\n",
                           cache::ShadowTable::kMaxZones));
  EXPECT_EQ(shared_.shadow.list().size(), cache::ShadowTable::kMaxZones);
  EXPECT_EQ(control("shadow set z0.test 30"), "ok: shadow-ttl z0.test. 30\n");
  EXPECT_EQ(control("shadow clear z1.test"), "ok: shadow clear z1.test.\n");
  EXPECT_EQ(control("shadow set one-too-many.test 60"), "ok: shadow-ttl one-too-many.test. 60\n");
}

TEST(ShadowConfig, MoreShadowZonesThanTheBoundAreRefused) {
  std::vector<std::string> args{"--upstream", "192.0.2.53"};
  for (std::size_t i = 0; i <= cache::ShadowTable::kMaxZones; ++i) {
    args.emplace_back("--shadow-ttl");
    args.push_back(fmt::format("z{}.test=60", i));
  }
  auto r = parse_args(args);
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(r));
  const ConfigExit& e = std::get<ConfigExit>(r);
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(
      e.message.find(fmt::format("--shadow-ttl \"z{}.test=60\"", cache::ShadowTable::kMaxZones)),
      std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("at most 64 shadow zones"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace hg::resolver
