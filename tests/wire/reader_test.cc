// WireReader, the bounds-checked cursor: each read takes its width in network order or fails
// with Truncated at the offset where it would have started, leaving the cursor there.
#include "wire/reader.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace hg::wire {
namespace {

TEST(WireReader, ReadsEachWidthInNetworkOrder) {
  const std::array<uint8_t, 15> b{0xAB, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                  0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E};
  WireReader r(b);
  EXPECT_EQ(*r.u8(), 0xAB);
  EXPECT_EQ(*r.u16(), 0x0102);
  EXPECT_EQ(*r.u32(), 0x03040506u);
  EXPECT_EQ(*r.u64(), 0x0708090A0B0C0D0Eull);
  EXPECT_TRUE(r.at_end());
}

TEST(WireReader, AShortReadFailsWhereItStartedAndMovesNothing) {
  const std::array<uint8_t, 7> b{1, 2, 3, 4, 5, 6, 7};
  WireReader r(b, 1);
  const auto v = r.u64();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), (Error{ParseError::Truncated, 1}));
  EXPECT_EQ(r.offset(), 1u) << "a failed read leaves the cursor where it was";
  EXPECT_EQ(*r.u32(), 0x02030405u);
  EXPECT_FALSE(r.u32());
  EXPECT_FALSE(r.bytes(3));
  EXPECT_EQ(*r.u16(), 0x0607);
  EXPECT_FALSE(r.u8());
  EXPECT_FALSE(r.u16());
  EXPECT_TRUE(r.at_end());
  EXPECT_TRUE(r.bytes(0)) << "nothing is always there";
}

TEST(WireReader, AStartPastTheEndIsTheEnd) {
  const std::array<uint8_t, 2> b{1, 2};
  WireReader r(b, 99);
  EXPECT_EQ(r.offset(), 2u);
  EXPECT_TRUE(r.at_end());
  EXPECT_FALSE(r.u8());
}

}  // namespace
}  // namespace hg::wire
