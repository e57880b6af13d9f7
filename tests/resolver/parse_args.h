// parse_config() as hourglassd's main() calls it, from the resolver's tests: one copy of the
// argv plumbing the configuration, routing, dnstap, DoT and shadow-ttl tests each need.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "resolver/config.h"

namespace hg::resolver {

/// Parse options with no local addresses: the forwarding-loop check then does not depend on
/// the addresses of the machine running the tests.
inline ParseOptions no_local_addresses() {
  ParseOptions o;
  o.local_addresses = std::vector<Endpoint>{};
  return o;
}

/// parse_config() of `hourglassd ARGS`.
inline std::variant<Config, ConfigExit> parse_args(
    std::vector<std::string> args, const ParseOptions& options = no_local_addresses()) {
  args.insert(args.begin(), "hourglassd");
  std::vector<const char*> argv;
  for (const auto& s : args)
    argv.push_back(s.c_str());
  return parse_config(static_cast<int>(argv.size()), argv.data(), options);
}

}  // namespace hg::resolver
