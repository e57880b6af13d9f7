// TTL policy: how an upstream TTL becomes the TTL the cache stores.
//
// The rules, in the order they apply at insert:
//   1. RFC 2181 §8: a TTL with the most significant bit set is treated as zero. (We follow the
//      RFC's letter, "treated as if the entire value received was zero", rather than BIND's
//      old habit of clamping to 2^31-1: a zero is then never cached, which is the safe side.)
//   2. Positive records: 0 stays 0 (TTL-0 answers are passed through, never
//      cached — not even raised by cache-min-ttl); otherwise clamped to [min_ttl, max_ttl].
//      max_ttl defaults to 7 days (RFC 8767 §4 suggests capping TTLs at 7 days).
//   3. Negative answers (RFC 2308 §5): the SOA in the authority section is stored with
//      min(SOA TTL, SOA MINIMUM), clamped to negative_max_ttl; cache-min-ttl does not raise it.
//   4. Per-zone caps (`ttl-cap example.com=60`, settable at run time): a record whose owner is
//      at or below a capped zone is stored with TTL ≤ the cap (the smallest cap that applies).
//
// Must not include cache.h or anything from resolver/.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "wire/name.h"

namespace hg::cache {

struct TtlSettings {
  uint32_t min_ttl = 0;              ///< cache-min-ttl
  uint32_t max_ttl = 7 * 86400;      ///< cache-max-ttl (RFC 8767 §4)
  uint32_t negative_max_ttl = 3600;  ///< negative-max-ttl
};

/// RFC 2181 §8: values with the top bit set are treated as zero.
constexpr uint32_t sanitize_ttl(uint32_t wire_ttl) noexcept {
  return (wire_ttl & 0x80000000u) != 0 ? 0 : wire_ttl;
}

/// Rules 1-2 for a record of a positive answer.
constexpr uint32_t positive_ttl(uint32_t wire_ttl, const TtlSettings& s) noexcept {
  const uint32_t t = sanitize_ttl(wire_ttl);
  if (t == 0) return 0;
  if (t < s.min_ttl) return s.min_ttl;
  return t > s.max_ttl ? s.max_ttl : t;
}

/// Rules 1 and 3: the lifetime of a negative answer from its SOA record's TTL and MINIMUM.
constexpr uint32_t negative_ttl(uint32_t soa_ttl, uint32_t soa_minimum,
                                const TtlSettings& s) noexcept {
  const uint32_t a = sanitize_ttl(soa_ttl);
  const uint32_t b = sanitize_ttl(soa_minimum);
  const uint32_t t = a < b ? a : b;
  return t > s.negative_max_ttl ? s.negative_max_ttl : t;
}

/// Per-zone TTL caps (rule 4). Thread-safe: readers (inserts) take a shared lock, and skip
/// even that while no cap is set.
class TtlCaps {
 public:
  /// Sets (or replaces) the cap for `zone` and everything below it.
  void set(const wire::Name& zone, uint32_t cap);
  /// Removes the cap for exactly `zone`; false when there was none.
  bool clear(const wire::Name& zone);
  void clear_all();
  /// The caps in force, zones lowercased.
  std::vector<std::pair<wire::Name, uint32_t>> list() const;
  bool empty() const noexcept { return !any_.load(std::memory_order_acquire); }
  /// The smallest cap of a zone that `owner` is at or below, if any.
  std::optional<uint32_t> cap_for(const wire::Name& owner) const;

 private:
  mutable std::shared_mutex mu_;
  std::vector<std::pair<wire::Name, uint32_t>> caps_;  // zone lowercased
  std::atomic<bool> any_{false};
};

}  // namespace hg::cache
