// base::crc32c against the standard check value, in pieces, and against single-bit changes.
#include "base/crc32c.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tests/support/bytes_of.h"

namespace hg::base {
namespace {

using test::bytes_of;

TEST(Crc32c, MatchesTheCheckValue) {
  // The standard check value of CRC-32C over the ASCII digits 1-9 (RFC 3720 B.4 family).
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  // Continuing a CRC over two halves equals the CRC of the whole.
  const auto s = bytes_of("123456789");
  EXPECT_EQ(crc32c(s.subspan(4), crc32c(s.first(4))), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  EXPECT_EQ(crc32c({}, 0x12345678u), 0x12345678u) << "no bytes leave the CRC as it was";
  static_assert(crc32c(std::array<uint8_t, 1>{0}) == 0x527D5351u, "usable in constant expressions");
}

TEST(Crc32c, KnownVectorsOfRfc3720) {
  // RFC 3720 B.4: 32 bytes of zeros, of ones, ascending and descending.
  std::vector<uint8_t> b(32, 0);
  EXPECT_EQ(crc32c(b), 0x8A9136AAu);
  std::fill(b.begin(), b.end(), 0xFF);
  EXPECT_EQ(crc32c(b), 0x62A8AB43u);
  for (std::size_t i = 0; i < 32; ++i)
    b[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(b), 0x46DD794Eu);
  for (std::size_t i = 0; i < 32; ++i)
    b[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c(b), 0x113FDB5Cu);
}

TEST(Crc32c, EverySingleBitFlipChangesTheCrc) {
  std::vector<uint8_t> b(64);
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<uint8_t>(i * 37 + 1);
  const uint32_t good = crc32c(b);
  for (std::size_t i = 0; i < b.size() * 8; ++i) {
    b[i / 8] ^= static_cast<uint8_t>(1u << (i % 8));
    EXPECT_NE(crc32c(b), good) << "bit " << i;
    b[i / 8] ^= static_cast<uint8_t>(1u << (i % 8));
  }
}

}  // namespace
}  // namespace hg::base
