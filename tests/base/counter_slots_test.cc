// Per-thread counter slots: exact sums from many threads (more than there are slots, so some
// share one, sole writers and shared ones adding at once), SlottedCounter's atomic-like
// interface, and one slot per thread up to the limit.
#include "base/counter_slots.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace hg::base {
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

// The first kCounterSlots - 1 threads to count own a slot each; every later thread shares
// the last one (and adds atomically there). Other tests in this binary may have taken slots
// already, so the test checks the rule, not which slots it sees.
TEST(CounterSlots, EarlyThreadsOwnASlotEachAndLaterOnesShareTheLast) {
  std::set<std::size_t> owned;
  std::size_t shared = 0;
  std::mutex mu;
  for (std::size_t t = 0; t < 2 * kCounterSlots; ++t) {
    std::thread([&] {
      const CounterClaim c = counter_claim();
      EXPECT_EQ(counter_slot(), c.slot);  // stable within a thread
      std::lock_guard lock(mu);
      if (c.sole) {
        EXPECT_LT(c.slot, kSharedCounterSlot);
        EXPECT_TRUE(owned.insert(c.slot).second) << "slot " << c.slot << " owned twice";
      } else {
        EXPECT_EQ(c.slot, kSharedCounterSlot);
        ++shared;
      }
    }).join();
  }
  EXPECT_GE(shared, kCounterSlots + 1);  // at most kCounterSlots - 1 slots to own, ever
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
}  // namespace hg::base
