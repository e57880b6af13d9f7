// Cache: the sharded answer cache the resolver talks to.
//
// What the daemon does with it, per query (docs/architecture.md §2):
//
//   CacheKey key = CacheKey::from_query(query);          // lowercased qname, type, class, DO, CD
//   Hit hit = cache.lookup(key, now);
//   switch (hit.freshness) {
//     case Freshness::Fresh:                              // answer now
//       render(hit, client, now, writer, opt_reserve);    // then wire::append_opt() if EDNS
//       if (hit.prefetch) { /* one background refresh via the in-flight table */ }
//       break;
//     case Freshness::Stale:                              // RFC 8767: refresh first,
//       keep `hit` (it stays valid after eviction);        // render it stale only if the upstream
//       if (cache.failure_holdoff(key, now) > 0ms) ...    // fails or is late (EDE 3, or EDE 19
//       break;                                            // when hit.entry->kind() is NxDomain)
//     case Freshness::Miss:                               // in-flight table, upstream
//       if (cache.failure_holdoff(key, now) > 0ms) → SERVFAIL + EDE 13 at once
//   }
//   on an upstream answer:  cache.insert(key, parsed_response, now)  (clears the failure state)
//   on an upstream failure: cache.note_failure(key, now)
//
// Thread safety: every member function may be called from any thread. The cache is split into
// shards (a power of two, chosen by the key hash), each with its own reader/writer lock,
// index, S3-FIFO policy and byte budget (cache-size / shards). Lookups take the shard lock in
// shared mode: a hit bumps an atomic frequency counter and copies a shared_ptr, so lookups
// from several threads do not serialise (tests/bench shows it). The hit/miss counters are
// per thread (base/counter_slots.h), summed by stats(); docs/bench.md § "Is anything on the
// hit path shared-writable?" lists what every thread still writes. Inserts, evictions, flushes
// and the lazy reclaim of entries past their stale window take it exclusively.
//
// Time is always passed in (a Time from the event loop's clock or a test's ManualClock).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/counter_slots.h"
#include "cache/clock.h"
#include "cache/entry.h"
#include "cache/key.h"
#include "cache/s3fifo.h"
#include "cache/ttl_policy.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/writer.h"

namespace hg::cache {

struct CacheSettings {
  /// cache-size: the byte budget for entries, keys, index and policy overhead, all shards.
  std::size_t max_bytes = std::size_t{64} << 20;
  /// Number of shards (rounded up to a power of two). More shards, less lock contention;
  /// each shard gets max_bytes / shards, so very small caches want few shards.
  std::size_t shards = 16;
  TtlSettings ttl{};
  /// stale-max: how long past expiry an entry may still be served stale (RFC 8767 §5: 1-3 days).
  Seconds stale_max{86400};
  /// stale-ttl: the TTL of a stale answer (RFC 8767 §4: 30 s), never above the record's own.
  uint32_t stale_ttl = 30;
  /// The failure cache (RFC 9520 §3.2, RFC 8767 failure recheck): first holdoff, doubling per
  /// consecutive failure up to the maximum.
  Millis failure_holdoff_initial{5000};
  Millis failure_holdoff_max{30000};
  /// Failure records kept per shard at most (a flood of failing names cannot grow memory).
  std::size_t failure_entries_per_shard = 4096;
  /// Prefetch: the share of an entry's TTL, at its end, in which a hit may trigger a refresh.
  double prefetch_window = 0.10;
  bool prefetch = true;
  /// Whether an entry keeps the AD bit of what is inserted. Off unless some upstream is trusted
  /// to set AD (--trust-ad): then Upstream has already cleared AD from every other server, and
  /// entries from a cache file or the fleet keep theirs. Off, no entry ever says AD, whatever a
  /// file, a fleet peer or an upstream wrote.
  bool keep_ad = false;
};

enum class Freshness : uint8_t { Miss, Fresh, Stale };

/// The result of a lookup. Holds the entry by shared_ptr: valid as long as the caller keeps
/// it, whatever happens to the cache meanwhile.
struct Hit {
  std::shared_ptr<const Entry> entry;  ///< null on a miss
  Freshness freshness = Freshness::Miss;
  /// Fresh hits only: refresh this key in the background now. At most one lookup per entry
  /// ever gets true (the entry remembers), so it cannot stampede.
  bool prefetch = false;
  uint32_t stale_ttl = 30;  ///< copied from the settings, for render()

