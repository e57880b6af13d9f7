// Answers scrubbed before they are cached or reach a client (wire::RewriteRules), against the
// real hourglassd and a scripted upstream that does what a broken or hostile one does:
//   - RRSIG and NSEC records in the answer to a query without DO (RFC 4035 §3.2.1: they go
//     only to clients that set DO, or that ask for that very type);
//   - TTLs of 2^31 s and 2^32 - 1 s (RFC 2181 §8: taken as 0, never passed on raw);
//   - an answer too long for the client's UDP size (a TC answer carries no records);
//   - a query of type ANY (RFC 8482: one HINFO record, nothing asked upstream);
//   - records outside the question's chain (an A record for another name, NS for the root);
//   - public names that answer with private addresses (DNS rebinding, --private-address).
// Each is seen by dig, as a client sees it, and counted in `hourglass-ctl stats`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"
#include "wire/types.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;

/// An RRSIG over the A RRset of `owner` (RFC 4034 §3.1), well-formed for dig to print. The
/// signature bytes are filler: nothing here validates.
FakeRecord rrsig(std::string owner, uint32_t ttl) {
  FakeRecord r;
  r.name = std::move(owner);
  r.type = static_cast<uint16_t>(wire::RRType::RRSIG);
  r.ttl = ttl;
  r.rdata = {0,    1,                // type covered: A
             13,                     // algorithm: ECDSAP256SHA256
             2,                      // labels
             0,    0,   0x0e, 0x10,  // original TTL 3600
             0x7f, 0,   0,    0,     // expiration
             0x60, 0,   0,    0,     // inception
             0x12, 0x34};            // key tag
  for (const char* label : {"scrub", "test"}) {
    r.rdata.push_back(static_cast<uint8_t>(std::string_view(label).size()));
    r.rdata.insert(r.rdata.end(), label, label + std::string_view(label).size());
  }
  r.rdata.push_back(0);
  r.rdata.insert(r.rdata.end(), 64, 0xab);  // signature
  return r;
}

/// An NSEC for `owner` whose next name is `next` and bitmap says A and RRSIG.
FakeRecord nsec(std::string owner, uint32_t ttl) {
  FakeRecord r;
  r.name = std::move(owner);
  r.type = static_cast<uint16_t>(wire::RRType::NSEC);
  r.ttl = ttl;
  r.rdata = {1, 'z', 5,    's', 'c', 'r', 'u', 'b', 4, 't', 'e', 's', 't', 0,  // z.scrub.test.
             0, 6,   0x40, 0,   0,   0,   0,   0x02};  // window 0: A (1) and RRSIG (46)
  return r;
}

/// The wire form of a dotted name ("." is the root).
std::vector<uint8_t> wire_name(std::string_view text) {
  std::vector<uint8_t> out;
  while (!text.empty() && text != ".") {
    const auto dot = text.find('.');
    const std::string_view label = text.substr(0, dot);
    out.push_back(static_cast<uint8_t>(label.size()));
    out.insert(out.end(), label.begin(), label.end());
    text = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  }
  out.push_back(0);
  return out;
}

FakeRecord ns(std::string owner, std::string_view target) {
  FakeRecord r;
  r.name = std::move(owner);
  r.type = static_cast<uint16_t>(wire::RRType::NS);
  r.rdata = wire_name(target);
  return r;
}

class Scrub : public ::testing::Test {
 protected:
  void start() {
    daemon_ = Daemon::start({"--upstream", upstream_.address(), "--control", socket_});
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  }
  int64_t stat(const std::string& key) { return stat_in(ctl(socket_, "stats").output, key); }

