#include "resolver/net/stream_framer.h"

#include <algorithm>
#include <cstring>

#include "base/bytes.h"

namespace hg::resolver {

namespace {
constexpr std::size_t kPrefix = 2;
constexpr std::size_t kMaxLength = 65535;
}  // namespace

StreamFramer::StreamFramer(Limits limits) noexcept : limits_(limits) {
  limits_.max_length = std::min(limits_.max_length, kMaxLength);
}

std::size_t StreamFramer::room() const noexcept {
  if (broken_) return 0;
  const std::size_t cap = kPrefix + limits_.max_length;
  return cap > buffered() ? cap - buffered() : 0;
}

std::span<uint8_t> StreamFramer::write_area(std::size_t want) {
  // What was handed out is gone: the bytes held move to the front, so the buffer never
  // grows past the cap. Usually nothing is held and nothing moves.
  if (start_ > 0) {
    if (start_ < end_) std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
  }
  const std::size_t n = std::min(want, room());
  if (buf_.size() < end_ + n) buf_.resize(end_ + n);
  return {buf_.data() + end_, n};
}

void StreamFramer::commit(std::size_t n) noexcept {
  end_ = std::min(end_ + n, buf_.size());
}

std::size_t StreamFramer::feed(std::span<const uint8_t> bytes) {
  const std::span<uint8_t> area = write_area(bytes.size());
  std::copy_n(bytes.begin(), area.size(), area.begin());
  commit(area.size());
  return area.size();
}

std::optional<std::span<uint8_t>> StreamFramer::next() noexcept {
  if (broken_ || buffered() < kPrefix) return std::nullopt;
  const std::size_t len = base::load_u16(buf_.data() + start_);
  if (len < limits_.min_length || len > limits_.max_length) {
    broken_ = true;
    return std::nullopt;
  }
  if (buffered() - kPrefix < len) return std::nullopt;
  const std::span<uint8_t> m(buf_.data() + start_ + kPrefix, len);
  start_ += kPrefix + len;
  if (start_ == end_) start_ = end_ = 0;  // all handed out: the next read starts at the front
  return m;
}

void StreamFramer::reset() noexcept {
  start_ = end_ = 0;
  broken_ = false;
}

bool StreamFramer::append_framed(std::vector<uint8_t>& out, std::span<const uint8_t> message) {
  if (message.size() > kMaxLength) return false;
  base::append_u16(out, static_cast<uint16_t>(message.size()));
  out.insert(out.end(), message.begin(), message.end());
  return true;
}

}  // namespace hg::resolver
