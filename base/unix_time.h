// Times read from files (pcap and pcapng records, dnstap frames): seconds and a fraction,
// as the file states them, turned into nanoseconds since the epoch without overflow.
//
// Everything that turns an untrusted time into int64 nanoseconds goes through unix_ns(): a
// product of a file's seconds and 10^9 overflows int64 past ~9.22e9 s (the year 2262), and
// a wrapped time would silently reorder a trace, misplace its buckets and expire its
// fragments and streams at the wrong moment. The bound is a round 9e9 s (about the year
// 2255): no capture carries such a time, so anything beyond it is a corrupt record.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <utility>

namespace hg::base {

inline constexpr int64_t kMaxUnixSeconds = 9'000'000'000;
inline constexpr int64_t kNanosPerSecond = 1'000'000'000;

// sec seconds plus frac_ns nanoseconds since the epoch, or nullopt when sec is negative or
// past kMaxUnixSeconds, or frac_ns is not in [0, 10^9). Any integer types: a file's fields
// come as uint64 (dnstap), time_t and suseconds_t (libpcap), ...
template <typename S, typename N>
constexpr std::optional<int64_t> unix_ns(S sec, N frac_ns) noexcept {
  if (std::cmp_less(sec, 0) || std::cmp_greater(sec, kMaxUnixSeconds)) return std::nullopt;
  if (std::cmp_less(frac_ns, 0) || std::cmp_greater_equal(frac_ns, kNanosPerSecond))
    return std::nullopt;
  return static_cast<int64_t>(sec) * kNanosPerSecond + static_cast<int64_t>(frac_ns);
}

// a + b nanoseconds, saturated at the ends of int64 instead of wrapping: a trace's start
// (up to kMaxUnixSeconds) plus an offset given on the command line (+DURATION) may not fit.
constexpr int64_t add_ns(int64_t a, int64_t b) noexcept {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

}  // namespace hg::base
