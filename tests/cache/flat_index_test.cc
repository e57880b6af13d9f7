// FlatIndex: checked against std::unordered_map under random insert/erase churn, with
// collisions forced on the fingerprint and on the home slot, across growth and erase_if.
#include "cache/flat_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hg::cache {
namespace {

// What the cache does with S3Fifo::hash_of: every live value knows the full hash it is
// stored under. Values are indices into `hashes`.
struct Universe {
  std::vector<uint64_t> hashes;
  FlatIndex::Value add(uint64_t h) {
    hashes.push_back(h);
    return static_cast<FlatIndex::Value>(hashes.size() - 1);
  }
  auto hash_of() const {
    return [this](FlatIndex::Value v) { return hashes.at(v); };
  }
};

// Every entry of the model is found with its value, and the table holds nothing else.
void expect_same(const FlatIndex& index,
                 const std::unordered_map<uint64_t, FlatIndex::Value>& model, const Universe& u) {
  ASSERT_EQ(index.size(), model.size());
  for (const auto& [h, v] : model)
    ASSERT_EQ(index.find(h, u.hash_of()), v) << "hash " << h;
  std::size_t seen = 0;
  index.for_each([&](FlatIndex::Value v) {
    ++seen;
    const auto it = model.find(u.hashes.at(v));
    ASSERT_NE(it, model.end());
    EXPECT_EQ(it->second, v);
  });
  EXPECT_EQ(seen, model.size());
}

TEST(FlatIndex, EmptyFindsNothing) {
  Universe u;
  FlatIndex index;
  EXPECT_EQ(index.find(42, u.hash_of()), FlatIndex::kNone);
  EXPECT_EQ(index.erase(42, u.hash_of()), FlatIndex::kNone);
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.memory_bytes(), 0u);
}

