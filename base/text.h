// Small text helpers shared by the resolver's parsers of configuration-like text (the command
// line and TOML file, resolv.conf, endpoints, dnstap targets): none of them touches a packet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/decimal.h"

namespace hg::base::text {

/// `s` in double quotes, for error messages: "value".
inline std::string quote(std::string_view s) {
  std::string out = "\"";
  out.append(s);
  out += '"';
  return out;
}

/// `s` without leading and trailing spaces, tabs and carriage returns.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

/// Text quoted in an error: at most 64 bytes, control and non-ASCII bytes as \xHH, so the
/// error is always one printable line however hostile the text (NUL bytes included).
inline std::string shown(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : s.substr(0, 64)) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7F) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else {
      out += c;
    }
  }
  return s.size() > 64 ? out + "..." : out;
}

/// A decimal number made of digits only (no sign, no spaces), at most 15 digits.
inline std::optional<uint64_t> parse_digits(std::string_view s) {
  if (s.size() > 15) return std::nullopt;
  return base::parse_decimal<uint64_t>(s);
}

/// The words as an English list: "a", "a and b", "a, b and c" (for help and man pages).
inline std::string join_and(const std::vector<std::string_view>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " and " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace hg::base::text
