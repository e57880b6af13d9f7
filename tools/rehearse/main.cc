// hourglass-rehearse: migration TTL-lowering rehearsal. See docs/rehearsal.md.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "base/cli_doc.h"

#include "tools/rehearse/common/commands.h"

namespace {

// The subcommands: the usage text, the man page and the completion come from this table.
const std::vector<hg::clidoc::Command>& commands() {
  static const std::vector<hg::clidoc::Command> c = {
      {"replay", "TRACE...",
       "replay recorded traffic (dnstap, pcap) through the cache at today's and at planned "
       "TTLs: upstream load before and after"},
      {"synth", "", "write a generated trace (Zipf popularity, Poisson arrivals)"},
      {"plan", "NAME...", "when is the old answer gone: the linger report for a cut-over"},
      {"watch", "NAME", "poll resolvers until each one serves the new answer"},
      {"inspect", "TRACE...", "what a trace holds (reader, view, events, skipped) and read speed"},
      {"project", "TRACE...", "an authoritative server's queries: its load at other TTLs"},
      {"report", "NAME...", "one HTML + JSON for the change ticket: when, and at what cost"},
  };
  return c;
}

std::string usage() {
  std::string out = "usage: hourglass-rehearse COMMAND [ARGS...]\n\n";
  for (const auto& c : commands()) {
    std::string head = "  " + c.name + (c.args.empty() ? "" : " " + c.args);
    head.resize(std::max<std::size_t>(head.size() + 1, 20), ' ');
    out += head + c.summary + "\n";
  }
  out += "\nhourglass-rehearse COMMAND --help describes each command.\n";
  return out;
}

constexpr const char* kManual = R"(# DESCRIPTION
hourglass-rehearse rehearses a DNS migration before it is made: how much upstream load lower TTLs would cause (replay, on recorded traffic or a synth trace), when the old answer is gone from every cache after a cut-over (plan), and whether resolvers serve the new answer yet (watch). docs/rehearsal.md in the documentation describes the model and the formats.

Each command's options are listed below under its name; hourglass-rehearse COMMAND --help prints them too.

# FILES
  /usr/share/hourglass/default-profile.toml    the client layers and stale windows plan uses by default (the same profile is built in)

# EXIT STATUS
0 on success; 1 for a command's own no (watch: not every resolver flipped; plan: no name could be planned); 2 for a usage, input or start-up error.

# EXAMPLES
  hourglass-rehearse synth --names 1000 --qps 500 --duration 10m -o day.dnstap
  hourglass-rehearse replay day.dnstap --schedule example.com=60@+1h --plot load.svg
  hourglass-rehearse plan www.example.com --target-ttl 60 --cutover 2026-12-03T10:00Z

# SEE ALSO
hourglassd(8), hourglass-ctl(8)
)";
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

// The description for the man page (HG_CLI_DOC=1), the usage, or the command named first.
int run(int argc, char** argv) {
  if (argc < 2 && hg::clidoc::requested()) {
    CLI::App app{
        "hourglass-rehearse: rehearse a DNS migration: upstream load at lower TTLs, "
        "when the old answer is gone, which resolvers have flipped",
        "hourglass-rehearse"};
    hg::clidoc::Extra extra;
    extra.synopsis = "COMMAND [OPTIONS] [ARGS...]";
    extra.commands = commands();
    extra.manual = kManual;
    std::fputs(hg::clidoc::to_json(app, extra).c_str(), stdout);
    return 0;
  }
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(usage().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view cmd = argv[1];
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
  std::fprintf(stderr, "hourglass-rehearse: unknown command '%s'\n\n%s", argv[1], usage().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hourglass-rehearse %s: %s\n", argc > 1 ? argv[1] : "", e.what());
    return 2;
  }
}
