// hourglass-rehearse: migration TTL-lowering rehearsal. See docs/rehearsal.md.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
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
    "  project TRACE...  an authoritative server's queries: its load at other TTLs\n"
    "  report NAME...    one HTML + JSON for the change ticket: when, and at what cost\n"
    "\n"
    "hourglass-rehearse COMMAND --help describes each command.\n";

// The replay touches hundreds of megabytes of tables and cache entries at random, and with
// 4 KiB pages a good part of its time is TLB misses: on a 10-million-query trace, backing the
// heap with transparent huge pages took 22 % off (docs/rehearsal.md § Speed). glibc's malloc
// does that when asked by the glibc.malloc.hugetlb=1 tunable (glibc 2.35 and later; older
// ones ignore it), which it reads only at start-up: so replay starts itself again, once, with
// the tunable added. HG_REHEARSE_HUGEPAGES=0 turns this off; where the kernel's transparent
// huge pages are "never", nothing changes.
void prefer_huge_pages(char** argv) {
  if (const char* off = std::getenv("HG_REHEARSE_HUGEPAGES"); off != nullptr && off[0] == '0')
    return;
  const char* current = std::getenv("GLIBC_TUNABLES");
  if (current != nullptr && std::strstr(current, "glibc.malloc.hugetlb") != nullptr) return;
  std::string tunables = "glibc.malloc.hugetlb=1";
  if (current != nullptr && current[0] != '\0') tunables = std::string(current) + ":" + tunables;
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Could not start again (no /proc, say): go on as we are, only slower.
  unsetenv("GLIBC_TUNABLES");
  if (current != nullptr) setenv("GLIBC_TUNABLES", current, 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view cmd = argv[1];
  try {
    if (cmd == "replay") {
      prefer_huge_pages(argv);
      return hg::rehearse::run_replay(argc - 1, argv + 1);
    }
    if (cmd == "synth") return hg::rehearse::run_synth(argc - 1, argv + 1);
    if (cmd == "plan") return hg::rehearse::run_plan(argc - 1, argv + 1);
    if (cmd == "watch") return hg::rehearse::run_watch(argc - 1, argv + 1);
    if (cmd == "inspect") return hg::rehearse::run_inspect(argc - 1, argv + 1);
    if (cmd == "project") return hg::rehearse::run_project(argc - 1, argv + 1);
    if (cmd == "report") return hg::rehearse::run_report(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hourglass-rehearse %s: %s\n", argv[1], e.what());
    return 2;
  }
  std::fprintf(stderr, "hourglass-rehearse: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
