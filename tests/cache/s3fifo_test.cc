#include "cache/s3fifo.h"

#include <gtest/gtest.h>

#include <unordered_map>
#include <vector>

namespace hg::cache {
namespace {

// A minimal owner: the index a cache shard keeps beside its policy.
struct Owner {
  explicit Owner(std::size_t capacity) : policy(S3FifoSettings{.capacity_bytes = capacity}) {}
  bool get(uint64_t k) {
    auto it = index.find(k);
    if (it == index.end()) return false;
    policy.touch(it->second);
    return true;
  }
  S3Fifo::Handle put(uint64_t k, std::size_t bytes = 100) {
    const S3Fifo::Handle h = policy.insert(k, bytes, [&](S3Fifo::Handle, uint64_t victim) {
      index.erase(victim);
      evicted.push_back(victim);
    });
    if (h != S3Fifo::kNone) index[k] = h;
    return h;
  }
  S3Fifo policy;
  std::unordered_map<uint64_t, S3Fifo::Handle> index;
  std::vector<uint64_t> evicted;
};

constexpr std::size_t kObj = 100;
std::size_t charged() {
  return kObj + S3Fifo::node_overhead();
}

TEST(S3Fifo, NeverExceedsCapacityCountingNodesAndGhost) {
  Owner o(64 * 1024);
  for (uint64_t k = 0; k < 10'000; ++k) {
    o.put(k, 50 + k % 400);
    ASSERT_LE(o.policy.used_bytes(), o.policy.capacity_bytes());
  }
  EXPECT_GT(o.policy.ghost_bytes(), 0u);
  EXPECT_EQ(o.policy.object_count(), o.index.size());
}

TEST(S3Fifo, OneHitObjectsLeaveFromSmallQueueAndSpareTheHotSet) {
  Owner o(200 * charged());
  for (uint64_t k = 0; k < 50; ++k)
    o.put(k, kObj);  // the hot set
  for (uint64_t k = 0; k < 50; ++k)
    o.get(k);
  // A flood of names seen once, many times the cache size, interleaved with hot hits.
  for (uint64_t k = 1000; k < 20'000; ++k) {
    o.put(k, kObj);
    if (k % 10 == 0) o.get(k % 50);
  }
  for (uint64_t k = 0; k < 50; ++k)
    EXPECT_TRUE(o.index.count(k)) << k;
}

TEST(S3Fifo, HitInSmallQueuePromotesToMainOnEviction) {
  Owner o(20 * charged() + 16 * 8 /* smallest ghost */);
  o.put(1);
  o.get(1);
  for (uint64_t k = 100; k < 140; ++k)
    o.put(k);
  ASSERT_TRUE(o.index.count(1));
  EXPECT_TRUE(o.policy.in_main(o.index[1]));
}

TEST(S3Fifo, GhostHitGoesStraightToMain) {
  Owner o(20 * charged() + 16 * 8);
  o.put(7);
  for (uint64_t k = 100; k < 140 && o.index.count(7); ++k)
    o.put(k);
  ASSERT_FALSE(o.index.count(7));  // evicted from S without a hit: now a ghost
  o.put(7);
  EXPECT_TRUE(o.policy.in_main(o.index[7]));
}

TEST(S3Fifo, MainQueueGivesSecondChanceByFrequency) {
  Owner o(10 * charged() + 16 * 8);
  o.put(1);
  o.get(1);
  o.get(1);
  o.get(1);
  for (uint64_t k = 100; k < 130; ++k)
    o.put(k);
  EXPECT_TRUE(o.index.count(1));
  EXPECT_LE(o.policy.freq_of(o.index[1]), S3Fifo::kMaxFreq);
}

TEST(S3Fifo, TouchSaturatesAtMaxFrequency) {
  Owner o(10 * charged() + 16 * 8);
  const auto h = o.put(1);
  for (int i = 0; i < 10; ++i)
    o.policy.touch(h);
  EXPECT_EQ(o.policy.freq_of(h), S3Fifo::kMaxFreq);
}

TEST(S3Fifo, RemoveFreesItsBytes) {
  Owner o(10 * charged() + 16 * 8);
  const std::size_t empty = o.policy.used_bytes();
  const auto h = o.put(1);
  EXPECT_EQ(o.policy.used_bytes(), empty + charged());
  o.policy.remove(h);
  EXPECT_EQ(o.policy.used_bytes(), empty);
  EXPECT_EQ(o.policy.object_count(), 0u);
}

TEST(S3Fifo, ReinsertKeepsQueueAndFrequency) {
  Owner o(20 * charged() + 16 * 8);
  o.put(1);
  o.get(1);
  for (uint64_t k = 100; k < 140; ++k)
    o.put(k);
  const S3Fifo::Handle h = o.index[1];
  ASSERT_TRUE(o.policy.in_main(h));
  o.policy.touch(h);
  const uint8_t freq = o.policy.freq_of(h);
  const S3Fifo::Handle h2 =
      o.policy.reinsert(h, 2 * kObj, [&](S3Fifo::Handle, uint64_t v) { o.index.erase(v); });
  ASSERT_NE(h2, S3Fifo::kNone);
  EXPECT_TRUE(o.policy.in_main(h2));
  EXPECT_EQ(o.policy.freq_of(h2), freq);
  EXPECT_EQ(o.policy.hash_of(h2), 1u);
}

TEST(S3Fifo, RejectsObjectLargerThanCapacityWithoutEvicting) {
  Owner o(10 * charged() + 16 * 8);
  o.put(1);
  EXPECT_EQ(o.put(2, 100 * kObj), S3Fifo::kNone);
  EXPECT_TRUE(o.index.count(1));
  EXPECT_TRUE(o.evicted.empty());
}

TEST(S3Fifo, ClearEmptiesEverything) {
  Owner o(10 * charged() + 16 * 8);
  for (uint64_t k = 0; k < 5; ++k)
    o.put(k);
  o.policy.clear();
  EXPECT_EQ(o.policy.object_count(), 0u);
  EXPECT_EQ(o.policy.small_bytes() + o.policy.main_bytes(), 0u);
}

}  // namespace
}  // namespace hg::cache
