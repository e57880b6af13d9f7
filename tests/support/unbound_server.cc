#include "tests/support/unbound_server.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "tests/support/command.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"

namespace hg::test {

namespace {

// The server: section both kinds share: loopback only, in the foreground, no privileges
// dropped, no chroot, logs to the log file, one thread, no prefetch.
std::string server_section(const std::string& dir, uint16_t port) {
  return "server:\n  interface: 127.0.0.1\n  port: " + std::to_string(port) +
         "\n  do-daemonize: no\n  username: \"\"\n  chroot: \"\"\n  directory: \"" + dir +
         "\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  verbosity: 1\n"
         "  num-threads: 1\n  do-ip6: no\n  do-not-query-localhost: no\n"
         "  access-control: 127.0.0.0/8 allow\n  prefetch: no\n"
         "  outgoing-range: 32\n  so-reuseport: no\n  qname-minimisation: no\n";
}

}  // namespace

std::unique_ptr<UnboundServer> UnboundServer::make(std::string& error) {
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
  return u;
}

std::unique_ptr<UnboundServer> UnboundServer::start(
    uint16_t port, const std::vector<std::string>& zones,
    const std::vector<std::string>& trust_anchor_lines, std::string& error) {
  auto u = make(error);
  if (!u) return nullptr;
  const bool validate = !trust_anchor_lines.empty();
  // The RFC 6761 and RFC 6303 names Unbound answers itself by default ("test." among them)
  // would hide the test's zones: nodefault for the ones the tests use.
  std::string conf = server_section(u->dir_.path(), u->port_) +
                     "  local-zone: \"test.\" nodefault\n  harden-referral-path: no\n";
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
  return run(std::move(u), conf, ".", error);
}

std::unique_ptr<UnboundServer> UnboundServer::start_forwarder(uint16_t upstream_port,
                                                              std::string& error) {
  auto u = make(error);
  if (!u) return nullptr;
  const std::string conf = server_section(u->dir_.path(), u->port_) +
                           "  module-config: \"iterator\"\n"
                           "remote-control:\n  control-enable: no\n"
                           "forward-zone:\n  name: \".\"\n  forward-addr: 127.0.0.1@" +
                           std::to_string(upstream_port) + "\n";
  // localhost SOA: one of Unbound's own zones, so readiness costs the upstream no query.
  return run(std::move(u), conf, "localhost", error);
}

std::unique_ptr<UnboundServer> UnboundServer::run(std::unique_ptr<UnboundServer> u,
                                                  const std::string& conf, const std::string& probe,
                                                  std::string& error) {
  u->dir_.write("unbound.conf", conf);
  u->child_ = std::make_unique<Child>(
      std::vector<std::string>{"unbound", "-d", "-c", u->dir_.file("unbound.conf")},
      u->dir_.file("log"));
  bool answers = false;
  eventually(
      [&] {
        if (!u->child_->running()) return true;  // gave up: its log says why
        const auto r = run_command("kdig @127.0.0.1 -p " + std::to_string(u->port_) +
                                       " +timeout=1 +retry=0 " + probe + " SOA",
                                   5, Stderr::Discard);
        answers = r.exit_code == 0 && r.output.find("status: NOERROR") != std::string::npos;
        return answers;
      },
      std::chrono::seconds{15}, std::chrono::milliseconds{50});
  if (answers) return u;
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
