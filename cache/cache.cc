// Cache: shards, lookup/insert, the failure cache, prefetch, flush and introspection.
#include "cache/cache.h"

#include "base/slotted_shared_mutex.h"
#include "cache/flat_index.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <list>
#include <random>

namespace hg::cache {
namespace {

constexpr std::size_t kIndexBytes = Cache::kIndexBytesPerEntry;

// A cheap per-thread generator for the prefetch draw (xorshift64*: quality is plenty here,
// and a thread_local keeps the hot path free of shared state).
double uniform01() noexcept {
  thread_local uint64_t state = [] {
    std::random_device rd;
    return ((uint64_t{rd()} << 32) ^ uint64_t{rd()}) | 1;
  }();
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  const uint64_t r = state * 0x2545F4914F6CDD1DULL;
  return static_cast<double>(r >> 11) * 0x1.0p-53;
}

bool in_prefetch_window(const Entry& e, Time now, double window) noexcept {
  const auto ttl_ms = (e.expires_at() - e.inserted_at()).count();
  const auto left_ms = (e.expires_at() - now).count();
  return static_cast<double>(left_ms) < static_cast<double>(ttl_ms) * window;
}

}  // namespace

struct FailureState {
  Time until;
  Millis holdoff;
  std::list<uint64_t>::iterator order;  // this key's place in Shard::failure_order
};

struct alignas(64) Cache::Shard {
  explicit Shard(const S3FifoSettings& s) : policy(s) {}

  // Lookups take it shared and write only their thread's slot; inserts and sweeps exclusive.
  mutable base::SlottedSharedMutex mu;
  FlatIndex index;                                  // key hash → policy handle
  std::vector<std::shared_ptr<const Entry>> slots;  // by policy handle
  S3Fifo policy;
  // Written under the exclusive lock only (the lookup counters are per thread: Cache::hits_).
  uint64_t inserts = 0;
  uint64_t evictions = 0;
  uint64_t expired = 0;

  std::mutex failure_mu;
  std::unordered_map<uint64_t, FailureState> failures;  // key hash → state
  // failures.size(), written under failure_mu: every miss asks about failures and every
  // answer clears them, and with none recorded (the usual case) both skip the lock.
  std::atomic<std::size_t> failure_count{0};
  // Every key of `failures`, least recently failed first: what a full table drops first.
  std::list<uint64_t> failure_order;

  void forget_failure_locked(std::unordered_map<uint64_t, FailureState>::iterator it) {
    failure_order.erase(it->second.order);
    failures.erase(it);
    failure_count.store(failures.size(), std::memory_order_relaxed);
  }

  // The index keeps 32-bit fingerprints; the policy node holds each handle's full hash.
  auto hash_of() const noexcept {
    return [this](S3Fifo::Handle h) { return policy.hash_of(h); };
  }
  S3Fifo::Handle find(uint64_t hash) const noexcept { return index.find(hash, hash_of()); }

