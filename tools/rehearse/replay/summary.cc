// The replay's table and JSON. See docs/rehearsal.md § Output for what each figure means.
#include "tools/rehearse/replay/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "base/json.h"
#include "base/unix_time.h"
#include "wire/types.h"

namespace hg::rehearse {
namespace {

constexpr int64_t kSec = 1'000'000'000;

std::string json_number(double v) {
  return fmt::format("{:.6g}", v);
}

std::string json_opt(std::optional<double> v) {
  return v ? json_number(*v) : "null";
}

std::string percent(double v) {
  return fmt::format("{:.1f}%", v * 100);
}

std::string times(std::optional<double> m) {
  return m ? fmt::format("{:.2f}x", *m) : std::string("new");
}

// Upstream queries per second in the busiest bucket.
double peak_qps(uint64_t peak, int64_t bucket_ns) {
  return static_cast<double>(peak) / (static_cast<double>(bucket_ns) / 1e9);
}

double mean_qps(uint64_t n, const ReplayResult& r) {
  // The series span whole buckets; the mean is over the trace's length (at least one bucket).
  const double d = std::max(r.duration_s(), static_cast<double>(r.bucket_ns) / 1e9);
  return static_cast<double>(n) / d;
}

std::string group(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string window_json(const std::optional<WindowFigures>& w) {
  if (!w) return "null";
  return fmt::format(
      "{{\"from\": {}, \"to\": {}, \"seconds\": {}, \"upstream_before\": {}, "
      "\"upstream_after\": {}, \"mean_upstream_qps_before\": {}, \"mean_upstream_qps_after\": "
      "{}, \"peak_upstream_qps_before\": {}, \"peak_upstream_qps_after\": {}, "
      "\"load_multiplier\": {}}}",
      base::json::quote(iso_utc(w->from_ns)), base::json::quote(iso_utc(w->to_ns)),
      json_number(w->seconds()), w->upstream_before, w->upstream_after,
      json_number(w->mean_qps_before), json_number(w->mean_qps_after),
      json_number(w->peak_qps_before), json_number(w->peak_qps_after),
      json_opt(multiplier(w->upstream_before, w->upstream_after)));
}

}  // namespace

std::optional<WindowFigures> window_figures(const ReplayResult& r, int64_t from_ns, int64_t to_ns) {
  const int64_t bucket = r.bucket_ns;
  const auto n = static_cast<int64_t>(std::min(r.buckets_before.size(), r.buckets_after.size()));
  if (bucket <= 0 || n == 0) return std::nullopt;
  const int64_t first = r.first_ns;
  const int64_t b0 = from_ns <= first ? 0 : (from_ns - first + bucket - 1) / bucket;
  const bool to_end = to_ns >= r.last_ns;
  const int64_t b1 = to_end ? n : std::min(n, (to_ns - first) / bucket);
  if (b0 >= b1) return std::nullopt;
  WindowFigures w;
  w.from_ns = first + b0 * bucket;
  w.to_ns = to_end && b1 == n ? std::max(r.last_ns, w.from_ns + 1) : first + b1 * bucket;
  uint64_t peak_b = 0, peak_a = 0;
  for (int64_t b = b0; b < b1; ++b) {
    const auto i = static_cast<std::size_t>(b);
    w.upstream_before += r.buckets_before[i];
    w.upstream_after += r.buckets_after[i];
    peak_b = std::max(peak_b, r.buckets_before[i]);
    peak_a = std::max(peak_a, r.buckets_after[i]);
  }
  // A window shorter than a bucket (the trace's last, partial one) counts as one bucket.
  const double secs = std::max(w.seconds(), static_cast<double>(bucket) / 1e9);
  w.mean_qps_before = static_cast<double>(w.upstream_before) / secs;
  w.mean_qps_after = static_cast<double>(w.upstream_after) / secs;
  w.peak_qps_before = peak_qps(peak_b, bucket);
  w.peak_qps_after = peak_qps(peak_a, bucket);
  return w;
}

std::optional<WindowFigures> settled_figures(const ReplayResult& r) {
  const auto from = r.settled_from_ns();
  if (!from) return std::nullopt;
  return window_figures(r, *from, r.last_ns);
}

std::optional<WindowFigures> after_switch_figures(const ReplayResult& r) {
  for (int64_t t : r.switch_ns)
    if (t >= r.first_ns && t <= r.last_ns) return window_figures(r, t, r.last_ns);
  return std::nullopt;
}

std::vector<std::string> schedule_warnings(const ReplayResult& r, const ReplayConfig& c) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < c.schedule.size(); ++i) {
    const ScheduleRule& rule = c.schedule[i];
    const std::string what = fmt::format("--schedule {}={}", rule.zone.to_text(), rule.ttl);
    if (i < r.rule_matched.size() && !r.rule_matched[i]) {
      out.push_back(what +
                    ": no question or record in the trace is at or below this zone, so it "
                    "changes nothing (a typo, or the wrong trace?)");
    }
    if (rule.when == ScheduleRule::When::Always || r.queries == 0) continue;
    const int64_t at = rule.when == ScheduleRule::When::FromStart
                           ? base::add_ns(r.first_ns, rule.at_ns)
                           : rule.at_ns;
    if (at > r.last_ns) {
      out.push_back(
          fmt::format("{}: switches at {}, after the trace ends ({}): the after run "
                      "never uses it",
                      what, iso_utc(at), iso_utc(r.last_ns)));
    } else if (at < r.first_ns) {
      out.push_back(
          fmt::format("{}: switches at {}, before the trace starts ({}): it is in "
                      "force for the whole trace, with no transition to see",
                      what, iso_utc(at), iso_utc(r.first_ns)));
    }
  }
  return out;
}

