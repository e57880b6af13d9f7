// The replay's output: the terminal table, the JSON document (schema in docs/rehearsal.md)
// and the figures both derive from a ReplayResult.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/rehearse/replay_engine.h"

namespace hg::rehearse {

struct ReportInput {
  const ReplayResult& result;
  const ReplayConfig& config;
  std::vector<std::string> files;
  std::string describe;  ///< what the traces are and which view was used
  uint64_t skipped = 0;  ///< records the readers passed over
};

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
