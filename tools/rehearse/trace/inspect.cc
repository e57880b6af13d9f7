// hourglass-rehearse inspect: reads traces the way replay does and says what is in them —
// which reader and view, events by side and role, the time span, what was skipped — and how
// fast they were read.
#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "tools/rehearse/common/cli_util.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {

int run_inspect(int argc, char** argv) {
  CLI::App app{"Reads traces (dnstap, pcap, pcapng) and prints what they hold.",
               "hourglass-rehearse inspect"};
  std::vector<std::string> paths;
  TraceOptions opt;
  app.add_option("trace", paths, "trace files, merged by time")->required();
  app.add_option("--port", opt.port, "pcap: the DNS port (default 53)");
  app.add_flag("--skip-bad", opt.skip_bad, "count and skip corrupt records instead of stopping");
  if (const auto exit = parse_or_exit(app, argc, argv, "inspect")) return *exit;
  TraceMerger merger;
  for (const auto& p : paths) {
    TraceError err;
    auto r = open_trace(p, opt, err);
    if (!r) {
      fmt::print(stderr, "hourglass-rehearse inspect: {}\n", err.to_string());
      return 2;
    }
    merger.add(std::move(r));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  uint64_t n[2][2] = {}, tcp = 0, v6 = 0, bytes = 0, backwards = 0;
  int64_t first = 0, last = 0, prev = 0;
  TraceEvent ev;
  ReadStatus st;
  while ((st = merger.next(ev)) == ReadStatus::Event) {
    const uint64_t total = n[0][0] + n[0][1] + n[1][0] + n[1][1];
    ++n[static_cast<int>(ev.side)][static_cast<int>(ev.role)];
    tcp += ev.tcp ? 1 : 0;
    v6 += ev.family == 6 ? 1 : 0;
    bytes += ev.message.size();
    if (total == 0 || ev.time_ns < first) first = ev.time_ns;
    if (ev.time_ns > last) last = ev.time_ns;
    if (total != 0 && ev.time_ns < prev) ++backwards;
    prev = ev.time_ns;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const uint64_t events = n[0][0] + n[0][1] + n[1][0] + n[1][1];
  fmt::print("{}\n", merger.describe());
  fmt::print(
      "events: {} (client queries {}, client responses {}, upstream queries {}, upstream "
      "responses {}); TCP {}, IPv6 {}, DNS bytes {}\n",
      events, n[0][0], n[0][1], n[1][0], n[1][1], tcp, v6, bytes);
  if (events != 0) {
    fmt::print(
        "time: {:.3f} s from {} (ns since the epoch); {} events earlier than the one "
        "before\n",
        static_cast<double>(last - first) / 1e9, first, backwards);
  }
  fmt::print("skipped: {}\n", merger.skipped());
  fmt::print("read in {:.2f} s ({:.2f} s CPU): {:.0f} events/s, {:.0f} events per CPU second\n",
             secs, cpu, secs > 0 ? static_cast<double>(events) / secs : 0.0,
             cpu > 0 ? static_cast<double>(events) / cpu : 0.0);
  if (st == ReadStatus::Bad) {
    fmt::print(stderr, "hourglass-rehearse inspect: {}\n", merger.error().to_string());
    return 2;
  }
  return 0;
}

}  // namespace hg::rehearse
