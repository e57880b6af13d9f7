// Text from traces and zones (names, owners, profile strings) placed inside the SVG plots and
// the HTML report: escaped once here for every output that is markup.
#pragma once

#include <string>
#include <string_view>

namespace hg::rehearse {

// &, <, > and " as entities: safe in element text and in double-quoted attribute values.
inline std::string markup_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

}  // namespace hg::rehearse
