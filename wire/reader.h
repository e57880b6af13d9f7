// WireReader: the bounds-checked cursor that reads untrusted packets (docs/architecture.md
// §7), and the other untrusted bytes the daemon reads back: the cache file (cache/persist.cc)
// and the fleet's Redis values (resolver/fleet/redis_value.cc).
//
// A cursor over a std::span<const uint8_t>. Every read checks the bytes remaining first and
// returns a Result; nothing here throws or reads out of bounds. Multi-byte fields are
// big-endian (network order) and are assembled byte by byte, never by casting to a struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
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
    const uint16_t v = base::load_u16(&data_[pos_]);
    pos_ += 2;
    return v;
  }
  Result<uint32_t> u32() noexcept {
    if (remaining() < 4) return Error{ParseError::Truncated, pos_};
    const uint32_t v = base::load_u32(&data_[pos_]);
    pos_ += 4;
    return v;
  }
  Result<uint64_t> u64() noexcept {
    if (remaining() < 8) return Error{ParseError::Truncated, pos_};
    const uint64_t v = base::load_u64(&data_[pos_]);
    pos_ += 8;
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

}  // namespace hg::wire
