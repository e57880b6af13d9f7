// Routing (resolver/query/local_names.h) and its settings (resolver/routing_settings.h): the
// parsers, which rule a name takes, the answers given here, and the query engine sending a forward
// zone's misses to that zone's servers only.
#include "resolver/query/local_names.h"
#include "resolver/routing_settings.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <deque>
#include <fstream>
#include <string>

#include "resolver/query/query_engine.h"
#include "tests/resolver/parse_args.h"
#include "tests/wire/packet_builder.h"
#include "tests/wire/test_names.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using wire::RCode;
using wire::RRType;
using wire::test::Bytes;
using wire::test::N;
using wire::test::PacketBuilder;

std::shared_ptr<const Routing> build(std::vector<std::string> forward,
                                     std::string_view hosts = "") {
  Routing::Input in;
  for (const auto& f : forward)
    in.forward.push_back(parse_forward_spec(f).value());
  if (!hosts.empty()) {
    auto p = parse_hosts(hosts);
    in.hosts.push_back(HostsFile{"/test/hosts", p.lines});
  }
  auto r = Routing::build(in);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r.value();
}

// --- parsers ------------------------------------------------------------------------------

TEST(ForwardSpec, ZoneAndServersWithPortsAndIpv6) {
  auto f = parse_forward_spec("corp.example=127.0.0.2,127.0.0.3:5353,[::1]:54");
  ASSERT_TRUE(f.has_value()) << f.error();
  EXPECT_EQ(f->zone, "corp.example");
  ASSERT_EQ(f->servers.size(), 3u);
  EXPECT_EQ(f->servers[0].to_string(), "127.0.0.2:53");
  EXPECT_EQ(f->servers[1].to_string(), "127.0.0.3:5353");
  EXPECT_EQ(f->servers[2].to_string(), "[::1]:54");
  // A server given twice counts once.
  EXPECT_EQ(parse_forward_spec("a.example=127.0.0.2,127.0.0.2:53")->servers.size(), 1u);
  EXPECT_TRUE(parse_forward_spec("10.in-addr.arpa.=127.0.0.2").has_value());
}

TEST(ForwardSpec, BadSpecsAreRefusedWithTheReason) {
  for (std::string_view bad :
       {"corp.example", "corp.example=", "=127.0.0.1", ".=127.0.0.1", "corp.example=host.name",
        "corp.example=127.0.0.1,,127.0.0.2", "corp.example=127.0.0.1:0", "a..b=127.0.0.1",
        "corp.example=127.0.0.1:99999", "x\\.y=127.0.0.1",
        "z=127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,"
        "127.0.0.9"}) {
    auto f = parse_forward_spec(bad);
    EXPECT_FALSE(f.has_value()) << bad;
    if (!f) {
      EXPECT_NE(f.error().find("expected ZONE=ADDR"), std::string::npos) << f.error();
    }
  }
  EXPECT_NE(parse_forward_spec(".=127.0.0.1").error().find("--upstream"), std::string::npos);
}

TEST(HostsParse, AddressesNamesAliasesCommentsAndMalformedLinesByNumber) {
  auto p = parse_hosts(
      "# comment\n"
      "127.0.0.1\tlocalhost\n"
      "192.0.2.10 host.example host   # trailing comment\r\n"
      "\n"
      "not-an-address name\n"
      "192.0.2.11\n"
      "fe80::1%eth0 scoped\n"
      "2001:db8::1 v6.example\n"
      "192.0.2.12 bad\\name\n");
  ASSERT_EQ(p.lines.size(), 3u);
  EXPECT_EQ(p.lines[1].family, AF_INET);
  EXPECT_EQ(p.lines[1].line, 3u);
  ASSERT_EQ(p.lines[1].names.size(), 2u);
  EXPECT_EQ(p.lines[2].family, AF_INET6);
  ASSERT_EQ(p.errors.size(), 4u);
  EXPECT_TRUE(p.errors[0].starts_with("5: ")) << p.errors[0];
  EXPECT_TRUE(p.errors[1].starts_with("6: ")) << p.errors[1];
  EXPECT_NE(p.errors[2].find("scoped"), std::string::npos) << p.errors[2];
  EXPECT_TRUE(p.errors[3].starts_with("9: ")) << p.errors[3];
}

TEST(HostsParse, HostileTextNeverCrashesAndLongFieldsAreCut) {
  std::string text(70000, 'a');
  text += "\n1.2.3.4 " + std::string(300, 'b') + "\n\0\0\n";
  auto p = parse_hosts(text);
  EXPECT_TRUE(p.lines.empty());
  EXPECT_EQ(p.errors.size(), 2u);
  for (const auto& e : p.errors)
    EXPECT_LT(e.size(), 200u) << e;
}

TEST(ReverseName, Ipv4AndIpv6) {
  const uint8_t v4[4] = {192, 0, 2, 1};
  EXPECT_EQ(reverse_name(AF_INET, v4).to_text(), "1.2.0.192.in-addr.arpa.");
  uint8_t v6[16] = {};
  ::inet_pton(AF_INET6, "2001:db8::567:89ab", v6);
  EXPECT_EQ(reverse_name(AF_INET6, v6).to_text(),
            "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.");
}

// --- which rule -----------------------------------------------------------------------------

