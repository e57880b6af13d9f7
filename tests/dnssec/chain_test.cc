// dnssec/chain.h against a hierarchy knotd signs for real: a root, a TLD and zones below it,
// each DS put into its parent after knotd made the child's keys. Every walk fetches its DS and
// DNSKEY RRsets from knotd as a validator would from its upstream, and must end where the
// hierarchy says:
//
//   .              ECDSA P-256, NSEC        the trust anchor (its DS from keymgr)
//   test.          RSA/SHA-256, NSEC        host.ent.test. makes ent.test. an empty non-terminal
//   signed.test.   Ed25519, NSEC3 opt-out   www; deep. (signed, DS); hidden. (no DS: opt-out)
//   deep.signed.test.  ECDSA P-384, NSEC3
//   unsigned.test.     not signed; test. has no DS for it (NSEC proves it)
//   sha1.test.         RSA/SHA-1 (algorithm 5, not done here): DS present, so insecure
//   wrongds.test.      ECDSA P-256, but the DS in test. has one digest bit flipped: bogus
//
// The time is the machine's: knotd signs with it too, so nothing depends on the date.
#include "dnssec/chain.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/knot_server.h"
#include "tests/support/requires.h"

namespace hg::dnssec {
namespace {

using Bytes = std::vector<uint8_t>;

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

wire::Name name(const std::string& text) {
  return *wire::Name::from_text(text);
}

// keymgr's "ds" output: "OWNER DS TAG ALG DIGESTTYPE HEX" lines; the DS RDATAs and the lines
// themselves (to put into the parent's zone file).
struct DsLines {
  std::vector<Bytes> rdatas;
  std::string zone_lines;
};
DsLines parse_ds(const std::string& text) {
  DsLines out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string owner, type, hex, part;
    unsigned tag = 0, alg = 0, digest = 0;
    if (!(words >> owner >> type >> tag >> alg >> digest) || type != "DS") continue;
    while (words >> part)
      hex += part;
    Bytes ds{static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag), static_cast<uint8_t>(alg),
             static_cast<uint8_t>(digest)};
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      ds.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    out.rdatas.push_back(ds);
    out.zone_lines += line + "\n";
  }
  return out;
}

std::string soa(const std::string& apex, uint32_t serial) {
  const std::string in = apex == "." ? "." : "." + apex;  // "ns" + in: a name in the zone
  return "$TTL 3600\n" + apex + " SOA ns" + in + " hostmaster" + in + " " + std::to_string(serial) +
         " 3600 600 86400 300\n" + apex + " NS ns" + in + "\n" + "ns" + in + " A 192.0.2.53\n";
}

std::string long_name() {
  std::string n;
  for (int i = 44; i >= 0; --i)
    n += "l" + std::to_string(i) + ".";
  return n + "test.";
}

// Zone texts; `ds` holds the DS lines of each child once known (phase two).
std::string root_zone(uint32_t serial, const std::string& ds) {
  return soa(".", serial) + "test. NS ns.test.\nns.test. A 192.0.2.53\n" + ds;
}
std::string test_zone(uint32_t serial, const std::string& ds) {
  // 45 labels below test., all empty non-terminals but the last: a walk to it descends
  // through every one of them.
  std::string z =
      soa("test.", serial) + "host.ent.test. A 192.0.2.7\n" + long_name() + " A 192.0.2.8\n";
  for (const char* child : {"signed", "unsigned", "sha1", "wrongds"})
    z += std::string(child) + ".test. NS ns." + child + ".test.\nns." + child +
         ".test. A 192.0.2.53\n";
  return z + ds;
}
std::string signed_zone(uint32_t serial, const std::string& ds) {
  return soa("signed.test.", serial) + "www.signed.test. A 192.0.2.1\n" +
         "deep.signed.test. NS ns.deep.signed.test.\nns.deep.signed.test. A 192.0.2.53\n" +
         "hidden.signed.test. NS ns.hidden.signed.test.\nns.hidden.signed.test. A 192.0.2.53\n" +
         ds;
}

