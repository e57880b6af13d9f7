// base::wall_now and base::wall_count: the system clock, rounded down to the unit asked for.
// No timing bound: each reading is only compared with readings taken around it.
#include "base/wall_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

namespace hg::base {
namespace {

TEST(WallClock, ReadsTheSystemClockRoundedDownToTheUnitAskedFor) {
  using std::chrono::floor;
  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;
  using std::chrono::seconds;
  using std::chrono::system_clock;
  const auto before = system_clock::now();
  const auto ns = wall_now();
  const auto ms = wall_now<milliseconds>();
  const auto s = wall_now<seconds>();
  const int64_t ms_count = wall_count<milliseconds>();
  const auto after = system_clock::now();
  static_assert(std::is_same_v<decltype(s), const std::chrono::sys_seconds>);
  EXPECT_LE(floor<nanoseconds>(before), ns);
  EXPECT_LE(ns, floor<nanoseconds>(after));
  EXPECT_LE(floor<milliseconds>(before), ms);
  EXPECT_LE(ms, floor<milliseconds>(after));
  EXPECT_LE(floor<seconds>(before), s);
  EXPECT_LE(s, floor<seconds>(after));
  EXPECT_LE(floor<milliseconds>(before).time_since_epoch().count(), ms_count);
  EXPECT_LE(ms_count, floor<milliseconds>(after).time_since_epoch().count());
  // Since the Unix epoch: after 2020-01-01 on any machine that runs these tests.
  EXPECT_GT(wall_count<seconds>(), int64_t{1'577'836'800});
}

}  // namespace
}  // namespace hg::base