  explicit operator bool() const noexcept { return freshness != Freshness::Miss; }
  bool stale() const noexcept { return freshness == Freshness::Stale; }
  /// A stale NXDOMAIN: the resolver attaches EDE 19 instead of EDE 3 (RFC 8914 §4.20).
  bool stale_nxdomain() const noexcept { return stale() && entry->kind() == AnswerKind::NxDomain; }
};

/// Renders a hit for one client: Fresh hits with each record's remaining TTL at `now`, Stale
/// hits with min(stale_ttl, stored TTL). See render_entry() in entry.h for the full contract:
/// `out` must be empty and limited to the client's payload size (512 without EDNS, the OPT's
/// size raised to at least 512 with EDNS, 65535 over TCP); `reserve` is kept free for the OPT
/// record (+EDE) the caller appends next with wire::append_opt(). Allocation-free.
/// Precondition: hit is not a miss.
inline RenderResult render(const Hit& hit, const ClientQuery& client, Time now,
                           wire::WireWriter& out, std::size_t reserve = 0) noexcept {
  return render_entry(*hit.entry, client, now,
                      hit.stale() ? std::optional<uint32_t>(hit.stale_ttl) : std::nullopt, out,
                      reserve);
}

struct CacheStats {
  std::size_t entries = 0;
  std::size_t bytes = 0;  ///< charged bytes in use (entries + index + policy)
  std::size_t capacity_bytes = 0;
  uint64_t hits = 0;  ///< fresh hits
  uint64_t stale_hits = 0;
  uint64_t misses = 0;
  uint64_t inserts = 0;             ///< responses stored
  uint64_t evictions = 0;           ///< entries pushed out by the byte budget
  uint64_t expired = 0;             ///< entries reclaimed after their stale window
  std::size_t failure_entries = 0;  ///< keys currently remembered as failing
};

/// Prefetch ramp (a pure function, for tests): true when a uniform draw `u` in [0, 1) falls
/// under the refresh probability at `now`, which is 0 until the last `window` share of the
/// TTL and then rises linearly to 1 at expiry.
bool prefetch_due(Time inserted_at, Time expires_at, Time now, double window, double u) noexcept;

class Cache {
 public:
  /// Index overhead charged per entry besides Entry::memory_bytes() and the policy's node:
  /// the shard's FlatIndex slot (8 bytes at a load between 3/8 and 3/4, so 10.7 to 21.3 bytes
  /// per entry, 14.8 on average over a growth cycle: charged as 16) and the shard's slot (a
  /// shared_ptr, 16).
  static constexpr std::size_t kIndexBytesPerEntry = 16 + 16;
  explicit Cache(const CacheSettings& settings = {});
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  /// Fresh before the entry's shortest TTL runs out; Stale for stale_max after that; Miss
  /// otherwise (an entry found past its stale window is removed on the way).
  Hit lookup(const CacheKey& key, Time now) { return lookup_impl(key, now, nullptr, nullptr); }

  /// The hit path without taking a reference to the entry. On a fresh hit, calls
  /// `fresh(const Entry&, bool prefetch)` while the entry's shard is read-locked (the entry
  /// cannot be freed meanwhile; `fresh` must not call into this cache) and returns a Hit with
  /// no entry: freshness Fresh, prefetch as lookup() sets it. Anything else (stale, miss) is
  /// returned as lookup() returns it, and `fresh` is not called. Counted as lookup() counts.
  /// For a fresh answer rendered and sent at once, this saves the shared_ptr copy, whose
  /// reference count every thread answering the same name would otherwise write.
  template <class F>
  Hit lookup_fresh(const CacheKey& key, Time now, F&& fresh) {
    using Fn = std::remove_reference_t<F>;
    return lookup_impl(
        key, now, const_cast<void*>(static_cast<const void*>(&fresh)),
        [](void* f, const Entry& e, bool prefetch) { (*static_cast<Fn*>(f))(e, prefetch); });
  }

  /// Like lookup() but for the cache's own bookkeeping's sake invisible: no frequency bump
  /// (so it does not promote the entry out of S3-FIFO's probationary queue), no hit/miss
  /// counted, no prefetch, no reclaim. The resolver uses it to render an answer it has just
  /// inserted for the clients that waited: counting that as a hit would give every one-hit
  /// name the hit that promotes it, and a flood would wash out the hot set.
  Hit peek(const CacheKey& key, Time now) const;
  /// A hint before insert(key, ...): starts loading the index slot, the policy's ghost slot
  /// and the eviction candidates that insert will touch, so that the work done in between
  /// (parsing the answer) hides the memory latency. Changes nothing.
  void prefetch(const CacheKey& key) const;