TEST(Routing, SpecialUseZonesAreLocalAndOrdinaryNamesGoUpstream) {
  auto r = build({});
  for (std::string_view local :
       {"localhost",
        "foo.LOCALHOST",
        "invalid",
        "x.invalid",
        "x.onion",
        "router.home.arpa",
        "1.0.168.192.in-addr.arpa",
        "1.0.0.10.in-addr.arpa",
        "5.20.172.in-addr.arpa",
        "1.1.64.100.in-addr.arpa",
        "9.9.127.100.in-addr.arpa",
        "1.254.169.in-addr.arpa",
        "255.255.255.255.in-addr.arpa",
        "1.2.0.192.in-addr.arpa",
        "0.0.0.0.in-addr.arpa",
        "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa",
        "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa",
        "1.0.8.e.f.ip6.arpa",
        "1.b.e.f.ip6.arpa",
        "1.8.b.d.0.1.0.0.2.ip6.arpa"}) {
    const auto k = r->route(N(local), RRType::A).kind;
    EXPECT_TRUE(k == RouteKind::LocalZone || k == RouteKind::Hosts) << local;
  }
  for (std::string_view up :
       {"example.com", "1.0.15.172.in-addr.arpa", "1.0.32.172.in-addr.arpa",
        "1.1.63.100.in-addr.arpa", "1.1.128.100.in-addr.arpa", "8.8.8.8.in-addr.arpa",
        "1.c.e.f.ip6.arpa", "home.arpa.com", "localhost.example", "onion.example"})
    EXPECT_EQ(r->route(N(up), RRType::A).kind, RouteKind::Upstream) << up;
  // The root and TLD queries a validator makes go upstream.
  EXPECT_EQ(r->route(N("."), RRType::NS).kind, RouteKind::Upstream);
  EXPECT_EQ(r->route(N("com"), RRType::DS).kind, RouteKind::Upstream);
  EXPECT_EQ(r->route(N("com"), RRType::SOA).kind, RouteKind::Upstream);
  EXPECT_EQ(r->route(N("arpa"), RRType::NS).kind, RouteKind::Upstream);
}

TEST(Routing, SingleLabelAddressQueriesAreAnsweredHereOtherTypesGoUpstream) {
  auto r = build({});
  EXPECT_EQ(r->route(N("wpad"), RRType::A).kind, RouteKind::SingleLabel);
  EXPECT_EQ(r->route(N("myhost"), RRType::AAAA).kind, RouteKind::SingleLabel);
  EXPECT_EQ(r->route(N("myhost"), RRType::ANY).kind, RouteKind::SingleLabel);
  EXPECT_EQ(r->route(N("myhost"), RRType::MX).kind, RouteKind::Upstream);
  // A forward zone or a hosts name with one label takes it.
  auto f = build({"lan=127.0.0.2"}, "192.0.2.5 printer\n");
  EXPECT_EQ(f->route(N("lan"), RRType::A).kind, RouteKind::Forward);
  EXPECT_EQ(f->route(N("printer"), RRType::A).kind, RouteKind::Hosts);
}

TEST(Routing, LongestForwardZoneWinsAndEachZoneHasItsServerSet) {
  auto r = build({"corp.example=127.0.0.2,127.0.0.3", "eng.corp.example=127.0.0.4",
                  "10.in-addr.arpa=127.0.0.5", "other.example=127.0.0.3,127.0.0.2"});
  ASSERT_EQ(r->server_sets().size(), 4u);  // the order of the servers makes a set distinct
  const auto a = r->route(N("www.corp.example"), RRType::A);
  const auto b = r->route(N("x.ENG.corp.example"), RRType::A);
  const auto c = r->route(N("eng.corp.example"), RRType::A);
  const auto d = r->route(N("1.0.0.10.in-addr.arpa"), RRType::PTR);
  EXPECT_EQ(a.kind, RouteKind::Forward);
  EXPECT_EQ(b.kind, RouteKind::Forward);
  EXPECT_EQ(d.kind, RouteKind::Forward);
  EXPECT_EQ(r->server_sets()[a.index].size(), 2u);
  EXPECT_EQ(r->server_sets()[b.index][0].to_string(), "127.0.0.4:53");
  EXPECT_EQ(c.index, b.index);
  EXPECT_EQ(r->server_sets()[d.index][0].to_string(), "127.0.0.5:53");
  EXPECT_EQ(r->route(N("corp.example.com"), RRType::A).kind, RouteKind::Upstream);
  EXPECT_EQ(r->route(N("xcorp.example"), RRType::A).kind, RouteKind::Upstream);
  // Same servers, same set.
  auto s = build({"a.example=127.0.0.2", "b.example=127.0.0.2"});
  EXPECT_EQ(s->server_sets().size(), 1u);
}

TEST(Routing, AForwardZoneSwitchesOffTheSpecialZonesAtAndBelowIt) {
  auto r = build({"home.arpa=127.0.0.2", "in-addr.arpa=127.0.0.3", "sub.invalid=127.0.0.4"});
  EXPECT_EQ(r->route(N("router.home.arpa"), RRType::A).kind, RouteKind::Forward);
  EXPECT_EQ(r->route(N("1.0.168.192.in-addr.arpa"), RRType::PTR).kind, RouteKind::Forward);
  // 127.0.0.1's built-in PTR is below the forwarded in-addr.arpa too.
  EXPECT_EQ(r->route(N("1.0.0.127.in-addr.arpa"), RRType::PTR).kind, RouteKind::Forward);
  // A forward zone below a special zone takes only its own subtree.
  EXPECT_EQ(r->route(N("a.sub.invalid"), RRType::A).kind, RouteKind::Forward);
  EXPECT_EQ(r->route(N("a.invalid"), RRType::A).kind, RouteKind::LocalZone);
  // ip6.arpa was not forwarded.
  EXPECT_EQ(r->route(N("1.b.e.f.ip6.arpa"), RRType::PTR).kind, RouteKind::LocalZone);
}

