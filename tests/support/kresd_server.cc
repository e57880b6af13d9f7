#include "tests/support/kresd_server.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "tests/support/command.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"

namespace hg::test {

namespace {

// A Lua string literal of `s` (the trust anchor lines hold no quote, but say so in one place).
std::string lua_string(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace

std::unique_ptr<KresdServer> KresdServer::start(uint16_t upstream_port,
                                                const std::vector<std::string>& trust_anchor_lines,
                                                std::string& error) {
  if (run_command("sh -c 'command -v kresd'", 5).exit_code != 0) {
    error = "kresd not installed (scripts/install-deps: knot-resolver)";
    return nullptr;
  }
  std::unique_ptr<KresdServer> k(new KresdServer());
  if (k->dir_.path().empty()) {
    error = "mkdtemp failed";
    return nullptr;
  }
  k->port_ = free_port();
  // kresd's sandbox has already loaded the system's root anchor (/usr/share/dns/root.key) when
  // this runs: removed first, so that the test's hierarchy is the only one it trusts.
  std::string conf =
      "net.ipv6 = false\n"
      "net.listen('127.0.0.1', " +
      std::to_string(k->port_) +
      ", { kind = 'dns' })\n"
      "cache.open(10 * MB, 'lmdb://" +
      k->dir_.file("cache") +
      "')\n"
      "for _, m in ipairs({'priming', 'ta_update', 'ta_signal_query', 'detect_time_skew'}) do\n"
      "  modules.unload(m)\n"
      "end\n"
      "trust_anchors.remove('.')\n";
  // All in one call: a second add() for the same owner would extend the set with a warning.
  std::string anchors;
  for (const auto& line : trust_anchor_lines)
    anchors += line + "\n";
  conf += "trust_anchors.add(" + lua_string(anchors) + ")\n";
  conf +=
      "policy.add(policy.all(policy.FORWARD('127.0.0.1@" + std::to_string(upstream_port) + "')))\n";
  k->dir_.write("config.lua", conf);
  // -n: no read-eval-print loop on stdin; the rundir (its control socket) is the temp dir.
  k->child_ = std::make_unique<Child>(
      std::vector<std::string>{"kresd", "-n", "-c", k->dir_.file("config.lua"), k->dir_.path()},
      k->dir_.file("log"));
  const bool answers = eventually(
      [&] {
        if (!k->child_->running()) return true;  // it exited: no use waiting
        const auto r = run_command(
            "kdig @127.0.0.1 -p " + std::to_string(k->port_) + " +timeout=1 +retry=0 . SOA", 5,
            Stderr::Discard);
        return r.exit_code == 0 && r.output.find("status: NOERROR") != std::string::npos;
      },
      std::chrono::seconds{15}, std::chrono::milliseconds{50});
  if (answers && k->child_->running()) return k;
  error = "kresd did not answer on port " + std::to_string(k->port_) + ": " + k->log();
  return nullptr;
}

KresdServer::~KresdServer() = default;

std::string KresdServer::log() const {
  std::ifstream in(dir_.file("log"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace hg::test
