// --dnssec validate end to end: the real hourglassd forwards to an iterating Unbound over the
// knotd hierarchy of tests/dnssec/hierarchy.h (signed, unsigned and broken zones), with the
// hierarchy's root DS as its trust anchor file, and dig asks it. Secure answers carry AD for
// clients that set DO or AD; insecure ones do not; a bogus one is SERVFAIL with the RFC 8914
// code of the reason, but CD=1 still gets the data (RFC 4035 §3.2.2); the zones a chain
// established are not fetched again for the next name.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/dnssec/hierarchy.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/requires.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

class Dnssec : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    h_ = test::Hierarchy::get(error);
    test::UnboundServer* upstream = h_ != nullptr ? h_->unbound(false, error) : nullptr;
    if (upstream == nullptr) {
      if (error.find("not installed") != std::string::npos) HG_SKIP_UNLESS_CI(error);
      FAIL() << error;
    }
    anchor_file_ = dir_.write("root.ds", h_->root_ds_file());
    socket_ = dir_.file("ctl");
    d_ = Daemon::start({"--upstream", "127.0.0.1:" + std::to_string(upstream->port()), "--dnssec",
                        "validate", "--trust-anchor", anchor_file_, "--control", socket_});
    ASSERT_TRUE(d_->ready()) << d_->output();
  }

  const test::Hierarchy* h_ = nullptr;
  test::TempDir dir_{"hg-dnssec"};
  std::string anchor_file_;
  std::string socket_;
  std::unique_ptr<Daemon> d_;
};

