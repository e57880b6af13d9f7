// ShadowTable: "what if this zone's TTL were lower?" measured on live traffic.
//
// The daemon keeps answering with the real cache and real TTLs. Beside it, for each shadow
// zone (`--shadow-ttl example.com=60`), this table remembers per cache key only a hash and a
// shadow expiry time — no record data — and counts how many upstream queries a cache whose
// records at or below the zone expired after min(real TTL, SECONDS) would have sent.
//
// The rules, exactly (a test with a ManualClock can count them by hand):
//
//   - Zone of a key: the deepest shadow zone its query name is at or below (label-aligned:
//     www.shop.example.com is below shop.example.com and example.com; with both set it counts
//     in shop.example.com only). Matching is by the query name, not by the owner names inside
//     the answer: a CNAME answer for www.example.com that leads to lb.cdn.net counts in the
//     zone of www.example.com.
//   - Real TTL of an entry: Entry::ttl(), the smallest record TTL the cache stored at insert
//     (after cache-min-ttl/cache-max-ttl, negative-max-ttl and ttl-caps). Shadow TTL of the
//     entry: S = min(real TTL, SECONDS).
//   - on_query(key, fresh, now), once per client query that reached the cache: counts a query
//     in the key's zone. When the real cache answered it from a fresh entry (`fresh` non-null)
//     the shadow entry is looked at: present, of this zone, and now < its expiry → a shadow
//     hit; otherwise (absent, evicted, expired, or from before the zone was set) a shadow miss:
//     one projected upstream query is counted and the shadow entry is set to expire at
//     now + min(fresh->ttl(), SECONDS) — what the projected fetch would have brought.
//   - on_upstream(key): the real cache sends an upstream query for the key (miss, stale
//     refresh, prefetch; coalesced clients share one). Counted as a real upstream query, and
//     as a projected one too (the shadow cache, whose entries never outlive the real ones,
//     would have sent it as well).
//   - on_fill(key, entry): the real upstream's answer was stored as `entry`: the shadow entry
//     is set to expire at entry.inserted_at() + min(entry.ttl(), SECONDS).
//   So projected upstream = real upstream + shadow misses, and with SECONDS ≥ every real TTL
//   the shadow entry expires exactly with the real one and the multiplier is 1.
//
// Per zone, since it was set: queries, fresh hits, real upstream queries, shadow misses.
// Projected hit ratio = 1 − projected / queries (clamped to [0, 1]); multiplier = projected /
// real. Setting a zone again (or with another SECONDS) starts it afresh; clearing it drops its
// counters and its entries.
//
// Bounded: shards by key hash, each with a byte budget (max_bytes / shards) charged
// kBytesPerEntry per entry; when full, the entry filled longest ago goes (counted as an
// eviction). An evicted entry only makes the next hit a shadow miss, so a too-small table
// overstates the projected count, never understates it. Keys are kept as their 64-bit
// seeded hash (CacheKey::hash): a collision (odds 2^-64 per pair) shares one shadow entry.
//
// Thread safety: every member may be called from any thread. active() is one relaxed atomic
// load: the resolver's hit path pays that branch and nothing else while no zone is set. With
// zones set, on_query/on_upstream/on_fill take no lock on the zones: they read an immutable
// snapshot of the zone list that each thread caches with its generation number (one acquire
// load and a compare; set/clear/replace publish a new snapshot and generation under a writer
// mutex, and a thread that sees a new generation takes that mutex once to pick it up; an old
// snapshot is freed when the last thread holding it picks up a newer one or exits), and count
// into per-thread cache-line slots that zone_stats() sums. Only a shadow lookup or fill takes
// its shard's mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/counter_slots.h"
#include "cache/clock.h"
#include "cache/entry.h"
#include "cache/key.h"
#include "wire/name.h"

