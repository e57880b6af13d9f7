// FlatIndex: a map from a 64-bit hash to a 32-bit value in one flat array (open addressing,
// linear probing, at most half full). The replay looks a question up once per trace event;
// std::unordered_map's node per entry costs a second cache miss on each of those lookups,
// which dominated the replay of traces with many distinct names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hg::rehearse {

class FlatIndex {
 public:
  static constexpr uint32_t kEmpty = UINT32_MAX;  ///< a value that cannot be stored

  /// The value stored for `hash`, or nullptr.
  const uint32_t* find(uint64_t hash) const noexcept {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(hash);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kEmpty) return nullptr;
      if (s.hash == hash) return &s.value;
    }
  }

  /// Stores hash → value unless the hash is present; returns the stored value and whether it
  /// was inserted now. `value` must not be kEmpty.
  std::pair<uint32_t*, bool> try_emplace(uint64_t hash, uint32_t value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    for (std::size_t i = home(hash);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kEmpty) {
        s = Slot{hash, value};
        ++size_;
        return {&s.value, true};
      }
      if (s.hash == hash) return {&s.value, false};
    }
  }

  std::size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t value = kEmpty;
  };

  // Fibonacci hashing: the top bits of hash * 2^64/phi, so that hashes that differ only in
  // their high bits still spread.
  std::size_t home(uint64_t hash) const noexcept {
    return static_cast<std::size_t>((hash * 0x9e3779b97f4a7c15ULL) >> shift_);
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const std::size_t n = old.empty() ? 1024 : old.size() * 2;
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 64;
    for (std::size_t m = n; m > 1; m >>= 1)
      --shift_;
    size_ = 0;
    for (const Slot& s : old)
      if (s.value != kEmpty) try_emplace(s.hash, s.value);
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace hg::rehearse