TEST(Routing, HostsNamesWinOverZonesButNotOverLocalhost) {
  auto r = build({"corp.example=127.0.0.2"},
                 "192.0.2.7 printer.corp.example\n127.0.0.1 localhost\n::2 localhost\n");
  EXPECT_EQ(r->route(N("printer.corp.example"), RRType::MX).kind, RouteKind::Hosts);
  EXPECT_EQ(r->route(N("www.corp.example"), RRType::A).kind, RouteKind::Forward);
  // localhost stays RFC 6761's: both loopback addresses, whatever the file says.
  EXPECT_EQ(r->route(N("localhost"), RRType::AAAA).kind, RouteKind::LocalZone);
}

// --- answers -------------------------------------------------------------------------------

struct Local {
  Bytes bytes;
  wire::Message msg;
};

Local ask(const Routing& r, std::string_view name, RRType type, std::size_t limit = 1232,
          bool edns = true) {
  PacketBuilder b;
  b.id(0x4242).flags(0x0100).question(name, static_cast<uint16_t>(type));
  if (edns) b.opt(1232);
  const Bytes q = b.build();
  wire::Message scratch;
  ClientQuery cq;
  std::vector<uint8_t> err(512);
  const auto adm = admit_query(q, true, scratch, cq, err);
  EXPECT_EQ(adm.action, Admission::Resolve);
  Local out;
  out.bytes.resize(limit);
  RCode rc{};
  const auto m = r.route(*cq.qname, cq.qtype);
  const std::size_t n = r.answer(m, cq, out.bytes, limit, rc);
  EXPECT_GT(n, 0u);
  EXPECT_LE(n, limit);
  out.bytes.resize(n);
  EXPECT_TRUE(out.msg.parse(out.bytes, wire::ParseMode::Strict).has_value()) << name;
  EXPECT_EQ(out.msg.rcode(), rc);
  EXPECT_EQ(out.msg.header().id, 0x4242);
  return out;
}

std::string rdata_ip(const Local& l, const wire::RecordView& rv) {
  char buf[64] = {};
  ::inet_ntop(rv.rdlength == 4 ? AF_INET : AF_INET6, l.bytes.data() + rv.rdata_offset, buf,
              sizeof buf);
  return buf;
}

TEST(LocalAnswers, LocalhostIsLoopbackForEveryNameBelowItAndNodataWithSoaOtherwise) {
  auto r = build({});
  auto a = ask(*r, "Foo.LocalHost", RRType::A);
  EXPECT_EQ(a.msg.rcode(), RCode::NoError);
  EXPECT_TRUE(a.msg.header().has(wire::flag::AA));
  ASSERT_EQ(a.msg.section(wire::Section::Answer).size(), 1u);
  EXPECT_EQ(rdata_ip(a, a.msg.section(wire::Section::Answer)[0]), "127.0.0.1");
  // The answer echoes the client's letter case (the owner points at the question).
  EXPECT_EQ(a.bytes[13], 'F');
  auto aaaa = ask(*r, "localhost", RRType::AAAA);
  ASSERT_EQ(aaaa.msg.section(wire::Section::Answer).size(), 1u);
  EXPECT_EQ(rdata_ip(aaaa, aaaa.msg.section(wire::Section::Answer)[0]), "::1");
  auto mx = ask(*r, "localhost", RRType::MX);
  EXPECT_EQ(mx.msg.rcode(), RCode::NoError);
  EXPECT_TRUE(mx.msg.section(wire::Section::Answer).empty());
  ASSERT_EQ(mx.msg.section(wire::Section::Authority).size(), 1u);
  EXPECT_EQ(mx.msg.section(wire::Section::Authority)[0].type, RRType::SOA);
  ASSERT_TRUE(mx.msg.edns().has_value());
}