double hit_ratio(uint64_t queries, uint64_t upstream) {
  if (queries == 0) return 0;
  const uint64_t up = std::min(upstream, queries);
  return static_cast<double>(queries - up) / static_cast<double>(queries);
}

std::optional<double> multiplier(uint64_t before, uint64_t after) {
  if (before == 0) return std::nullopt;
  return static_cast<double>(after) / static_cast<double>(before);
}

std::vector<const NameReport*> by_added_load(const ReplayResult& r) {
  std::vector<const NameReport*> v;
  v.reserve(r.names.size());
  for (const auto& n : r.names)
    v.push_back(&n);
  std::sort(v.begin(), v.end(), [](const NameReport* a, const NameReport* b) {
    const auto da =
        static_cast<int64_t>(a->after.upstream) - static_cast<int64_t>(a->before.upstream);
    const auto db =
        static_cast<int64_t>(b->after.upstream) - static_cast<int64_t>(b->before.upstream);
    if (da != db) return da > db;
    if (a->queries != b->queries) return a->queries > b->queries;
    return a->name < b->name;
  });
  return v;
}

std::string iso_utc(int64_t ns) {
  const std::time_t s = static_cast<std::time_t>(ns / kSec - (ns % kSec < 0 ? 1 : 0));
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const int64_t ms = ((ns % kSec) + kSec) % kSec / 1'000'000;
  return ms == 0 ? fmt::format("{}Z", buf) : fmt::format("{}.{:03d}Z", buf, ms);
}

std::string human_duration(int64_t ns) {
  if (ns < 0) return "-" + human_duration(-ns);
  if (ns < kSec) return fmt::format("{}ms", ns / 1'000'000);
  const int64_t s = ns / kSec;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}h{:02d}m{:02d}s", s / 3600, s / 60 % 60, s % 60);
}

std::string describe_rule(const ScheduleRule& rule, int64_t first_ns) {
  std::string head = fmt::format("{} TTL <= {} s", rule.zone.to_text(), rule.ttl);
  switch (rule.when) {
    case ScheduleRule::When::Always:
      return head + " for the whole trace";
    case ScheduleRule::When::FromStart:
      return fmt::format("{} from +{}", head, human_duration(rule.at_ns));
    case ScheduleRule::When::Absolute:
      return fmt::format("{} from {} (+{})", head, iso_utc(rule.at_ns),
                         human_duration(rule.at_ns - first_ns));
  }
  return head;
}

std::optional<double> calibration_error(const ReplayResult& r) {
  if (r.recorded_upstream == 0) return std::nullopt;
  return (static_cast<double>(r.before.upstream) - static_cast<double>(r.recorded_upstream)) /
         static_cast<double>(r.recorded_upstream) * 100;
}

