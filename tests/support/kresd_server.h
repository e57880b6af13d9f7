// KresdServer: a real Knot Resolver (kresd) on a free loopback port, validating with a trust
// anchor the test gives and forwarding every query to one upstream on 127.0.0.1 (the iterating
// Unbound over the test's knotd hierarchy): a second reference, besides a validating Unbound,
// whose secure/insecure/bogus verdicts and Extended DNS Errors a validator's must agree with.
//
// Nothing it sends leaves 127.0.0.1: the built-in root trust anchor is removed (no bootstrap
// from the network), the modules that query on their own (priming, trust anchor updates and
// signalling, clock skew detection) are unloaded, IPv6 is off, and every query — the
// client's and the DS and DNSKEY fetches behind it — is forwarded (policy.FORWARD, which
// validates, unlike policy.STUB) to the one upstream instead of iterating from root hints.
// Its cache, configuration and control socket live in a fresh temporary directory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/child.h"
#include "tests/support/temp_dir.h"

namespace hg::test {

class KresdServer {
 public:
  /// Starts kresd forwarding to 127.0.0.1:`upstream_port`, with `trust_anchor_lines` (presentation
  /// DS or DNSKEY records) as its only trust anchors. Waits (bounded) until it answers "." SOA.
  /// nullptr on failure, `error` saying why ("not installed" when kresd is missing).
  static std::unique_ptr<KresdServer> start(uint16_t upstream_port,
                                            const std::vector<std::string>& trust_anchor_lines,
                                            std::string& error);
  ~KresdServer();
  KresdServer(const KresdServer&) = delete;
  KresdServer& operator=(const KresdServer&) = delete;

  uint16_t port() const noexcept { return port_; }
  std::string log() const;

 private:
  KresdServer() = default;
  TempDir dir_{"hg-kresd"};
  uint16_t port_ = 0;
  std::unique_ptr<Child> child_;
};

}  // namespace hg::test