TEST(LocalAnswers, InvalidOnionAndPrivateReverseNamesAreNxdomainWithTheZonesSoa) {
  auto r = build({});
  for (auto [name, zone] : std::vector<std::pair<std::string_view, std::string_view>>{
           {"x.invalid", "invalid."},
           {"invalid", "invalid."},
           {"abc.onion", "onion."},
           {"router.home.arpa", "home.arpa."},
           {"1.0.168.192.in-addr.arpa", "168.192.in-addr.arpa."},
           {"1.0.0.10.in-addr.arpa", "10.in-addr.arpa."},
           {"2.0.0.127.in-addr.arpa", "127.in-addr.arpa."}}) {
    auto l = ask(*r, name, RRType::PTR);
    EXPECT_EQ(l.msg.rcode(), RCode::NXDomain) << name;
    ASSERT_EQ(l.msg.section(wire::Section::Authority).size(), 1u) << name;
    const auto& soa = l.msg.section(wire::Section::Authority)[0];
    EXPECT_EQ(soa.type, RRType::SOA);
    EXPECT_EQ(soa.ttl, kLocalZoneTtl);
    wire::WireReader rd(l.bytes);
    ASSERT_TRUE(rd.seek(soa.offset).has_value());
    EXPECT_EQ(wire::read_name(rd)->to_text(), zone) << name;
  }
  // The apex of an RFC 6303 zone exists: SOA, NS, and NODATA for the rest.
  auto soa = ask(*r, "168.192.in-addr.arpa", RRType::SOA);
  EXPECT_EQ(soa.msg.rcode(), RCode::NoError);
  EXPECT_EQ(soa.msg.section(wire::Section::Answer).size(), 1u);
  auto ns = ask(*r, "10.in-addr.arpa", RRType::NS);
  EXPECT_EQ(ns.msg.section(wire::Section::Answer).size(), 1u);
  auto txt = ask(*r, "10.in-addr.arpa", RRType::TXT);
  EXPECT_EQ(txt.msg.rcode(), RCode::NoError);
  EXPECT_EQ(txt.msg.section(wire::Section::Authority).size(), 1u);
}

