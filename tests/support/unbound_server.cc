#include "tests/support/unbound_server.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/command.h"
#include "tests/support/ports.h"

namespace hg::test {

std::unique_ptr<UnboundServer> UnboundServer::start(
    uint16_t port, const std::vector<std::string>& zones,
    const std::vector<std::string>& trust_anchor_lines, std::string& error) {
  if (run_command("sh -c 'command -v unbound'", 5).exit_code != 0) {
    error = "unbound not installed (scripts/install-deps)";
    return nullptr;
  }
  std::unique_ptr<UnboundServer> u(new UnboundServer());
  if (u->dir_.path().empty()) {
    error = "mkdtemp failed";
    return nullptr;
  }
  u->port_ = free_port();
  const bool validate = !trust_anchor_lines.empty();
  // The RFC 6761 and RFC 6303 names Unbound answers itself by default ("test." among them)
  // would hide the test's zones: nodefault for the ones the tests use.
  std::string conf = "server:\n  interface: 127.0.0.1\n  port: " + std::to_string(u->port_) +
                     "\n  do-daemonize: no\n  username: \"\"\n  chroot: \"\"\n  directory: \"" +
                     u->dir_.path() +
                     "\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  verbosity: 1\n"
                     "  num-threads: 1\n  do-ip6: no\n  do-not-query-localhost: no\n"
                     "  access-control: 127.0.0.0/8 allow\n  prefetch: no\n"
                     "  outgoing-range: 32\n  so-reuseport: no\n  local-zone: \"test.\" nodefault\n"
                     "  qname-minimisation: no\n  harden-referral-path: no\n";
  if (validate) {
    conf += "  module-config: \"validator iterator\"\n  ede: yes\n  val-log-level: 2\n";
    for (const auto& line : trust_anchor_lines)
      conf += "  trust-anchor: \"" + line + "\"\n";
  } else {
    conf += "  module-config: \"iterator\"\n";
  }
  conf += "remote-control:\n  control-enable: no\n";
  std::vector<std::string> stubs{"."};
  stubs.insert(stubs.end(), zones.begin(), zones.end());
  for (const auto& z : stubs)
    conf +=
        "stub-zone:\n  name: \"" + z + "\"\n  stub-addr: 127.0.0.1@" + std::to_string(port) + "\n";
  u->dir_.write("unbound.conf", conf);
  u->child_ = std::make_unique<Child>(
      std::vector<std::string>{"unbound", "-d", "-c", u->dir_.file("unbound.conf")},
      u->dir_.file("log"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{15};
  while (std::chrono::steady_clock::now() < deadline && u->child_->running()) {
    const auto r =
        run_command("kdig @127.0.0.1 -p " + std::to_string(u->port_) + " +timeout=1 +retry=0 . SOA",
                    5, Stderr::Discard);
    if (r.exit_code == 0 && r.output.find("status: NOERROR") != std::string::npos) return u;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  error = "unbound did not answer on port " + std::to_string(u->port_) + ": " + u->log();
  return nullptr;
}

UnboundServer::~UnboundServer() = default;

std::string UnboundServer::log() const {
  std::ifstream in(dir_.file("log"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace hg::test