class Chain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::vector<test::KnotPolicy> policies{
        {"p256", {"algorithm: ecdsap256sha256"}},
        {"rsa", {"algorithm: rsasha256", "ksk-size: 2048", "zsk-size: 1024"}},
        {"ed3", {"algorithm: ed25519", "nsec3: on", "nsec3-opt-out: on"}},
        {"p384", {"algorithm: ecdsap384sha384", "nsec3: on"}},
        {"sha1", {"algorithm: rsasha1", "ksk-size: 2048", "zsk-size: 1024"}},
    };
    const std::vector<test::KnotZone> zones{
        {".", root_zone(1, ""), "p256"},
        {"test.", test_zone(1, ""), "rsa"},
        {"signed.test.", signed_zone(1, ""), "ed3"},
        {"deep.signed.test.", soa("deep.signed.test.", 1) + "a.deep.signed.test. A 192.0.2.2\n",
         "p384"},
        {"unsigned.test.", soa("unsigned.test.", 1) + "x.unsigned.test. A 192.0.2.3\n", ""},
        {"hidden.signed.test.", soa("hidden.signed.test.", 1), ""},
        {"sha1.test.", soa("sha1.test.", 1) + "x.sha1.test. A 192.0.2.4\n", "sha1"},
        {"wrongds.test.", soa("wrongds.test.", 1) + "x.wrongds.test. A 192.0.2.5\n", "p256"},
    };
    auto k = test::KnotServer::start(policies, zones, error_);
    if (!k) return;
    // Phase two: each parent gets its children's DS (one digest bit flipped for wrongds).
    auto ds_of = [&](const std::string& zone) { return parse_ds(k->keymgr(zone, "ds")); };
    const DsLines test_ds = ds_of("test.");
    // Every DS of wrongds.test. (keymgr gives one per digest type) with its last digit changed.
    std::string wrong;
    std::istringstream lines(ds_of("wrongds.test.").zone_lines);
    for (std::string line; std::getline(lines, line);) {
      const auto last = line.find_last_not_of(' ');
      if (last != std::string::npos) line[last] = line[last] == '0' ? '1' : '0';
      wrong += line + "\n";
    }
    const std::string for_test =
        ds_of("signed.test.").zone_lines + ds_of("sha1.test.").zone_lines + wrong;
    if (test_ds.rdatas.empty() || for_test.empty() ||
        !k->replace_zone(".", root_zone(2, test_ds.zone_lines), 2) ||
        !k->replace_zone("test.", test_zone(2, for_test), 2) ||
        !k->replace_zone("signed.test.", signed_zone(2, ds_of("deep.signed.test.").zone_lines),
                         2)) {
      error_ = "could not put the DS records into the parents: " + k->log();
      return;
    }
    anchor_ = Anchor{wire::Name(), ds_of(".").rdatas};
    server_ = k.release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) {
      if (error_.find("not installed") != std::string::npos) HG_SKIP_UNLESS_CI(error_);
      FAIL() << error_;
    }
  }

  // Runs a walk to the end, fetching from knotd; `tamper` may change a response first.
  ZoneKeys walk(const std::string& target, Budget& budget, const ChainWalk::Known& known = {},
                int* fetches = nullptr,
                const std::function<void(const Fetch&, Bytes&)>& tamper = {}) {
    ChainWalk w(anchor_, name(target), now_seconds(), budget, known);
    for (int i = 0; !w.done() && i < 100; ++i) {
      auto r = server_->query(w.need().name.to_text(), w.need().type);
      Bytes bytes = r ? *r : Bytes{};
      if (tamper) tamper(w.need(), bytes);
      w.feed(bytes);
    }
    EXPECT_TRUE(w.done());
    if (fetches != nullptr) *fetches = w.fetches();
    last_established_ = w.established();
    return w.done() ? w.result() : ZoneKeys{};
  }
  ZoneKeys walk(const std::string& target) {
    Budget b;
    return walk(target, b);
  }

  static inline test::KnotServer* server_ = nullptr;
  static inline std::string error_;
  static inline Anchor anchor_;
  std::vector<ZoneKeys> last_established_;
};

