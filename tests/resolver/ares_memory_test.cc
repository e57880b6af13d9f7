#include "resolver/upstream/ares_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace hg::resolver {
namespace {

namespace am = ares_memory;

void fill(void* p, std::size_t n, uint8_t seed) {
  auto* b = static_cast<uint8_t*>(p);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<uint8_t>(seed + i);
}

bool holds(const void* p, std::size_t n, uint8_t seed) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] != static_cast<uint8_t>(seed + i)) return false;
  return true;
}

TEST(AresMemory, AFreedBlockIsHandedOutAgainForTheSameSizeClass) {
  void* a = am::allocate(100);
  ASSERT_NE(a, nullptr);
  fill(a, 100, 1);
  const std::size_t before = am::cached_blocks();
  am::release(a);
  if (!am::pooling()) GTEST_SKIP() << "pool off under a sanitizer: malloc does the work";
  EXPECT_EQ(am::cached_blocks(), before + 1);
  void* b = am::allocate(120);  // 100 and 120 share the 128-byte class
  EXPECT_EQ(b, a);
  EXPECT_EQ(am::cached_blocks(), before);
  fill(b, 120, 2);
  EXPECT_TRUE(holds(b, 120, 2));
  am::release(b);
}

TEST(AresMemory, BlocksOfEverySizeKeepWhatIsWrittenAndAreAligned) {
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t n : {0u, 1u, 31u, 32u, 33u, 64u, 200u, 256u, 511u, 512u, 513u, 4096u, 70000u}) {
    void* p = am::allocate(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u) << n;
    fill(p, n, static_cast<uint8_t>(n));
    blocks.emplace_back(p, n);
  }
  for (auto [p, n] : blocks)
    EXPECT_TRUE(holds(p, n, static_cast<uint8_t>(n))) << n;
  for (auto [p, n] : blocks)
    am::release(p);
  am::release(nullptr);  // as free(nullptr)
}

TEST(AresMemory, ReallocateKeepsTheContentsAcrossClassesAndBeyondThem) {
  void* p = am::reallocate(nullptr, 20);  // as malloc
  ASSERT_NE(p, nullptr);
  fill(p, 20, 7);
  p = am::reallocate(p, 30);  // same class: stays
  EXPECT_TRUE(holds(p, 20, 7));
  fill(p, 30, 7);
  p = am::reallocate(p, 300);  // 32 -> 512 class
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(holds(p, 30, 7));
  fill(p, 300, 9);
  p = am::reallocate(p, 5000);  // beyond the classes
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(holds(p, 300, 9));
  fill(p, 5000, 11);
  p = am::reallocate(p, 6000);  // unpooled to a larger unpooled block
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(holds(p, 5000, 11));
  p = am::reallocate(p, 10);  // shrinking keeps the first bytes
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(holds(p, 10, 11));
  am::release(p);
}

TEST(AresMemory, AThreadKeepsAtMostTheCapPerClass) {
  if (!am::pooling()) GTEST_SKIP() << "pool off under a sanitizer";
  std::size_t kept = 0;
  std::thread t([&] {
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < am::kMaxFree + 100; ++i)
      blocks.push_back(am::allocate(40));
    for (void* p : blocks)
      am::release(p);
    kept = am::cached_blocks();
  });
  t.join();  // the thread's lists are freed as it ends
  EXPECT_EQ(kept, am::kMaxFree);
}

TEST(AresMemory, ABlockFreedOnAnotherThreadIsHarmless) {
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.push_back(am::allocate(48));
    fill(blocks.back(), 48, static_cast<uint8_t>(i));
  }
  std::thread t([&] {
    for (void* p : blocks)
      am::release(p);
    // Reused here, on this thread: intact blocks, nothing shared.
    void* again = am::allocate(48);
    fill(again, 48, 3);
    EXPECT_TRUE(holds(again, 48, 3));
    am::release(again);
  });
  t.join();
}

}  // namespace
}  // namespace hg::resolver
