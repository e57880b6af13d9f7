// Big-endian (network order) integers in bytes: the one copy of these helpers for every
// folder (tools/lint/homes fails on a hand-written (p[0] << 8) | p[1] elsewhere). Files, frames and
// packets all carry their multi-byte fields this way: the cache file, the fleet's Redis values,
// Frame Streams lengths, pcap headers, DNS messages.
//
// load_* and store_* work on bytes the caller has already checked are in bounds (an untrusted
// buffer is read through a bounds-checked cursor, wire::WireReader, instead); append_* grow a
// vector. Each value is assembled byte by byte, never by casting to a wider type, so
// alignment and host byte order do not matter.
#pragma once

#include <cstdint>
#include <vector>

namespace hg::base {

constexpr uint16_t load_u16(const uint8_t* p) noexcept {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
constexpr uint32_t load_u32(const uint8_t* p) noexcept {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
constexpr uint64_t load_u64(const uint8_t* p) noexcept {
  return (uint64_t{load_u32(p)} << 32) | load_u32(p + 4);
}
/// Little-endian, for the one format that is (protobuf's fixed32, in dnstap frames).
constexpr uint32_t load_u32_le(const uint8_t* p) noexcept {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

constexpr void store_u16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
constexpr void store_u32(uint8_t* p, uint32_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
constexpr void store_u64(uint8_t* p, uint64_t v) noexcept {
  store_u32(p, static_cast<uint32_t>(v >> 32));
  store_u32(p + 4, static_cast<uint32_t>(v));
}

inline void append_u16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
inline void append_u32(std::vector<uint8_t>& out, uint32_t v) {
  append_u16(out, static_cast<uint16_t>(v >> 16));
  append_u16(out, static_cast<uint16_t>(v));
}
inline void append_u64(std::vector<uint8_t>& out, uint64_t v) {
  append_u32(out, static_cast<uint32_t>(v >> 32));
  append_u32(out, static_cast<uint32_t>(v));
}

}  // namespace hg::base
