// parse_decimal<T>(): an unsigned decimal number that is the whole of a piece of text — an
// environment variable, a field of a fleet message or a Redis key, a command-line value.
// One reader for all of them: digits only (no sign, space, prefix or fraction), and a value
// that does not fit T is refused rather than wrapped.
#pragma once

#include <charconv>
#include <concepts>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace hg::base {

/// The value of `text` when it is one or more decimal digits and fits T; nullopt otherwise
/// (empty, any other character, or out of range).
template <std::unsigned_integral T>
std::optional<T> parse_decimal(std::string_view text) noexcept {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  T v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace hg::base
