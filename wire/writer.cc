#include "wire/writer.h"

#include <cstring>

#include "base/bytes.h"
#include "wire/reader.h"

namespace hg::wire {

bool WireWriter::u8(uint8_t v) noexcept {
  if (room() < 1) return false;
  buf_[pos_++] = v;
  return true;
}

bool WireWriter::u16(uint16_t v) noexcept {
  if (room() < 2) return false;
  base::store_u16(&buf_[pos_], v);
  pos_ += 2;
  return true;
}

bool WireWriter::u32(uint32_t v) noexcept {
  if (room() < 4) return false;
  base::store_u32(&buf_[pos_], v);
  pos_ += 4;
  return true;
}

bool WireWriter::bytes(std::span<const uint8_t> b) noexcept {
  if (room() < b.size()) return false;
  if (!b.empty()) std::memcpy(&buf_[pos_], b.data(), b.size());
  pos_ += b.size();
  return true;
}

bool WireWriter::name(const Name& n, bool compress) noexcept {
  const auto w = n.wire();
  // Find the longest suffix (earliest label start) already present in the output.
  std::size_t literal = w.size();  // bytes to write literally
  uint16_t pointer = 0;
  if (compress) {
    for (std::size_t i = 0; w[i] != 0 && literal == w.size(); i += w[i] + 1u) {
      const auto suffix = w.subspan(i);
      for (std::size_t t = 0; t < ntargets_; ++t) {
        // Byte-exact, case included: pointing "WWW.Example" at an earlier "www.example"
        // would change the letter case the reader sees, and RFC 4343 §4.1 asks us to
        // preserve it (a client's 0x20-randomised question must come back as sent).
        if (name_equals_at_unchecked(written(), targets_[t], suffix, /*match_case=*/true)) {
          literal = i;
          pointer = targets_[t];
          break;
        }
      }
    }
  }
  const bool compressed = literal != w.size();
  const std::size_t need = literal + (compressed ? 2 : 0);
  if (room() < need) return false;
  const std::size_t start = pos_;
  std::memcpy(&buf_[pos_], w.data(), literal);
  pos_ += literal;
  if (compressed) {
    base::store_u16(&buf_[pos_], static_cast<uint16_t>(0xC000 | pointer));
    pos_ += 2;
  }
  // Each label written literally starts a suffix that later names may point at.
  const std::size_t labels_end = compressed ? literal : literal - 1;
  for (std::size_t i = 0; i < labels_end && ntargets_ < kMaxTargets; i += w[i] + 1u) {
    if (start + i >= 0x4000) break;  // pointers have 14 bits
    // read_name rejects pointers into the 12-octet header (PointerIntoHeader), so a name
    // written there (a writer not starting with a header) is never a target.
    if (start + i < 12) continue;
    targets_[ntargets_++] = static_cast<uint16_t>(start + i);
  }
  return true;
}

void WireWriter::patch_u16(std::size_t offset, uint16_t v) noexcept {
  if (offset + 2 <= pos_) base::store_u16(&buf_[offset], v);
}

void WireWriter::rollback(std::size_t mark) noexcept {
  if (mark >= pos_) return;
  pos_ = mark;
  while (ntargets_ > 0 && targets_[ntargets_ - 1] >= mark)
    --ntargets_;
}

}  // namespace hg::wire