  /// Offers a parsed upstream response for `key` (see InsertOutcome for what is refused).
  /// A response that resolves the key (Cached or RemovedZeroTtl) also clears its failure state.
  /// Precondition: every compression pointer in `response` leads to name bytes — true of any
  /// message written by wire::write_message(). The stored sections are copied to clients with
  /// a new header and new TTLs, so a pointer into a header or TTL field (which an upstream may
  /// send and a parser accepts) would decode differently later. Untrusted answers go through
  /// wire::AnswerNormalizer first (the daemon, the cache file loader, the replay).
  /// `stored`, when given and the outcome is Cached, receives what peek(key, now) would give
  /// right after — the entry just stored — without a second look-up.
  InsertOutcome insert(const CacheKey& key, const wire::Message& response, Time now,
                       Hit* stored = nullptr);

  /// Removes one key; false when it was not cached.
  bool erase(const CacheKey& key);
  /// Removes `entry` if the cache still holds exactly it (not a newer answer stored under the
  /// same key meanwhile); false otherwise. For `drain --flush-old`.
  bool erase_entry(const Entry& entry);

  /// Failure cache. note_failure() records a failed resolution of `key` and returns the
  /// holdoff now in force: failure_holdoff_initial (5 s), doubling on each consecutive failure
  /// up to failure_holdoff_max (30 s). A failure counts as consecutive when it comes no later
  /// than failure_holdoff_max after the previous holdoff ended.
  Millis note_failure(const CacheKey& key, Time now);
  /// Time left before the upstream may be asked about `key` again; 0 when it may be now.
  Millis failure_holdoff(const CacheKey& key, Time now);
  /// Forgets the failure state of `key` (insert() does this itself).
  void note_success(const CacheKey& key);

  /// ttl-cap: from now on records at or below `zone` are stored with TTL ≤ `cap`, and cached
  /// answers for names at or below `zone` are shortened at once to expire within `cap` s.
  /// A cap of 0 means "not cached": such answers are removed at once (not left to be served
  /// stale), and insert() caches none (RemovedZeroTtl); the resolver passes them to clients
  /// with the capped records' TTLs at 0.
  void set_ttl_cap(const wire::Name& zone, uint32_t cap, Time now);
  bool clear_ttl_cap(const wire::Name& zone);
  std::vector<std::pair<wire::Name, uint32_t>> ttl_caps() const { return caps_.list(); }
  bool has_ttl_caps() const noexcept { return !caps_.empty(); }
  /// The smallest cap of a zone that `owner` is at or below, if any.
  std::optional<uint32_t> ttl_cap_for(const wire::Name& owner) const {
    return caps_.empty() ? std::nullopt : caps_.cap_for(owner);
  }

  /// flush: returns the number of entries removed. flush_name removes every type, class and
  /// flag variant of `name`; flush_zone also everything below it.
  std::size_t flush_all();
  std::size_t flush_name(const wire::Name& name);
  std::size_t flush_zone(const wire::Name& zone);

  CacheStats stats() const;
  /// A consistent-per-shard copy of every entry, for `dump` (entry->remaining_ttl(i, now),
  /// entry->to_wire(now) to print records). Holds no lock while the caller walks it.
  std::vector<std::shared_ptr<const Entry>> snapshot() const;
  /// The same, taking each shard's shared lock for at most `step` entry slots at a time, for
  /// a periodic save on a thread of its own: an insert into that shard waits for one step at
  /// most, and so do the lookups that queue behind that insert (the lock lets a waiting
  /// writer in first). Not consistent even per shard: an entry replaced meanwhile may appear
  /// in both versions (the file's loader keeps the newer) and one inserted meanwhile may be
  /// missing (the next save has it).
  std::vector<std::shared_ptr<const Entry>> snapshot_in_steps(std::size_t step) const;

  const CacheSettings& settings() const noexcept { return settings_; }

 private:
  using FreshFn = void (*)(void* ctx, const Entry& entry, bool prefetch);
  Hit lookup_impl(const CacheKey& key, Time now, void* ctx, FreshFn fresh);
  /// What peek() reports for `e` at `now`: Fresh, Stale (no prefetch) or a miss.
  Hit hit_at(const std::shared_ptr<const Entry>& e, Time now) const;
  struct Shard;
  Shard& shard_for(uint64_t hash) const noexcept;
  template <class Pred>
  std::size_t remove_if(Pred&& pred);

  CacheSettings settings_;
  TtlCaps caps_;
  int shard_shift_ = 64;
  std::vector<std::unique_ptr<Shard>> shards_;
  // Bumped on every lookup by every worker: per-thread slots, so that no line of them is
  // written by every thread (a per-shard atomic would be).
  base::SlottedCounter hits_, stale_hits_, misses_;
};

}  // namespace hg::cache