TEST(LocalAnswers, EverySpecialZoneAnswersEveryTypeAtAndBelowItsApexEvenWhenTight) {
  auto r = build({});
  std::size_t checked = 0;
  for (const SpecialZone& z : special_zones()) {
    for (const std::string& name : {z.name, "x." + z.name}) {
      for (RRType t : {RRType::A, RRType::AAAA, RRType::PTR, RRType::SOA, RRType::NS, RRType::ANY,
                       RRType::TXT}) {
        const auto m = r->route(N(name), t);
        if (m.kind == RouteKind::Hosts) continue;  // ::1's reverse name: the built-in PTR
        ASSERT_EQ(m.kind, RouteKind::LocalZone) << name;
        // ask() checks each answer parses strictly, fits the limit and carries its rcode; 60
        // bytes hold the question and OPT but not every record (TC at a record boundary).
        const auto full = ask(*r, name, t);
        const auto tight = ask(*r, name, t, 60 + name.size());
        EXPECT_EQ(full.msg.rcode(), tight.msg.rcode()) << name;
        // Only localhost and resolver.arpa have names below the apex; NODATA carries the SOA.
        const bool nx = full.msg.rcode() == RCode::NXDomain;
        EXPECT_EQ(nx, z.kind == LocalZoneKind::Nxdomain ||
                          (name != z.name && z.kind != LocalZoneKind::Localhost &&
                           z.kind != LocalZoneKind::Nodata))
            << name << " " << static_cast<int>(t);
        if (full.msg.section(wire::Section::Answer).empty()) {
          EXPECT_EQ(full.msg.section(wire::Section::Authority).size(), 1u) << name;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, (special_zones().size() * 2 - 1) * 7);
  // RFC 8880 §7's records, with their TTL.
  auto a = ask(*r, "IPv4only.arpa", RRType::A);
  ASSERT_EQ(a.msg.section(wire::Section::Answer).size(), 2u);
  EXPECT_EQ(rdata_ip(a, a.msg.section(wire::Section::Answer)[0]), "192.0.0.170");
  EXPECT_EQ(rdata_ip(a, a.msg.section(wire::Section::Answer)[1]), "192.0.0.171");
  EXPECT_EQ(a.msg.section(wire::Section::Answer)[0].ttl, kIpv4onlyTtl);
  auto ptr = ask(*r, "171.0.0.192.in-addr.arpa", RRType::PTR);
  ASSERT_EQ(ptr.msg.section(wire::Section::Answer).size(), 1u);
  wire::WireReader rd(ptr.bytes);
  ASSERT_TRUE(rd.seek(ptr.msg.section(wire::Section::Answer)[0].rdata_offset).has_value());
  EXPECT_EQ(wire::read_name(rd)->to_text(), "ipv4only.arpa.");
}

TEST(LocalAnswers, LoopbackPtrIsLocalhost) {
  auto r = build({});
  for (std::string_view name :
       {"1.0.0.127.in-addr.arpa",
        "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa"}) {
    auto l = ask(*r, name, RRType::PTR);
    EXPECT_EQ(l.msg.rcode(), RCode::NoError) << name;
    ASSERT_EQ(l.msg.section(wire::Section::Answer).size(), 1u) << name;
    wire::WireReader rd(l.bytes);
    ASSERT_TRUE(rd.seek(l.msg.section(wire::Section::Answer)[0].rdata_offset).has_value());
    EXPECT_EQ(wire::read_name(rd)->to_text(), "localhost.");
  }
}

TEST(LocalAnswers, HostsGiveBothFamiliesAliasesPtrAndNodataForTheOtherFamily) {
  auto r = build({}, "192.0.2.10 host.example alias\n192.0.2.11 host.example\n2001:db8::9 v6\n");
  auto a = ask(*r, "ALIAS", RRType::A);
  ASSERT_EQ(a.msg.section(wire::Section::Answer).size(), 1u);
  EXPECT_EQ(a.msg.section(wire::Section::Answer)[0].ttl, kHostsTtl);
  auto both = ask(*r, "host.example", RRType::A);
  EXPECT_EQ(both.msg.section(wire::Section::Answer).size(), 2u);
  auto none = ask(*r, "host.example", RRType::AAAA);
  EXPECT_EQ(none.msg.rcode(), RCode::NoError);
  EXPECT_TRUE(none.msg.section(wire::Section::Answer).empty());
  EXPECT_TRUE(none.msg.section(wire::Section::Authority).empty());  // not cacheable
  auto v6 = ask(*r, "v6", RRType::AAAA);
  ASSERT_EQ(v6.msg.section(wire::Section::Answer).size(), 1u);
  EXPECT_EQ(rdata_ip(v6, v6.msg.section(wire::Section::Answer)[0]), "2001:db8::9");
  auto ptr = ask(*r, "10.2.0.192.in-addr.arpa", RRType::PTR);
  ASSERT_EQ(ptr.msg.section(wire::Section::Answer).size(), 1u);
  wire::WireReader rd(ptr.bytes);
  ASSERT_TRUE(rd.seek(ptr.msg.section(wire::Section::Answer)[0].rdata_offset).has_value());
  EXPECT_EQ(wire::read_name(rd)->to_text(), "host.example.");
}

TEST(LocalAnswers, ManyAddressesAreCutAtARecordWithTcOverUdp) {
  std::string hosts;
  for (int i = 0; i < 200; ++i)
    hosts += "2001:db8::" + std::to_string(i + 1) + " many.example\n";
  auto r = build({}, hosts);
  auto l = ask(*r, "many.example", RRType::AAAA, 512, false);
  EXPECT_TRUE(l.msg.header().tc());
  EXPECT_LE(l.bytes.size(), 512u);
  EXPECT_GT(l.msg.section(wire::Section::Answer).size(), 5u);
  auto full = ask(*r, "many.example", RRType::AAAA, 65535);
  EXPECT_FALSE(full.msg.header().tc());
}

TEST(LocalAnswers, SingleLabelNodataHasNoSoaAndNoAa) {
  auto r = build({});
  auto l = ask(*r, "wpad", RRType::A);
  EXPECT_EQ(l.msg.rcode(), RCode::NoError);
  EXPECT_FALSE(l.msg.header().has(wire::flag::AA));
  EXPECT_TRUE(l.msg.records().empty());
}

TEST(RoutingDescribe, SaysWhichRuleAndTheServers) {
  auto r = build({"corp.example=127.0.0.2,127.0.0.3"}, "192.0.2.1 box\n");
  const std::vector<Endpoint> ups{*parse_endpoint("127.0.0.9", 53)};
  EXPECT_NE(r->describe(N("a.corp.example"), ups)
                .find("forward zone corp.example. servers "
                      "127.0.0.2:53 127.0.0.3:53"),
            std::string::npos);
  EXPECT_NE(r->describe(N("box"), ups).find("hosts /test/hosts:1"), std::string::npos);
  EXPECT_NE(r->describe(N("x.invalid"), ups).find("local zone invalid. (RFC 6761"),
            std::string::npos);
  EXPECT_NE(r->describe(N("example.com"), ups).find("default upstreams 127.0.0.9:53"),
            std::string::npos);
  EXPECT_NE(r->describe(N("wpad"), ups).find("single-label"), std::string::npos);
}

// --- the engine -------------------------------------------------------------------------------

class RoutingEngineTest : public ::testing::Test {
 protected:
  RoutingEngineTest()
      : loop_(EventLoop::Options{.clock = [this] { return now_; }}),
        shared_(Config{}),
        engine_(
            shared_, loop_,
            [this](std::span<const uint8_t> q, Upstream::Callback) {
              default_.push_back(Bytes(q.begin(), q.end()));
            },
            0) {
    engine_.set_routing(build({"corp.example=127.0.0.2", "eng.corp.example=127.0.0.3"}),
                        [this](uint32_t set, std::span<const uint8_t> q, Upstream::Callback) {
                          forwarded_.emplace_back(set, Bytes(q.begin(), q.end()));
                        });
    sink_ = [](std::span<const uint8_t>) {};
    route_.sink = &sink_;
    loop_.run_once(Millis{0});
  }
  QueryEngine::Outcome ask(std::string_view name, uint16_t type, Bytes& out) {
    PacketBuilder b;
    b.id(7).flags(0x0100).question(name, type).opt(1232);
    out.assign(1232, 0);
    return engine_.on_query(b.build(), nullptr, route_, out);
  }

  MonoTime now_{Millis{10'000'000}};
  EventLoop loop_;
  Shared shared_;
  QueryEngine engine_;
  std::vector<Bytes> default_;
  std::vector<std::pair<uint32_t, Bytes>> forwarded_;
  std::function<void(std::span<const uint8_t>)> sink_;
  Route route_;
};

TEST_F(RoutingEngineTest, SpecialNamesNeverReachAnUpstreamAndAreCounted) {
  Bytes out;
  for (std::string_view n :
       {"localhost", "x.invalid", "y.onion", "1.0.0.10.in-addr.arpa", "wpad"}) {
    const auto o = ask(n, 1, out);
    EXPECT_GT(o.size, 0u) << n;
    EXPECT_FALSE(o.deferred);
  }
  EXPECT_TRUE(default_.empty());
  EXPECT_TRUE(forwarded_.empty());
  EXPECT_EQ(shared_.stats.local_answers.load(), 5u);
  EXPECT_EQ(shared_.stats.upstream_queries.load(), 0u);
  EXPECT_EQ(shared_.cache.stats().entries, 0u);  // answered before the cache, never stored
}

TEST_F(RoutingEngineTest, ForwardZonesMissesGoToTheirOwnSetLongestMatchFirst) {
  Bytes out;
  EXPECT_TRUE(ask("www.corp.example", 1, out).deferred);
  EXPECT_TRUE(ask("a.eng.corp.example", 1, out).deferred);
  EXPECT_TRUE(ask("www.example.com", 1, out).deferred);
  ASSERT_EQ(forwarded_.size(), 2u);
  EXPECT_EQ(forwarded_[0].first, 0u);
  EXPECT_EQ(forwarded_[1].first, 1u);
  EXPECT_EQ(default_.size(), 1u);
  EXPECT_EQ(shared_.stats.forwarded.load(), 2u);
  // The same name again joins the query in flight (coalescing is by name, as before).
  EXPECT_TRUE(ask("www.corp.example", 1, out).deferred);
  EXPECT_EQ(forwarded_.size(), 2u);
  EXPECT_EQ(shared_.stats.coalesced.load(), 1u);
}

}  // namespace
}  // namespace hg::resolver

// --- configuration ----------------------------------------------------------------------------

namespace hg::resolver {
namespace {

std::string write_temp(std::string_view name, std::string_view text) {
  const std::string p =
      ::testing::TempDir() + "hg_ln_" + std::to_string(::getpid()) + "_" + std::string(name);
  std::ofstream(p) << text;
  return p;
}

TEST(RoutingConfig, ForwardAndHostsFileFlagsAndTheirTomlForms) {
  auto r = parse_args({"--upstream", "192.0.2.1", "--forward", "corp.example=127.0.0.2,127.0.0.3",
                       "--forward", "10.in-addr.arpa=127.0.0.4", "--hosts-file", "/etc/hosts"});
  ASSERT_TRUE(std::holds_alternative<Config>(r)) << std::get<ConfigExit>(r).message;
  const Config c = std::get<Config>(r);
  ASSERT_EQ(c.forward_zones.size(), 2u);
  EXPECT_EQ(c.forward_zones[0].servers.size(), 2u);
  EXPECT_EQ(c.hosts_files, std::vector<std::string>{"/etc/hosts"});
  EXPECT_TRUE(c.forward_from_cli);
  // to_toml() reads back to the same values.
  const std::string back_path = write_temp("back.toml", to_toml(c));
  auto back = parse_args({"--config", back_path});
  ASSERT_TRUE(std::holds_alternative<Config>(back)) << std::get<ConfigExit>(back).message;
  EXPECT_EQ(std::get<Config>(back).forward_zones, c.forward_zones);
  EXPECT_EQ(std::get<Config>(back).hosts_files, c.hosts_files);
  std::remove(back_path.c_str());

  // The table form, with a list or one string per zone.
  const std::string t = write_temp("table.toml",
                                   "upstream = [\"192.0.2.1\"]\n[forward]\n"
                                   "\"corp.example\" = [\"127.0.0.2\", \"127.0.0.3:5353\"]\n"
                                   "\"home.arpa\" = \"127.0.0.5\"\n");
  auto tr = parse_args({"--config", t});
  ASSERT_TRUE(std::holds_alternative<Config>(tr)) << std::get<ConfigExit>(tr).message;
  const auto& fz = std::get<Config>(tr).forward_zones;
  ASSERT_EQ(fz.size(), 2u);
  EXPECT_EQ(fz[0].servers[1].to_string(), "127.0.0.3:5353");
  EXPECT_FALSE(std::get<Config>(tr).forward_from_cli);
  // SIGHUP re-reads them from the file.
  auto again = reread_routing_settings(std::get<Config>(tr));
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ(again->first, fz);
  std::remove(t.c_str());
}

TEST(RoutingConfig, NoSpecialZoneAndSingleLabelFlagsAndTheirTomlForms) {
  auto r = parse_args({"--upstream", "192.0.2.1", "--no-special-zone", "TEST.", "--no-special-zone",
                       "168.192.in-addr.arpa", "--no-special-zone", "test", "--single-label",
                       "forward"});
  ASSERT_TRUE(std::holds_alternative<Config>(r)) << std::get<ConfigExit>(r).message;
  const Config c = std::get<Config>(r);
  EXPECT_EQ(c.no_special_zones, (std::vector<std::string>{"test", "168.192.in-addr.arpa"}));
  EXPECT_TRUE(c.single_label_forward);
  const std::string back_path = write_temp("special.toml", to_toml(c));
  auto back = parse_args({"--config", back_path});
  ASSERT_TRUE(std::holds_alternative<Config>(back)) << std::get<ConfigExit>(back).message;
  EXPECT_EQ(std::get<Config>(back).no_special_zones, c.no_special_zones);
  EXPECT_TRUE(std::get<Config>(back).single_label_forward);
  std::remove(back_path.c_str());
  EXPECT_FALSE(std::get<Config>(parse_args({"--upstream", "192.0.2.1"})).single_label_forward);
  // Not a built-in zone, or a mode that does not exist: refused, saying what is allowed.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--no-special-zone", "example.com"},
        {"--no-special-zone", "x.test"},
        {"--no-special-zone", ""},
        {"--single-label", "nxdomain"}}) {
    args.insert(args.begin(), {"--upstream", "192.0.2.1"});
    auto bad = parse_args(args);
    ASSERT_TRUE(std::holds_alternative<ConfigExit>(bad)) << args[3];
    const std::string& m = std::get<ConfigExit>(bad).message;
    EXPECT_TRUE(m.find("built-in special-use zones") != std::string::npos ||
                m.find("expected nodata or forward") != std::string::npos)
        << m;
  }
}

TEST(Routing, NoSpecialZoneAndSingleLabelForwardSendThoseNamesUpstream) {
  EXPECT_TRUE(is_special_zone("Test."));
  EXPECT_TRUE(is_special_zone("170.0.0.192.in-addr.arpa"));
  EXPECT_FALSE(is_special_zone("x.test"));
  EXPECT_FALSE(is_special_zone("arpa"));
  EXPECT_FALSE(is_special_zone(""));
  Routing::Input in;
  in.no_special = {"test", "localhost"};
  in.single_label_forward = true;
  in.hosts.push_back(HostsFile{"/test/hosts", parse_hosts("192.0.2.9 dev.localhost\n").lines});
  auto r = Routing::build(in).value();
  EXPECT_EQ(r->route(N("lab.test"), RRType::A).kind, RouteKind::Upstream);
  EXPECT_EQ(r->route(N("wpad"), RRType::A).kind, RouteKind::Upstream);
  EXPECT_EQ(r->route(N("x.alt"), RRType::A).kind, RouteKind::LocalZone);
  // With localhost switched off, a hosts file may name a name below it.
  EXPECT_EQ(r->route(N("dev.localhost"), RRType::A).kind, RouteKind::Hosts);
  EXPECT_EQ(r->route(N("foo.localhost"), RRType::A).kind, RouteKind::Upstream);
  // The default: all of them here.
  auto d = build({});
  for (std::string_view n : {"lab.test", "printer.local", "x.alt", "_dns.resolver.arpa",
                             "ipv4only.arpa", "170.0.0.192.in-addr.arpa"})
    EXPECT_EQ(d->route(N(n), RRType::A).kind, RouteKind::LocalZone) << n;
  EXPECT_EQ(d->route(N("172.0.0.192.in-addr.arpa"), RRType::PTR).kind, RouteKind::Upstream);
}

TEST(RoutingConfig, BadForwardValuesNameTheFlagAndWhatIsAllowed) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--forward", "corp.example"},
        std::vector<std::string>{"--forward", ".=127.0.0.2"},
        std::vector<std::string>{"--forward", "a.example=127.0.0.2", "--forward",
                                 "A.example.=127.0.0.3"}}) {
    args.insert(args.begin(), {"--upstream", "192.0.2.1"});
    auto r = parse_args(args);
    ASSERT_TRUE(std::holds_alternative<ConfigExit>(r)) << args.back();
    const auto& e = std::get<ConfigExit>(r);
    EXPECT_EQ(e.exit_code, 2);
    EXPECT_NE(e.message.find("--forward"), std::string::npos) << e.message;
  }
  // A forward zone's server that is our own listening socket is a loop.
  auto loop = parse_args({"--listen", "127.0.0.1:5353", "--upstream", "192.0.2.1", "--forward",
                          "corp.example=127.0.0.1:5353"});
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(loop));
  EXPECT_NE(std::get<ConfigExit>(loop).message.find("forwarding loop"), std::string::npos);
  EXPECT_NE(std::get<ConfigExit>(loop).message.find("corp.example"), std::string::npos);
}

}  // namespace
}  // namespace hg::resolver

