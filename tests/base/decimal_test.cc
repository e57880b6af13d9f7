// base/decimal.h: whole-text unsigned decimals, and everything else refused.
#include "base/decimal.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace hg::base {
namespace {

TEST(ParseDecimal, DigitsThatFitAreTheirValue) {
  EXPECT_EQ(parse_decimal<uint64_t>("0"), 0u);
  EXPECT_EQ(parse_decimal<uint64_t>("1700000000123"), 1'700'000'000'123u);
  EXPECT_EQ(parse_decimal<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_decimal<uint32_t>("4294967295"), UINT32_MAX);
  EXPECT_EQ(parse_decimal<uint32_t>("007"), 7u);
}

TEST(ParseDecimal, AnythingButDigitsIsRefused) {
  for (const char* bad : {"", " 1", "1 ", "+1", "-1", "0x10", "1.5", "1e3", "12a"})
    EXPECT_FALSE(parse_decimal<uint64_t>(bad)) << '"' << bad << '"';
}

TEST(ParseDecimal, AValueOutOfRangeIsRefusedNotWrapped) {
  EXPECT_FALSE(parse_decimal<uint64_t>("18446744073709551616"));
  EXPECT_FALSE(parse_decimal<uint64_t>("99999999999999999999999"));
  EXPECT_FALSE(parse_decimal<uint32_t>("4294967296"));
  EXPECT_FALSE(parse_decimal<uint16_t>("65536"));
}

}  // namespace
}  // namespace hg::base
