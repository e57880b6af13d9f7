// The special-use names against the real hourglassd (docs/local-names.md): each of the 18 kinds
// of name — the 13 served before (localhost, invalid, onion, home.arpa, the RFC 6303 and RFC 7793
// reverse zones, single-label names) and test, local, resolver.arpa, ipv4only.arpa and alt —
// asked for A, AAAA and one other type, through dig and from code, never reaches the upstream;
// the answers are the RFCs' (RFC 6761 §6.2, RFC 6762 §22.1, RFC 9462 §4, RFC 8880 §7,
// RFC 9476); the operator's ways out (--no-special-zone, --forward, --single-label forward)
// work; and every answer matches or beats real Unbound 1.17's with its default local zones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/unbound_server.h"
#include "wire/owned.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;

// One name per kind of special-use name, and the third type it is asked for.
struct Probe {
  std::string kind;  // the zone (or rule) and its RFC, for the table
  std::string name;
  uint16_t other;  // a type other than A and AAAA
  const char* other_text;
};

// `n` labels "0." (the nibbles of an ip6.arpa name).
std::string zeros(int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += "0.";
  return s;
}

const std::vector<Probe>& probes() {
  static const std::vector<Probe> v = {
      // The 13 of before.
      {"localhost (RFC 6761 §6.3)", "foo.localhost", 15, "MX"},
      {"invalid (RFC 6761 §6.4)", "x.invalid", 16, "TXT"},
      {"onion (RFC 7686)", "x.onion", 16, "TXT"},
      {"home.arpa (RFC 8375)", "router.home.arpa", 16, "TXT"},
      {"10.in-addr.arpa (RFC 6303 §4.1)", "1.0.0.10.in-addr.arpa", 12, "PTR"},
      {"254.169.in-addr.arpa (RFC 6303 §4.2)", "1.1.254.169.in-addr.arpa", 12, "PTR"},
      {"255.255.255.255.in-addr.arpa (RFC 6303 §4.3)", "255.255.255.255.in-addr.arpa", 12, "PTR"},
      {":: reverse (RFC 6303 §4.4)", zeros(32) + "ip6.arpa", 12, "PTR"},
      {"d.f.ip6.arpa (RFC 6303 §4.6)", "1." + zeros(29) + "d.f.ip6.arpa", 12, "PTR"},
      {"8.e.f.ip6.arpa (RFC 6303 §4.7)", "1." + zeros(28) + "8.e.f.ip6.arpa", 12, "PTR"},
      {"8.b.d.0.1.0.0.2.ip6.arpa (RFC 6303 §4.8)", "1." + zeros(23) + "8.b.d.0.1.0.0.2.ip6.arpa",
       12, "PTR"},
      {"64.100.in-addr.arpa (RFC 7793)", "1.0.64.100.in-addr.arpa", 12, "PTR"},
      // ANY: a single-label name's other types go upstream by design (`com NS`).
      {"single-label name", "wpad", 255, "ANY"},
      // The five added.
      {"test (RFC 6761 §6.2)", "www.example.test", 16, "TXT"},
      {"local (RFC 6762 §22.1)", "printer.local", 33, "SRV"},
      {"resolver.arpa (RFC 9462 §4)", "_dns.resolver.arpa", 64, "SVCB"},
      {"ipv4only.arpa (RFC 8880 §7)", "ipv4only.arpa", 12, "PTR"},
      {"alt (RFC 9476)", "x.alt", 16, "TXT"},
  };
  return v;
}

struct Asked {
  const Probe* probe;
  uint16_t type;
  std::string type_text;
};

std::vector<Asked> all_questions() {
  std::vector<Asked> out;
  for (const Probe& p : probes()) {
    out.push_back({&p, 1, "A"});
    out.push_back({&p, 28, "AAAA"});
    out.push_back({&p, p.other, p.other_text});
  }
  return out;
}

std::optional<Answer> ask(uint16_t port, const std::string& name, uint16_t type) {
  Query q;
  q.name = name;
  q.type = type;
  return udp_query(port, build_query(q));
}

bool has_soa(const Answer& a) {
  const auto& auth = a.msg.authority;
  return std::any_of(auth.begin(), auth.end(),
                     [](const wire::OwnedRecord& r) { return r.type == wire::RRType::SOA; });
}

