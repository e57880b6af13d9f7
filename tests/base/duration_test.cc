// base::parse_duration and base::parse_seconds: the one grammar of durations in flags,
// configuration and control commands (digits, an optional fraction, an optional unit).
#include "base/duration.h"

#include <gtest/gtest.h>

#include <chrono>

namespace hg::base {
namespace {

using namespace std::chrono_literals;

TEST(ParseDuration, EveryUnitAndBareDigitsInTheCallersUnit) {
  EXPECT_EQ(parse_duration("90"), 90s);
  EXPECT_EQ(parse_duration("90", 1ms), 90ms);
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("250ms", 1ms), 250ms);
  EXPECT_EQ(parse_duration("2s", 1ms), 2000ms);
  EXPECT_EQ(parse_duration("15m"), 15min);
  EXPECT_EQ(parse_duration("2h"), 2h);
  EXPECT_EQ(parse_duration("1d"), 24h);
  EXPECT_EQ(parse_duration("0"), 0ms);
  EXPECT_EQ(parse_duration("007s"), 7s) << "leading zeros are digits like any other";
}

TEST(ParseDuration, AFractionMustComeToWholeMilliseconds) {
  EXPECT_EQ(parse_duration("1.5h"), 90min);
  EXPECT_EQ(parse_duration("0.25"), 250ms);
  EXPECT_EQ(parse_duration("1.8s"), 1800ms);
  EXPECT_EQ(parse_duration("0.001s"), 1ms);
  EXPECT_EQ(parse_duration("1.000000000s"), 1s) << "nine digits after the point";
  EXPECT_FALSE(parse_duration("0.0005s")) << "half a millisecond";
  EXPECT_FALSE(parse_duration("1.5ms"));
  EXPECT_FALSE(parse_duration("1.5", 1ms)) << "bare digits in milliseconds";
  EXPECT_FALSE(parse_duration("1.0000000000s")) << "ten digits after the point";
}

TEST(ParseDuration, RefusesEverythingElse) {
  for (const char* bad : {"",     " ",   "s",   "ms",   ".5s",  "5.",    "5.s", "-5",   "+5",
                          " 5",   "5 ",  "5 s", "5w",   "5S",   "5sec",  "5ss", "5msx", "1e3",
                          "0x10", "inf", "nan", "1,5s", "1..5", "1.2.3", "5m5s"}) {
    EXPECT_FALSE(parse_duration(bad)) << '"' << bad << '"';
  }
}

TEST(ParseDuration, NothingOverflows) {
  // The largest count of milliseconds int64 holds, and one past it.
  EXPECT_EQ(parse_duration("9223372036854775807ms"), std::chrono::milliseconds::max());
  EXPECT_FALSE(parse_duration("9223372036854775808ms"));
  EXPECT_FALSE(parse_duration("9223372036854775807s"));
  EXPECT_FALSE(parse_duration("18446744073709551616")) << "past uint64 while reading digits";
  EXPECT_EQ(parse_duration("106751991167d"),
            std::chrono::milliseconds{106751991167LL * 86'400'000});
  EXPECT_FALSE(parse_duration("106751991168d")) << "days whose milliseconds pass int64";
  EXPECT_FALSE(parse_duration("99999999999999999999999999999d"));
  EXPECT_EQ(parse_duration("9223372036854775.807s"), std::chrono::milliseconds::max());
  EXPECT_FALSE(parse_duration("9223372036854775.808s")) << "the fraction tips it over";
}

TEST(ParseSeconds, WholeSecondsInAnyUnit) {
  EXPECT_EQ(parse_seconds("45"), 45s);
  EXPECT_EQ(parse_seconds("45s"), 45s);
  EXPECT_EQ(parse_seconds("2m"), 120s);
  EXPECT_EQ(parse_seconds("3h"), 10800s);
  EXPECT_EQ(parse_seconds("1d"), 86400s);
  EXPECT_EQ(parse_seconds("1.5m"), 90s);
  EXPECT_EQ(parse_seconds("2000ms"), 2s);
  EXPECT_EQ(parse_seconds("0"), 0s);
  EXPECT_FALSE(parse_seconds("1500ms")) << "not a whole number of seconds";
  EXPECT_FALSE(parse_seconds("0.5"));
  EXPECT_FALSE(parse_seconds("1w"));
  EXPECT_FALSE(parse_seconds(""));
  EXPECT_FALSE(parse_seconds("-1"));
  static_assert(parse_seconds("1h").value() == 3600s, "usable in constant expressions");
}

TEST(WholeSeconds, RoundsTowardZero) {
  EXPECT_EQ(whole_seconds(1999ms), 1);
  EXPECT_EQ(whole_seconds(2000ms), 2);
  EXPECT_EQ(whole_seconds(999ms), 0);
  EXPECT_EQ(whole_seconds(-1500ms), -1);
  EXPECT_EQ(whole_seconds(0ms), 0);
}

}  // namespace
}  // namespace hg::base
