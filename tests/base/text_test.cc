// base/text.h: join_and, the English list of the man page's SIGHUP keys and the control
// socket's fleet commands.
#include "base/text.h"

#include <gtest/gtest.h>

namespace hg::base::text {
namespace {

TEST(TextJoinAnd, NoneOneTwoAndMany) {
  EXPECT_EQ(join_and({}), "");
  EXPECT_EQ(join_and({"forward"}), "forward");
  EXPECT_EQ(join_and({"dnstap", "forward"}), "dnstap and forward");
  EXPECT_EQ(join_and({"a", "b", "c", "d"}), "a, b, c and d");
}

}  // namespace
}  // namespace hg::base::text