// The answer section as a multiset of (type, RDATA): TTLs and owner case aside.
bool same_records(const Answer& a, const Answer& b) {
  if (a.msg.answer.size() != b.msg.answer.size()) return false;
  std::vector<bool> used(b.msg.answer.size(), false);
  for (const auto& r : a.msg.answer) {
    bool found = false;
    for (std::size_t i = 0; i < b.msg.answer.size() && !found; ++i) {
      if (used[i] || b.msg.answer[i].type != r.type || !(b.msg.answer[i].rdata == r.rdata))
        continue;
      used[i] = found = true;
    }
    if (!found) return false;
  }
  return true;
}

std::string rcode_text(wire::RCode r) {
  switch (r) {
    case wire::RCode::NoError:
      return "NOERROR";
    case wire::RCode::NXDomain:
      return "NXDOMAIN";
    case wire::RCode::ServFail:
      return "SERVFAIL";
    default:
      return "rcode " + std::to_string(static_cast<int>(r));
  }
}

// "NXDOMAIN aa soa", "NOERROR 2 records aa", ... for the table.
std::string summary(const Answer& a) {
  std::string s = rcode_text(a.rcode());
  if (!a.msg.answer.empty()) s += " " + std::to_string(a.msg.answer.size()) + " rec";
  if (a.msg.answer.empty() && a.rcode() == wire::RCode::NoError) s += " NODATA";
  if (a.msg.header.aa()) s += " AA";
  if (has_soa(a)) s += " SOA";
  return s;
}

std::string control_path() {
  return "/tmp/hg-sp-" + std::to_string(::getpid()) + "-" + random_label(6) + ".sock";
}

std::unique_ptr<Daemon> start_serving_test(std::vector<std::string> args) {
  return Daemon::start_with(std::move(args), StartOptions{.test_zone_upstream = false});
}

TEST(SpecialNames, NoneOfTheEighteenReachesTheUpstreamThroughDigOrFromCode) {
  test::FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.99")}));
  const std::string sock = control_path();
  auto d = start_serving_test({"--upstream", upstream.address(), "--control", sock});
  ASSERT_TRUE(d->ready()) << d->output();
  std::size_t asked = 0;
  for (const Asked& q : all_questions()) {
    const DigResult r = dig(d->port(), q.probe->name + " " + q.type_text);
    EXPECT_TRUE(r.status() == "NOERROR" || r.status() == "NXDOMAIN")
        << q.probe->name << " " << q.type_text << "\n"
        << r.output;
    const auto a = ask(d->port(), q.probe->name, q.type);
    ASSERT_TRUE(a.has_value()) << q.probe->name << " " << q.type_text;
    EXPECT_TRUE(a->rcode() == wire::RCode::NoError || a->rcode() == wire::RCode::NXDomain)
        << a->text();
    asked += 2;
  }
  EXPECT_EQ(asked, 18u * 3 * 2);
  EXPECT_EQ(upstream.total_queries(), 0u) << "a special-use name leaked";
  EXPECT_EQ(ctl_stat(sock, "server.local_answers"), static_cast<int64_t>(asked));
  // The check can fail: an ordinary name reaches the upstream.
  EXPECT_EQ(dig(d->port(), "www.example.com A").status(), "NOERROR");
  EXPECT_EQ(upstream.total_queries(), 1u);
}

