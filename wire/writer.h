// WireWriter: appends a DNS message into a caller-owned buffer, never past a size limit.
//
// Every write returns false (and writes nothing) when it would exceed the limit, so a caller
// can build an answer record by record and, on the first failure, roll back to the last
// record boundary and set TC=1 (RFC 2181 §9). Names are compressed (RFC 1035 §4.1.4) against
// names already written, by pointing at earlier occurrences with the same bytes — letter case
// included, so that compression never changes a name's case (RFC 4343 §4.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/name.h"

namespace hg::wire {

class WireWriter {
 public:
  /// Writes into buf[0, limit); limit defaults to (and is capped at) buf.size().
  explicit WireWriter(std::span<uint8_t> buf, std::size_t limit = SIZE_MAX) noexcept
      : buf_(buf), limit_(limit < buf.size() ? limit : buf.size()) {}

  std::size_t size() const noexcept { return pos_; }
  std::size_t limit() const noexcept { return limit_; }
  std::size_t room() const noexcept { return limit_ - pos_; }
  /// Changes the limit (capped at the buffer size, never below what is already written), e.g.
  /// to keep room for an OPT record while writing answers.
  void set_limit(std::size_t limit) noexcept {
    limit_ = limit < buf_.size() ? limit : buf_.size();
    if (limit_ < pos_) limit_ = pos_;
  }
  std::span<const uint8_t> written() const noexcept { return {buf_.data(), pos_}; }
  std::span<uint8_t> written_mut() noexcept { return {buf_.data(), pos_}; }

  [[nodiscard]] bool u8(uint8_t v) noexcept;
  [[nodiscard]] bool u16(uint16_t v) noexcept;
  [[nodiscard]] bool u32(uint32_t v) noexcept;
  [[nodiscard]] bool bytes(std::span<const uint8_t> b) noexcept;
  /// Writes a name, compressed against earlier names unless `compress` is false (RFC 3597 §4:
  /// names in RDATA of unknown or newer types must not be compressed).
  [[nodiscard]] bool name(const Name& n, bool compress = true) noexcept;

  /// Overwrites 2 bytes at an offset already written (e.g. RDLENGTH, counts).
  void patch_u16(std::size_t offset, uint16_t v) noexcept;

  /// A record boundary to roll back to.
  std::size_t mark() const noexcept { return pos_; }
  /// Forgets everything written after `mark`, including compression targets there.
  void rollback(std::size_t mark) noexcept;

 private:
  static constexpr std::size_t kMaxTargets = 64;
  std::span<uint8_t> buf_;
  std::size_t limit_;
  std::size_t pos_ = 0;
  // Offsets of name suffixes written literally, usable as compression targets (< 0x4000).
  uint16_t targets_[kMaxTargets];
  std::size_t ntargets_ = 0;
};

}  // namespace hg::wire