// --- hosts files that are not what they seem -------------------------------------------------

namespace hg::resolver {
namespace {

TEST(HostsFileRead, AFifoADirectoryAndAHugeFileAreRefusedWithoutBlocking) {
  const std::string base = ::testing::TempDir() + "hg_ln_planted_" + std::to_string(::getpid());
  const std::string fifo = base + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = read_hosts_file(fifo);  // no writer: a blocking open would never return
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("not a regular file"), std::string::npos) << r.error();
  ::unlink(fifo.c_str());

  auto d = read_hosts_file(::testing::TempDir());
  EXPECT_FALSE(d.has_value());

  const std::string big = base + ".big";
  std::ofstream(big) << "192.0.2.1 a\n";
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kMaxHostsFileBytes) + 1), 0);
  auto b = read_hosts_file(big);
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().find("larger than"), std::string::npos) << b.error();
  ::unlink(big.c_str());

  auto missing = read_hosts_file(base + ".missing");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("cannot open"), std::string::npos);

  const std::string good = base + ".good";
  std::ofstream(good) << "192.0.2.1 a\nbad\n";
  auto g = read_hosts_file(good);
  ASSERT_TRUE(g.has_value()) << g.error();
  EXPECT_EQ(g->lines.size(), 1u);
  EXPECT_EQ(g->errors.size(), 1u);
  ::unlink(good.c_str());
}

}  // namespace
}  // namespace hg::resolver

