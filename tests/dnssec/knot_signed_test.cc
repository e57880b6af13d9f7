// dnssec/ against a real signer: knotd signs one zone per algorithm (RSA/SHA-256, RSA/SHA-512,
// ECDSA P-256 and P-384, Ed25519, Ed448; NSEC in some, NSEC3 in others), the test asks it
// over UDP with DO set, and every RRset of every answer must check Secure with the keys the
// zone's DS (as keymgr prints it) vouches for — the DNSKEY RRset, plain answers, a name in
// the RDATA in capitals (canonical form), a wildcard expansion, the NSEC/NSEC3 records of a
// denial. One byte changed in an answer makes it bogus. The time is the machine's: knotd
// signs with it too, so nothing depends on the date.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dnssec/crypto.h"
#include "dnssec/rrset_check.h"
#include "dnssec/rrsets.h"
#include "tests/support/knot_server.h"
#include "tests/support/requires.h"
#include "wire/message.h"

namespace hg::dnssec {
namespace {

using Bytes = std::vector<uint8_t>;

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Signed {
  std::string policy;
  std::vector<std::string> lines;
  uint8_t algorithm;
};

const std::vector<Signed>& signers() {
  static const std::vector<Signed> s{
      {"rsa256", {"algorithm: rsasha256", "ksk-size: 2048", "zsk-size: 1024"}, 8},
      {"rsa512", {"algorithm: rsasha512", "ksk-size: 2048", "zsk-size: 2048", "nsec3: on"}, 10},
      {"p256", {"algorithm: ecdsap256sha256"}, 13},
      {"p384", {"algorithm: ecdsap384sha384", "nsec3: on", "nsec3-iterations: 0"}, 14},
      {"ed25519", {"algorithm: ed25519", "nsec3: on", "nsec3-opt-out: on"}, 15},
      {"ed448", {"algorithm: ed448"}, 16},
  };
  return s;
}

std::string zone_text(const std::string& apex) {
  return "$ORIGIN " + apex + ".\n$TTL 3600\n" +
         "@ SOA ns hostmaster 1 3600 600 86400 300\n"
         "@ NS ns\n"
         "ns A 192.0.2.53\n"
         "www A 192.0.2.1\n"
         "www A 192.0.2.2\n"
         "www AAAA 2001:db8::1\n"
         "mx MX 10 Mail.Example.TEST.\n"  // capitals in RDATA: signed in lower case
         "alias CNAME WWW\n"
         "*.wild A 192.0.2.9\n"
         "txt TXT \"v=spf1 -all\" \"second string\"\n"
         "srv._tcp SRV 0 5 443 WWW\n";
}

class KnotSigned : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<test::KnotPolicy> policies;
    std::vector<test::KnotZone> zones;
    for (const auto& s : signers()) {
      policies.push_back({s.policy, s.lines});
      zones.push_back({s.policy + ".test", zone_text(s.policy + ".test"), s.policy});
    }
    server_ = test::KnotServer::start(policies, zones, error_).release();
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

  // The zone's DNSKEY RDATAs, checked against keymgr's DS for it.
  std::vector<Bytes> validated_keys(const std::string& apex, uint8_t algorithm) {
    const auto ds = server_->ds(apex).rdatas;
    EXPECT_FALSE(ds.empty()) << "keymgr " << apex << " ds";
    const auto answer = server_->query(apex, 48);
    EXPECT_TRUE(answer);
    if (!answer) return {};
    wire::Message m;
    EXPECT_TRUE(m.parse(*answer).has_value());
    const auto sets = section_rrsets(m, wire::Section::Answer);
    EXPECT_EQ(sets.size(), 1u);
    if (sets.size() != 1) return {};
    for (const auto& d : ds)
      EXPECT_EQ(d[2], algorithm);
    Budget b;
    const auto r = check_dnskeys(sets[0].set, ds, now_seconds(), b);
    EXPECT_EQ(r.security, Security::Secure) << apex << " why " << static_cast<int>(r.why);
    return sets[0].set.rdatas;
  }

