// Per-zone TTL caps (the rest of the TTL policy is constexpr in the header).
#include "cache/ttl_policy.h"

#include <algorithm>
#include <mutex>

#include "cache/key.h"

namespace hg::cache {

void TtlCaps::set(const wire::Name& zone, uint32_t cap) {
  const wire::Name z = zone.lowercased();
  std::unique_lock lock(mu_);
  auto it = std::find_if(caps_.begin(), caps_.end(), [&](const auto& c) { return c.first == z; });
  if (it != caps_.end()) {
    it->second = cap;
  } else {
    caps_.emplace_back(z, cap);
  }
  any_.store(true, std::memory_order_release);
}

bool TtlCaps::clear(const wire::Name& zone) {
  std::unique_lock lock(mu_);
  auto it =
      std::find_if(caps_.begin(), caps_.end(), [&](const auto& c) { return c.first == zone; });
  if (it == caps_.end()) return false;
  caps_.erase(it);
  any_.store(!caps_.empty(), std::memory_order_release);
  return true;
}

void TtlCaps::clear_all() {
  std::unique_lock lock(mu_);
  caps_.clear();
  any_.store(false, std::memory_order_release);
}

std::vector<std::pair<wire::Name, uint32_t>> TtlCaps::list() const {
  std::shared_lock lock(mu_);
  return caps_;
}

std::optional<uint32_t> TtlCaps::cap_for(const wire::Name& owner) const {
  if (empty()) return std::nullopt;
  const wire::Name lower = owner.lowercased();
  std::optional<uint32_t> best;
  std::shared_lock lock(mu_);
  for (const auto& [zone, cap] : caps_) {
    if (wire_at_or_below(lower.wire(), zone.wire()) && (!best || cap < *best)) best = cap;
  }
  return best;
}

}  // namespace hg::cache
