// The setters and TOML writers of the common value types (durations, numbers, strings, lists),
// for the rows of the settings table (config_keys.cc, the only file that includes this).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "resolver/config_keys.h"

namespace hg::resolver::settings::rows {

using std::chrono::seconds;
using Shown = std::optional<std::string>;

template <class T, class F>
std::string toml_list(const std::vector<T>& items, F text) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ", ";
    out += toml_string(text(items[i]));
  }
  return out + "]";
}

inline std::string same(const std::string& s) {
  return s;
}
inline std::string cidr_text(const Cidr& c) {
  return c.to_string();
}
inline std::string endpoint_text(const Endpoint& e) {
  return e.to_string();
}
inline std::string zone_ttl_text(const TtlCap& t) {
  return t.zone + "=" + std::to_string(t.cap.count());
}
inline std::string forward_text(const ForwardZone& f) {
  std::string s = f.zone + "=";
  for (std::size_t i = 0; i < f.servers.size(); ++i) {
    std::string one = f.servers[i].to_string();
    for (const TlsTarget& t : f.tls)
      if (t.endpoint == f.servers[i]) one = to_string(t);
    s += (i ? "," : "") + one;
  }
  return s;
}

// The writers of the common value types. `all` (config_keys.h, Shower) shows a value that
// to_toml leaves out.
template <auto M>
Shown show_count(const Config& c, bool) {  // a duration, as its count
  return std::to_string((c.*M).count());
}
template <auto M>
Shown show_number(const Config& c, bool) {
  return std::to_string(c.*M);
}
template <auto M>
Shown show_text(const Config& c, bool) {  // a string that always has a value
  return toml_string(c.*M);
}
template <auto M>
Shown show_text_if_set(const Config& c, bool) {  // a string, empty when unset
  if ((c.*M).empty()) return std::nullopt;
  return toml_string(c.*M);
}
template <auto M, auto Text>
Shown show_list(const Config& c, bool all) {  // left out of to_toml when empty
  if (!all && (c.*M).empty()) return std::nullopt;
  return toml_list(c.*M, Text);
}
template <auto M, auto Text>
Shown show_whole_list(const Config& c, bool) {  // written even when empty
  return toml_list(c.*M, Text);
}
inline Shown show_bool(bool b) {
  return b ? "true" : "false";
}
template <auto M>
Shown show_off_or_number(const Config& c, bool) {  // 0 is "off"
  return c.*M ? std::to_string(c.*M) : "\"off\"";
}

// Setters of the common value types.
template <auto M>
std::optional<std::string> set_ttl_of(Config& c, std::string_view v, const ParseOptions&) {
  return set_ttl(c.*M, v);
}
template <auto M>
std::optional<std::string> set_timeout_of(Config& c, std::string_view v, const ParseOptions&) {
  return set_timeout(c.*M, v);
}
template <auto M>
void clear_list(Config& c) {
  (c.*M).clear();
}
// A flag's value: "true" (given with no value) or a TOML true/false.
inline std::optional<std::string> flag_value(std::string_view v, bool& out) {
  if (v != "true" && v != "false") return "expected no value (or true or false)";
  out = v == "true";
  return std::nullopt;
}
// Some fleet settings mean nothing without --redis; to_toml writes them only with it.
inline Shown if_redis(const Config& c, bool all, const Shown& value) {
  return all || c.redis.enabled() ? value : std::nullopt;
}

}  // namespace hg::resolver::settings::rows
