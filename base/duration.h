// Durations as people write them in flags, configuration and control commands: the one
// grammar every such value goes through (the daemon's config keys and flags, hourglass-ctl's
// TTL arguments, hourglass-rehearse's flags).
//
//   duration = digits [ "." digits ] [ unit ]        unit = "ms" / "s" / "m" / "h" / "d"
//
// "90", "90s", "1.5m", "500ms", "2h", "1d". Bare digits count in the caller's unit (seconds
// for almost every value; milliseconds where the value is a timeout in milliseconds). Nothing
// else is accepted: no sign, no spaces, no exponent, no other unit, at most 9 digits after
// the point. The value must be a whole number of milliseconds ("0.0005s" is refused) and fit
// in int64 milliseconds; each caller then checks its own range.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hg::base {

/// `text` as milliseconds, bare digits counting in `bare_unit` (1 s unless told); nullopt
/// when it does not follow the grammar above.
constexpr std::optional<std::chrono::milliseconds> parse_duration(
    std::string_view text, std::chrono::milliseconds bare_unit = std::chrono::seconds{1}) noexcept {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  uint64_t whole = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    if (__builtin_mul_overflow(whole, 10u, &whole) ||
        __builtin_add_overflow(whole, static_cast<uint64_t>(text[i] - '0'), &whole))
      return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  uint64_t frac = 0;   // the digits after the point, as an integer
  uint64_t scale = 1;  // 10 to the number of those digits
  if (i < text.size() && text[i] == '.') {
    const std::size_t start = ++i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (i - start == 9) return std::nullopt;
      frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
      scale *= 10;
    }
    if (i == start) return std::nullopt;  // "5."
  }
  const std::string_view unit = text.substr(i);
  int64_t unit_ms = 0;
  if (unit.empty()) {
    unit_ms = bare_unit.count();
  } else if (unit == "ms") {
    unit_ms = 1;
  } else if (unit == "s") {
    unit_ms = 1000;
  } else if (unit == "m") {
    unit_ms = 60'000;
  } else if (unit == "h") {
    unit_ms = 3'600'000;
  } else if (unit == "d") {
    unit_ms = 86'400'000;
  }
  if (unit_ms <= 0) return std::nullopt;
  uint64_t ms = 0;
  if (__builtin_mul_overflow(whole, static_cast<uint64_t>(unit_ms), &ms)) return std::nullopt;
  // frac < 10^9 and unit_ms <= 8.64e7 (or the caller's unit): checked all the same.
  uint64_t part = 0;
  if (__builtin_mul_overflow(frac, static_cast<uint64_t>(unit_ms), &part) || part % scale != 0 ||
      __builtin_add_overflow(ms, part / scale, &ms) || ms > uint64_t{INT64_MAX})
    return std::nullopt;
  return std::chrono::milliseconds{static_cast<int64_t>(ms)};
}

/// parse_duration() of a value in whole seconds (bare digits are seconds): "30", "30s", "5m",
/// "1.5h", "2000ms"; nullopt when malformed or not a whole number of seconds ("1500ms").
constexpr std::optional<std::chrono::seconds> parse_seconds(std::string_view text) noexcept {
  const auto d = parse_duration(text);
  if (!d || d->count() % 1000 != 0) return std::nullopt;
  return std::chrono::seconds{d->count() / 1000};
}

/// `d` in whole seconds, rounded toward zero: how a dump or a report prints a time left.
constexpr int64_t whole_seconds(std::chrono::milliseconds d) noexcept {
  return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

}  // namespace hg::base
