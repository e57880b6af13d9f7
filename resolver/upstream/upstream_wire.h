// upstream_wire: the few looks at raw upstream datagrams the Upstream takes before c-ares
// sees them (0x20 case check, EDNS rejection, truncation), and the 0x20 case pattern of our
// own queries. Pure functions over bytes: every input is bounds-checked, nothing throws or
// allocates (fuzzed by tests/fuzz/upstream_wire_fuzz.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"

namespace hg::resolver::upstream_wire {

constexpr std::size_t kHeaderSize = 12;
constexpr uint8_t kFormErr = 1, kServFail = 2, kNotImp = 4, kRefused = 5;

/// One bit per byte of a query name (255 bytes at most): 1 = upper case for a letter.
using CaseBits = std::array<uint64_t, 4>;

/// Writes the letter case given by `bits` into the uncompressed name that starts `name`
/// (label lengths are skipped; only ASCII letters change). Stops at the root label or at
/// the end of the span.
void apply_case(std::span<uint8_t> name, const CaseBits& bits) noexcept;

enum class QuestionMatch : uint8_t {
  Exact,     ///< byte for byte what we sent
  CaseOnly,  ///< the same name, type and class, but some letter in another case
  Other,     ///< something else (left to c-ares, which drops it)
};
/// Compares the bytes after the reply's header with `question` (the bytes we sent between
/// the header and the end of the question).
QuestionMatch match_question(std::span<const uint8_t> reply,
                             std::span<const uint8_t> question) noexcept;
/// match_question(reply, q) where q is `question` with apply_case(bits) applied to its name
/// (all but its last 4 bytes), without building q.
QuestionMatch match_question_cased(std::span<const uint8_t> reply,
                                   std::span<const uint8_t> question,
                                   const CaseBits& bits) noexcept;

/// A hash of a question's bytes with ASCII letters folded to lower case (FNV-1a, 64 bits):
/// tells one name from another whatever case it was asked or answered in.
uint64_t name_hash(std::span<const uint8_t> question) noexcept;

struct OptInfo {
  bool valid = false;     ///< every section could be walked
  bool present = false;   ///< an OPT record was found in the additional section
  uint8_t ext_rcode = 0;  ///< upper 8 bits of the extended RCODE (RFC 6891 §6.1.3)
  uint8_t version = 0;
};
/// Walks the message's sections (compressed names allowed) to find its OPT record.
OptInfo find_opt(std::span<const uint8_t> msg) noexcept;

inline uint8_t rcode(std::span<const uint8_t> msg) noexcept {
  return msg.size() >= 4 ? static_cast<uint8_t>(msg[3] & 0x0f) : 0;
}
inline bool truncated(std::span<const uint8_t> msg) noexcept {
  return msg.size() >= 3 && (msg[2] & 0x02) != 0;
}
inline uint16_t id(std::span<const uint8_t> msg) noexcept {
  return msg.size() >= 2 ? base::load_u16(&msg[0]) : 0;
}

}  // namespace hg::resolver::upstream_wire
