// KnotServer: knotd on a free loopback port serving zones a test writes, signed by knotd
// itself when a zone names a DNSSEC policy — the signer the dnssec/ tests check the validator
// against, instead of signatures of our own making. Everything lives in a fresh temporary
// directory (configuration, zone files, KASP database), removed when the server goes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/child.h"
#include "tests/support/temp_dir.h"

namespace hg::test {

/// A knotd DNSSEC policy: its id and the lines of its body, e.g. {"ed", {"algorithm: ed25519",
/// "nsec3: on"}} (knot.conf(5), section policy).
struct KnotPolicy {
  std::string id;
  std::vector<std::string> lines;
};

/// A zone: apex ("example.test"), zone file text, and the policy id it is signed with
/// (empty: served unsigned).
struct KnotZone {
  std::string apex;
  std::string text;
  std::string policy;
};

/// One DNS exchange with a server on 127.0.0.1:`port`: `name` `type` with header `flags`
/// (e.g. 0x0100 RD, 0x0010 CD) and EDNS with DO=1, over UDP and, when the answer is truncated,
/// over TCP. The response's bytes, or nullopt after 3 s.
std::optional<std::vector<uint8_t>> dns_query(uint16_t port, const std::string& name, uint16_t type,
                                              uint16_t flags);

class KnotServer {
 public:
  /// Starts knotd and waits (bounded) until every zone answers SOA, and DNSKEY for the signed
  /// ones. nullptr when knotd is missing or does not come up; `error` then says why (with the
  /// end of knotd's log).
  static std::unique_ptr<KnotServer> start(const std::vector<KnotPolicy>& policies,
                                           const std::vector<KnotZone>& zones, std::string& error);
  ~KnotServer();
  KnotServer(const KnotServer&) = delete;
  KnotServer& operator=(const KnotServer&) = delete;

  uint16_t port() const noexcept { return port_; }
  /// `keymgr -c knot.conf ZONE ARGS...`'s output (e.g. "ds" for the zone's DS records);
  /// empty when it fails.
  std::string keymgr(const std::string& zone, const std::string& args) const;
  /// One exchange with knotd over UDP (DO=1, RD=0), and over TCP when the answer is truncated
  /// (knotd keeps to 1232 bytes over UDP; an NSEC3 denial under 2048-bit RSA is more than
  /// that): the response's bytes, or nullopt after 3 s.
  std::optional<std::vector<uint8_t>> query(const std::string& name, uint16_t type) const {
    return dns_query(port_, name, type, 0);
  }
  /// Rewrites a zone's file with `text` (whose SOA serial must be higher) and has knotd reload
  /// it; true once knotd serves `serial` (within 20 s).
  bool replace_zone(const std::string& apex, const std::string& text, uint32_t serial);
  /// A zone's DS records as keymgr gives them (one per KSK and digest type): the RDATAs, and
  /// the "OWNER DS TAG ALG DIGESTTYPE HEX" lines to put into the parent's zone file.
  struct DsRecords {
    std::vector<std::vector<uint8_t>> rdatas;
    std::string zone_lines;
  };
  DsRecords ds(const std::string& zone) const;
  /// knotd's log so far, for failure messages.
  std::string log() const;

 private:
  KnotServer() = default;
  TempDir dir_{"hg-knot"};
  uint16_t port_ = 0;
  std::unique_ptr<Child> child_;
};

}  // namespace hg::test
