// WireReader: the only code that indexes an untrusted packet (docs/architecture.md §7).
//
// A cursor over a std::span<const uint8_t>. Every read checks the bytes remaining first and
// returns a Result; nothing here throws or reads out of bounds. Multi-byte fields are
// big-endian (network order) and are assembled byte by byte, never by casting to a struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/result.h"

namespace hg::wire {

class WireReader {
 public:
  explicit WireReader(std::span<const uint8_t> data, std::size_t pos = 0) noexcept
      : data_(data), pos_(pos <= data.size() ? pos : data.size()) {}

  std::span<const uint8_t> data() const noexcept { return data_; }
  std::size_t offset() const noexcept { return pos_; }
  std::size_t remaining() const noexcept { return data_.size() - pos_; }
  bool at_end() const noexcept { return pos_ == data_.size(); }

  Result<uint8_t> u8() noexcept {
    if (remaining() < 1) return Error{ParseError::Truncated, pos_};
    return data_[pos_++];
  }
  Result<uint16_t> u16() noexcept {
    if (remaining() < 2) return Error{ParseError::Truncated, pos_};
    auto v = static_cast<uint16_t>((data_[pos_] << 8) | data_[pos_ + 1]);
    pos_ += 2;
    return v;
  }
  Result<uint32_t> u32() noexcept {
    if (remaining() < 4) return Error{ParseError::Truncated, pos_};
    uint32_t v = (uint32_t{data_[pos_]} << 24) | (uint32_t{data_[pos_ + 1]} << 16) |
                 (uint32_t{data_[pos_ + 2]} << 8) | uint32_t{data_[pos_ + 3]};
    pos_ += 4;
    return v;
  }
  /// The next n bytes as a view into the packet; advances past them.
  Result<std::span<const uint8_t>> bytes(std::size_t n) noexcept {
    if (remaining() < n) return Error{ParseError::Truncated, pos_};
    auto s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  Status skip(std::size_t n) noexcept {
    if (remaining() < n) return Error{ParseError::Truncated, pos_};
    pos_ += n;
    return {};
  }
  /// Moves the cursor to an absolute offset (at most data().size()).
  Status seek(std::size_t pos) noexcept {
    if (pos > data_.size()) return Error{ParseError::Truncated, pos};
    pos_ = pos;
    return {};
  }
  /// A reader limited to the next n bytes (offsets stay absolute), e.g. one RDATA.
  /// Names inside may still point anywhere earlier in the whole packet.
  Result<WireReader> sub(std::size_t n) const noexcept {
    if (remaining() < n) return Error{ParseError::Truncated, pos_};
    return WireReader(data_.first(pos_ + n), pos_);
  }

 private:
  std::span<const uint8_t> data_;
  std::size_t pos_;
};

/// Big-endian helpers over bytes already known to be in bounds (the caller checked).
inline uint16_t load_u16_unchecked(const uint8_t* p) noexcept {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t load_u32_unchecked(const uint8_t* p) noexcept {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline void store_u16_unchecked(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_u32_unchecked(uint8_t* p, uint32_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

}  // namespace hg::wire
