// base::unix_ns: a file's seconds and fraction to int64 nanoseconds, or nothing when they do
// not fit — never a wrapped time.
#include "base/unix_time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <ctime>
#include <limits>

namespace hg::base {
namespace {

TEST(UnixNs, InRangeTimesConvertExactly) {
  EXPECT_EQ(unix_ns(0, 0), 0);
  EXPECT_EQ(unix_ns(1'700'000'000, 123'456'789), int64_t{1'700'000'000'123'456'789});
  EXPECT_EQ(unix_ns(uint64_t{kMaxUnixSeconds}, uint32_t{999'999'999}),
            kMaxUnixSeconds * kNanosPerSecond + 999'999'999);
  static_assert(unix_ns(2, 5).value() == 2'000'000'005, "usable in constant expressions");
}

TEST(UnixNs, OutOfRangeSecondsAreRefusedForEveryIntegerType) {
  EXPECT_FALSE(unix_ns(kMaxUnixSeconds + 1, 0));
  EXPECT_FALSE(unix_ns(int64_t{53'761'720'551}, 0)) << "the pcapng record the fuzzer found";
  EXPECT_FALSE(unix_ns(std::numeric_limits<uint64_t>::max(), 0));
  EXPECT_FALSE(unix_ns(std::numeric_limits<int64_t>::max(), 0));
  EXPECT_FALSE(unix_ns(std::numeric_limits<int64_t>::min(), 0));
  EXPECT_FALSE(unix_ns(time_t{-1}, 0));
  // Nothing accepted overflows: the largest accepted second times 10^9 plus the largest
  // fraction still fits.
  EXPECT_LT(kMaxUnixSeconds, (std::numeric_limits<int64_t>::max() - 999'999'999) / kNanosPerSecond);
}

TEST(UnixNs, OutOfRangeFractionsAreRefused) {
  EXPECT_FALSE(unix_ns(1, 1'000'000'000));
  EXPECT_FALSE(unix_ns(1, -1));
  EXPECT_FALSE(unix_ns(1, std::numeric_limits<uint32_t>::max()));
  EXPECT_FALSE(unix_ns(1, std::numeric_limits<int64_t>::min()));
}

TEST(AddNs, SaturatesInsteadOfWrapping) {
  EXPECT_EQ(add_ns(5, 7), 12);
  EXPECT_EQ(add_ns(-5, 3), -2);
  // A trace starting in 2255 plus a +100000d schedule offset (replay --schedule ZONE=TTL@+...).
  EXPECT_EQ(add_ns(kMaxUnixSeconds * kNanosPerSecond, int64_t{100'000} * 86'400 * kNanosPerSecond),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(add_ns(std::numeric_limits<int64_t>::min(), -1), std::numeric_limits<int64_t>::min());
}

}  // namespace
}  // namespace hg::base