TEST_F(Dnssec, SecureAnswersCarryAdForClientsThatAskAndInsecureOnesDoNot) {
  DigResult r = dig(d_->port(), "+dnssec www.signed.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_TRUE(r.contains("192.0.2.1")) << r.output;
  EXPECT_TRUE(r.contains("RRSIG")) << r.output;
  // From the cache: AD again; and for a client that sets AD without DO (RFC 6840 §5.7), AD
  // without the signatures.
  r = dig(d_->port(), "+dnssec www.signed.test A");
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  r = dig(d_->port(), "+adflag +nodnssec www.signed.test A");
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_FALSE(r.contains("RRSIG")) << r.output;
  // A client that asks for neither gets no AD (RFC 6840 §5.8).
  r = dig(d_->port(), "+noadflag +nodnssec alias.signed.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  // Unsigned zones: answered, never AD.
  r = dig(d_->port(), "+dnssec x.unsigned.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  // Signed only with an algorithm not done here (RSA/SHA-1): insecure, and EDE 1 says why.
  r = dig(d_->port(), "+dnssec x.sha1.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_TRUE(r.contains("EDE: 1 (Unsupported DNSKEY Algorithm)")) << r.output;
  // A secure denial.
  r = dig(d_->port(), "+dnssec nothing.deep.signed.test A");
  EXPECT_EQ(r.status(), "NXDOMAIN") << r.output;
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_GE(ctl_stat(socket_, "dnssec.secure"), 3);
  EXPECT_GE(ctl_stat(socket_, "dnssec.insecure"), 2);
  EXPECT_EQ(ctl_stat(socket_, "dnssec.bogus"), 0);
}

TEST_F(Dnssec, ABogusAnswerIsServfailWithItsReasonButCdGetsTheData) {
  DigResult r = dig(d_->port(), "+dnssec x.wrongds.test A");
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_TRUE(r.contains("EDE: 9")) << r.output;  // DNSKEY Missing
  EXPECT_FALSE(r.contains("192.0.2.5")) << r.output;
  EXPECT_EQ(ctl_stat(socket_, "dnssec.bogus"), 1);
  // Checking disabled: the client validates, and gets the data as it is.
  r = dig(d_->port(), "+dnssec +cd x.wrongds.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_TRUE(r.contains("192.0.2.5")) << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  // Not asked again at once (RFC 9520): the failure cache answers.
  r = dig(d_->port(), "+dnssec x.wrongds.test A");
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_EQ(ctl_stat(socket_, "dnssec.bogus"), 1);
  // A burst of bogus names is logged like other failures, a line a second at most: a zone
  // cannot flood the journal.
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i)
    names.push_back("n" + std::to_string(i) + ".wrongds.test");
  const auto answers = ask_all(d_->port(), names, names.size(), Millis{4000});
  EXPECT_EQ(answers.size(), names.size());
  EXPECT_EQ(ctl_stat(socket_, "dnssec.bogus"), 9);
  EXPECT_LE(d_->lines_with("bogus:").size(), 3u) << d_->output();
}

TEST_F(Dnssec, ZonesAChainEstablishedAreNotFetchedAgain) {
  ASSERT_EQ(dig(d_->port(), "+dnssec a.deep.signed.test A").status(), "NOERROR");
  const int64_t fetches = ctl_stat(socket_, "dnssec.fetches");
  EXPECT_GE(fetches, 7);  // DNSKEY ., DS/DNSKEY test., signed.test., deep.signed.test., DS a
  const DigResult r = dig(d_->port(), "+dnssec x.w.deep.signed.test A");
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_EQ(ctl_stat(socket_, "dnssec.fetches"), fetches);
}

// Thirty answers from zones not yet established, arriving together: their chains of trust
// need the same seven DS/DNSKEY RRsets (DNSKEY ., DS and DNSKEY of test., signed.test. and
// deep.signed.test.), asked once and shared, not once per answer (which was 30 x 7).
TEST_F(Dnssec, AnswersFromANewZoneArrivingTogetherShareTheirKeyFetches) {
  std::vector<std::string> names;
  for (int i = 0; i < 30; ++i)
    names.push_back("n" + std::to_string(i) + ".w.deep.signed.test");
  const auto answers = ask_all(d_->port(), names, names.size(), Millis{5000});
  ASSERT_EQ(answers.size(), names.size());
  for (const auto& [name, a] : answers) {
    EXPECT_EQ(a.answer.rcode(), wire::RCode::NoError) << name;
    EXPECT_EQ(a_records(a.answer), std::vector<std::string>{"192.0.2.10"}) << name;
  }
  EXPECT_EQ(ctl_stat(socket_, "dnssec.secure"), 30);
  const int64_t fetches = ctl_stat(socket_, "dnssec.fetches");
  EXPECT_GE(fetches, 7);
  EXPECT_LE(fetches, 10) << "each RRset asked once, whatever the number of answers waiting";
}

// RFC 8198 against a random-subdomain flood: under a signed zone, every random name is an
// NXDOMAIN that would cost an upstream query; with the validated NSEC/NSEC3 ranges of earlier
// denials kept, a name inside one is answered here. test. has 15 NSEC ranges (its apex and
// 14 names), so after at most that many upstream questions every random name is answered from
// them; deep.signed.test. (NSEC3, 5 names) the same with hashed ranges. Each answer is a
// secure NXDOMAIN.
TEST_F(Dnssec, ARandomSubdomainFloodUnderASignedZoneIsAnsweredFromItsValidatedRanges) {
  uint32_t seed = 0x5eed1234;
  auto label = [&seed] {
    std::string l;
    for (int i = 0; i < 10; ++i) {
      seed = seed * 1103515245u + 12345u;
      l += static_cast<char>('a' + (seed >> 16) % 26);
    }
    return l;
  };
  for (const std::string zone : {"test.", "deep.signed.test."}) {
    const int64_t upstream_before = ctl_stat(socket_, "server.upstream_queries");
    const int64_t synthesized_before = ctl_stat(socket_, "dnssec.synthesized");
    constexpr int kNames = 200;
    int nxdomain_ad = 0;
    for (int i = 0; i < kNames; ++i) {
      Query q{.name = label() + "." + zone, .dnssec_ok = true};
      const auto a = udp_query(d_->port(), build_query(q));
      ASSERT_TRUE(a) << q.name;
      if (a->rcode() == wire::RCode::NXDomain && a->ad()) ++nxdomain_ad;
    }
    EXPECT_EQ(nxdomain_ad, kNames) << zone;
    const int64_t asked = ctl_stat(socket_, "server.upstream_queries") - upstream_before;
    const int64_t synthesized = ctl_stat(socket_, "dnssec.synthesized") - synthesized_before;
    EXPECT_EQ(asked + synthesized, kNames) << zone;
    EXPECT_LE(asked, 15) << zone << ": each range is learned once";
    EXPECT_GE(synthesized, kNames - 15) << zone;
  }
  // A validating client can check what it got: dig shows the proof with AD.
  const DigResult r = dig(d_->port(), "+dnssec zzqq-not-there.test A");
  EXPECT_EQ(r.status(), "NXDOMAIN") << r.output;
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_TRUE(r.contains("NSEC")) << r.output;
  EXPECT_TRUE(r.contains("RRSIG")) << r.output;
}

TEST(DnssecConfig, AMissingTrustAnchorFileStopsTheStartWithWhatToDo) {
  auto d = Daemon::start({"--upstream", "127.0.0.1:9", "--dnssec", "validate", "--trust-anchor",
                          "/nonexistent/root.key"});
  EXPECT_FALSE(d->ready());
  EXPECT_EQ(d->wait_exit(Millis{10000}), 1) << d->output();
  EXPECT_NE(d->output().find("--dnssec validate: cannot open the trust anchor file "
                             "/nonexistent/root.key"),
            std::string::npos)
      << d->output();
}

}  // namespace
}  // namespace hg::integration
