// The --schedule grammar (schedule.h): every accepted form, and what is refused.
#include <gtest/gtest.h>

#include <string>

#include "tests/rehearse/replay_test_util.h"
#include "tools/rehearse/replay/schedule.h"

namespace hg::rehearse::testing {
namespace {

TEST(ParseSchedule, Forms) {
  std::string why;
  auto a = parse_schedule("Example.COM=60", why);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->zone.to_text(), "example.com.");
  EXPECT_EQ(a->ttl, 60u);
  EXPECT_EQ(a->when, ScheduleRule::When::Always);
  auto b = parse_schedule("example.com=5m@+2h", why);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ttl, 300u);
  EXPECT_EQ(b->when, ScheduleRule::When::FromStart);
  EXPECT_EQ(b->at_ns, 7200 * kSec);
  auto c = parse_schedule("example.com=60@2026-01-01T01:00:00Z", why);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->when, ScheduleRule::When::Absolute);
  EXPECT_EQ(c->at_ns, kT0 + 3600 * kSec);
  auto d = parse_schedule("example.com=60@1767229200", why);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->at_ns, kT0 + 3600 * kSec);
  for (const char* bad :
       {"example.com", "=60", "example.com=", "example.com=x", "example.com=60@",
        "example.com=60@+soon", "example.com=1.5", "example.com=60@2026-13-01T00:00:00Z",
        "example.com=99999999999",
        // Times past int64 nanoseconds (~2262) or before 1970 are refused,
        // not wrapped: these used to overflow the multiplication by 10^9.
        "example.com=60@9999-12-31T23:59:59Z", "example.com=60@-999-01-01T00:00:00Z",
        "example.com=60@9000000001", "example.com=60@999999999999"}) {
    EXPECT_FALSE(parse_schedule(bad, why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

}  // namespace
}  // namespace hg::rehearse::testing
