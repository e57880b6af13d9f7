// Header: the 12-byte DNS message header (RFC 1035 §4.1.1), with flag accessors.
//
//                                   1  1  1  1  1  1
//     0  1  2  3  4  5  6  7  8  9  0  1  2  3  4  5
//   +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
//   |QR|   Opcode  |AA|TC|RD|RA| Z|AD|CD|   RCODE   |   flags (RFC 1035, RFC 4035 AD/CD)
//   +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/reader.h"
#include "wire/result.h"
#include "wire/types.h"

namespace hg::wire {

inline constexpr std::size_t kHeaderSize = 12;

namespace flag {
inline constexpr uint16_t QR = 0x8000;
inline constexpr uint16_t AA = 0x0400;
inline constexpr uint16_t TC = 0x0200;
inline constexpr uint16_t RD = 0x0100;
inline constexpr uint16_t RA = 0x0080;
inline constexpr uint16_t Z = 0x0040;
inline constexpr uint16_t AD = 0x0020;
inline constexpr uint16_t CD = 0x0010;
}  // namespace flag

/// The opcode's four bits in the flags word, and their shift: the one copy of this mask.
inline constexpr uint16_t kOpcodeMask = 0x7800;
inline constexpr unsigned kOpcodeShift = 11;

struct Header {
  uint16_t id = 0;
  uint16_t flags = 0;
  uint16_t qdcount = 0;
  uint16_t ancount = 0;
  uint16_t nscount = 0;
  uint16_t arcount = 0;

  bool has(uint16_t f) const noexcept { return (flags & f) != 0; }
  void set(uint16_t f, bool on) noexcept {
    flags = static_cast<uint16_t>(on ? (flags | f) : (flags & ~f));
  }
  bool qr() const noexcept { return has(flag::QR); }
  bool aa() const noexcept { return has(flag::AA); }
  bool tc() const noexcept { return has(flag::TC); }
  bool rd() const noexcept { return has(flag::RD); }
  bool ra() const noexcept { return has(flag::RA); }
  bool ad() const noexcept { return has(flag::AD); }
  bool cd() const noexcept { return has(flag::CD); }
  Opcode opcode() const noexcept {
    return static_cast<Opcode>((flags & kOpcodeMask) >> kOpcodeShift);
  }
  void set_opcode(Opcode o) noexcept {
    flags = static_cast<uint16_t>((flags & ~kOpcodeMask) |
                                  ((static_cast<unsigned>(o) << kOpcodeShift) & kOpcodeMask));
  }
  /// The low 4 bits of the RCODE; the full code also needs the OPT record's high bits.
  uint8_t rcode_low() const noexcept { return static_cast<uint8_t>(flags & 0xF); }
  void set_rcode_low(uint8_t r) noexcept {
    flags = static_cast<uint16_t>((flags & ~0xF) | (r & 0xF));
  }

  /// Reads 12 bytes; Error{ShortHeader, size} when fewer remain.
  static Result<Header> read(WireReader& r) noexcept;
  /// Writes 12 bytes at p (the caller guarantees room).
  void write_unchecked(uint8_t* p) const noexcept;

  friend bool operator==(const Header&, const Header&) = default;
};

/// The flags of an answer to a query that had `query_flags`, carrying data whose own header
/// had `data_flags` (an upstream answer, or what the cache stored): QR and RA set; RD, CD and
/// the opcode echoed from the query; AD only when the data had it and the client asked for it
/// with AD or DO (RFC 6840 §5.8); the data's RCODE (low 4 bits). AA and TC are clear: the
/// caller sets TC when it truncates. The one place this rule lives (cache render, resolver
/// responder).
constexpr uint16_t answer_flags(uint16_t query_flags, bool dnssec_ok,
                                uint16_t data_flags) noexcept {
  uint16_t f = flag::QR | flag::RA | (query_flags & (flag::RD | flag::CD | kOpcodeMask));
  if ((data_flags & flag::AD) && (dnssec_ok || (query_flags & flag::AD))) f |= flag::AD;
  return static_cast<uint16_t>(f | (data_flags & 0xF));
}

/// Offset just past QTYPE/QCLASS of the first question of the raw message `msg`, whose name
/// must be uncompressed (as in a query a client or this resolver wrote), at most 255 bytes;
/// 0 when the message is too short, has no question, or the name is compressed or malformed.
/// For looks at raw bytes that must not parse the whole message (the upstream's datagram
/// checks, hourglass-rehearse's classifier); everything else parses with Message.
std::size_t question_end(std::span<const uint8_t> msg) noexcept;

}  // namespace hg::wire