TEST(SpecialNames, TheNewZonesAnswerAsTheirRfcsSay) {
  test::FakeUpstream upstream;
  auto d = start_serving_test({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  const uint16_t port = d->port();
  const std::string opts = " +noall +comments +answer +authority";
  // RFC 6761 §6.2, RFC 6762 §22.1, RFC 9476: NXDOMAIN with the zone's SOA, authoritative.
  for (const char* zone : {"test", "local", "alt"}) {
    const DigResult r = dig(port, std::string("x.") + zone + " A" + opts);
    EXPECT_EQ(r.status(), "NXDOMAIN") << r.output;
    EXPECT_NE(r.flags().find("aa"), std::string::npos) << r.output;
    EXPECT_TRUE(r.contains(std::string(zone) + ".\t") &&
                r.contains("SOA\t" + std::string(zone) + ". nobody.invalid. 1 3600"))
        << r.output;
  }
  // RFC 9462 §4: no designated resolvers here, so NODATA for the whole zone, with its SOA.
  for (const char* q : {"_dns.resolver.arpa TYPE64", "_dns.resolver.arpa A", "resolver.arpa TXT",
                        "x.y.resolver.arpa AAAA"}) {
    const DigResult r = dig(port, std::string(q) + opts);
    EXPECT_EQ(r.status(), "NOERROR") << q << "\n" << r.output;
    EXPECT_TRUE(r.contains("ANSWER: 0,")) << q << "\n" << r.output;
    EXPECT_TRUE(r.contains("SOA\tresolver.arpa. nobody.invalid.")) << q << "\n" << r.output;
  }
  // RFC 8880 §7: the well-known addresses, AAAA NODATA (no DNS64), PTR back to the name.
  const DigResult a = dig(port, "ipv4only.arpa A" + opts);
  EXPECT_EQ(a.status(), "NOERROR");
  EXPECT_TRUE(a.contains("ipv4only.arpa.\t\t3600\tIN\tA\t192.0.0.170")) << a.output;
  EXPECT_TRUE(a.contains("ipv4only.arpa.\t\t3600\tIN\tA\t192.0.0.171")) << a.output;
  const DigResult aaaa = dig(port, "ipv4only.arpa AAAA" + opts);
  EXPECT_EQ(aaaa.status(), "NOERROR");
  EXPECT_TRUE(aaaa.contains("ANSWER: 0,") && aaaa.contains("SOA\tipv4only.arpa.")) << aaaa.output;
  EXPECT_EQ(dig(port, "www.ipv4only.arpa A").status(), "NXDOMAIN");
  for (const char* rev : {"170.0.0.192.in-addr.arpa", "171.0.0.192.in-addr.arpa"}) {
    const DigResult p = dig(port, std::string(rev) + " PTR" + opts);
    EXPECT_TRUE(p.contains("PTR\tipv4only.arpa.")) << p.output;
    EXPECT_NE(p.flags().find("aa"), std::string::npos) << p.output;
  }
  EXPECT_EQ(dig(port, "172.0.0.192.in-addr.arpa PTR").status(), "NOERROR");  // not special
  EXPECT_EQ(upstream.total_queries(), 1u);                                   // that one only
}

TEST(SpecialNames, TheOperatorCanSendAZoneOrSingleLabelNamesUpstream) {
  test::FakeUpstream upstream, mdns("127.0.0.2");
  upstream.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.99")}));
  mdns.set_default(FakeReply::records({FakeRecord::a("", 60, "192.168.1.9")}));
  const std::string sock = control_path();
  auto d = start_serving_test({"--upstream", upstream.address(), "--no-special-zone", "test.",
                               "--forward", "local=" + mdns.address(), "--single-label", "forward",
                               "--control", sock});
  ASSERT_TRUE(d->ready()) << d->output();
  EXPECT_TRUE(dig(d->port(), "lab.test A +short").contains("192.0.2.99"));
  EXPECT_EQ(upstream.queries("lab.test"), 1u);
  EXPECT_TRUE(dig(d->port(), "printer.local A +short").contains("192.168.1.9"));
  EXPECT_EQ(mdns.queries("printer.local"), 1u);
  EXPECT_TRUE(dig(d->port(), "nas A +short").contains("192.0.2.99"));
  EXPECT_EQ(upstream.queries("nas"), 1u);
  // The other zones stay here.
  EXPECT_EQ(dig(d->port(), "x.alt A").status(), "NXDOMAIN");
  EXPECT_EQ(upstream.total_queries() + mdns.total_queries(), 3u);
  // hourglass-ctl route says which rule answers, with the RFC.
  EXPECT_TRUE(ctl(sock, "route x.alt").contains("local zone alt. (RFC 9476): NXDOMAIN"));
  EXPECT_TRUE(ctl(sock, "route printer.local").contains("forward zone local."));
  EXPECT_TRUE(ctl(sock, "route lab.test").contains("default upstreams"));
  EXPECT_TRUE(ctl(sock, "route nas").contains("--single-label forward"));
  EXPECT_TRUE(ctl(sock, "route _dns.resolver.arpa").contains("(RFC 9462 §4): NODATA"));
  EXPECT_TRUE(ctl(sock, "route ipv4only.arpa").contains("A 192.0.0.170, 192.0.0.171"));
}

TEST(SpecialNames, ANameThatIsNotABuiltInZoneIsRefusedWithTheWayOut) {
  auto d = Daemon::start_with(
      {"--check-config", "--upstream", "127.0.0.1:9", "--no-special-zone", "example.com"},
      StartOptions{.wait_ready = false});
  const auto rc = d->wait_exit(Millis{10000});
  ASSERT_TRUE(rc.has_value()) << d->output();
  EXPECT_NE(*rc, 0);
  EXPECT_NE(d->output().find("not one of the built-in special-use zones"), std::string::npos)
      << d->output();
  EXPECT_NE(d->output().find("--forward"), std::string::npos) << d->output();
}

// hourglassd against Unbound 1.17.1 with its default local zones, both forwarding to their own
// counting upstream. "Matches": the same rcode and answer records, AA and an SOA wherever
// Unbound has them. "Beats": Unbound sends the name upstream (hourglassd never does), or its
// negative answer lacks the SOA a client needs to cache it (RFC 2308), or AA.
TEST(SpecialNames, EveryAnswerMatchesOrBeatsUnbounds) {
  test::FakeUpstream hg_up, ub_up;
  hg_up.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.99")}));
  ub_up.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.99")}));
  std::string error;
  auto ub = test::UnboundServer::start_forwarder(ub_up.port(), error);
  if (!ub) GTEST_SKIP() << error;
  auto d = start_serving_test({"--upstream", hg_up.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  std::string table = "| query | hourglassd | Unbound 1.17 | |\n|---|---|---|---|\n";
  int matches = 0, beats = 0;
  for (const Asked& q : all_questions()) {
    const std::string what = q.probe->name + " " + q.type_text;
    const auto h = ask(d->port(), q.probe->name, q.type);
    const auto u = ask(ub->port(), q.probe->name, q.type);
    ASSERT_TRUE(h && u) << what;
    // Sent upstream now or for an earlier type (Unbound may answer from what it cached then).
    const bool forwarded = ub_up.queries(q.probe->name) > 0;
    std::string verdict;
    // RFC 9462 §4: a resolver with no designated resolvers SHOULD answer NODATA for
    // resolver.arpa. Unbound 1.17 forwards these names; later Unbound (Debian 13's) answers
    // NXDOMAIN itself. hourglassd follows the RFC, so that one difference is expected.
    const bool rfc9462 = q.probe->name.ends_with("resolver.arpa") &&
                         h->rcode() == wire::RCode::NoError && h->msg.answer.empty() &&
                         has_soa(*h) && u->rcode() == wire::RCode::NXDomain;
    if (forwarded) {
      verdict = "beats: Unbound sends it upstream";
    } else if (rfc9462) {
      verdict = "beats: NODATA as RFC 9462 says, Unbound NXDOMAIN";
    } else {
      EXPECT_EQ(h->rcode(), u->rcode()) << what << "\n" << h->text() << "\n" << u->text();
      EXPECT_TRUE(same_records(*h, *u)) << what << "\n" << h->text() << "\n" << u->text();
      EXPECT_TRUE(h->msg.header.aa() || !u->msg.header.aa()) << what;
      // A single-label NODATA has no SOA by design (it is no zone's answer, docs/local-names.md).
      const bool negative = h->msg.answer.empty();
      const bool single = q.probe->name.find('.') == std::string::npos;
      EXPECT_TRUE(!negative || single || has_soa(*h)) << what << "\n" << h->text();
      EXPECT_TRUE(has_soa(*h) || !has_soa(*u)) << what;
      if (negative && !has_soa(*u)) {
        verdict = "beats: no SOA from Unbound";
      } else if (h->msg.header.aa() && !u->msg.header.aa()) {
        verdict = "beats: AA";
      } else {
        verdict = "matches";
      }
    }
    (verdict == "matches" ? matches : beats)++;
    table += "| `" + what + "` | " + summary(*h) + " | " + summary(*u) +
             (forwarded ? " (**sent upstream**)" : "") + " | " + verdict + " |\n";
  }
  EXPECT_EQ(hg_up.total_queries(), 0u);
  EXPECT_EQ(matches + beats, 18 * 3);
  // The table of docs/local-names.md.
  std::cout << table << matches << " match, " << beats << " beat\n";
}

}  // namespace
}  // namespace hg::integration
