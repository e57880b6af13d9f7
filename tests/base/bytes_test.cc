// base/bytes.h: big-endian loads, stores and appends, checked against bytes written out by
// hand (network order: most significant byte first) and against each other.
#include "base/bytes.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace hg::base {
namespace {

TEST(Bytes, LoadsReadTheMostSignificantByteFirst) {
  const std::array<uint8_t, 8> b{0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF};
  EXPECT_EQ(load_u16(b.data()), 0x0123);
  EXPECT_EQ(load_u16(b.data() + 6), 0xCDEF);
  EXPECT_EQ(load_u32(b.data()), 0x01234567u);
  EXPECT_EQ(load_u32(b.data() + 4), 0x89ABCDEFu);
  EXPECT_EQ(load_u64(b.data()), 0x0123456789ABCDEFull);
  // Any offset: nothing assumes alignment.
  EXPECT_EQ(load_u32(b.data() + 1), 0x23456789u);
  EXPECT_EQ(load_u64(std::array<uint8_t, 8>{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE}.data()),
            0xFFFFFFFFFFFFFFFEull);
}

TEST(Bytes, StoresWriteExactlyTheirWidthInNetworkOrder) {
  std::array<uint8_t, 10> b{};
  b.fill(0xAA);
  store_u16(b.data() + 1, 0xBEEF);
  EXPECT_EQ(b,
            (std::array<uint8_t, 10>{0xAA, 0xBE, 0xEF, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA}));
  b.fill(0xAA);
  store_u32(b.data() + 3, 0x01020304u);
  EXPECT_EQ(b, (std::array<uint8_t, 10>{0xAA, 0xAA, 0xAA, 1, 2, 3, 4, 0xAA, 0xAA, 0xAA}));
  b.fill(0xAA);
  store_u64(b.data() + 1, 0x0102030405060708ull);
  EXPECT_EQ(b, (std::array<uint8_t, 10>{0xAA, 1, 2, 3, 4, 5, 6, 7, 8, 0xAA}));
}

TEST(Bytes, AppendsGrowTheVectorByTheirWidth) {
  std::vector<uint8_t> out{9};
  append_u16(out, 0x0102);
  append_u32(out, 0x03040506u);
  append_u64(out, 0x0708090A0B0C0D0Eull);
  EXPECT_EQ(out, (std::vector<uint8_t>{9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
}

TEST(Bytes, WhatIsStoredLoadsBackForEdgeValues) {
  for (const uint64_t v :
       {uint64_t{0}, uint64_t{1}, uint64_t{0x80}, uint64_t{0xFF00}, uint64_t{0x7FFFFFFF},
        uint64_t{0x80000000}, uint64_t{0xFFFFFFFF}, uint64_t{0x100000000}, ~uint64_t{0}}) {
    std::array<uint8_t, 8> b{};
    store_u16(b.data(), static_cast<uint16_t>(v));
    EXPECT_EQ(load_u16(b.data()), static_cast<uint16_t>(v));
    store_u32(b.data(), static_cast<uint32_t>(v));
    EXPECT_EQ(load_u32(b.data()), static_cast<uint32_t>(v));
    store_u64(b.data(), v);
    EXPECT_EQ(load_u64(b.data()), v);
    std::vector<uint8_t> out;
    append_u64(out, v);
    EXPECT_EQ(load_u64(out.data()), v);
  }
  static_assert(load_u16(std::array<uint8_t, 2>{0x12, 0x34}.data()) == 0x1234,
                "usable in constant expressions");
}

}  // namespace
}  // namespace hg::base
