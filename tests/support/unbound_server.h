// UnboundServer: a real Unbound recursor on a free loopback port whose root and every other
// zone a test names is a test's knotd (stub zones at 127.0.0.1@PORT, so no query ever follows
// an NS record off loopback or to port 53): the upstream a validator is tested behind — it follows
// CNAME and DNAME chains across zones as a real upstream does — and, with a trust anchor
// and its validator module, the reference whose secure/insecure/bogus verdicts a validator's
// must agree with.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/child.h"
#include "tests/support/temp_dir.h"

namespace hg::test {

class UnboundServer {
 public:
  /// Starts unbound with the root and `zones` (apexes, "example.test.") at 127.0.0.1:`port`.
  /// `trust_anchor_lines` (presentation DS or DNSKEY records for ".") empty: the iterator alone
  /// (nothing validated, nothing withheld, RRSIGs passed on to DO queries); otherwise the validator
  /// too, with EDE on. Waits (bounded) for it to answer "." SOA. nullptr on failure, `error` saying
  /// why.
  static std::unique_ptr<UnboundServer> start(uint16_t port, const std::vector<std::string>& zones,
                                              const std::vector<std::string>& trust_anchor_lines,
                                              std::string& error);
  /// Starts unbound as a forwarder with its default local zones (the RFC 6761 and RFC 6303
  /// names it answers itself, test. among them): every other name goes to the upstream at
  /// 127.0.0.1:`upstream_port` (forward-zone "."), iterator only. The reference the special-use
  /// names are compared with (tests/integration/special_names_test.cc).
  static std::unique_ptr<UnboundServer> start_forwarder(uint16_t upstream_port, std::string& error);
  ~UnboundServer();
  UnboundServer(const UnboundServer&) = delete;
  UnboundServer& operator=(const UnboundServer&) = delete;

  uint16_t port() const noexcept { return port_; }
  std::string log() const;

 private:
  UnboundServer() = default;
  /// A new server with its directory and port, or nullptr (and why in `error`) when unbound
  /// is not installed or the directory could not be made.
  static std::unique_ptr<UnboundServer> make(std::string& error);
  /// Writes `conf`, runs unbound on it, waits (bounded) until it answers `probe` SOA.
  static std::unique_ptr<UnboundServer> run(std::unique_ptr<UnboundServer> u,
                                            const std::string& conf, const std::string& probe,
                                            std::string& error);
  TempDir dir_{"hg-unbound"};
  uint16_t port_ = 0;
  std::unique_ptr<Child> child_;
};

}  // namespace hg::test
