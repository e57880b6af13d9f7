#include "resolver/upstream/upstream_wire.h"

#include <bit>
#include <cstring>

#include "base/bytes.h"
#include "base/hash.h"
#include "wire/ascii_words.h"
#include "wire/name.h"

namespace hg::resolver::upstream_wire {

namespace ascii_words = wire::ascii_words;

namespace {

bool is_letter(uint8_t c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

uint8_t lower(uint8_t c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c;
}

// Byte i of a name with its letter case from `bits` (bit i set: upper case); a byte that is
// not a letter is returned as it is. A letter's lower-case form (bit 5 set) is 'a'..'z', and
// bit 5 is then its case bit.
uint8_t with_case(uint8_t c, const CaseBits& bits, std::size_t i) noexcept {
  const auto low = static_cast<uint8_t>(c | 0x20);
  if (static_cast<uint8_t>(low - 'a') >= 26) return c;
  return static_cast<uint8_t>(low ^ (((bits[i / 64] >> (i % 64)) & 1) << 5));
}

// Skips a possibly compressed name at `at`; returns the offset after it, or 0.
std::size_t skip_name(std::span<const uint8_t> msg, std::size_t at) noexcept {
  for (int labels = 0; labels < 128; ++labels) {
    if (at >= msg.size()) return 0;
    const uint8_t len = msg[at];
    if (len == 0) return at + 1;
    if ((len & 0xc0) == 0xc0) return at + 2 <= msg.size() ? at + 2 : 0;
    if ((len & 0xc0) != 0) return 0;  // 0x40 / 0x80: obsolete label types
    at += 1 + len;
  }
  return 0;
}

// ---- Eight name bytes at a time (the common case: a well-formed name) ----
//
// A name is "plain" when its labels (lengths 1..63) end with the root byte exactly at
// `name_end - 1`, within the first 256 bytes. Then the bytes apply_case() changes are
// exactly the letters in [0, name_end): length bytes (<= 63) and the root are not letters.
// So a word of 8 name bytes can be cased without walking the labels.

// spread[b]: 0x20 in byte j for each bit j of b (bit set = upper case).
constexpr std::array<uint64_t, 256> make_spread() {
  std::array<uint64_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b)
    for (unsigned j = 0; j < 8; ++j)
      if ((b >> j) & 1) t[b] |= uint64_t{0x20} << (8 * j);
  return t;
}
constexpr std::array<uint64_t, 256> kSpread = make_spread();

// The 8 bytes `w` (bytes at + 0 .. at + 7 of the name, `at` a multiple of 8, below 256) with
// their letters in the case `bits` gives them.
uint64_t cased_word(uint64_t w, const CaseBits& bits, std::size_t at) noexcept {
  const uint64_t letters = ascii_words::letters(w);  // 0x20 at each letter
  const uint64_t upper = kSpread[(bits[at / 64] >> (at % 64)) & 0xff];
  return (w | letters) ^ (upper & letters);
}

// True if name[0, name_end) is a plain name (above), name_end <= 256.
bool plain_name(std::span<const uint8_t> name) noexcept {
  if (name.empty() || name.size() > 256) return false;
  std::size_t at = 0;
  while (at < name.size()) {
    const uint8_t len = name[at];
    if (len == 0) return at + 1 == name.size();
    if (len > 63) return false;
    at += 1 + len;
  }
  return false;
}

constexpr bool kLittleEndian = std::endian::native == std::endian::little;

}  // namespace

void apply_case(std::span<uint8_t> name, const CaseBits& bits) noexcept {
  if (kLittleEndian && plain_name(name)) {
    std::size_t i = 0;
    for (; i + 8 <= name.size(); i += 8) {
      ascii_words::store(name.data() + i, cased_word(ascii_words::load(name.data() + i), bits, i));
    }
    for (; i < name.size(); ++i)
      name[i] = with_case(name[i], bits, i);
    return;
  }
  const std::size_t n = name.size() < 256 ? name.size() : 256;
  std::size_t at = 0;
  while (at < n) {
    const uint8_t len = name[at];
    if (len == 0 || len > 63) return;
    const std::size_t end = at + 1 + len < n ? at + 1 + len : n;
    for (std::size_t i = at + 1; i < end; ++i)
      name[i] = with_case(name[i], bits, i);
    at += 1 + len;
  }
}

QuestionMatch match_question(std::span<const uint8_t> reply,
                             std::span<const uint8_t> question) noexcept {
  if (reply.size() < kHeaderSize + question.size()) return QuestionMatch::Other;
  const auto got = reply.subspan(kHeaderSize, question.size());
  if (std::memcmp(got.data(), question.data(), question.size()) == 0) return QuestionMatch::Exact;
  // The name may differ in letter case; the last 4 bytes (QTYPE, QCLASS) may not.
  const std::size_t name_end = question.size() >= 4 ? question.size() - 4 : 0;
  bool exact = true;
  for (std::size_t i = 0; i < question.size(); ++i) {
    if (got[i] == question[i]) continue;
    if (i >= name_end || lower(got[i]) != lower(question[i]) || !is_letter(got[i]))
      return QuestionMatch::Other;
    exact = false;
  }
  return exact ? QuestionMatch::Exact : QuestionMatch::CaseOnly;
}

uint64_t name_hash(std::span<const uint8_t> question) noexcept {
  uint64_t h = base::kFnv1aBasis;
  for (uint8_t b : question)
    h = base::fnv1a_step(h, wire::ascii_lower(b));
  return h;
}

QuestionMatch match_question_cased(std::span<const uint8_t> reply,
                                   std::span<const uint8_t> question,
                                   const CaseBits& bits) noexcept {
  if (reply.size() < kHeaderSize + question.size()) return QuestionMatch::Other;
  const auto got = reply.subspan(kHeaderSize, question.size());
  const std::size_t name_end = question.size() >= 4 ? question.size() - 4 : 0;
  if (kLittleEndian && plain_name(question.first(name_end))) {
    // The reply should echo the cased question byte for byte: compare 8 bytes at a time,
    // and only on a difference take the byte-wise walk below, which tells CaseOnly from Other.
    bool same = true;
    std::size_t i = 0;
    for (; same && i + 8 <= name_end; i += 8)
      same = ascii_words::load(got.data() + i) ==
             cased_word(ascii_words::load(question.data() + i), bits, i);
    for (; same && i < name_end; ++i)
      same = got[i] == with_case(question[i], bits, i);
    if (same && std::memcmp(got.data() + name_end, question.data() + name_end, 4) == 0)
      return QuestionMatch::Exact;
  }
  // The bytes apply_case() may change: label bytes within the name's first 256, label by
  // label until a root or invalid length byte.
  const std::size_t n = name_end < 256 ? name_end : 256;
  std::size_t next = 0;       // the next label's length byte
  std::size_t label_end = 0;  // one past the current label
  bool walking = true;
  bool exact = true;
  for (std::size_t i = 0; i < question.size(); ++i) {
    uint8_t want = question[i];
    if (walking && i < n) {
      if (i == next) {
        if (want == 0 || want > 63) {
          walking = false;
        } else {
          label_end = i + 1 + want;
          next = label_end;
        }
      } else if (i < label_end) {
        want = with_case(want, bits, i);
      }
    }
    const uint8_t g = got[i];
    if (g == want) continue;
    if (i >= name_end || lower(g) != lower(want) || !is_letter(g)) return QuestionMatch::Other;
    exact = false;
  }
  return exact ? QuestionMatch::Exact : QuestionMatch::CaseOnly;
}

// A message that cannot be walked to its end gives {valid = false, present = false}: an OPT
// record seen before the damage is not trusted.
OptInfo find_opt(std::span<const uint8_t> msg) noexcept {
  OptInfo info;
  if (msg.size() < kHeaderSize) return OptInfo{};
  const unsigned qd = base::load_u16(&msg[4]), an = base::load_u16(&msg[6]),
                 ns = base::load_u16(&msg[8]), ar = base::load_u16(&msg[10]);
  std::size_t at = kHeaderSize;
  for (unsigned i = 0; i < qd; ++i) {
    at = skip_name(msg, at);
    if (at == 0 || at + 4 > msg.size()) return OptInfo{};
    at += 4;
  }
  const unsigned records = an + ns + ar;
  for (unsigned i = 0; i < records; ++i) {
    at = skip_name(msg, at);
    if (at == 0 || at + 10 > msg.size()) return OptInfo{};
    const uint16_t type = base::load_u16(&msg[at]);
    const uint32_t ttl = base::load_u32(&msg[at + 4]);
    const std::size_t rdlen = base::load_u16(&msg[at + 8]);
    at += 10;
    if (at + rdlen > msg.size()) return OptInfo{};
    if (type == 41 && i >= an + ns && !info.present) {
      info.present = true;
      info.ext_rcode = static_cast<uint8_t>(ttl >> 24);
      info.version = static_cast<uint8_t>(ttl >> 16);
    }
    at += rdlen;
  }
  info.valid = true;
  return info;
}

}  // namespace hg::resolver::upstream_wire
