// base/hash.h: FNV-1a against the published 64-bit test vectors, fmix64 against values worked
// out by hand from its definition, and the byte-at-a-time form equal to the span form.
#include "base/hash.h"

#include <gtest/gtest.h>

#include <string_view>

#include "tests/support/bytes_of.h"

namespace hg::base {
namespace {

using test::bytes_of;

TEST(Fnv1a, PublishedVectors) {
  EXPECT_EQ(fnv1a(bytes_of("")), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a(bytes_of("a")), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a(bytes_of("foobar")), 0x85944171f73967e8ULL);
  uint64_t h = kFnv1aBasis;
  for (const uint8_t b : bytes_of("foobar"))
    h = fnv1a_step(h, b);
  EXPECT_EQ(h, fnv1a(bytes_of("foobar")));
}

TEST(Fmix64, KnownValues) {
  EXPECT_EQ(fmix64(0), 0u);
  EXPECT_EQ(fmix64(1), 0xb456bcfc34c2cb2cULL);
  EXPECT_EQ(fmix64(0x123456789abcdef0ULL), 0x18b8c062f6f42398ULL);
  static_assert(fmix64(1) == 0xb456bcfc34c2cb2cULL);
}

}  // namespace
}  // namespace hg::base
