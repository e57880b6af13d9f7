// The wall clock: the one place that reads CLOCK_REALTIME (through std::chrono::system_clock);
// tools/lint/homes fails on system_clock::now() elsewhere in the product (tests may read it).
//
// Wall time jumps (NTP steps, an operator's date -s), so it only stamps what leaves the
// process and must mean a moment to others: the cache file's save time, a fleet value's insert
// time and its messages' send time, dnstap frames, a plan's "now". Intervals, timeouts and
// TTLs are measured on the monotonic clock instead, passed in as an argument.
#pragma once

#include <chrono>
#include <cstdint>

namespace hg::base {

/// Now on the wall clock, rounded down to D (nanoseconds unless told): wall_now<Millis>() for
/// milliseconds since the Unix epoch, wall_now<std::chrono::seconds>() for seconds.
template <typename D = std::chrono::nanoseconds>
std::chrono::time_point<std::chrono::system_clock, D> wall_now() noexcept {
  return std::chrono::floor<D>(std::chrono::system_clock::now());
}

/// wall_now<D>() as a count of D since the Unix epoch, the form files and messages carry.
template <typename D = std::chrono::nanoseconds>
int64_t wall_count() noexcept {
  return wall_now<D>().time_since_epoch().count();
}

}  // namespace hg::base
