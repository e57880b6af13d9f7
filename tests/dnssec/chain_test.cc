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

#include "tests/dnssec/hierarchy.h"
#include "tests/support/requires.h"

namespace hg::dnssec {
namespace {

using Bytes = std::vector<uint8_t>;
using test::long_name;
using test::name;
using test::now_seconds;

class Chain : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    h_ = test::Hierarchy::get(error);
    if (h_ == nullptr) {
      if (error.find("not installed") != std::string::npos) HG_SKIP_UNLESS_CI(error);
      FAIL() << error;
    }
    anchor_ = h_->anchor;
  }
  // Runs a walk to the end, fetching from knotd; `tamper` may change a response first.
  ZoneKeys walk(const std::string& target, Budget& budget, const ChainWalk::Known& known = {},
                int* fetches = nullptr,
                const std::function<void(const Fetch&, Bytes&)>& tamper = {}) {
    ChainWalk w(anchor_, name(target), now_seconds(), budget, known);
    for (int i = 0; !w.done() && i < 100; ++i) {
      auto r = h_->knot->query(w.need().name.to_text(), w.need().type);
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

  const test::Hierarchy* h_ = nullptr;
  Anchor anchor_;
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
