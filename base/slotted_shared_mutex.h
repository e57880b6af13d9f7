// SlottedSharedMutex: a reader-writer lock whose readers write only their own cache line.
//
// std::shared_mutex (a pthread rwlock) keeps one reader count: every lock_shared and
// unlock_shared is an atomic read-modify-write of that word, so threads that read the same
// shard at once pass its line back and forth between their cores on every lookup, although
// none of them changes anything the others read. Here each reader counts itself in its
// thread's slot (base/counter_slots.h: one 64-byte line per thread, up to kCounterSlots
// threads before two share one), and a writer, which is rare on a cache (an insert, an
// eviction sweep), pays for it instead:
//
//   reader: slot += 1; if no writer is flagged, read. Otherwise slot -= 1, wait until the
//           writer is done (by taking its mutex once) and try again.
//   writer: take the writer mutex, raise the flag, wait until every slot is 0, write, lower
//           the flag, release the mutex.
//
// The reader's increment and the writer's flag are sequentially consistent, so at least one
// side sees the other: either the reader sees the flag and backs off, or the writer sees the
// reader's count and waits for it to drop. A reader that is already inside holds the writer
// off only for the length of one lookup; readers never wait for each other.
//
// Meets the standard's SharedMutex requirements that std::shared_lock and std::unique_lock
// use (lock, unlock, lock_shared, unlock_shared). Not recursive, on either side (as with
// std::shared_mutex): a thread that holds it shared and asks again can deadlock with a writer.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

#include "base/counter_slots.h"

namespace hg::base {

class SlottedSharedMutex {
 public:
  SlottedSharedMutex() = default;
  SlottedSharedMutex(const SlottedSharedMutex&) = delete;
  SlottedSharedMutex& operator=(const SlottedSharedMutex&) = delete;

  void lock_shared() noexcept {
    std::atomic<uint64_t>& mine = readers_[counter_slot()].count;
    for (;;) {
      mine.fetch_add(1, std::memory_order_seq_cst);
      if (!writer_.load(std::memory_order_seq_cst)) [[likely]]
        return;
      mine.fetch_sub(1, std::memory_order_release);
      // A writer is in or on its way in: wait for it on its mutex, without spinning.
      std::lock_guard wait(write_mu_);
    }
  }
  void unlock_shared() noexcept {
    readers_[counter_slot()].count.fetch_sub(1, std::memory_order_release);
  }

  void lock() {
    write_mu_.lock();
    writer_.store(true, std::memory_order_seq_cst);
    for (const Slot& s : readers_) {
      // Each reader still inside finishes one lookup; yield if that takes long (the reader's
      // thread may have been preempted on a busy machine).
      for (unsigned spins = 0; s.count.load(std::memory_order_acquire) != 0; ++spins) {
        if (spins >= 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept {
    writer_.store(false, std::memory_order_release);
    write_mu_.unlock();
  }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> count{0};
  };
  CounterSlots<Slot> readers_{};
  alignas(64) std::atomic<bool> writer_{false};
  std::mutex write_mu_;
};

}  // namespace hg::base
