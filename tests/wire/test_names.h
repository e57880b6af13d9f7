// N("www.example.com"): a test's name literal as a wire::Name. A literal that does not parse
// is a failure of the test, reported with the text (not an exception).
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "wire/name.h"

namespace hg::wire::test {

inline Name N(std::string_view text) {
  auto n = Name::from_text(text);
  EXPECT_TRUE(n.has_value()) << text;
  return n ? *n : Name{};
}

}  // namespace hg::wire::test