  // Removes the live handle `h` stored under `hash` from the index, the policy and the slots.
  void erase_locked(uint64_t hash, S3Fifo::Handle h) {
    index.erase(hash, hash_of());
    policy.remove(h);
    slots[h].reset();
  }
};

bool prefetch_due(Time inserted_at, Time expires_at, Time now, double window, double u) noexcept {
  if (now >= expires_at || window <= 0) return false;
  const double ttl_ms = static_cast<double>((expires_at - inserted_at).count());
  const double window_ms = ttl_ms * window;
  const double left_ms = static_cast<double>((expires_at - now).count());
  if (left_ms >= window_ms) return false;
  // Linear ramp from 0 at the start of the window to 1 at expiry. Why this and not XFetch:
  // see docs/cache.md § Prefetch. In short, XFetch's early-refresh term is scaled by the
  // recompute time (an upstream RTT, tens of ms), so for DNS TTLs it fires only in the last
  // fraction of a second and a name with a few hits a minute would still expire; and its
  // stampede protection is already given by the in-flight table and the per-entry claim.
  return u < 1.0 - left_ms / window_ms;
}

Cache::Cache(const CacheSettings& settings) : settings_(settings) {
  const std::size_t n = std::bit_ceil(std::max<std::size_t>(settings.shards, 1));
  settings_.shards = n;
  shard_shift_ = 64 - std::countr_zero(n);
  const S3FifoSettings ps{.capacity_bytes = settings.max_bytes / n};
  shards_.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    shards_.push_back(std::make_unique<Shard>(ps));
}

Cache::~Cache() = default;

Cache::Shard& Cache::shard_for(uint64_t hash) const noexcept {
  // The top bits pick the shard; the shard's index uses the low 32 bits.
  return shards_.size() == 1 ? *shards_[0] : *shards_[hash >> shard_shift_];
}

Hit Cache::peek(const CacheKey& key, Time now) const {
  Shard& s = shard_for(key.hash);
  std::shared_lock lock(s.mu);
  const S3Fifo::Handle h = s.find(key.hash);
  if (h == S3Fifo::kNone || !s.slots[h]->matches(key)) return Hit{};
  return hit_at(s.slots[h], now);
}

// A full cache evicts on every insert, and the victim's memory is as cold as the new key's:
// its policy node, its index slot, its ghost slot, its entry (freed). The loads form chains
// (node → hash → index slot; slot → entry), so the hints are spread over three stages:
//   1. the end of each insert asks for the next victim's node and payload slot;
//   2. prefetch(), before the answer is parsed, reads those two (warm by then) and asks for
//      the victim's index slot, ghost slot and entry, and the new key's index and ghost slots;
//   3. insert() finds them loaded.
// The victim guessed is S's oldest object, which a flood of new names evicts in turn; when
// the guess is wrong (another thread inserted first, or it is promoted), the hints cost a
// few loads and nothing else.
void Cache::prefetch(const CacheKey& key) const {
  Shard& s = shard_for(key.hash);
  std::shared_lock lock(s.mu);
  s.index.prefetch(key.hash);
  s.policy.prefetch_ghost(key.hash);
  const S3Fifo::Handle victim = s.policy.oldest_small();
  if (victim >= s.slots.size()) return;
  const uint64_t victim_hash = s.policy.hash_of(victim);
  s.index.prefetch(victim_hash);
  s.policy.prefetch_ghost(victim_hash);
  // The entry's first line: its fields, and its control block just before them (the same
  // allocation, Entry::make), both read when the entry is freed.
  if (const Entry* e = s.slots[victim].get()) __builtin_prefetch(e);
}

Hit Cache::hit_at(const std::shared_ptr<const Entry>& e, Time now) const {
  if (now < e->expires_at()) return Hit{e, Freshness::Fresh, false, settings_.stale_ttl};
  if (now < e->expires_at() + settings_.stale_max)
    return Hit{e, Freshness::Stale, false, settings_.stale_ttl};
  return Hit{};
}

Hit Cache::lookup_impl(const CacheKey& key, Time now, void* ctx, FreshFn fresh) {
  Shard& s = shard_for(key.hash);
  {
    std::shared_lock lock(s.mu);
    const S3Fifo::Handle h = s.find(key.hash);
    if (h == S3Fifo::kNone || !s.slots[h]->matches(key)) {
      misses_.fetch_add(1);
      return Hit{};
    }
    const std::shared_ptr<const Entry>& e = s.slots[h];
    if (now < e->expires_at()) {
      s.policy.touch(h);
      hits_.fetch_add(1);
      bool prefetch = false;
      // The random draw is taken only inside the window: most hits pay one comparison.
      if (settings_.prefetch && in_prefetch_window(*e, now, settings_.prefetch_window) &&
          prefetch_due(e->inserted_at(), e->expires_at(), now, settings_.prefetch_window,
                       uniform01())) {
        prefetch = e->try_claim_prefetch();
      }
      if (fresh != nullptr) {
        fresh(ctx, *e, prefetch);  // under the shared lock: no reference taken
        return Hit{nullptr, Freshness::Fresh, prefetch, settings_.stale_ttl};
      }
      return Hit{e, Freshness::Fresh, prefetch, settings_.stale_ttl};
    }
    if (now < e->expires_at() + settings_.stale_max) {
      s.policy.touch(h);
      stale_hits_.fetch_add(1);
      return Hit{e, Freshness::Stale, false, settings_.stale_ttl};
    }
  }
  // Past its stale window: reclaim it now that we have met it (docs/architecture.md §3, eviction).
  // Check again under the exclusive lock — another thread may have replaced it meanwhile.
  {
    std::unique_lock lock(s.mu);
    const S3Fifo::Handle h = s.find(key.hash);
    if (h != S3Fifo::kNone) {
      const auto& e = s.slots[h];
      if (e->matches(key) && now >= e->expires_at() + settings_.stale_max) {
        s.erase_locked(key.hash, h);
        ++s.expired;
      }
    }
  }
  misses_.fetch_add(1);
  return Hit{};
}

InsertOutcome Cache::insert(const CacheKey& key, const wire::Message& response, Time now,
                            Hit* stored) {
  Entry::Built built = Entry::build(key, response, settings_.ttl, caps_, now, settings_.keep_ad);
  Shard& s = shard_for(key.hash);
  if (built.outcome == InsertOutcome::RemovedZeroTtl) {
    note_success(key);
    erase(key);
    return built.outcome;
  }
  if (built.outcome != InsertOutcome::Cached) return built.outcome;

  const std::size_t bytes = built.entry->memory_bytes() + kIndexBytes;
  {
    std::unique_lock lock(s.mu);
    // Called before the victim's handle is released: its node still holds its hash.
    auto on_evict = [&s](S3Fifo::Handle v, uint64_t victim_hash) {
      s.index.erase(victim_hash, s.hash_of());
      s.slots[v].reset();
      ++s.evictions;
    };
    S3Fifo::Handle h;
    // Out of the index first: the evictions below must not meet a handle the policy has
    // already released.
    const S3Fifo::Handle old = s.index.erase(key.hash, s.hash_of());
    if (old != S3Fifo::kNone) {
      // Same key (or, with odds of 2^-64 under a secret seed, a colliding one: replaced, and
      // lookups compare the whole key anyway). Keep its queue and frequency.
      h = s.policy.reinsert(old, bytes, on_evict);
      s.slots[old].reset();
    } else {
      h = s.policy.insert(key.hash, bytes, on_evict);
    }
    if (h == S3Fifo::kNone) return InsertOutcome::TooLarge;
    s.index.insert_or_assign(key.hash, h, s.hash_of());
    if (s.slots.size() < s.policy.handle_limit()) s.slots.resize(s.policy.handle_limit());
    if (stored != nullptr) *stored = hit_at(built.entry, now);
    s.slots[h] = std::move(built.entry);
    ++s.inserts;
    // Stage 1 of the hints for the next insert (see prefetch()).
    const S3Fifo::Handle next_victim = s.policy.oldest_small();
    if (next_victim < s.slots.size()) {
      s.policy.prefetch_node(next_victim);
      __builtin_prefetch(&s.slots[next_victim]);
    }
  }
  note_success(key);
  return InsertOutcome::Cached;
}

bool Cache::erase(const CacheKey& key) {
  Shard& s = shard_for(key.hash);
  std::unique_lock lock(s.mu);
  const S3Fifo::Handle h = s.find(key.hash);
  if (h == S3Fifo::kNone || !s.slots[h]->matches(key)) return false;
  s.erase_locked(key.hash, h);
  return true;
}

bool Cache::erase_entry(const Entry& entry) {
  Shard& s = shard_for(entry.key_hash());
  std::unique_lock lock(s.mu);
  const S3Fifo::Handle h = s.find(entry.key_hash());
  if (h == S3Fifo::kNone || s.slots[h].get() != &entry) return false;
  s.erase_locked(entry.key_hash(), h);
  return true;
}

Millis Cache::note_failure(const CacheKey& key, Time now) {
  Shard& s = shard_for(key.hash);
  std::lock_guard lock(s.failure_mu);
  auto it = s.failures.find(key.hash);
  if (it == s.failures.end()) {
    // Bounded, at O(1) amortised per failure: from the least recently failed end, drop the
    // records whose holdoff and streak window are over (each record is dropped once); if the
    // table is still full, the least recently failed one goes — never a name failing now.
    while (!s.failure_order.empty()) {
      auto oldest = s.failures.find(s.failure_order.front());
      const bool over = now > oldest->second.until + settings_.failure_holdoff_max;
      if (!over && s.failures.size() < settings_.failure_entries_per_shard) break;
      s.forget_failure_locked(oldest);
      if (!over) break;
    }
    const Millis first = settings_.failure_holdoff_initial;
    s.failure_order.push_back(key.hash);
    s.failures.emplace(key.hash,
                       FailureState{now + first, first, std::prev(s.failure_order.end())});
    s.failure_count.store(s.failures.size(), std::memory_order_relaxed);
    return first;
  }
  FailureState& f = it->second;
  s.failure_order.splice(s.failure_order.end(), s.failure_order, f.order);  // most recent
  // RFC 9520 §3.2 / RFC 8767 §4: back off exponentially on consecutive failures, to a cap.
  if (now <= f.until + settings_.failure_holdoff_max) {
    f.holdoff = std::min(f.holdoff * 2, settings_.failure_holdoff_max);
  } else {
    f.holdoff = settings_.failure_holdoff_initial;
  }
  f.until = now + f.holdoff;
  return f.holdoff;
}

Millis Cache::failure_holdoff(const CacheKey& key, Time now) {
  Shard& s = shard_for(key.hash);
  // No record: nothing to wait for. A failure another thread is recording right now is
  // ordered after this question, as it could be with the lock.
  if (s.failure_count.load(std::memory_order_relaxed) == 0) return Millis{0};
  std::lock_guard lock(s.failure_mu);
  auto it = s.failures.find(key.hash);
  if (it == s.failures.end() || now >= it->second.until) return Millis{0};
  return it->second.until - now;
}

void Cache::note_success(const CacheKey& key) {
  Shard& s = shard_for(key.hash);
  if (s.failure_count.load(std::memory_order_relaxed) == 0) return;  // as failure_holdoff
  std::lock_guard lock(s.failure_mu);
  auto it = s.failures.find(key.hash);
  if (it != s.failures.end()) s.forget_failure_locked(it);
}

void Cache::set_ttl_cap(const wire::Name& zone, uint32_t cap, Time now) {
  caps_.set(zone, cap);
  const wire::Name z = zone.lowercased();
  if (cap == 0) {
    // Not cached: an answer capped to 0 would otherwise stay behind as stale data.
    flush_zone(z);
    return;
  }
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::unique_lock lock(s.mu);
    s.index.for_each([&](S3Fifo::Handle h) {
      std::shared_ptr<const Entry>& e = s.slots[h];
      if (!wire_at_or_below(e->qname_wire(), z.wire())) return;
      if (e->expires_at() <= now + Seconds{cap}) {
        // Already expires within the cap; but records that outlive it still need shortening.
        bool longer = false;
        for (std::size_t i = 0; i < e->records().size(); ++i) {
          longer = longer || e->remaining_ttl(i, now) > cap;
        }
        if (!longer) return;
      }
      // Entries are immutable (readers may hold them): swap in a capped copy. Its size is
      // the same, so the budget does not change.
      e = e->with_cap(cap, now);
    });
  }
}

