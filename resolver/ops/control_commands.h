// The control commands: the one list of what hourglassd's control socket answers (name,
// argument synopsis, one line of help, whether it takes --fleet). hourglassd's `help` reply is
// made from it and Control::execute() refuses any name that is not in it; hourglass-ctl's
// --help, man page and shell completion list the same entries (tools/ctl/main.cc). Header
// only and free of the daemon's types, so hourglass-ctl includes it without linking the
// daemon. tests/resolver/control_commands_test.cc checks that every entry is dispatched.
#pragma once

#include <array>
#include <string_view>

namespace hg::resolver {

struct ControlCommand {
  std::string_view name;
  std::string_view args;  ///< the argument synopsis; empty when the command takes none
  std::string_view help;  ///< one line: what the reply holds or what the command does
  bool fleet = false;     ///< takes --fleet: also in Redis and on every instance of the fleet
};

inline constexpr std::array kControlCommands = std::to_array<ControlCommand>({
    {"help", "", "this list of commands"},
    {"stats", "", "cache and server counters, queries in flight"},
    {"upstreams", "", "per upstream server: RTT, RTO, EDNS and 0x20 state, counters"},
    {"dnssec", "",
     "validation: the mode, the trust anchors, whether each upstream delivers DNSSEC records, "
     "the verdicts so far"},
    {"top-names", "[N]",
     "the busiest names, and those causing the most upstream queries (N from 1 to 64, "
     "default 10)"},
    {"dump", "[NAME]", "cached answers (all, or NAME's) with the TTLs left now"},
    {"flush", "[NAME]", "remove every cached answer, or every one for NAME", true},
    {"flush-zone", "ZONE", "remove cached answers for ZONE and every name below it", true},
    {"ttl-cap", "ZONE SECONDS",
     "cap TTLs at or below ZONE, cached answers included (0: not cached)", true},
    {"ttl-cap-clear", "ZONE", "remove ZONE's cap (cached answers keep their shortened TTLs)", true},
    {"ttl-caps", "", "the caps in force"},
    {"shadow", "[list | set ZONE SECONDS | clear ZONE]",
     "shadow-ttl zones: real vs projected upstream queries"},
    {"drain", "NAME [--old RDATA]... [--flush-old]",
     "cached answers leading to NAME, and when the old ones are gone"},
    {"save", "", "write the cache to the --cache-file now"},
    {"route", "NAME",
     "which rule answers NAME: local zone, hosts file, forward zone and its servers, link, or "
     "the default upstreams"},
    {"link", "IFACE [--dns ADDR]... [--domain ZONE]... [--default-route yes|no] | IFACE --revert",
     "set a network link's DNS servers and domains, replacing what it had (~ZONE: routing only; "
     ". or ~.: default route); --revert drops them"},
    {"links", "",
     "the links in force, one line each: IFACE dns=ADDR,...|- domains=ZONE,~ZONE,...|- "
     "default-route=yes|no"},
});

/// The entry named `name`, or nullptr.
constexpr const ControlCommand* find_control_command(std::string_view name) noexcept {
  for (const ControlCommand& c : kControlCommands)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace hg::resolver
