// Per-thread counter slots: statistics that every worker thread bumps on its hot path, split
// into cache-line-sized slots so that no line is written by every thread.
//
// A thread takes a slot number at its first count (round robin over kCounterSlots) and
// adds to that slot only; a reader sums the slots. The adds are relaxed atomic RMWs, so two
// threads that happen to share a slot (more than kCounterSlots threads) still count exactly —
// they only share a line again. With at most kCounterSlots workers each writes its own line,
// which stays in that core's cache: the add costs a locked instruction on an uncontended
// line (tens of cycles at most), never a transfer between cores.
//
//   struct alignas(64) MySlot { std::atomic<uint64_t> a{0}, b{0}; };
//   CounterSlots<MySlot> slots;
//   this_thread_slot(slots).a.fetch_add(1, std::memory_order_relaxed);
//   uint64_t total = sum_slots(slots, &MySlot::a);
//
// Used by the cache's hit/miss counters (cache.cc), the shadow zones' counters (shadow.cc)
// and, through SlottedCounter, the daemon's query counters (resolver::Stats).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hg::cache {

/// Slots per counter set: more than the daemon's worker threads in any sane configuration.
inline constexpr std::size_t kCounterSlots = 16;

/// This thread's slot number in [0, kCounterSlots): taken round robin at the first call.
inline std::size_t counter_slot() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t slot =
      next.fetch_add(1, std::memory_order_relaxed) % kCounterSlots;
  return slot;
}

/// kCounterSlots copies of a Slot struct of relaxed atomics. Slot should be alignas(64).
template <class Slot>
using CounterSlots = std::array<Slot, kCounterSlots>;

template <class Slot>
Slot& this_thread_slot(CounterSlots<Slot>& slots) noexcept {
  return slots[counter_slot()];
}

/// One counter summed over the slots (each read relaxed: a reader racing with adds sees a
/// value between the totals before and after them).
template <class Slot>
uint64_t sum_slots(const CounterSlots<Slot>& slots, std::atomic<uint64_t> Slot::*counter) noexcept {
  uint64_t total = 0;
  for (const Slot& s : slots)
    total += (s.*counter).load(std::memory_order_relaxed);
  return total;
}

/// One counter in per-thread slots, with the part of std::atomic<uint64_t>'s interface that
/// statistics use (fetch_add, load, assignment), so that a struct of such atomics can switch
/// to it without touching its call sites. Adds and reads are always relaxed (the order
/// argument is accepted and ignored); fetch_add returns nothing. 1 KiB per counter.
class SlottedCounter {
 public:
  void fetch_add(uint64_t n, std::memory_order = std::memory_order_relaxed) noexcept {
    slots_[counter_slot()].value.fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t load(std::memory_order = std::memory_order_relaxed) const noexcept {
    return sum_slots(slots_, &Slot::value);
  }
  /// Sets the total (for tests and resets; not meant to race with adds).
  SlottedCounter& operator=(uint64_t v) noexcept {
    for (Slot& s : slots_)
      s.value.store(0, std::memory_order_relaxed);
    slots_[0].value.store(v, std::memory_order_relaxed);
    return *this;
  }
  SlottedCounter() = default;
  SlottedCounter(const SlottedCounter&) = delete;
  SlottedCounter& operator=(const SlottedCounter&) = delete;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> value{0};
  };
  CounterSlots<Slot> slots_;
};

}  // namespace hg::cache
