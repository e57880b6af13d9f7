// Per-thread counter slots: exact sums from many threads (more than there are slots, so some
// share one), SlottedCounter's atomic-like interface, and one slot per thread up to the limit.
#include "cache/counter_slots.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace hg::cache {
namespace {

TEST(CounterSlots, SumsAreExactWithMoreThreadsThanSlots) {
  SlottedCounter c;
  constexpr int kThreads = static_cast<int>(kCounterSlots) * 2 + 3;
  constexpr uint64_t kAdds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (uint64_t i = 0; i < kAdds; ++i)
        c.fetch_add(1, std::memory_order_relaxed);
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(c.load(), uint64_t{kThreads} * kAdds);
}

TEST(CounterSlots, AssignmentSetsTheTotal) {
  SlottedCounter c;
  c.fetch_add(5);
  std::thread([&] { c.fetch_add(7); }).join();
  EXPECT_EQ(c.load(), 12u);
  c = 3;
  EXPECT_EQ(c.load(), 3u);
  c.fetch_add(1);
  EXPECT_EQ(c.load(), 4u);
}

// Threads take slots round robin: any kCounterSlots threads alive at once that take their
// first slot one after another get kCounterSlots different slots.
TEST(CounterSlots, ConsecutiveThreadsGetDifferentSlots) {
  std::set<std::size_t> seen;
  std::mutex mu;
  for (std::size_t t = 0; t < kCounterSlots; ++t) {
    std::thread([&] {
      const std::size_t s = counter_slot();
      EXPECT_LT(s, kCounterSlots);
      EXPECT_EQ(counter_slot(), s);  // stable within a thread
      std::lock_guard lock(mu);
      seen.insert(s);
    }).join();
  }
  EXPECT_EQ(seen.size(), kCounterSlots);
}

TEST(CounterSlots, SlotsDoNotShareCacheLines) {
  struct alignas(64) Slot {
    std::atomic<uint64_t> a{0};
  };
  CounterSlots<Slot> slots;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&slots[1]) - reinterpret_cast<uintptr_t>(&slots[0]), 64u);
  this_thread_slot(slots).a.fetch_add(2);
  EXPECT_EQ(sum_slots(slots, &Slot::a), 2u);
}

}  // namespace
}  // namespace hg::cache