TEST(FlatIndex, InsertReplaceErase) {
  Universe u;
  FlatIndex index;
  const auto a = u.add(0x1111'2222'3333'4444ULL);
  const auto b = u.add(0x1111'2222'3333'4444ULL);  // same hash, a newer value
  EXPECT_EQ(index.insert_or_assign(u.hashes[a], a, u.hash_of()), FlatIndex::kNone);
  EXPECT_EQ(index.find(u.hashes[a], u.hash_of()), a);
  EXPECT_EQ(index.insert_or_assign(u.hashes[b], b, u.hash_of()), a);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(index.find(u.hashes[a], u.hash_of()), b);
  EXPECT_EQ(index.erase(u.hashes[a], u.hash_of()), b);
  EXPECT_EQ(index.find(u.hashes[a], u.hash_of()), FlatIndex::kNone);
  EXPECT_EQ(index.size(), 0u);
}

// Two hashes with the same low 32 bits share a fingerprint (and so a home slot): only the
// confirmation through hash_of tells them apart.
TEST(FlatIndex, SameFingerprintDifferentHash) {
  Universe u;
  FlatIndex index;
  std::vector<FlatIndex::Value> vs;
  for (uint64_t hi = 1; hi <= 40; ++hi)
    vs.push_back(u.add((hi << 32) | 0xdead'beefULL));
  for (auto v : vs)
    EXPECT_EQ(index.insert_or_assign(u.hashes[v], v, u.hash_of()), FlatIndex::kNone);
  for (auto v : vs)
    EXPECT_EQ(index.find(u.hashes[v], u.hash_of()), v);
  EXPECT_EQ(index.find((uint64_t{41} << 32) | 0xdead'beefULL, u.hash_of()), FlatIndex::kNone);
  // Erase from the middle of the one long cluster; the rest must stay reachable.
  for (std::size_t i = 0; i < vs.size(); i += 3)
    EXPECT_EQ(index.erase(u.hashes[vs[i]], u.hash_of()), vs[i]);
  for (std::size_t i = 0; i < vs.size(); ++i)
    EXPECT_EQ(index.find(u.hashes[vs[i]], u.hash_of()), i % 3 == 0 ? FlatIndex::kNone : vs[i]);
}

// Many different fingerprints with one home slot in a 64-slot table: a cluster that wraps
// around the end of the array once the home is near it. Checked against the model while
// erasing in random order (backward shift across the wrap).
TEST(FlatIndex, SameHomeAcrossTheWrap) {
  constexpr std::size_t kSlots = 64;
  for (const std::size_t target : {std::size_t{0}, kSlots - 3, kSlots - 1}) {
    Universe u;
    FlatIndex index;
    std::unordered_map<uint64_t, FlatIndex::Value> model;
    // Fill to 40 entries (64 slots: grows at 12 → 16 → 32 → 64 and stays there up to 48).
    std::vector<uint64_t> picked;
    for (uint64_t x = 1; picked.size() < 20; ++x) {
      const uint64_t h = x * 0x9e37'79b9'7f4a'7c15ULL;
      if (FlatIndex::home_of(h, kSlots) == target) picked.push_back(h);
    }
    std::mt19937_64 rng(target);
    for (uint64_t x = 0; picked.size() < 40; ++x)
      picked.push_back(rng());
    for (uint64_t h : picked) {
      const auto v = u.add(h);
      model[h] = v;
      index.insert_or_assign(h, v, u.hash_of());
    }
    ASSERT_EQ(index.slot_count(), kSlots);
    expect_same(index, model, u);
    std::shuffle(picked.begin(), picked.end(), rng);
    for (uint64_t h : picked) {
      ASSERT_EQ(index.erase(h, u.hash_of()), model.at(h));
      model.erase(h);
      expect_same(index, model, u);
    }
  }
}

TEST(FlatIndex, GrowsAndKeepsEverything) {
  Universe u;
  FlatIndex index;
  std::unordered_map<uint64_t, FlatIndex::Value> model;
  std::mt19937_64 rng(7);
  std::size_t last_slots = 0;
  int growths = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t h = rng();
    const auto v = u.add(h);
    model[h] = v;
    index.insert_or_assign(h, v, u.hash_of());
    // Never more than 3/4 full, never less than 3/8 once past the first table.
    ASSERT_LE(index.size() * 4, index.slot_count() * 3);
    if (index.slot_count() != last_slots) {
      ++growths;
      last_slots = index.slot_count();
      expect_same(index, model, u);
    }
  }
  EXPECT_GE(index.size() * 8, index.slot_count() * 3);
  EXPECT_GE(growths, 10);
  EXPECT_EQ(index.memory_bytes(), index.slot_count() * FlatIndex::kSlotBytes);
  expect_same(index, model, u);
}

// Random churn against std::unordered_map: inserts (new and replacing), erases (present and
// absent), finds of absent hashes, and a small hash space so that all of it collides often
// (with even seeds, 3000 hashes whose low 32 bits come from a pool of 64).
TEST(FlatIndex, DifferentialChurn) {
  for (const uint64_t seed : {1ULL, 2ULL, 3ULL, 4ULL}) {
    Universe u;
    FlatIndex index;
    std::unordered_map<uint64_t, FlatIndex::Value> model;
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> space;
    std::vector<uint32_t> low_pool;
    space.reserve(3000);
    low_pool.reserve(64);
    for (int i = 0; i < 64; ++i)
      low_pool.push_back(static_cast<uint32_t>(rng()));
    for (int i = 0; i < 3000; ++i) {
      const uint64_t low = seed % 2 == 0 ? low_pool[rng() % low_pool.size()] : (rng() & 0xffffffff);
      space.push_back((rng() << 32) | low);
    }
    for (int step = 0; step < 60000; ++step) {
      const uint64_t h = space[rng() % space.size()];
      const unsigned op = static_cast<unsigned>(rng() % 10);
      if (op < 5) {
        const auto v = u.add(h);
        const auto it = model.find(h);
        const FlatIndex::Value before = it == model.end() ? FlatIndex::kNone : it->second;
        ASSERT_EQ(index.insert_or_assign(h, v, u.hash_of()), before);
        model[h] = v;
      } else if (op < 9) {
        const auto it = model.find(h);
        const FlatIndex::Value before = it == model.end() ? FlatIndex::kNone : it->second;
        ASSERT_EQ(index.erase(h, u.hash_of()), before);
        model.erase(h);
      } else {
        const auto it = model.find(h);
        ASSERT_EQ(index.find(h, u.hash_of()), it == model.end() ? FlatIndex::kNone : it->second);
      }
      ASSERT_EQ(index.size(), model.size());
      if (step % 5000 == 0) expect_same(index, model, u);
    }
    expect_same(index, model, u);
  }
}

TEST(FlatIndex, EraseIfVisitsEachOnceAndKeepsTheRest) {
  for (const uint64_t seed : {11ULL, 12ULL, 13ULL}) {
    Universe u;
    FlatIndex index;
    std::unordered_map<uint64_t, FlatIndex::Value> model;
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 5000; ++i) {
      // Half of them in a few crowded fingerprints, for long clusters.
      const uint64_t h = i % 2 == 0 ? rng() : ((rng() << 32) | (rng() % 8));
      const auto v = u.add(h);
      model[h] = v;
      index.insert_or_assign(h, v, u.hash_of());
    }
    std::unordered_set<FlatIndex::Value> visited;
    const std::size_t removed = index.erase_if([&](FlatIndex::Value v) {
      EXPECT_TRUE(visited.insert(v).second) << "visited twice: " << v;
      return u.hashes[v] % 3 == 0;
    });
    EXPECT_EQ(visited.size(), model.size());
    std::size_t expected = 0;
    for (auto it = model.begin(); it != model.end();) {
      if (it->first % 3 == 0) {
        it = model.erase(it);
        ++expected;
      } else {
        ++it;
      }
    }
    EXPECT_EQ(removed, expected);
    expect_same(index, model, u);
  }
}

TEST(FlatIndex, ClearKeepsSlots) {
  Universe u;
  FlatIndex index;
  for (uint64_t h = 1; h <= 100; ++h)
    index.insert_or_assign(h * 0x1234'5678'9abcULL, u.add(h * 0x1234'5678'9abcULL), u.hash_of());
  const std::size_t slots = index.slot_count();
  index.clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.slot_count(), slots);
  EXPECT_EQ(index.find(0x1234'5678'9abcULL, u.hash_of()), FlatIndex::kNone);
  EXPECT_EQ(index.insert_or_assign(0x1234'5678'9abcULL, 0, u.hash_of()), FlatIndex::kNone);
  EXPECT_EQ(index.find(0x1234'5678'9abcULL, u.hash_of()), 0u);
}

}  // namespace
}  // namespace hg::cache