namespace hg::cache {

struct ShadowSettings {
  std::size_t max_bytes = std::size_t{8} << 20;  ///< shadow-size: all shards together
  std::size_t shards = 16;                       ///< rounded up to a power of two
};

/// One shadow zone's figures since it was set.
struct ShadowZoneStats {
  wire::Name zone;  ///< lowercased
  uint32_t seconds = 0;
  Time since{};  ///< when it was set
  uint64_t queries = 0;
  uint64_t hits = 0;  ///< real fresh hits
  uint64_t real_upstream = 0;
  uint64_t shadow_misses = 0;  ///< real fresh hits the shadow table would have missed
  uint64_t projected_upstream() const noexcept { return real_upstream + shadow_misses; }
  /// 1 − upstream / queries, clamped to [0, 1]; 0 when no query was seen.
  static double hit_ratio(uint64_t upstream, uint64_t queries) noexcept;
  double real_hit_ratio() const noexcept { return hit_ratio(real_upstream, queries); }
  double projected_hit_ratio() const noexcept { return hit_ratio(projected_upstream(), queries); }
  /// projected / real; 0 when there was no real upstream query (and none projected), and
  /// projected itself when only the shadow cache would have gone upstream.
  double multiplier() const noexcept;
};

struct ShadowTableStats {
  std::size_t zones = 0;
  std::size_t entries = 0;
  std::size_t bytes = 0;  ///< entries × kBytesPerEntry
  std::size_t capacity_bytes = 0;
  uint64_t evictions = 0;
};

class ShadowTable {
 public:
  /// Charged per entry: a list node (two pointers, hash, expiry, zone id: a 48-byte malloc
  /// chunk), an unordered_map node (next, key, iterator: 32) and its bucket pointer (8).
  static constexpr std::size_t kBytesPerEntry = 48 + 32 + 8;

  explicit ShadowTable(const ShadowSettings& settings = {});
  ~ShadowTable();
  ShadowTable(const ShadowTable&) = delete;
  ShadowTable& operator=(const ShadowTable&) = delete;

  /// The most zones the table holds: each query is matched against every zone (a linear
  /// scan, deepest first), and the control socket must not grow that scan without bound.
  static constexpr std::size_t kMaxZones = 64;

  /// Sets `zone` (or sets it again: counters restart) with `seconds` as of `now`. False, and
  /// nothing changed, when the zone is new and kMaxZones others are set.
  bool set(const wire::Name& zone, uint32_t seconds, Time now);
  /// Removes exactly `zone` with its counters and entries; false when it was not set.
  bool clear(const wire::Name& zone);
  /// The configured zones become exactly `zones` (SIGHUP): a zone already set with the same
  /// seconds keeps its counters and entries; the others start afresh or go. Zones after the
  /// first kMaxZones are ignored (the configuration refuses more).
  void replace(const std::vector<std::pair<wire::Name, uint32_t>>& zones, Time now);
  /// The zones in force, lowercased, in the order they were set.
  std::vector<std::pair<wire::Name, uint32_t>> list() const;
  bool active() const noexcept { return active_.load(std::memory_order_relaxed); }

  void on_query(const CacheKey& key, const Entry* fresh, Time now);
  void on_upstream(const CacheKey& key);
  void on_fill(const CacheKey& key, const Entry& entry);

  std::vector<ShadowZoneStats> zone_stats() const;
  ShadowTableStats stats() const;
  const ShadowSettings& settings() const noexcept { return settings_; }

 private:
  struct Zone;
  struct Shard;
  struct Snapshot;
  /// The deepest zone of `snap` that `key` is at or below, or null.
  static Zone* match(const Snapshot& snap, const CacheKey& key) noexcept;
  /// Publishes zones_ as the readers' new snapshot and sets active_; zones_mu_ held.
  void publish();
  /// The current snapshot as this thread sees it (cached per thread, see shadow.cc).
  const Snapshot& snapshot() const;
  Shard& shard_for(uint64_t hash) const noexcept;
  /// Sets the expiry of the key's entry (creating it, evicting the oldest when full); the
  /// caller holds s.mu.
  void fill_locked(Shard& s, uint64_t hash, uint32_t zone_id, Time expires);
  /// Drops every entry of the zone ids in `ids`; zones_mu_ held.
  void purge(const std::vector<uint32_t>& ids);
  /// Drops every zone named `z` (lowercased) from zones_ (zones_mu_ held): their ids, to purge.
  std::vector<uint32_t> remove_zone_locked(const wire::Name& z);

  ShadowSettings settings_;
  std::size_t per_shard_bytes_ = 0;
  int shard_shift_ = 64;
  std::vector<std::unique_ptr<Shard>> shards_;
  mutable std::mutex zones_mu_;               // writers, list() and zone_stats()
  std::vector<std::shared_ptr<Zone>> zones_;  // in the order they were set
  uint32_t next_id_ = 1;
  std::shared_ptr<const Snapshot> current_;  // zones_mu_; always set (empty: no zone)
  std::atomic<uint64_t> generation_{0};      // of current_, unique in the process
  std::atomic<bool> active_{false};
};

}  // namespace hg::cache
