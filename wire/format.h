// fmt::formatter specialisations for wire types, for logs, tools and test output:
//   fmt::format("{} {} {}", name, RRType::AAAA, RCode::NXDomain) → "www.example.com. AAAA NXDOMAIN"
//   fmt::format("{}", Error{ParseError::Truncated, 12})          → "truncated at offset 12"
//
// The only wire/ header that includes fmt (docs/architecture.md §1): nothing on the packet path
// uses it, and hg_wire does not link fmt — a target that includes this header links fmt::fmt
// itself.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "wire/name.h"
#include "wire/result.h"
#include "wire/types.h"

template <>
struct fmt::formatter<hg::wire::Name> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const hg::wire::Name& n, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(n.to_text(), ctx);
  }
};

template <>
struct fmt::formatter<hg::wire::RRType> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(hg::wire::RRType t, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(hg::wire::to_string(t), ctx);
  }
};

template <>
struct fmt::formatter<hg::wire::RCode> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(hg::wire::RCode r, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(hg::wire::to_string(r), ctx);
  }
};

template <>
struct fmt::formatter<hg::wire::ParseError> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(hg::wire::ParseError e, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(hg::wire::to_string(e), ctx);
  }
};

template <>
struct fmt::formatter<hg::wire::Error> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const hg::wire::Error& e, Ctx& ctx) const {
    return fmt::format_to(ctx.out(), "{} at offset {}", hg::wire::to_string(e.code), e.offset);
  }
};
