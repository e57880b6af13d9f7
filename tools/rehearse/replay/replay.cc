// hourglass-rehearse replay: recorded traffic through the cache at today's and at planned
// TTLs. The engine is engine.h (its first stage classifier.h, the two threads
// pipeline.h, the --schedule grammar schedule.h); the output summary.h and plot.h;
// docs/rehearsal.md.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unix_time.h"
#include "tools/rehearse/common/cli_util.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/replay/engine.h"
#include "tools/rehearse/replay/pipeline.h"
#include "tools/rehearse/replay/plot.h"
#include "tools/rehearse/replay/summary.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {
namespace {

constexpr const char* kHelp =
    "usage: hourglass-rehearse replay TRACE... [options]\n"
    "\n"
    "Replays recorded client queries (dnstap or pcap/pcapng files, merged by time) through\n"
    "hourglass's cache twice: before (TTLs as the upstream gave them) and after (the planned\n"
    "schedule), and reports the upstream load of both. See docs/rehearsal.md.\n"
    "\n"
    "  --schedule ZONE=TTL[@TIME]  after: records at or below ZONE get TTL <= TTL seconds,\n"
    "                              from TIME on (+90m after the trace's start,\n"
    "                              2026-01-01T12:00:00Z, or Unix seconds); repeatable\n"
    "  --ttl-cap ZONE=TTL          after: hourglass's own ttl-cap, from the start; repeatable\n"
    "  --cache-size BYTES          cache size, e.g. 64M (default), 1G, 500000\n"
    "  --prefetch on|off           the daemon's prefetch (default on); off = plain TTL cache\n"
    "  --upstream-rtt MS           miss-to-answer time for coalescing (default: the median\n"
    "                              RTT of the trace's FORWARDER pairs, else 20)\n"
    "  --top N                     names in the table (default 10)\n"
    "  --json FILE                 write every figure as JSON (- for stdout)\n"
    "  --plot FILE.svg             write the upstream-load figure\n"
    "  --bucket 1s|1m              QPS bucket (default 1s; any duration >= 1s)\n"
    "  --port N                    pcap: the DNS port (default 53)\n"
    "  --skip-bad                  count and skip corrupt records instead of stopping\n"
    "  --seed N                    seed of the prefetch draws (default 1)\n"
    "  --from TIME                 also report the window of the trace from TIME (+DURATION\n"
    "                              after its start, YYYY-MM-DDTHH:MM:SSZ or Unix seconds)\n"
    "  --to TIME                   ... to TIME (same forms; default: the trace's end)\n"
    "\n"
    "Exit status: 0 done; 2 bad flag or unreadable trace; 3 done, but a --schedule rule\n"
    "matched no question or record, or switches outside the trace (warnings on stderr).\n";

int usage_error(std::string_view flag, std::string_view value, std::string_view allowed) {
  std::fprintf(stderr, "hourglass-rehearse replay: %.*s '%.*s': %.*s\n",
               static_cast<int>(flag.size()), flag.data(), static_cast<int>(value.size()),
               value.data(), static_cast<int>(allowed.size()), allowed.data());
  return 2;
}

std::optional<std::size_t> parse_size(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t mul = 1;
  const char last = s.back();
  if (last == 'K' || last == 'k') mul = uint64_t{1} << 10;
  if (last == 'M' || last == 'm') mul = uint64_t{1} << 20;
  if (last == 'G' || last == 'g') mul = uint64_t{1} << 30;
  if (mul != 1) s.remove_suffix(1);
  auto v = parse_u64(s);
  if (!v || *v > (uint64_t{1} << 44) / mul) return std::nullopt;
  return static_cast<std::size_t>(*v * mul);
}

}  // namespace

