// ascii_words: ASCII letter tests on eight bytes at once (a uint64_t loaded from bytes in
// memory order, little-endian machines), for code that sets or checks the letter case of
// whole names on every query: the 0x20 case writer and checker of upstream queries.
#pragma once

#include <cstdint>
#include <cstring>

namespace hg::wire::ascii_words {

inline constexpr uint64_t kHigh = 0x8080808080808080ULL;  // bit 7 of each byte
inline constexpr uint64_t kOnes = 0x0101010101010101ULL;  // bit 0 of each byte

/// Bit 7 set in each byte of `w` that lies in [lo, hi] (both 0x00..0x7f), clear in every
/// other byte (bytes >= 0x80 included). No carry crosses a byte.
constexpr uint64_t in_range(uint64_t w, uint8_t lo, uint8_t hi) noexcept {
  const uint64_t low7 = w & ~kHigh;
  const uint64_t ge_lo = (low7 + (0x80u - lo) * kOnes) & kHigh;
  const uint64_t gt_hi = (low7 + (0x7fu - hi) * kOnes) & kHigh;
  return ge_lo & ~gt_hi & ~w & kHigh;
}

/// 0x20 in each byte of `w` that is an ASCII letter, either case.
constexpr uint64_t letters(uint64_t w) noexcept {
  return in_range(w | (0x20 * kOnes), 'a', 'z') >> 2;
}

inline uint64_t load(const uint8_t* p) noexcept {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
inline void store(uint8_t* p, uint64_t w) noexcept {
  std::memcpy(p, &w, sizeof w);
}

}  // namespace hg::wire::ascii_words
