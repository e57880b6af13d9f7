// The --schedule grammar of `hourglass-rehearse replay` (and its --ttl-cap, --from, --to,
// --bucket values): a ScheduleRule ZONE=TTL[@TIME] and the durations in it. The replay
// (engine.h) applies the rules; docs/rehearsal.md describes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wire/name.h"

namespace hg::rehearse {

/// One --schedule ZONE=TTL[@TIME]: from `at_ns` on (or the whole trace), answers fetched for
/// records at or below `zone` carry a TTL of at most `ttl`.
struct ScheduleRule {
  wire::Name zone;
  uint32_t ttl = 0;
  enum class When : uint8_t { Always, Absolute, FromStart } when = When::Always;
  int64_t at_ns = 0;  ///< Absolute: ns since the Unix epoch; FromStart: ns after the first event
};

/// A duration (base/duration.h: "90s", "1.5m", "250ms", bare seconds) in nanoseconds; nullopt
/// on anything else.
std::optional<int64_t> parse_duration_ns(std::string_view text);
/// Parses a --schedule TIME: "+DURATION" (after the trace's first event),
/// "YYYY-MM-DDTHH:MM:SS[Z]" (UTC) or a Unix time in seconds ("@1700000000").
std::optional<ScheduleRule> parse_schedule(std::string_view text, std::string& why);

}  // namespace hg::rehearse