std::string why(const ZoneKeys& k) {
  return "zone " + k.zone.to_text() + " security " + std::to_string(static_cast<int>(k.security)) +
         " why " + std::to_string(static_cast<int>(k.why));
}

TEST_F(Chain, ANameInASignedZoneGetsItsKeysThroughEveryLinkFromTheRoot) {
  Budget b;
  int fetches = 0;
  const ZoneKeys k = walk("www.signed.test.", b, {}, &fetches);
  EXPECT_EQ(k.security, Security::Secure) << why(k);
  EXPECT_EQ(k.zone, name("signed.test."));
  EXPECT_FALSE(k.keys.empty());
  EXPECT_GT(k.ttl, 0u);
  // DNSKEY ., DS test., DNSKEY test., DS signed.test., DNSKEY signed.test., DS www (no cut).
  EXPECT_EQ(fetches, 6);
  ASSERT_EQ(last_established_.size(), 3u);
  EXPECT_TRUE(last_established_[0].zone.is_root());
  EXPECT_EQ(last_established_[1].zone, name("test."));
  // The signer itself as the target: one fetch fewer.
  EXPECT_EQ(walk("signed.test.", b, {}, &fetches).security, Security::Secure);
  EXPECT_EQ(fetches, 5);
  // Four zones deep, across NSEC and NSEC3 zones and four algorithms.
  const ZoneKeys deep = walk("a.deep.signed.test.");
  EXPECT_EQ(deep.security, Security::Secure) << why(deep);
  EXPECT_EQ(deep.zone, name("deep.signed.test."));
}

TEST_F(Chain, ADelegationWithoutDsIsInsecureWhetherNsecOrOptOutSaysSo) {
  const ZoneKeys u = walk("x.unsigned.test.");
  EXPECT_EQ(u.security, Security::Insecure) << why(u);
  EXPECT_EQ(u.zone, name("unsigned.test."));
  EXPECT_TRUE(u.keys.empty());
  // hidden.signed.test. is not in signed.test.'s NSEC3 chain at all: Opt-Out covers it.
  const ZoneKeys h = walk("x.hidden.signed.test.");
  EXPECT_EQ(h.security, Security::Insecure) << why(h);
  EXPECT_EQ(h.zone, name("hidden.signed.test."));
}

TEST_F(Chain, OnlyADsOfAnAlgorithmNotDoneHereIsInsecureAndAWrongDigestIsBogus) {
  const ZoneKeys s = walk("x.sha1.test.");
  EXPECT_EQ(s.security, Security::Insecure) << why(s);
  EXPECT_EQ(s.why, Why::NoSupportedAlgorithm);
  EXPECT_EQ(s.zone, name("sha1.test."));
  const ZoneKeys w = walk("x.wrongds.test.");
  EXPECT_EQ(w.security, Security::Bogus) << why(w);
  EXPECT_EQ(w.why, Why::DnskeyMissing);
}

TEST_F(Chain, EmptyNonTerminalsAndNamesThatDoNotExistStayInTheirZone) {
  const ZoneKeys ent = walk("host.ent.test.");
  EXPECT_EQ(ent.security, Security::Secure) << why(ent);
  EXPECT_EQ(ent.zone, name("test."));
  const ZoneKeys none = walk("a.b.nothing.test.");
  EXPECT_EQ(none.security, Security::Secure) << why(none);
  EXPECT_EQ(none.zone, name("test."));
}

