// Per-thread counter slots: statistics that every worker thread bumps on its hot path, split
// into cache-line-sized slots so that no line is written by every thread.
//
// A thread takes a slot number at its first count and adds to that slot only; a reader sums
// the slots. The first kCounterSlots - 1 threads to count get a slot each, of their own; every
// later thread shares the last one. Each line stays in its writer's cache: never a transfer
// between cores.
//
// SlottedCounter goes one step further: a thread that owns its slot is that slot's only
// writer, so it adds with a relaxed load and store — no locked instruction, which would cost
// tens of cycles and wait for every store before it (a miss that writes to cold memory has
// several). Threads on the shared slot use an atomic add, so counts stay exact whatever the
// number of threads. CounterSlots users below add with fetch_add everywhere.
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

namespace hg::base {

/// Slots per counter set: more than the daemon's worker threads in any sane configuration.
inline constexpr std::size_t kCounterSlots = 16;

/// The slot every thread after the first kCounterSlots - 1 shares.
inline constexpr std::size_t kSharedCounterSlot = kCounterSlots - 1;

struct CounterClaim {
  std::size_t slot;
  bool sole;  ///< this thread is the slot's only writer
};

/// This thread's slot, taken at its first call: its own while there are free ones, else the
/// shared one.
inline CounterClaim counter_claim() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const CounterClaim claim = [] {
    const std::size_t n = next.fetch_add(1, std::memory_order_relaxed);
    return n < kSharedCounterSlot ? CounterClaim{n, true} : CounterClaim{kSharedCounterSlot, false};
  }();
  return claim;
}

/// This thread's slot number in [0, kCounterSlots).
inline std::size_t counter_slot() noexcept {
  return counter_claim().slot;
}

/// Adds `n` to a counter that only the calling thread ever writes (readers may be anywhere):
/// a relaxed load and store, without the locked instruction of fetch_add.
inline void add_as_sole_writer(std::atomic<uint64_t>& counter, uint64_t n) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
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
/// A counter of a slot: a pointer to one of Slot's atomic members.
template <class Slot>
using SlotCounter = std::atomic<uint64_t> Slot::*;

template <class Slot>
uint64_t sum_slots(const CounterSlots<Slot>& slots, SlotCounter<Slot> counter) noexcept {
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
    const CounterClaim c = counter_claim();
    std::atomic<uint64_t>& v = slots_[c.slot].value;
    if (c.sole) {
      add_as_sole_writer(v, n);
    } else {
      v.fetch_add(n, std::memory_order_relaxed);
    }
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

}  // namespace hg::base
