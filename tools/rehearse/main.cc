// hourglass-rehearse: migration TTL-lowering rehearsal. See docs/rehearsal.md.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "tools/rehearse/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: hourglass-rehearse COMMAND [ARGS...]\n"
    "\n"
    "  replay TRACE...   replay recorded traffic (dnstap, pcap) through the cache at today's\n"
    "                    and at planned TTLs: upstream load before and after\n"
    "  synth             write a generated trace (Zipf popularity, Poisson arrivals)\n"
    "  plan NAME...      when is the old answer gone: the linger report for a cut-over\n"
    "  watch NAME        poll resolvers until each one serves the new answer\n"
    "  inspect TRACE...  what a trace holds (reader, view, events, skipped) and read speed\n"
    "\n"
    "hourglass-rehearse COMMAND --help describes each command.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view cmd = argv[1];
  try {
    if (cmd == "replay") return hg::rehearse::run_replay(argc - 1, argv + 1);
    if (cmd == "synth") return hg::rehearse::run_synth(argc - 1, argv + 1);
    if (cmd == "plan") return hg::rehearse::run_plan(argc - 1, argv + 1);
    if (cmd == "watch") return hg::rehearse::run_watch(argc - 1, argv + 1);
    if (cmd == "inspect") return hg::rehearse::run_inspect(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hourglass-rehearse %s: %s\n", argv[1], e.what());
    return 2;
  }
  std::fprintf(stderr, "hourglass-rehearse: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