  test::TempDir dir_;
  std::string socket_ = dir_.file("control");
  FakeUpstream upstream_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(Scrub, DnssecRecordsReachOnlyClientsThatSetDo) {
  // The upstream signs whatever it is asked, DO or not (as a broken middlebox or a hostile
  // upstream would).
  upstream_.set_default(
      FakeReply::records({FakeRecord::a("", 300, "192.0.2.7"), rrsig("", 300), nsec("", 300)}));
  start();
  for (int round = 0; round < 2; ++round) {  // the miss, then the hit
    const DigResult plain = dig(daemon_->port(), "signed.scrub.test A");
    ASSERT_EQ(plain.status(), "NOERROR") << plain.output;
    EXPECT_TRUE(plain.contains("192.0.2.7")) << plain.output;
    EXPECT_FALSE(plain.contains("RRSIG")) << "round " << round << ":\n" << plain.output;
    EXPECT_FALSE(plain.contains("NSEC")) << "round " << round << ":\n" << plain.output;
    const DigResult with_do = dig(daemon_->port(), "+dnssec signed.scrub.test A");
    ASSERT_EQ(with_do.status(), "NOERROR") << with_do.output;
    EXPECT_TRUE(with_do.contains("RRSIG")) << "round " << round << ":\n" << with_do.output;
    EXPECT_TRUE(with_do.contains("NSEC")) << "round " << round << ":\n" << with_do.output;
  }
  // Asked for by type, an RRSIG is the answer, with DO or without.
  const DigResult by_type = dig(daemon_->port(), "signed.scrub.test RRSIG");
  EXPECT_TRUE(by_type.contains("RRSIG")) << by_type.output;
  // Left out: the RRSIG and NSEC of the one miss without DO (the hit was stored scrubbed),
  // and the NSEC of the RRSIG query.
  EXPECT_EQ(stat("server.scrubbed_records"), 3) << ctl(socket_, "stats").output;
}

TEST_F(Scrub, TtlsOfTwoToTheThirtyOneAndAboveAreServedAsZero) {
  FakeReply r = FakeReply::records({FakeRecord::a("", 0xFFFFFFFFu, "192.0.2.8"),
                                    FakeRecord::a("", 0x80000000u, "192.0.2.9"),
                                    FakeRecord::a("", 600, "192.0.2.10")});
  upstream_.set_default(r);
  start();
  const DigResult d = dig(daemon_->port(), "huge.scrub.test A");
  ASSERT_EQ(d.status(), "NOERROR") << d.output;
  const std::vector<uint32_t> ttls = d.ttls();
  ASSERT_EQ(ttls.size(), 3u) << d.output;
  for (const uint32_t t : ttls)
    EXPECT_LE(t, 0x7FFFFFFFu) << d.output;
  // RFC 2181 §8: "treated as if the value were zero".
  EXPECT_EQ(ttls[0], 0u) << d.output;
  EXPECT_EQ(ttls[1], 0u) << d.output;
  EXPECT_EQ(stat("server.clamped_ttls"), 2);
  // With TTL 0 in the RRset nothing is cached: the next query goes upstream again.
  const std::size_t before = upstream_.total_queries();
  const DigResult again = dig(daemon_->port(), "huge.scrub.test A");
  ASSERT_EQ(again.status(), "NOERROR") << again.output;
  EXPECT_EQ(upstream_.total_queries(), before + 1);
}

/// The size dig reports for the answer it received ("MSG SIZE  rcvd: N"); 0 if absent.
std::size_t message_size(const DigResult& d) {
  const auto at = d.output.find("MSG SIZE  rcvd: ");
  return at == std::string::npos ? 0 : std::stoul(d.output.substr(at + 16));
}

TEST_F(Scrub, ATruncatedAnswerCarriesNoRecords) {
  // 100 A records: whole over TCP (1,6xx bytes), too long for UDP (1,232 at most). Cached
  // (TTL 300) and passed through uncached (TTL 0) alike.
  for (const uint32_t ttl : {300u, 0u}) {
    std::vector<FakeRecord> many;
    for (int i = 0; i < 100; ++i)
      many.push_back(FakeRecord::a("", ttl, "192.0.2." + std::to_string(i + 1)));
    FakeReply r = FakeReply::records(many);
    r.truncate_udp = true;
    upstream_.set_default(r);
    start();
    for (int round = 0; round < 2; ++round) {
      // +ignore: dig shows the UDP answer instead of asking again over TCP.
      const DigResult udp = dig(daemon_->port(), "+ignore +notcp big.scrub.test A");
      ASSERT_EQ(udp.status(), "NOERROR") << udp.output;
      EXPECT_NE(udp.flags().find("tc"), std::string::npos) << udp.output;
      EXPECT_FALSE(udp.contains("192.0.2.")) << "TTL " << ttl << ", round " << round << ":\n"
                                             << udp.output;
      EXPECT_GT(message_size(udp), 0u) << udp.output;
      EXPECT_LT(message_size(udp), 100u) << udp.output;
      const DigResult tcp = dig(daemon_->port(), "+tcp big.scrub.test A");
      ASSERT_EQ(tcp.status(), "NOERROR") << tcp.output;
      EXPECT_EQ(tcp.ttls().size(), 100u) << tcp.output;
    }
    daemon_.reset();
  }
}

TEST_F(Scrub, AnyIsAnsweredWithOneHinfoRecordAndNotForwarded) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.11")}));
  start();
  for (const char* transport : {"+notcp", "+tcp"}) {
    const DigResult d = dig(daemon_->port(), std::string(transport) + " many.scrub.test ANY");
    ASSERT_EQ(d.status(), "NOERROR") << d.output;
    EXPECT_TRUE(d.contains("ANSWER: 1,")) << d.output;
    EXPECT_TRUE(d.contains("HINFO\t\"RFC8482\" \"\"")) << d.output;
    EXPECT_FALSE(d.contains("192.0.2.11")) << d.output;
    EXPECT_LT(message_size(d), 100u) << d.output;
  }
  EXPECT_EQ(upstream_.total_queries(), 0u);
  EXPECT_EQ(stat("server.minimal_any"), 2);
}

