// Two small non-cryptographic hash pieces, each defined once: FNV-1a (64-bit) over bytes, and
// the 64-bit finaliser of MurmurHash3 (fmix64), which spreads every input bit over the whole
// word. FNV-1a hashes names and addresses for tables whose size is bounded (wire::Name::hash,
// the hosts table, the routing table's TLD filter, the upstream's name check, connections per
// source, hourglass-rehearse's identities); fmix64 goes before the S3-FIFO ghost table slices
// an owner's hash. Not for an unbounded table an attacker may aim at: the cache keys use their
// own seeded hash (cache/key.h). tools/lint/homes fails on FNV's constants anywhere else.
#pragma once

#include <cstdint>
#include <span>

namespace hg::base {

inline constexpr uint64_t kFnv1aBasis = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnv1aPrime = 0x100000001b3ULL;

/// One byte into an FNV-1a hash: start from kFnv1aBasis (or a seeded variant of it).
constexpr uint64_t fnv1a_step(uint64_t h, uint8_t b) noexcept {
  return (h ^ b) * kFnv1aPrime;
}

/// FNV-1a of `bytes` from `h`.
constexpr uint64_t fnv1a(std::span<const uint8_t> bytes, uint64_t h = kFnv1aBasis) noexcept {
  for (const uint8_t b : bytes)
    h = fnv1a_step(h, b);
  return h;
}

/// MurmurHash3's fmix64.
constexpr uint64_t fmix64(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace hg::base