std::string format_table(const ReportInput& in, std::size_t top) {
  const ReplayResult& r = in.result;
  const ReplayConfig& c = in.config;
  std::string out;
  const double bucket_s = static_cast<double>(r.bucket_ns) / 1e9;
  out += fmt::format("trace:      {} ({} file{}), {} to {} ({})\n", in.describe, in.files.size(),
                     in.files.size() == 1 ? "" : "s", iso_utc(r.first_ns), iso_utc(r.last_ns),
                     human_duration(r.last_ns - r.first_ns));
  out += fmt::format(
      "            {} client queries, {} distinct (name, type); {} warm at start; {} records "
      "skipped, {} messages undecodable\n",
      group(r.queries), group(r.distinct_questions), group(r.warm_entries), group(in.skipped),
      group(r.undecodable));
  out += fmt::format(
      "model:      cache {} MiB, prefetch {}, upstream RTT {:.1f} ms ({})\n", c.cache_bytes >> 20,
      c.prefetch ? "on" : "off", static_cast<double>(r.upstream_rtt_ns) / 1e6,
      c.upstream_rtt_ns ? "--upstream-rtt"
      : r.rtt_measured
          ? fmt::format("median of {} FORWARDER pairs; whole trace {:.1f} ms", group(r.rtt_samples),
                        static_cast<double>(r.rtt_median_all_ns) / 1e6)
          : std::string("default: no FORWARDER pairs in the trace"));
  if (c.schedule.empty() && c.ttl_caps.empty()) {
    out += "after:      no --schedule or --ttl-cap: after = before\n";
  }
  for (const auto& rule : c.schedule)
    out += fmt::format("schedule:   {}\n", describe_rule(rule, r.first_ns));
  for (const auto& [zone, cap] : c.ttl_caps)
    out += fmt::format("ttl-cap:    {} {} s (after only, from the start)\n", zone.to_text(), cap);
  if (auto e = calibration_error(r)) {
    out += fmt::format(
        "calibration: the recorder asked upstream {} times (FORWARDER_QUERY); the replay's "
        "before run {} times: {:+.1f}%\n",
        group(r.recorded_upstream), group(r.before.upstream), *e);
  } else {
    out += "calibration: none (the trace holds no FORWARDER_QUERY of the recorder)\n";
  }
  if (r.unanswered_misses > 0)
    out += fmt::format("note:       {} misses had no recorded answer for their question\n",
                       group(r.unanswered_misses));

  const auto bucket = fmt::format("{} s buckets", bucket_s);
  out += fmt::format("\n{:<34} {:>12} {:>12} {:>12}\n", "total", "before", "after", "change");
  const auto row = [&](std::string_view what, const std::string& b, const std::string& a,
                       const std::string& ch) {
    out += fmt::format("{:<34} {:>12} {:>12} {:>12}\n", what, b, a, ch);
  };
  row("client queries", group(r.queries), group(r.queries), "");
  row("upstream queries", group(r.before.upstream), group(r.after.upstream),
      times(multiplier(r.before.upstream, r.after.upstream)));
  row("  of which prefetch", group(r.before.prefetches), group(r.after.prefetches), "");
  row("  coalesced client queries", group(r.before.coalesced), group(r.after.coalesced), "");
  row("hit ratio", percent(hit_ratio(r.queries, r.before.upstream)),
      percent(hit_ratio(r.queries, r.after.upstream)), "");
  row("mean upstream QPS", fmt::format("{:.2f}", mean_qps(r.before.upstream, r)),
      fmt::format("{:.2f}", mean_qps(r.after.upstream, r)), "");
  row(fmt::format("peak upstream QPS ({})", bucket),
      fmt::format("{:.2f}", peak_qps(r.before.peak_bucket, r.bucket_ns)),
      fmt::format("{:.2f}", peak_qps(r.after.peak_bucket, r.bucket_ns)),
      times(multiplier(r.before.peak_bucket, r.after.peak_bucket)));
  const auto window_rows = [&](const std::string& title, const std::optional<WindowFigures>& w,
                               const char* none) {
    if (!w) {
      out += fmt::format("{}: {}\n", title, none);
      return;
    }
    out += fmt::format("{}, {} to {} ({}):\n", title, iso_utc(w->from_ns), iso_utc(w->to_ns),
                       human_duration(w->to_ns - w->from_ns));
    row("  upstream queries", group(w->upstream_before), group(w->upstream_after),
        times(multiplier(w->upstream_before, w->upstream_after)));
    row("  mean upstream QPS", fmt::format("{:.2f}", w->mean_qps_before),
        fmt::format("{:.2f}", w->mean_qps_after),
        times(multiplier(w->upstream_before, w->upstream_after)));
    row(fmt::format("  peak upstream QPS ({})", bucket), fmt::format("{:.2f}", w->peak_qps_before),
        fmt::format("{:.2f}", w->peak_qps_after),
        w->peak_qps_before > 0 ? fmt::format("{:.2f}x", w->peak_qps_after / w->peak_qps_before)
                               : std::string("new"));
  };
  if (!c.schedule.empty()) {
    out += "\n";
    window_rows("after the first switch", after_switch_figures(r), "no switch inside the trace");
    window_rows("settled (after the last switch, old TTLs run out)", settled_figures(r),
                r.switch_ns.empty()
                    ? "no timed switch: the schedule holds for the whole trace, see the totals"
                    : "none: the last switch, or the old copies it leaves, outlast the trace");
  }
  if (in.from_ns || in.to_ns) {
    out += "\n";
    window_rows("window --from/--to",
                window_figures(r, in.from_ns.value_or(r.first_ns), in.to_ns.value_or(r.last_ns)),
                "the window holds no whole bucket of the trace");
  }

  const auto names = by_added_load(r);
  const std::size_t n = std::min(top, names.size());
  if (n == 0) return out;
  out += fmt::format("\ntop {} names by added upstream load (peak QPS per {}):\n", n, bucket);
  out += fmt::format("{:<40} {:<6} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}\n",
                     "name", "type", "queries", "up before", "up after", "hit bef", "hit aft",
                     "QPS bef", "QPS aft", "peak aft", "load");
  for (std::size_t i = 0; i < n; ++i) {
    const NameReport& x = *names[i];
    std::string name = x.name.to_text();
    if (name.size() > 40) name = "..." + name.substr(name.size() - 37);
    out += fmt::format(
        "{:<40} {:<6} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9.3f} {:>9.3f} {:>9.2f} {:>8}\n", name,
        wire::to_string(x.qtype), group(x.queries), group(x.before.upstream),
        group(x.after.upstream), percent(hit_ratio(x.queries, x.before.upstream)),
        percent(hit_ratio(x.queries, x.after.upstream)), mean_qps(x.before.upstream, r),
        mean_qps(x.after.upstream, r), peak_qps(x.after.peak_bucket, r.bucket_ns),
        times(multiplier(x.before.upstream, x.after.upstream)));
  }
  return out;
}