bool Cache::clear_ttl_cap(const wire::Name& zone) {
  return caps_.clear(zone.lowercased());
}

template <class Pred>
std::size_t Cache::remove_if(Pred&& pred) {
  std::size_t removed = 0;
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::unique_lock lock(s.mu);
    removed += s.index.erase_if([&](S3Fifo::Handle h) {
      if (!pred(*s.slots[h])) return false;
      s.policy.remove(h);
      s.slots[h].reset();
      return true;
    });
  }
  return removed;
}

std::size_t Cache::flush_all() {
  return remove_if([](const Entry&) { return true; });
}

std::size_t Cache::flush_name(const wire::Name& name) {
  const wire::Name n = name.lowercased();
  const auto w = n.wire();
  return remove_if([&](const Entry& e) {
    const auto q = e.qname_wire();
    return q.size() == w.size() && std::equal(q.begin(), q.end(), w.begin());
  });
}

std::size_t Cache::flush_zone(const wire::Name& zone) {
  const wire::Name z = zone.lowercased();
  return remove_if([&](const Entry& e) { return wire_at_or_below(e.qname_wire(), z.wire()); });
}

CacheStats Cache::stats() const {
  CacheStats st;
  st.capacity_bytes = 0;
  for (const auto& sp : shards_) {
    Shard& s = *sp;
    {
      std::shared_lock lock(s.mu);
      st.entries += s.index.size();
      st.bytes += s.policy.used_bytes();
      st.capacity_bytes += s.policy.capacity_bytes();
      st.inserts += s.inserts;
      st.evictions += s.evictions;
      st.expired += s.expired;
    }
    std::lock_guard lock(s.failure_mu);
    st.failure_entries += s.failures.size();
  }
  st.hits = hits_.load();
  st.stale_hits = stale_hits_.load();
  st.misses = misses_.load();
  return st;
}

std::vector<std::shared_ptr<const Entry>> Cache::snapshot() const {
  std::vector<std::shared_ptr<const Entry>> out;
  for (const auto& sp : shards_) {
    std::shared_lock lock(sp->mu);
    out.reserve(out.size() + sp->index.size());
    sp->index.for_each([&](S3Fifo::Handle h) { out.push_back(sp->slots[h]); });
  }
  return out;
}

std::vector<std::shared_ptr<const Entry>> Cache::snapshot_in_steps(std::size_t step) const {
  step = std::max<std::size_t>(step, 1);
  std::vector<std::shared_ptr<const Entry>> out;
  // Room for what is cached now and a little more, so the vector rarely grows (moving every
  // pointer) while a lock is held.
  out.reserve(stats().entries + 4096);
  for (const auto& sp : shards_) {
    const Shard& s = *sp;
    for (std::size_t at = 0;;) {
      std::shared_lock lock(s.mu);
      const std::size_t end = std::min(s.slots.size(), at + step);
      for (; at < end; ++at) {
        if (s.slots[at]) out.push_back(s.slots[at]);  // live handles only hold an entry
      }
      if (at >= s.slots.size()) break;
    }
  }
  return out;
}

}  // namespace hg::cache
