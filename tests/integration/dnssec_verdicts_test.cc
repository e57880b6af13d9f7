// --dnssec validate against the broken zones of the hierarchy (tests/dnssec/hierarchy.h,
// broken_zones.h): the real hourglassd forwards to the iterating Unbound over it, with the
// root DS as its trust anchor file, and dig asks it, and asks a validating Unbound and Knot
// Resolver (kresd) the same. On every case the rcode and AD bit must be theirs, and a bogus
// answer's Extended DNS Error the code of its cause (dig's "; EDE: 7 (Signature Expired)"), as
// must an answer's that is insecure for its NSEC3 iterations.
// forged.test.'s 6.6.6.6 is never served, but a client that sets CD gets it (RFC 4035 §3.2.2).
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/dnssec/hierarchy.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/requires.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

// The EDE info-codes dig prints ("; EDE: 7 (Signature Expired): ..."), in order.
std::vector<int> ede_codes(const DigResult& r) {
  static const std::regex ede("; EDE: ([0-9]+)");
  std::vector<int> out;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), ede);
       it != std::sregex_iterator(); ++it)
    out.push_back(std::stoi((*it)[1].str()));
  return out;
}

bool has_ad(const DigResult& r) {
  const std::string flags = " " + r.flags() + " ";
  return flags.find(" ad ") != std::string::npos;
}

// "SERVFAIL", "NOERROR ad", "NXDOMAIN EDE 27": what the three resolvers are compared on.
std::string summary(const DigResult& r) {
  std::string s = r.status();
  if (has_ad(r)) s += " ad";
  for (const int c : ede_codes(r))
    s += " EDE " + std::to_string(c);
  return s;
}

class DnssecVerdicts : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    h_ = test::Hierarchy::get(error);
    test::UnboundServer* upstream = h_ != nullptr ? h_->unbound(false, error) : nullptr;
    if (upstream != nullptr) unbound_ = h_->unbound(true, error);
    if (unbound_ != nullptr) kresd_ = h_->kresd(error);
    if (kresd_ == nullptr) {
      if (error.find("not installed") != std::string::npos) HG_SKIP_UNLESS_CI(error);
      FAIL() << error;
    }
    socket_ = dir_.file("ctl");
    d_ = Daemon::start({"--upstream", "127.0.0.1:" + std::to_string(upstream->port()), "--dnssec",
                        "validate", "--trust-anchor", dir_.write("root.ds", h_->root_ds_file()),
                        "--control", socket_});
    ASSERT_TRUE(d_->ready()) << d_->output();
  }

  const test::Hierarchy* h_ = nullptr;
  test::UnboundServer* unbound_ = nullptr;
  test::KresdServer* kresd_ = nullptr;
  test::TempDir dir_{"hg-dnssec-verdicts"};
  std::string socket_;
  std::unique_ptr<Daemon> d_;
};

struct Case {
  const char* name;
  const char* type;
  const char* status;  ///< hourglassd's, Unbound's and kresd's rcode
  bool ad;             ///< whether the answer is secure
  int ede;             ///< the EDE hourglassd gives (the first time: not from the cache); -1: none
  const char* what;
};

TEST_F(DnssecVerdicts, EveryBrokenZoneGetsTheRcodeOfUnboundAndKresdAndItsOwnEde) {
  const Case cases[] = {
      {"x.expired.test", "A", "SERVFAIL", false, 7, "signatures expired"},
      {"x.notyet.test", "A", "SERVFAIL", false, 8, "signatures not yet valid"},
      {"x.nokey.test", "A", "SERVFAIL", false, 9, "DS but no DNSKEY"},
      {"x.stripped.test", "A", "SERVFAIL", false, 10, "no RRSIG"},
      {"x.forged.test", "A", "SERVFAIL", false, 6, "A changed after signing"},
      {"x.keytrap.test", "A", "SERVFAIL", false, 0, "colliding key tags, bad signatures"},
      {"x.iter500.test", "A", "NOERROR", true, -1, "data beside NSEC3 of 500 iterations"},
      // Insecure, and RFC 9276 §3.2's EDE 27 says why (Unbound 1.17 and kresd 5.6 send none).
      {"nothing.iter500.test", "A", "NXDOMAIN", false, 27, "NSEC3 of 500 iterations"},
      {"x.iter500.test", "TXT", "NOERROR", false, 27, "NODATA, NSEC3 of 500 iterations"},
      {"nothing.keytrap.test", "A", "NXDOMAIN", true, -1, "colliding tags, good signatures"},
      {"x.wrongds.test", "A", "SERVFAIL", false, 9, "no key for its DS"},
      {"www.signed.test", "A", "NOERROR", true, -1, "a good zone beside them"},
  };
  for (const Case& c : cases) {
    const std::string q = std::string("+dnssec ") + c.name + " " + c.type;
    SCOPED_TRACE(q + ": " + c.what);
    const DigResult ours = dig(d_->port(), q);
    const DigResult unbound = dig(unbound_->port(), q);
    const DigResult kresd = dig(kresd_->port(), q);
    std::printf("%-22s %-3s hourglassd %-20s unbound %-22s kresd %s\n", c.name, c.type,
                summary(ours).c_str(), summary(unbound).c_str(), summary(kresd).c_str());
    EXPECT_EQ(ours.status(), c.status) << ours.output;
    EXPECT_EQ(has_ad(ours), c.ad) << ours.output;
    EXPECT_EQ(unbound.status(), c.status) << unbound.output;
    EXPECT_EQ(has_ad(unbound), c.ad) << unbound.output;
    EXPECT_EQ(kresd.status(), c.status) << kresd.output;
    EXPECT_EQ(has_ad(kresd), c.ad) << kresd.output;
    if (c.ede >= 0) {
      EXPECT_EQ(ede_codes(ours), std::vector<int>{c.ede}) << ours.output;
    } else {
      EXPECT_TRUE(ede_codes(ours).empty()) << ours.output;
    }
  }
}

TEST_F(DnssecVerdicts, TheForgedAddressIsNeverServedButCdGetsIt) {
  DigResult r = dig(d_->port(), "+dnssec x.forged.test A");
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_EQ(ede_codes(r), std::vector<int>{6}) << r.output;
  EXPECT_FALSE(r.contains(test::kForgedAddress)) << r.output;
  // Without DO, and again (the failure cache answers): never the forged address.
  r = dig(d_->port(), "+nodnssec x.forged.test A");
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_FALSE(r.contains(test::kForgedAddress)) << r.output;
  // Checking disabled: the client validates, and gets what the zone serves, without AD.
  r = dig(d_->port(), "+dnssec +cd x.forged.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_TRUE(r.contains(test::kForgedAddress)) << r.output;
  EXPECT_FALSE(has_ad(r)) << r.output;
  // And a plain query after that still does not get it from the cache.
  r = dig(d_->port(), "+dnssec x.forged.test A");
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_FALSE(r.contains(test::kForgedAddress)) << r.output;
  // The references agree: SERVFAIL without CD, the data with it.
  for (const uint16_t port : {unbound_->port(), kresd_->port()}) {
    r = dig(port, "+dnssec x.forged.test A");
    EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
    EXPECT_FALSE(r.contains(test::kForgedAddress)) << r.output;
    r = dig(port, "+dnssec +cd x.forged.test A");
    EXPECT_TRUE(r.contains(test::kForgedAddress)) << r.output;
  }
}

}  // namespace
}  // namespace hg::integration
