// TopNames: the busiest names and the names causing the most upstream queries, for
// `hourglass-ctl top` (control command `top-names`), in bounded memory.
//
// Each list is a space-saving sketch (Metwally, Agrawal, El Abbadi, 2005) of kCounters
// counters: a name already counted is incremented; a new name takes a free counter, or else
// replaces the smallest one and inherits its count + 1 (recorded as the error bound). Any
// name seen more than total/kCounters times is guaranteed to be in the list, and no count is
// low by more than its error. Memory: 2 x 64 counters of ~270 bytes, ~35 KiB in all.
//
// Cost: the busiest list is fed with one query in kSampleEvery on average (the engine counts
// queries per worker and calls on_query() after a random gap of 1 to 31, mean 16: an increment
// and a branch on the others); the
// upstream list with every upstream query (a miss already costs a round trip). Updates take a
// mutex with try_lock and skip the sample when another worker holds it, so no query ever
// waits for this; counts are estimates, and the reply says so.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "wire/name.h"

namespace hg::resolver {

class SpaceSaving {
 public:
  static constexpr std::size_t kCounters = 64;
  struct Item {
    wire::Name name;
    std::size_t hash = 0;
    uint64_t count = 0;
    uint64_t error = 0;  ///< the count inherited when the name took the counter
  };
  /// Counts one occurrence of `name` (lowercased).
  void add(const wire::Name& name, std::size_t hash);
  /// The counted names, highest count first, at most `n`.
  std::vector<Item> top(std::size_t n) const;
  uint64_t total() const noexcept { return total_; }

 private:
  // Counter i in four arrays, so that a lookup and the search for the smallest counter read
  // the hashes and counts (1 KiB), not the ~17 KiB of the names; top() puts them together.
  std::array<wire::Name, kCounters> names_{};
  std::array<std::size_t, kCounters> hashes_{};
  std::array<uint64_t, kCounters> counts_{};
  std::array<uint64_t, kCounters> errors_{};
  std::size_t used_ = 0;
  uint64_t total_ = 0;
};

class TopNames {
 public:
  static constexpr uint32_t kSampleEvery = 16;
  /// A sampled query (the caller samples); skipped when the lock is busy.
  void on_query(const wire::Name& name);
  /// An upstream query for `name`; skipped when the lock is busy.
  void on_upstream(const wire::Name& name);
  /// The control reply: "busiest NAME COUNT" lines (COUNT scaled back by kSampleEvery),
  /// "upstream NAME COUNT" lines, then one "; " comment saying how they are counted.
  std::string text(std::size_t n) const;

 private:
  mutable std::mutex mu_;
  SpaceSaving busiest_, upstream_;
  std::atomic<uint64_t> skipped_{0};  // updates dropped because another worker held mu_
};

}  // namespace hg::resolver