std::string format_json(const ReportInput& in) {
  const ReplayResult& r = in.result;
  const ReplayConfig& c = in.config;
  std::string o = "{\n";
  o += "  \"trace\": {\"files\": [";
  for (std::size_t i = 0; i < in.files.size(); ++i)
    o += (i ? ", " : "") + base::json::quote(in.files[i]);
  o += fmt::format(
      "], \"describe\": {}, \"start\": {}, \"end\": {}, \"duration_s\": {}, \"skipped\": {}, "
      "\"undecodable\": {}, \"distinct_questions\": {}, \"warm_entries\": {}, "
      "\"unanswered_misses\": {}}},\n",
      base::json::quote(in.describe), base::json::quote(iso_utc(r.first_ns)),
      base::json::quote(iso_utc(r.last_ns)), json_number(r.duration_s()), in.skipped, r.undecodable,
      r.distinct_questions, r.warm_entries, r.unanswered_misses);
  o += "  \"settings\": {\"schedule\": [";
  for (std::size_t i = 0; i < c.schedule.size(); ++i) {
    const auto& rule = c.schedule[i];
    o += fmt::format("{}{{\"zone\": {}, \"ttl\": {}, \"from\": {}}}", i ? ", " : "",
                     base::json::quote(rule.zone.to_text()), rule.ttl,
                     rule.when == ScheduleRule::When::Always
                         ? std::string("null")
                         : base::json::quote(iso_utc(rule.when == ScheduleRule::When::FromStart
                                                         ? base::add_ns(r.first_ns, rule.at_ns)
                                                         : rule.at_ns)));
  }
  o += "], \"ttl_caps\": [";
  for (std::size_t i = 0; i < c.ttl_caps.size(); ++i)
    o += fmt::format("{}{{\"zone\": {}, \"ttl\": {}}}", i ? ", " : "",
                     base::json::quote(c.ttl_caps[i].first.to_text()), c.ttl_caps[i].second);
  o += fmt::format(
      "], \"cache_size\": {}, \"prefetch\": {}, \"upstream_rtt_ms\": {}, \"rtt_source\": {}, "
      "\"bucket_s\": {}}},\n",
      c.cache_bytes, c.prefetch ? "true" : "false",
      json_number(static_cast<double>(r.upstream_rtt_ns) / 1e6),
      base::json::quote(c.upstream_rtt_ns ? "flag"
                        : r.rtt_measured  ? "forwarder_median"
                                          : "default"),
      json_number(static_cast<double>(r.bucket_ns) / 1e9));
  o += fmt::format(
      "  \"total\": {{\"queries\": {}, \"upstream_before\": {}, \"upstream_after\": {}, "
      "\"hit_ratio_before\": {}, \"hit_ratio_after\": {}, \"mean_upstream_qps_before\": {}, "
      "\"mean_upstream_qps_after\": {}, \"peak_upstream_qps_before\": {}, "
      "\"peak_upstream_qps_after\": {}, \"load_multiplier\": {}, \"prefetch_before\": {}, "
      "\"prefetch_after\": {}, \"coalesced_before\": {}, \"coalesced_after\": {}}},\n",
      r.queries, r.before.upstream, r.after.upstream,
      json_number(hit_ratio(r.queries, r.before.upstream)),
      json_number(hit_ratio(r.queries, r.after.upstream)),
      json_number(mean_qps(r.before.upstream, r)), json_number(mean_qps(r.after.upstream, r)),
      json_number(peak_qps(r.before.peak_bucket, r.bucket_ns)),
      json_number(peak_qps(r.after.peak_bucket, r.bucket_ns)),
      json_opt(multiplier(r.before.upstream, r.after.upstream)), r.before.prefetches,
      r.after.prefetches, r.before.coalesced, r.after.coalesced);
  if (auto e = calibration_error(r)) {
    o += fmt::format(
        "  \"calibration\": {{\"recorded_upstream\": {}, \"replayed_upstream\": {}, "
        "\"error_percent\": {}}},\n",
        r.recorded_upstream, r.before.upstream, json_number(*e));
  } else {
    o += "  \"calibration\": null,\n";
  }
  o += "  \"after_switch\": " + window_json(after_switch_figures(r)) + ",\n";
  o += "  \"settled\": " + window_json(settled_figures(r)) + ",\n";
  o += "  \"window\": " +
       (in.from_ns || in.to_ns ? window_json(window_figures(r, in.from_ns.value_or(r.first_ns),
                                                            in.to_ns.value_or(r.last_ns)))
                               : std::string("null")) +
       ",\n";
  o += "  \"warnings\": [";
  {
    const auto warns = schedule_warnings(r, c);
    for (std::size_t i = 0; i < warns.size(); ++i)
      o += (i ? ", " : "") + base::json::quote(warns[i]);
  }
  o += "],\n";
  o += fmt::format("  \"switch_times\": [");
  for (std::size_t i = 0; i < r.switch_ns.size(); ++i)
    o += (i ? ", " : "") + base::json::quote(iso_utc(r.switch_ns[i]));
  o += "],\n  \"buckets\": {\"before\": [";
  for (std::size_t i = 0; i < r.buckets_before.size(); ++i)
    o += fmt::format("{}{}", i ? "," : "", r.buckets_before[i]);
  o += "], \"after\": [";
  for (std::size_t i = 0; i < r.buckets_after.size(); ++i)
    o += fmt::format("{}{}", i ? "," : "", r.buckets_after[i]);
  o += "]},\n  \"names\": [";
  const auto names = by_added_load(r);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const NameReport& x = *names[i];
    o += fmt::format(
        "{}\n    {{\"name\": {}, \"qtype\": {}, \"queries\": {}, \"upstream_before\": {}, "
        "\"upstream_after\": {}, \"hit_ratio_before\": {}, \"hit_ratio_after\": {}, "
        "\"mean_upstream_qps_before\": {}, \"mean_upstream_qps_after\": {}, "
        "\"peak_upstream_qps_before\": {}, \"peak_upstream_qps_after\": {}, "
        "\"load_multiplier\": {}, \"recorded_upstream\": {}}}",
        i ? "," : "", base::json::quote(x.name.to_text()),
        base::json::quote(wire::to_string(x.qtype)), x.queries, x.before.upstream, x.after.upstream,
        json_number(hit_ratio(x.queries, x.before.upstream)),
        json_number(hit_ratio(x.queries, x.after.upstream)),
        json_number(mean_qps(x.before.upstream, r)), json_number(mean_qps(x.after.upstream, r)),
        json_number(peak_qps(x.before.peak_bucket, r.bucket_ns)),
        json_number(peak_qps(x.after.peak_bucket, r.bucket_ns)),
        json_opt(multiplier(x.before.upstream, x.after.upstream)), x.recorded_upstream);
  }
  o += "\n  ]\n}\n";
  return o;
}

}  // namespace hg::rehearse
