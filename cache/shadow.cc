// ShadowTable: shadow zones, their counters, and the bounded table of shadow expiry times.
#include "cache/shadow.h"

#include <algorithm>
#include <array>
#include <bit>

namespace hg::cache {

struct ShadowTable::Zone {
  wire::Name name;  // lowercased
  uint32_t seconds = 0;
  uint32_t id = 0;
  Time since{};
  // Counters split into cache-line slots: a worker thread adds to its own slot only (relaxed
  // atomics, so two threads that happen to share a slot still count exactly), and the
  // figures are the sums over the slots. No line is written by every worker.
  struct alignas(64) Slot {
    std::atomic<uint64_t> not_fresh{0};  // queries the real cache did not answer fresh
    std::atomic<uint64_t> hits{0};       // queries = not_fresh + hits: one add per query
    std::atomic<uint64_t> real_upstream{0};
    std::atomic<uint64_t> shadow_misses{0};
  };
  base::CounterSlots<Slot> slots;  // base/counter_slots.h

  uint64_t sum(base::SlotCounter<Slot> counter) const noexcept {
    return base::sum_slots(slots, counter);
  }
};

// The zones as readers see them: immutable once published, deepest (longest wire name)
// first, so the first zone a name is at or below is the one it counts in. Owned by shared
// pointers: the table's current_ and each thread's cached copy (see snapshot()).
struct ShadowTable::Snapshot {
  std::vector<std::shared_ptr<Zone>> by_depth;
};

namespace {

// Generations are unique in the process (not per table), so a thread's cached snapshot can
// never be taken for another table's, even one built at the same address.
std::atomic<uint64_t> g_next_generation{1};

}  // namespace

struct alignas(64) ShadowTable::Shard {
  struct Node {
    uint64_t hash;
    Time expires;
    uint32_t zone;
  };
  std::mutex mu;
  std::list<Node> order;  // filled longest ago first
  std::unordered_map<uint64_t, std::list<Node>::iterator> index;
  uint64_t evictions = 0;
};

double ShadowZoneStats::hit_ratio(uint64_t upstream, uint64_t queries) noexcept {
  if (queries == 0 || upstream >= queries) return 0.0;
  return 1.0 - static_cast<double>(upstream) / static_cast<double>(queries);
}

double ShadowZoneStats::multiplier() const noexcept {
  const uint64_t p = projected_upstream();
  if (real_upstream == 0) return static_cast<double>(p);
  return static_cast<double>(p) / static_cast<double>(real_upstream);
}

ShadowTable::ShadowTable(const ShadowSettings& settings) : settings_(settings) {
  const std::size_t n = std::bit_ceil(std::max<std::size_t>(settings.shards, 1));
  settings_.shards = n;
  shard_shift_ = 64 - std::countr_zero(n);
  per_shard_bytes_ = settings.max_bytes / n;
  shards_.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    shards_.push_back(std::make_unique<Shard>());
  publish();  // readers always find a snapshot (empty: no zone)
}

ShadowTable::~ShadowTable() = default;

ShadowTable::Shard& ShadowTable::shard_for(uint64_t hash) const noexcept {
  return shards_.size() == 1 ? *shards_[0] : *shards_[hash >> shard_shift_];
}

ShadowTable::Zone* ShadowTable::match(const Snapshot& snap, const CacheKey& key) noexcept {
  const auto name = key.qname.wire();
  for (const auto& z : snap.by_depth)
    if (wire_at_or_below(name, z->name.wire())) return z.get();
  return nullptr;
}

void ShadowTable::fill_locked(Shard& s, uint64_t hash, uint32_t zone_id, Time expires) {
  auto it = s.index.find(hash);
  if (it != s.index.end()) {
    it->second->expires = expires;
    it->second->zone = zone_id;
    s.order.splice(s.order.end(), s.order, it->second);  // now the most recently filled
    return;
  }
  if (per_shard_bytes_ < kBytesPerEntry) return;  // a table too small for one entry
  while ((s.index.size() + 1) * kBytesPerEntry > per_shard_bytes_ && !s.order.empty()) {
    s.index.erase(s.order.front().hash);
    s.order.pop_front();
    ++s.evictions;
  }
  s.order.push_back(Shard::Node{hash, expires, zone_id});
  s.index.emplace(hash, std::prev(s.order.end()));
}

void ShadowTable::on_query(const CacheKey& key, const Entry* fresh, Time now) {
  Zone* z = match(snapshot(), key);
  if (z == nullptr) return;
  Zone::Slot& slot = base::this_thread_slot(z->slots);
  if (fresh == nullptr) {
    slot.not_fresh.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  slot.hits.fetch_add(1, std::memory_order_relaxed);
  Shard& s = shard_for(key.hash);
  std::lock_guard lock(s.mu);  // look and refill under one lock: one miss per expiry
  auto it = s.index.find(key.hash);
  if (it != s.index.end() && it->second->zone == z->id && now < it->second->expires) return;
  slot.shadow_misses.fetch_add(1, std::memory_order_relaxed);
  fill_locked(s, key.hash, z->id, now + Seconds{std::min(fresh->ttl(), z->seconds)});
}

void ShadowTable::on_upstream(const CacheKey& key) {
  if (Zone* z = match(snapshot(), key))
    base::this_thread_slot(z->slots).real_upstream.fetch_add(1, std::memory_order_relaxed);
}

void ShadowTable::on_fill(const CacheKey& key, const Entry& entry) {
  Zone* z = match(snapshot(), key);
  if (z == nullptr) return;
  Shard& s = shard_for(key.hash);
  std::lock_guard lock(s.mu);
  fill_locked(s, key.hash, z->id, entry.inserted_at() + Seconds{std::min(entry.ttl(), z->seconds)});
}

void ShadowTable::publish() {
  auto next = std::make_shared<Snapshot>();
  next->by_depth = zones_;
  // Zones of one depth never both hold a name (two ancestors of one length are one name), so
  // their order does not matter: std::sort (in place; stable_sort would take a buffer).
  std::sort(next->by_depth.begin(), next->by_depth.end(), [](const auto& a, const auto& b) {
    return a->name.wire().size() > b->name.wire().size();
  });
  current_ = std::move(next);  // the old one goes when the last thread holding it lets go
  generation_.store(g_next_generation.fetch_add(1, std::memory_order_relaxed),
                    std::memory_order_release);
  active_.store(!zones_.empty(), std::memory_order_relaxed);
}

const ShadowTable::Snapshot& ShadowTable::snapshot() const {
  // Each thread keeps a reference to the snapshot it last used and the generation it had.
  // While the generation is unchanged (zone changes come from an operator, not traffic) the
  // read is one acquire load and a compare; after a change the thread takes the writers'
  // mutex once to pick up the new snapshot and drops its reference to the old one. So every
  // snapshot lives exactly as long as a thread may use it, and at most one stale snapshot per
  // thread is kept (until that thread's next shadow call or its exit).
  struct Cached {
    uint64_t generation = 0;
    std::shared_ptr<const Snapshot> snap;
  };
  static thread_local Cached cached;
  if (cached.generation != generation_.load(std::memory_order_acquire)) [[unlikely]] {
    std::lock_guard zl(zones_mu_);
    cached.snap = current_;
    cached.generation = generation_.load(std::memory_order_relaxed);
  }
  return *cached.snap;
}

void ShadowTable::purge(const std::vector<uint32_t>& ids) {
  if (ids.empty()) return;
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::lock_guard lock(s.mu);
    for (auto it = s.order.begin(); it != s.order.end();) {
      if (std::find(ids.begin(), ids.end(), it->zone) != ids.end()) {
        s.index.erase(it->hash);
        it = s.order.erase(it);
      } else {
        ++it;
      }
    }
  }
}

std::vector<uint32_t> ShadowTable::remove_zone_locked(const wire::Name& z) {
  std::vector<uint32_t> gone;
  std::erase_if(zones_, [&](const std::shared_ptr<Zone>& existing) {
    if (!existing->name.identical(z)) return false;
    gone.push_back(existing->id);
    return true;
  });
  return gone;
}

bool ShadowTable::set(const wire::Name& zone, uint32_t seconds, Time now) {
  std::lock_guard zl(zones_mu_);
  const wire::Name z = zone.lowercased();
  const bool known = std::any_of(zones_.begin(), zones_.end(),
                                 [&](const auto& old) { return old && old->name.identical(z); });
  if (!known && zones_.size() >= kMaxZones) return false;
  std::vector<uint32_t> gone = remove_zone_locked(z);
  auto nz = std::make_shared<Zone>();
  nz->name = z;
  nz->seconds = seconds;
  nz->id = next_id_++;
  nz->since = now;
  zones_.push_back(std::move(nz));
  publish();
  purge(gone);
  return true;
}

bool ShadowTable::clear(const wire::Name& zone) {
  std::lock_guard zl(zones_mu_);
  const wire::Name z = zone.lowercased();
  std::vector<uint32_t> gone = remove_zone_locked(z);
  publish();
  purge(gone);
  return !gone.empty();
}

void ShadowTable::replace(const std::vector<std::pair<wire::Name, uint32_t>>& zones, Time now) {
  std::lock_guard zl(zones_mu_);
  std::vector<std::shared_ptr<Zone>> next;
  for (const auto& wanted : zones) {
    if (next.size() == kMaxZones) break;
    const wire::Name z = wanted.first.lowercased();
    const uint32_t seconds = wanted.second;
    if (std::any_of(next.begin(), next.end(), [&](const auto& n) { return n->name.identical(z); }))
      continue;  // listed twice: the first one counts
    auto kept = std::find_if(zones_.begin(), zones_.end(), [&](const auto& old) {
      return old && old->name.identical(z) && old->seconds == seconds;
    });
    if (kept != zones_.end()) {
      next.push_back(std::move(*kept));
      continue;
    }
    auto nz = std::make_shared<Zone>();
    nz->name = z;
    nz->seconds = seconds;
    nz->id = next_id_++;
    nz->since = now;
    next.push_back(std::move(nz));
  }
  std::vector<uint32_t> gone;
  for (const auto& old : zones_)
    if (old) gone.push_back(old->id);
  zones_ = std::move(next);
  publish();
  purge(gone);
}

std::vector<std::pair<wire::Name, uint32_t>> ShadowTable::list() const {
  std::lock_guard zl(zones_mu_);
  std::vector<std::pair<wire::Name, uint32_t>> out;
  out.reserve(zones_.size());
  for (const auto& z : zones_)
    out.emplace_back(z->name, z->seconds);
  return out;
}

std::vector<ShadowZoneStats> ShadowTable::zone_stats() const {
  std::lock_guard zl(zones_mu_);
  std::vector<ShadowZoneStats> out;
  out.reserve(zones_.size());
  for (const auto& z : zones_) {
    ShadowZoneStats s;
    s.zone = z->name;
    s.seconds = z->seconds;
    s.since = z->since;
    s.hits = z->sum(&Zone::Slot::hits);
    s.queries = s.hits + z->sum(&Zone::Slot::not_fresh);
    s.real_upstream = z->sum(&Zone::Slot::real_upstream);
    s.shadow_misses = z->sum(&Zone::Slot::shadow_misses);
    out.push_back(s);
  }
  return out;
}

ShadowTableStats ShadowTable::stats() const {
  ShadowTableStats st;
  {
    std::lock_guard zl(zones_mu_);
    st.zones = zones_.size();
  }
  for (const auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    st.entries += sp->index.size();
    st.evictions += sp->evictions;
  }
  st.bytes = st.entries * kBytesPerEntry;
  st.capacity_bytes = per_shard_bytes_ * shards_.size();
  return st;
}

}  // namespace hg::cache