// --- --local-record ---------------------------------------------------------------------------

namespace hg::resolver {
namespace {

TEST(LocalRecord, EachTypeParsesToItsWireForm) {
  auto a = parse_local_record("printer.lan 300 A 192.168.1.20");
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->type, RRType::A);
  EXPECT_EQ(a->ttl, 300u);
  EXPECT_EQ(a->rdata, (std::vector<uint8_t>{192, 168, 1, 20}));
  EXPECT_EQ(parse_local_record("x 0 aaaa 2001:db8::1")->rdata.size(), 16u);
  EXPECT_EQ(parse_local_record("www.lan 60 CNAME printer.lan")->rdata.size(), 13u);
  auto txt = parse_local_record(R"(t.lan 60 TXT "v=spf1 -all" bare "q\"x")");
  ASSERT_TRUE(txt.has_value()) << txt.error();
  EXPECT_EQ(txt->rdata.size(), 1u + 11 + 1 + 4 + 1 + 3);
  auto mx = parse_local_record("lan 60 MX 10 mail.lan");
  ASSERT_TRUE(mx.has_value()) << mx.error();
  EXPECT_EQ(mx->rdata[1], 10);
  auto srv = parse_local_record("_ipp._tcp.lan 60 SRV 0 5 631 printer.lan");
  ASSERT_TRUE(srv.has_value()) << srv.error();
  EXPECT_EQ(srv->rdata[5], 631 & 0xFF);
  EXPECT_TRUE(parse_local_record("1.1.168.192.in-addr.arpa 60 PTR printer.lan").has_value());
}

TEST(LocalRecord, BadRecordsSayWhatIsWrong) {
  for (std::string_view bad :
       {"", "x 60 A", "x 60 A 1.2.3", "x -1 A 1.2.3.4", "x 99999999999 A 1.2.3.4", "x 60 NS ns.x",
        "x 60 MX ten mail", "x 60 SRV 0 0 70000 t", "x 60 TXT \"open", "a..b 60 A 1.2.3.4",
        ". 60 A 1.2.3.4", "x 60 A 1.2.3.4 extra", "x 60 CNAME a..b"}) {
    auto r = parse_local_record(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r) {
      EXPECT_NE(r.error().find("expected 'NAME TTL TYPE DATA'"), std::string::npos) << r.error();
    }
  }
  EXPECT_FALSE(parse_local_record("t 60 TXT " + std::string(256, 'a')).has_value());
}

TEST(LocalRecord, AnsweredHereByTypeWithACnameAnsweringEveryType) {
  Routing::Input in;
  for (const char* t : {"srv.lan 60 SRV 0 0 631 printer.lan", "srv.lan 60 TXT hello",
                        "www.lan 120 CNAME printer.lan"})
    in.records.push_back(parse_local_record(t).value());
  auto r = Routing::build(in).value();
  EXPECT_EQ(r->route(N("SRV.lan"), RRType::SRV).kind, RouteKind::Hosts);
  auto srv = ask(*r, "srv.lan", RRType::SRV);
  ASSERT_EQ(srv.msg.section(wire::Section::Answer).size(), 1u);
  EXPECT_EQ(srv.msg.section(wire::Section::Answer)[0].type, RRType::SRV);
  EXPECT_EQ(srv.msg.section(wire::Section::Answer)[0].ttl, 60u);
  auto none = ask(*r, "srv.lan", RRType::A);
  EXPECT_EQ(none.msg.rcode(), RCode::NoError);
  EXPECT_TRUE(none.msg.records().empty());
  auto cname = ask(*r, "www.lan", RRType::AAAA);
  ASSERT_EQ(cname.msg.section(wire::Section::Answer).size(), 1u);
  EXPECT_EQ(cname.msg.section(wire::Section::Answer)[0].type, RRType::CNAME);
  EXPECT_EQ(cname.msg.section(wire::Section::Answer)[0].ttl, 120u);
  // A target that is a local name is answered too, one step.
  Routing::Input in2 = in;
  in2.hosts.push_back(HostsFile{"h", parse_hosts("192.168.1.20 printer.lan\n").lines});
  auto r2 = Routing::build(in2).value();
  auto chased = ask(*r2, "www.lan", RRType::A);
  ASSERT_EQ(chased.msg.section(wire::Section::Answer).size(), 2u);
  EXPECT_EQ(chased.msg.section(wire::Section::Answer)[1].type, RRType::A);
  EXPECT_EQ(rdata_ip(chased, chased.msg.section(wire::Section::Answer)[1]), "192.168.1.20");
  EXPECT_NE(r->describe(N("www.lan"), {}).find("[www.lan 120 CNAME printer.lan]"),
            std::string::npos);
}

}  // namespace
}  // namespace hg::resolver

namespace hg::resolver {
namespace {

// Found by the fuzzer: a server field with a line break made a two-line error message.
TEST(ForwardSpec, ErrorsAreOneLineWhateverTheInput) {
  for (std::string_view bad : std::initializer_list<std::string_view>{
           "corp.example=127.0.0.1:5353ped\nbogus", "a\nb=127.0.0.1",
           std::string_view("x=\x01\x7f\xff", 5)}) {
    auto f = parse_forward_spec(bad);
    ASSERT_FALSE(f.has_value());
    EXPECT_EQ(f.error().find('\n'), std::string::npos) << f.error();
    EXPECT_EQ(f.error().find('\x01'), std::string::npos) << f.error();
  }
  EXPECT_NE(parse_forward_spec("x=1.2.3.4\n").error().find("\\x0a"), std::string::npos);
  auto r = parse_local_record("a\tb 60 A 1.2.3.4\r");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().find('\r'), std::string::npos);
}

}  // namespace
}  // namespace hg::resolver
