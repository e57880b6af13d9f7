#include "tests/support/knot_server.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/command.h"
#include "tests/support/ports.h"

namespace hg::test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `apex TYPE` is answered with at least one record (kdig +short prints one per line).
bool answers(uint16_t port, const std::string& apex, const char* type) {
  const auto r =
      run_command("kdig @127.0.0.1 -p " + std::to_string(port) +
                      " +norec +short +timeout=1 +retry=0 " + shell_quote(apex) + " " + type,
                  5, Stderr::Discard);
  return r.exit_code == 0 && !r.output.empty();
}

}  // namespace

std::unique_ptr<KnotServer> KnotServer::start(const std::vector<KnotPolicy>& policies,
                                              const std::vector<KnotZone>& zones,
                                              std::string& error) {
  if (run_command("sh -c 'command -v knotd && command -v kdig && command -v keymgr'", 5)
          .exit_code != 0) {
    error = "knotd, kdig or keymgr not installed (scripts/install-deps)";
    return nullptr;
  }
  std::unique_ptr<KnotServer> k(new KnotServer());
  if (k->dir_.path().empty()) {
    error = "mkdtemp failed";
    return nullptr;
  }
  const std::string& dir = k->dir_.path();
  k->port_ = free_port();
  std::string conf = "server:\n    rundir: \"" + dir + "\"\n    listen: 127.0.0.1@" +
                     std::to_string(k->port_) +
                     "\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n" +
                     "database:\n    storage: \"" + dir + "\"\n" + "control:\n    listen: \"" +
                     dir + "/knot.sock\"\n" + "log:\n  - target: stderr\n    any: warning\n";
  if (!policies.empty()) conf += "policy:\n";
  for (const auto& p : policies) {
    conf += "  - id: " + p.id + "\n";
    for (const auto& line : p.lines)
      conf += "    " + line + "\n";
  }
  conf += "zone:\n";
  for (const auto& z : zones) {
    conf += "  - domain: " + z.apex + "\n    file: \"" + dir + "/" + z.apex +
            ".zone\"\n    zonefile-sync: -1\n    journal-content: none\n";
    if (!z.policy.empty()) conf += "    dnssec-signing: on\n    dnssec-policy: " + z.policy + "\n";
    k->dir_.write(z.apex + ".zone", z.text);
  }
  k->dir_.write("knot.conf", conf);
  k->child_ = std::make_unique<Child>(
      std::vector<std::string>{"knotd", "-c", k->dir_.file("knot.conf")}, k->dir_.file("log"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  for (const auto& z : zones) {
    while (!answers(k->port_, z.apex, "SOA") ||
           (!z.policy.empty() && !answers(k->port_, z.apex, "DNSKEY"))) {
      if (std::chrono::steady_clock::now() > deadline || !k->child_->running()) {
        error = "knotd did not serve " + z.apex + " on port " + std::to_string(k->port_) + ": " +
                k->log();
        return nullptr;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
  }
  return k;
}

KnotServer::~KnotServer() = default;

std::string KnotServer::keymgr(const std::string& zone, const std::string& args) const {
  const auto r = run_command(
      "keymgr -c " + shell_quote(dir_.file("knot.conf")) + " " + shell_quote(zone) + " " + args, 20,
      Stderr::Discard);
  return r.exit_code == 0 ? r.output : std::string{};
}

std::string KnotServer::log() const {
  return slurp(dir_.file("log"));
}

}  // namespace hg::test