int run_replay(int argc, char** argv) {
  ReplayConfig config;
  TraceOptions topts;
  std::vector<std::string> files;
  std::size_t top = 10;
  std::string json_path, plot_path;
  std::optional<ScheduleRule> from_rule, to_rule;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (a == "--skip-bad") {
      topts.skip_bad = true;
      continue;
    }
    if (a.starts_with("-") && a != "-") {
      std::string_view flag = a, value;
      const std::string_view name = a.substr(0, a.find('='));
      constexpr std::string_view kValued[] = {
          "--schedule", "--ttl-cap", "--cache-size", "--prefetch", "--upstream-rtt",
          "--top",      "--json",    "--plot",       "--bucket",   "--port",
          "--seed",     "--from",    "--to"};
      if (std::find(std::begin(kValued), std::end(kValued), name) == std::end(kValued)) {
        std::fprintf(stderr, "hourglass-rehearse replay: unknown option '%s' (see --help)\n",
                     argv[i]);
        return 2;
      }
      if (const auto eq = a.find('='); eq != std::string_view::npos) {
        flag = a.substr(0, eq);
        value = a.substr(eq + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return usage_error(a, "", "needs a value (see --help)");
      }
      if (flag == "--schedule") {
        std::string why;
        auto rule = parse_schedule(value, why);
        if (!rule) return usage_error(flag, value, why);
        config.schedule.push_back(*rule);
      } else if (flag == "--ttl-cap") {
        std::string why;
        auto rule = parse_schedule(value, why);
        if (!rule || rule->when != ScheduleRule::When::Always)
          return usage_error(flag, value, rule ? "expected ZONE=TTL (no @TIME)" : why);
        config.ttl_caps.emplace_back(rule->zone, rule->ttl);
      } else if (flag == "--cache-size") {
        auto v = parse_size(value);
        if (!v || *v < 4096)
          return usage_error(flag, value, "a size in bytes from 4096, with K, M or G (64M)");
        config.cache_bytes = *v;
      } else if (flag == "--prefetch") {
        if (value != "on" && value != "off") return usage_error(flag, value, "on or off");
        config.prefetch = value == "on";
      } else if (flag == "--upstream-rtt") {
        auto v = parse_u64(value);
        if (!v || *v > 60'000)
          return usage_error(flag, value, "whole milliseconds from 0 to 60000");
        config.upstream_rtt_ns = static_cast<int64_t>(*v) * 1'000'000;
      } else if (flag == "--top") {
        auto v = parse_u64(value);
        if (!v || *v > 1'000'000) return usage_error(flag, value, "a count from 0 to 1000000");
        top = *v;
      } else if (flag == "--from" || flag == "--to") {
        // The same TIME as a schedule's @TIME, resolved once the trace's start is known.
        std::string why;
        auto rule = parse_schedule("x.=0@" + std::string(value), why);
        if (!rule || rule->when == ScheduleRule::When::Always)
          return usage_error(flag, value,
                             "+DURATION after the trace's start, YYYY-MM-DDTHH:MM:SSZ or Unix "
                             "seconds");
        (flag == "--from" ? from_rule : to_rule) = *rule;
      } else if (flag == "--json") {
        json_path = value;
      } else if (flag == "--plot") {
        plot_path = value;
      } else if (flag == "--bucket") {
        auto v = parse_duration_ns(value);
        if (!v || *v < 1'000'000'000 || *v > 86'400'000'000'000 || *v % 1'000'000'000 != 0)
          return usage_error(flag, value, "whole seconds from 1s to 1d: 1s, 10s, 1m, 1h");
        config.bucket_ns = *v;
      } else if (flag == "--port") {
        auto v = parse_u64(value);
        if (!v || *v == 0 || *v > 65535) return usage_error(flag, value, "a port from 1 to 65535");
        topts.port = static_cast<uint16_t>(*v);
      } else {  // --seed
        auto v = parse_u64(value);
        if (!v) return usage_error(flag, value, "an unsigned integer");
        config.seed = *v;
      }
      continue;
    }
    files.emplace_back(a);
  }
  if (files.empty()) {
    std::fputs("hourglass-rehearse replay: no TRACE given (see --help)\n", stderr);
    return 2;
  }

  TraceMerger merger;
  if (!open_traces(files, topts, merger)) return 2;

  ReplayEngine engine(config);
  const bool progress = isatty(STDERR_FILENO) == 1;
  auto last_progress = std::chrono::steady_clock::now();
  const ReadStatus st = replay_pipelined(merger, engine, [&] {
    if (!progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress < std::chrono::seconds(1)) return;
    last_progress = now;
    std::fprintf(stderr, "\r\033[Kreplay: %s events, %s queries replayed, trace time +%s",
                 fmt::format("{}", engine.events()).c_str(),
                 fmt::format("{}", engine.replayed()).c_str(),
                 human_duration(engine.now_ns() - engine.first_ns()).c_str());
  });
  if (st == ReadStatus::Bad) {
    if (progress) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "%s\n", merger.error().to_string().c_str());
    return 2;
  }
  if (progress) std::fputs("\r\033[K", stderr);
  const ReplayResult result = engine.finish();

  ReportInput in{result, config, files, merger.describe(), merger.skipped()};
  const auto resolve = [&](const ScheduleRule& r) {
    return r.when == ScheduleRule::When::FromStart ? base::add_ns(result.first_ns, r.at_ns)
                                                   : r.at_ns;
  };
  if (from_rule) in.from_ns = resolve(*from_rule);
  if (to_rule) in.to_ns = resolve(*to_rule);
  if (in.from_ns && in.to_ns && *in.from_ns >= *in.to_ns) {
    std::fprintf(stderr, "hourglass-rehearse replay: --from %s is not before --to %s\n",
                 iso_utc(*in.from_ns).c_str(), iso_utc(*in.to_ns).c_str());
    return 2;
  }
  const std::string table = format_table(in, top);
  std::fwrite(table.data(), 1, table.size(), json_path == "-" ? stderr : stdout);
  if (!json_path.empty() && !write_file(json_path, format_json(in))) {
    std::fprintf(stderr, "hourglass-rehearse replay: cannot write %s: %s\n", json_path.c_str(),
                 std::strerror(errno));
    return 2;
  }
  if (!plot_path.empty() && !write_file(plot_path, render_svg(in))) {
    std::fprintf(stderr, "hourglass-rehearse replay: cannot write %s: %s\n", plot_path.c_str(),
                 std::strerror(errno));
    return 2;
  }
  const auto warnings = schedule_warnings(result, config);
  for (const auto& w : warnings)
    std::fprintf(stderr, "hourglass-rehearse replay: warning: %s\n", w.c_str());
  return warnings.empty() ? 0 : 3;
}

}  // namespace hg::rehearse