TEST_F(Scrub, PassAnyForwardsAnyAsItIs) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.12")}));
  daemon_ = Daemon::start({"--upstream", upstream_.address(), "--pass-any"});
  ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  const DigResult d = dig(daemon_->port(), "many.scrub.test ANY");
  ASSERT_EQ(d.status(), "NOERROR") << d.output;
  EXPECT_TRUE(d.contains("192.0.2.12")) << d.output;
  EXPECT_EQ(upstream_.total_queries(), 1u);
}

TEST_F(Scrub, RecordsOutsideTheQuestionsChainReachNoClient) {
  // A poisoning attempt rides on a real answer: an A record for another name, a CNAME chain
  // that is real, NS records for the root and for the other name's zone.
  FakeReply r = FakeReply::records({FakeRecord::cname("", 300, "web.scrub.test"),
                                    FakeRecord::a("web.scrub.test", 300, "192.0.2.20"),
                                    FakeRecord::a("www.bank.test", 300, "6.6.6.6")});
  r.authority = {ns(".", "a.root-servers.net"), ns("bank.test", "ns.evil.test"),
                 ns("scrub.test", "ns1.scrub.test")};
  upstream_.set_default(r);
  start();
  for (int round = 0; round < 2; ++round) {  // the miss, then the hit
    const DigResult d = dig(daemon_->port(), "www.scrub.test A");
    ASSERT_EQ(d.status(), "NOERROR") << d.output;
    EXPECT_TRUE(d.contains("web.scrub.test.")) << d.output;
    EXPECT_TRUE(d.contains("192.0.2.20")) << d.output;
    EXPECT_FALSE(d.contains("6.6.6.6")) << "round " << round << ":\n" << d.output;
    EXPECT_FALSE(d.contains("bank.test")) << "round " << round << ":\n" << d.output;
    EXPECT_FALSE(d.contains("root-servers")) << "round " << round << ":\n" << d.output;
    EXPECT_TRUE(d.contains("ns1.scrub.test")) << d.output;  // the chain's own zone cut
  }
  EXPECT_EQ(stat("server.scrubbed_records"), 3);
  // The planted name was never cached: asking for it goes upstream.
  const std::size_t before = upstream_.total_queries();
  (void)dig(daemon_->port(), "www.bank.test A");
  EXPECT_EQ(upstream_.total_queries(), before + 1);
}

