// The replay's output: the terminal table, the JSON document (schema in docs/rehearsal.md)
// and the figures both derive from a ReplayResult.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/rehearse/replay/engine.h"

namespace hg::rehearse {

/// The figures of the two runs over a window of the trace, from the per-bucket series: whole
/// buckets from the first that starts at or after `from` to the last that ends at or before
/// `to` (the trace's last, partial bucket counts when `to` is at or past the end).
struct WindowFigures {
  int64_t from_ns = 0, to_ns = 0;  ///< the window actually used (bucket-aligned)
  uint64_t upstream_before = 0, upstream_after = 0;
  double mean_qps_before = 0, mean_qps_after = 0;  ///< upstream queries / window length
  double peak_qps_before = 0, peak_qps_after = 0;  ///< busiest bucket in the window
  double seconds() const noexcept { return static_cast<double>(to_ns - from_ns) / 1e9; }
};
/// nullopt when the window holds no whole bucket.
std::optional<WindowFigures> window_figures(const ReplayResult& r, int64_t from_ns, int64_t to_ns);

struct ReportInput {
  const ReplayResult& result;
  const ReplayConfig& config;
  std::vector<std::string> files;
  std::string describe;  ///< what the traces are and which view was used
  uint64_t skipped = 0;  ///< records the readers passed over
  /// --from/--to (absolute ns): a window of the trace to report beside the whole trace.
  std::optional<int64_t> from_ns = std::nullopt, to_ns = std::nullopt;
};

/// The settled window (after the last switch, once old copies have run out, to the end).
std::optional<WindowFigures> settled_figures(const ReplayResult& r);
/// From the first switch inside the trace to its end: the peak after the switch.
std::optional<WindowFigures> after_switch_figures(const ReplayResult& r);
/// One line per schedule rule that matched no question or record, or switches outside the
/// trace: replay prints them as warnings and exits 3.
std::vector<std::string> schedule_warnings(const ReplayResult& r, const ReplayConfig& c);

/// Hit ratio: the share of client queries that did not cause an upstream query.
double hit_ratio(uint64_t queries, uint64_t upstream);
/// after / before, or nullopt when before is 0.
std::optional<double> multiplier(uint64_t before, uint64_t after);
/// Names sorted by added upstream load (after - before), most first; ties by queries.
std::vector<const NameReport*> by_added_load(const ReplayResult& r);
/// "2026-01-01T00:00:00Z" (seconds; ".250" added when the time is not whole seconds).
std::string iso_utc(int64_t ns);
/// "1h02m03s", "45s", "250ms".
std::string human_duration(int64_t ns);
/// "example.com. TTL ≤ 60 s from 2026-...Z (+30m)" or "... for the whole trace".
std::string describe_rule(const ScheduleRule& rule, int64_t first_ns);
/// Calibration error in percent (replayed vs recorded FORWARDER queries), when recorded.
std::optional<double> calibration_error(const ReplayResult& r);

std::string format_table(const ReportInput& in, std::size_t top);
std::string format_json(const ReportInput& in);

}  // namespace hg::rehearse
