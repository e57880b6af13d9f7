// SlottedSharedMutex: writers exclude readers and each other (a pair of plain counters that a
// writer changes together is never seen torn, and never lost), readers share, a writer waits
// for a reader inside and a reader for a writer inside. More threads than slots, so some
// readers share a slot. Run under TSan in CI, which also checks the ordering.
#include "base/slotted_shared_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace hg::base {
namespace {

TEST(SlottedSharedMutex, WritersExcludeReadersAndEachOther) {
  SlottedSharedMutex mu;
  uint64_t a = 0;  // plain: only ever touched under the lock
  uint64_t b = 0;
  std::atomic<uint64_t> torn{0};
  std::atomic<uint64_t> reads{0};
  constexpr int kWriters = 3;
  constexpr int kReaders = static_cast<int>(kCounterSlots) + 5;
  constexpr uint64_t kWrites = 3000;
  constexpr uint64_t kReadsEach = 3000;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&] {
      for (uint64_t i = 0; i < kWrites; ++i) {
        std::unique_lock lock(mu);
        ++a;
        ++b;
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      for (uint64_t i = 0; i < kReadsEach; ++i) {
        std::shared_lock lock(mu);
        if (a != b) torn.fetch_add(1, std::memory_order_relaxed);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(torn.load(), 0U);
  EXPECT_EQ(reads.load(), uint64_t{kReaders} * kReadsEach);
  EXPECT_EQ(a, uint64_t{kWriters} * kWrites);
  EXPECT_EQ(b, a);
}

TEST(SlottedSharedMutex, ReadersShare) {
  SlottedSharedMutex mu;
  std::shared_lock first(mu);
  std::atomic<bool> second_in{false};
  std::thread other([&] {
    std::shared_lock lock(mu);  // would hang here if readers excluded each other
    second_in = true;
  });
  other.join();
  EXPECT_TRUE(second_in.load());
}

// `enter` (on a thread of its own) must not get in while the lock is held: it is given
// 100 ms to (wrongly) get in; then `release` lets go and it must get in. Bounded.
template <class Enter, class Release>
void expect_held_off(Enter enter, Release release, const char* what) {
  std::atomic<bool> in{false};
  std::thread waiter([&] {
    enter();
    in = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(in.load()) << what;
  release();
  waiter.join();
  EXPECT_TRUE(in.load());
}

TEST(SlottedSharedMutex, AWriterWaitsForAReaderAndAReaderForAWriter) {
  SlottedSharedMutex mu;
  std::shared_lock reader(mu);
  expect_held_off([&] { std::unique_lock lock(mu); }, [&] { reader.unlock(); },
                  "a writer got in while a reader held the lock");
  std::unique_lock writer(mu);
  expect_held_off([&] { std::shared_lock lock(mu); }, [&] { writer.unlock(); },
                  "a reader got in while a writer held the lock");
}

}  // namespace
}  // namespace hg::base