// The browser-to-router attack: a page from attacker.example makes the browser look up
// names under the attacker's zone that answer with the addresses of the victim's own
// network, and the same-origin policy then lets the page talk to them.
TEST_F(Scrub, RebindingPresetLeavesOutPrivateAddressesOfPublicNamesOnly) {
  const std::vector<std::pair<std::string, FakeRecord>> rebinding = {
      {"loop", FakeRecord::a("", 300, "127.0.0.1")},
      {"ten", FakeRecord::a("", 300, "10.1.2.3")},
      {"home", FakeRecord::a("", 300, "192.168.1.1")},
      {"meta", FakeRecord::a("", 300, "169.254.169.254")},
      {"zero", FakeRecord::a("", 300, "0.0.0.0")},
      {"loop6", FakeRecord::aaaa("", 300, "::1")},
      {"link6", FakeRecord::aaaa("", 300, "fe80::1")},
      {"mapped", FakeRecord::aaaa("", 300, "::ffff:127.0.0.1")},
      {"ula", FakeRecord::aaaa("", 300, "fd00::1")}};
  for (const auto& [label, rec] : rebinding)
    upstream_.on(label + ".attacker.test", FakeReply::records({rec}));
  // A public name with one public and one private address keeps the public one.
  upstream_.on("mixed.attacker.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.30"),
                                                          FakeRecord::a("", 300, "10.0.0.30")}));
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "10.9.9.9")}));
  FakeUpstream lan;
  lan.set_default(FakeReply::records({FakeRecord::a("", 300, "192.168.7.7")}));
  daemon_ = Daemon::start({"--upstream", upstream_.address(), "--control", socket_,
                           "--private-address", "private-ranges", "--private-domain", "corp.test",
                           "--forward", "lan.test=" + lan.address()});
  ASSERT_TRUE(daemon_->ready()) << daemon_->output();

  int blocked = 0;
  for (const auto& [label, rec] : rebinding) {
    const std::string type = rec.type == 1 ? "A" : "AAAA";
    for (int round = 0; round < 2; ++round) {
      const DigResult d = dig(daemon_->port(), label + ".attacker.test " + type);
      ASSERT_EQ(d.status(), "NOERROR") << d.output;
      EXPECT_TRUE(d.contains("ANSWER: 0,")) << label << ", round " << round << ":\n" << d.output;
      if (round == 0) {
        EXPECT_TRUE(d.contains("EDE: 15 (Blocked)")) << d.output;
        blocked += d.contains("ANSWER: 0,") ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(blocked, 9);
  const DigResult mixed = dig(daemon_->port(), "mixed.attacker.test A");
  EXPECT_TRUE(mixed.contains("192.0.2.30")) << mixed.output;
  EXPECT_FALSE(mixed.contains("10.0.0.30")) << mixed.output;
  // Exempt: a --private-domain, and a forward zone (the site's own names).
  const DigResult corp = dig(daemon_->port(), "intranet.corp.test A");
  EXPECT_TRUE(corp.contains("10.9.9.9")) << corp.output;
  const DigResult router = dig(daemon_->port(), "router.lan.test A");
  EXPECT_TRUE(router.contains("192.168.7.7")) << router.output;
  EXPECT_EQ(stat("server.rebind_blocked"), 9 * 2 + 1);
}

TEST_F(Scrub, WithoutPrivateAddressPrivateAnswersPass) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "127.0.0.1")}));
  start();
  const DigResult d = dig(daemon_->port(), "loop.attacker.test A");
  EXPECT_TRUE(d.contains("127.0.0.1")) << d.output;
}

}  // namespace
}  // namespace hg::integration
