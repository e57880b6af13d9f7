// FlatIndex: a cache shard's map from a 64-bit key hash to a 32-bit S3-FIFO handle, kept in
// one flat array of 8-byte slots (open addressing, linear probing).
//
// A slot holds the handle and a 32-bit fingerprint of the hash (its low half), not the hash
// itself: the owner already keeps every object's full hash (S3Fifo::hash_of), and the hit
// path reads that node anyway to bump its frequency, so a lookup confirms a fingerprint match
// there — `hash_of` is passed in by the caller. A slot is 8 bytes instead of 16, and two
// different hashes that share a fingerprint are still told apart.
//
// The home slot is derived from the fingerprint alone (Fibonacci hashing of its 32 bits), so
// growing and deleting never need the full hash: only lookups and inserts call `hash_of`.
//
// Deletion shifts the following slots of the cluster back into the hole (no tombstones), so a
// table that churns forever — a cache evicting and inserting all day — never degrades and
// never needs a rebuild. The table doubles when an insert would take it past 3/4 full and
// never shrinks (a cache that was full once will be again). Why 3/4: an 8-byte slot at a load
// between 3/8 (just grown) and 3/4 costs 10.7 to 21.3 bytes per entry, against 40-odd for a
// node-based map; an unsuccessful search — a miss, the common case in a random-subdomain
// flood — then scans on average at most (1 + 1/(1-0.75)^2)/2 = 8.5 slots, 68 contiguous bytes,
// one or two cache lines; at 7/8 that would be 32.5 slots.
//
// Not thread-safe: the owner's lock guards it (readers may share the lock: find() and
// for_each() write nothing).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hg::cache {

class FlatIndex {
 public:
  using Value = uint32_t;
  static constexpr Value kNone = UINT32_MAX;  ///< marks an empty slot; cannot be stored
  static constexpr std::size_t kMinSlots = 16;

  /// The value stored under `hash`, or kNone. `hash_of(value)` must return the full hash the
  /// value was stored under.
  template <class HashOf>
  Value find(uint64_t hash, const HashOf& hash_of) const noexcept {
    const std::size_t i = position(hash, hash_of);
    return i == kNoPos ? kNone : slots_[i].value;
  }

  /// Stores hash → value, replacing the value of a hash already present. Returns the value it
  /// replaced, or kNone when the hash is new. Precondition: value != kNone.
  template <class HashOf>
  Value insert_or_assign(uint64_t hash, Value value, const HashOf& hash_of) {
    assert(value != kNone);
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    const uint32_t fp = fingerprint(hash);
    for (std::size_t i = home(fp);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kNone) {
        s = Slot{fp, value};
        ++size_;
        return kNone;
      }
      if (s.fp == fp && hash_of(s.value) == hash) {
        const Value old = s.value;
        s.value = value;
        return old;
      }
    }
  }

  /// Asks the CPU to start loading the slot where a search for `hash` begins (a hint: no
  /// effect on the table, and harmless on an empty one).
  void prefetch(uint64_t hash) const noexcept {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(fingerprint(hash))]);
  }

  /// Removes `hash`; returns the value it had, or kNone when it was not present.
  template <class HashOf>
  Value erase(uint64_t hash, const HashOf& hash_of) noexcept {
    const std::size_t i = position(hash, hash_of);
    if (i == kNoPos) return kNone;
    const Value v = slots_[i].value;
    erase_at(i);
    return v;
  }

  /// Calls f(value) for every stored value, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.value != kNone) f(s.value);
  }

  /// Removes every value for which pred(value) is true, calling pred exactly once per value
  /// (so pred may do the owner's share of the removal itself). Returns how many went.
  template <class Pred>
  std::size_t erase_if(Pred&& pred) {
    if (size_ == 0) return 0;
    // Start just after an empty slot: no cluster then straddles the starting point, and a
    // backward shift only ever moves a value into the slot being visited or one not yet
    // visited — every value is seen exactly once.
    std::size_t start = 0;
    while (slots_[start].value != kNone)
      ++start;
    std::size_t removed = 0;
    for (std::size_t n = 1; n <= slots_.size(); ++n) {
      const std::size_t i = (start + n) & mask_;
      while (slots_[i].value != kNone && pred(slots_[i].value)) {
        erase_at(i);  // pulls the next value of the cluster (if any) into i: look again
        ++removed;
      }
    }
    return removed;
  }

  /// Empties the table, keeping its slots.
  void clear() noexcept {
    for (Slot& s : slots_)
      s = Slot{};
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t slot_count() const noexcept { return slots_.size(); }
  /// Heap bytes of the slot array (the table's whole cost besides the object itself).
  std::size_t memory_bytes() const noexcept { return slots_.capacity() * sizeof(Slot); }
  static constexpr std::size_t kSlotBytes = 8;

  /// Home slot of a hash in a table of `slots` slots (a power of two ≥ kMinSlots): for tests
  /// that force collisions.
  static std::size_t home_of(uint64_t hash, std::size_t slots) noexcept {
    return home_in(fingerprint(hash), shift_for(slots));
  }

 private:
  struct Slot {
    uint32_t fp = 0;
    Value value = kNone;
  };
  static_assert(sizeof(Slot) == kSlotBytes);
  static constexpr std::size_t kNoPos = SIZE_MAX;

  static uint32_t fingerprint(uint64_t hash) noexcept { return static_cast<uint32_t>(hash); }
  static unsigned shift_for(std::size_t slots) noexcept {
    unsigned bits = 0;
    while ((std::size_t{1} << bits) < slots)
      ++bits;
    return 32 - bits;
  }
  // Fibonacci hashing: the top bits of fp * 2^32/phi, so fingerprints that differ only in
  // their low bits still land far apart.
  static std::size_t home_in(uint32_t fp, unsigned shift) noexcept {
    return static_cast<std::size_t>(static_cast<uint32_t>(fp * 0x9E3779B9U) >> shift);
  }
  std::size_t home(uint32_t fp) const noexcept { return home_in(fp, shift_); }

  template <class HashOf>
  std::size_t position(uint64_t hash, const HashOf& hash_of) const noexcept {
    if (size_ == 0) return kNoPos;
    const uint32_t fp = fingerprint(hash);
    for (std::size_t i = home(fp);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kNone) return kNoPos;
      if (s.fp == fp && hash_of(s.value) == hash) return i;
    }
  }

  // Backward-shift deletion: walk the cluster after the hole and move back every value whose
  // home is not in (hole, j] cyclically — it may sit in the hole without breaking its probe
  // chain — until an empty slot ends the cluster.
  void erase_at(std::size_t hole) noexcept {
    for (std::size_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
      const Slot s = slots_[j];
      if (s.value == kNone) break;
      const std::size_t h = home(s.fp);
      if (((j - h) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = s;
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }

  void grow() {
    const std::size_t n = slots_.empty() ? kMinSlots : slots_.size() * 2;
    assert(n <= (std::size_t{1} << 32));
    std::vector<Slot> old(n);
    old.swap(slots_);
    mask_ = n - 1;
    shift_ = shift_for(n);
    for (const Slot& s : old) {
      if (s.value == kNone) continue;
      std::size_t i = home(s.fp);
      while (slots_[i].value != kNone)
        i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  unsigned shift_ = 32;
};

}  // namespace hg::cache
