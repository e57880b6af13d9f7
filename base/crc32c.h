// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), byte at a time from a table built at
// compile time. It guards what the daemon reads back from outside the process against
// corruption: the cache file (cache/persist.h) and the fleet's Redis values
// (resolver/fleet/redis_value.h). A checksum, not a MAC: forged data passes it.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace hg::base {

namespace crc32c_detail {
constexpr std::array<uint32_t, 256> make_table() noexcept {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
inline constexpr std::array<uint32_t, 256> kTable = make_table();
}  // namespace crc32c_detail

/// CRC-32C of `bytes`, continuing from `crc` (0 to start): crc32c(b, crc32c(a)) is the CRC of
/// a followed by b.
constexpr uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0) noexcept {
  uint32_t c = ~crc;
  for (const uint8_t b : bytes)
    c = crc32c_detail::kTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return ~c;
}

}  // namespace hg::base
