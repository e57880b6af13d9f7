// Clock: where the cache's notion of "now" comes from.
//
// The cache never reads a clock itself (docs/architecture.md §4): every call that depends on
// time takes a `Time now`. Only the event loop (resolver/net/event_loop.h: steady_clock, read once
// per loop iteration) or a test (ManualClock) produces one. Time is monotonic milliseconds:
// TTLs count in whole seconds, but the failure holdoff and the prefetch ramp want finer steps,
// and wall-clock jumps must never age or rejuvenate entries.
//
// Must not include anything beyond the standard library.
#pragma once

#include <chrono>

namespace hg::cache {

/// A monotonic instant with millisecond resolution (steady_clock's epoch).
using Time = std::chrono::time_point<std::chrono::steady_clock, std::chrono::milliseconds>;
using Millis = std::chrono::milliseconds;
using Seconds = std::chrono::seconds;

/// A clock that moves only when told to: tests use it so they never sleep.
/// It starts well away from the epoch so that "now minus a window" never underflows.
class ManualClock {
 public:
  explicit ManualClock(Time start = Time{Seconds{1'000'000}}) noexcept : now_(start) {}
  Time now() const noexcept { return now_; }
  void advance(Millis d) noexcept { now_ += d; }
  void set(Time t) noexcept { now_ = t; }

 private:
  Time now_;
};

}  // namespace hg::cache