TEST_F(Chain, KnownKeysAreNotFetchedAgainAndAKnownInsecureZoneAnswersAtOnce) {
  Budget b;
  walk("a.deep.signed.test.", b);
  ASSERT_EQ(last_established_.size(), 4u);
  std::map<std::string, ZoneKeys> known;
  for (const auto& z : last_established_)
    known[z.zone.to_text()] = z;
  const ChainWalk::Known lookup = [&](const wire::Name& z) -> const ZoneKeys* {
    auto it = known.find(z.to_text());
    return it == known.end() ? nullptr : &it->second;
  };
  int fetches = 0;
  const ZoneKeys again = walk("mail.deep.signed.test.", b, lookup, &fetches);
  EXPECT_EQ(again.security, Security::Secure) << why(again);
  EXPECT_EQ(again.zone, name("deep.signed.test."));
  EXPECT_EQ(fetches, 1);  // DS mail.deep.signed.test.: no such name
  // Under signed.test.'s Opt-Out a name that does not exist might be an unsigned delegation
  // the NSEC3 chain skips (RFC 5155 §9.2): insecure, not secure.
  const ZoneKeys opt_out = walk("mail.signed.test.", b, lookup, &fetches);
  EXPECT_EQ(opt_out.security, Security::Insecure) << why(opt_out);
  EXPECT_EQ(opt_out.zone, name("mail.signed.test."));
  EXPECT_EQ(fetches, 1);
  known["unsigned.test."] = ZoneKeys{name("unsigned.test."), Security::Insecure, Why::None, {}, 60};
  EXPECT_EQ(walk("a.b.unsigned.test.", b, lookup, &fetches).security, Security::Insecure);
  EXPECT_EQ(fetches, 0);
}

TEST_F(Chain, AFailedFetchAForgedDsOrAnotherAnchorIsBogus) {
  Budget b;
  const ZoneKeys failed = walk("www.signed.test.", b, {}, nullptr, [](const Fetch& f, Bytes& r) {
    if (f.type == 48 && f.name == name("test.")) r.clear();
  });
  EXPECT_EQ(failed.security, Security::Bogus);
  EXPECT_EQ(failed.why, Why::FetchFailed);
  // One bit of the DS test. vouches for signed.test. with: its signature no longer holds.
  const ZoneKeys forged = walk("www.signed.test.", b, {}, nullptr, [](const Fetch& f, Bytes& r) {
    if (f.type == 43 && f.name == name("signed.test.") && r.size() > 200) {
      wire::Message m;
      ASSERT_TRUE(m.parse(r));
      const auto& ds = m.section(wire::Section::Answer)[0];
      r[ds.end() - 1u] ^= 0x01;
    }
  });
  EXPECT_EQ(forged.security, Security::Bogus) << why(forged);
  EXPECT_EQ(forged.why, Why::BadSignature);
  EXPECT_EQ(forged.zone, name("signed.test."));
  // A root anchor for a key the root does not have.
  const Anchor saved = anchor_;
  anchor_.ds[0].back() ^= 0x01;
  for (auto& d : anchor_.ds)
    d.back() ^= 0x01;
  anchor_.ds[0].back() ^= 0x01;
  const ZoneKeys other = walk("www.signed.test.");
  anchor_ = saved;
  EXPECT_EQ(other.security, Security::Bogus) << why(other);
  EXPECT_EQ(other.why, Why::DnskeyMissing);
  EXPECT_TRUE(other.zone.is_root());
}

TEST_F(Chain, AWalkStopsAtItsFetchLimitAndItsBudget) {
  // Every label one DS fetch: 45 labels of empty non-terminals pass the limit.
  Budget b;
  int fetches = 0;
  const ZoneKeys k = walk(long_name(), b, {}, &fetches);
  EXPECT_EQ(k.security, Security::Bogus) << why(k);
  EXPECT_EQ(k.why, Why::BudgetExhausted);
  EXPECT_EQ(fetches, ChainWalk::kMaxFetches + 1);  // the one refused counted too
  // A name as deep as ip6.arpa's, 34 labels below the root, is within it.
  std::string n34 = long_name();
  for (int i = 0; i < 12; ++i)  // 46 labels less 12
    n34 = n34.substr(n34.find('.') + 1);
  ASSERT_EQ(name(n34).label_count(), 34);
  const ZoneKeys ok = walk(n34, b, {}, &fetches);
  EXPECT_EQ(ok.security, Security::Secure) << why(ok);
  EXPECT_LE(fetches, ChainWalk::kMaxFetches);
  // And a signature budget too small for the chain.
  Budget none{.verifications = 1, .failures = 4};
  const ZoneKeys poor = walk("www.signed.test.", none);
  EXPECT_EQ(poor.security, Security::Bogus);
  EXPECT_EQ(poor.why, Why::BudgetExhausted);
}

}  // namespace
}  // namespace hg::dnssec