  // Every RRset of every section of the answer to NAME TYPE checks with `keys`; how many.
  int every_rrset_secure(const std::string& apex, const std::vector<Bytes>& keys,
                         const std::string& name, uint16_t type, bool tamper = false) {
    auto answer = server_->query(name, type);
    EXPECT_TRUE(answer) << name;
    if (!answer) return 0;
    wire::Message m;
    EXPECT_TRUE(m.parse(*answer).has_value());
    if (tamper) {
      // The last byte of the first answer record's RDATA.
      const auto& rr = m.section(wire::Section::Answer)[0];
      (*answer)[rr.end() - 1u] ^= 0x01;
      EXPECT_TRUE(m.parse(*answer).has_value());
    }
    int secure = 0;
    const auto zone = *wire::Name::from_text(apex);
    for (const auto s : {wire::Section::Answer, wire::Section::Authority}) {
      for (const auto& set : section_rrsets(m, s)) {
        if (set.set.type == 2 && s == wire::Section::Authority) continue;  // NS: not signed here
        EXPECT_FALSE(set.uncheckable);
        Budget b;
        const auto r = check_rrset(set.set, zone, keys, now_seconds(), b);
        if (tamper) {
          EXPECT_EQ(r.why, Why::BadSignature) << name;
        } else {
          EXPECT_EQ(r.security, Security::Secure)
              << name << " " << set.set.owner.to_text() << " type " << set.set.type << " why "
              << static_cast<int>(r.why);
        }
        secure += r.security == Security::Secure ? 1 : 0;
      }
    }
    return secure;
  }

  static inline test::KnotServer* server_ = nullptr;
  static inline std::string error_;
};

TEST_F(KnotSigned, EveryAlgorithmsKeysMatchTheirDsAndEveryAnswerChecksSecure) {
  for (const auto& s : signers()) {
    SCOPED_TRACE(s.policy);
    const std::string apex = s.policy + ".test";
    const auto keys = validated_keys(apex, s.algorithm);
    ASSERT_FALSE(keys.empty());
    EXPECT_EQ(every_rrset_secure(apex, keys, "www." + apex, 1), 1);
    EXPECT_EQ(every_rrset_secure(apex, keys, "www." + apex, 28), 1);
    EXPECT_EQ(every_rrset_secure(apex, keys, "mx." + apex, 15), 1);
    EXPECT_EQ(every_rrset_secure(apex, keys, "txt." + apex, 16), 1);
    EXPECT_EQ(every_rrset_secure(apex, keys, "srv._tcp." + apex, 33), 1);
    // A CNAME and, from the same zone, its target.
    EXPECT_EQ(every_rrset_secure(apex, keys, "alias." + apex, 1), 2);
    // A wildcard expansion: Secure, signed for *.wild; with NSEC3, the proof that the name
    // itself does not exist comes along in the authority section.
    EXPECT_GE(every_rrset_secure(apex, keys, "Any.Name.wild." + apex, 1), 1);
    // A name that does not exist: SOA and the NSEC or NSEC3 records, each signed.
    EXPECT_GE(every_rrset_secure(apex, keys, "nothing-here." + apex, 1), 2);
    // No data at a name that exists.
    EXPECT_GE(every_rrset_secure(apex, keys, "www." + apex, 16), 2);
  }
}

TEST_F(KnotSigned, OneChangedByteInAnAnswerIsABadSignatureForEveryAlgorithm) {
  for (const auto& s : signers()) {
    SCOPED_TRACE(s.policy);
    const std::string apex = s.policy + ".test";
    const auto keys = validated_keys(apex, s.algorithm);
    ASSERT_FALSE(keys.empty());
    EXPECT_EQ(every_rrset_secure(apex, keys, "www." + apex, 28, true), 0);
  }
}

}  // namespace
}  // namespace hg::dnssec
