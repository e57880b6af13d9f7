// S3Fifo: the eviction policy of one cache shard — S3-FIFO (Yang et al., SOSP 2023) over
// byte-sized objects.
//
// The policy knows objects only by a Handle (a dense slot index it hands out) and their key
// hash; the owner keeps the payload in its own table indexed by the same Handle and is told,
// through a callback, which handles were evicted. It never allocates per object after its
// node table has grown to the peak object count, and it takes no lock: one shard owns one
// instance and guards it with the shard's lock. tools/cachesim runs this very class.
//
//   insert ──► small FIFO S (~10 % of bytes) ──tail, freq ≥ 1──► main FIFO M (~90 %)
//     ▲           │ tail, freq 0                                   │ tail: freq > 0 → freq−1,
//     │           ▼                                                │       back to M's head
//     └─ hit ── ghost G (key hashes only) ◄── (on re-insert: go     │ tail: freq 0 → evicted
//               straight to M)                                     ▼
//
// Why FIFO queues: a hit only bumps a 2-bit saturating counter (touch(), an atomic store
// that needs no exclusive lock and reorders nothing), so concurrent lookups do not serialise
// on list surgery the way LRU's move-to-front does. Why the small queue: an object seen once
// (a random-subdomain flood, a scan) leaves from S's tail after ~10 % of the cache has gone
// by, and never displaces the hot set living in M.
//
// Byte accounting is honest: each object is charged its owner-declared bytes plus this
// policy's per-node overhead, and the ghost table is charged up front.
//
// Must not include wire/ or anything beyond the standard library.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hg::cache {

struct S3FifoSettings {
  std::size_t capacity_bytes = 64 << 20;
  /// Share of the capacity the small (probationary) FIFO aims at. The paper's 10 %.
  double small_ratio = 0.10;
  /// Hits an object needs while in S to be promoted to M instead of leaving ("at least once").
  uint8_t promote_threshold = 1;
  /// Used only to size the ghost table (one slot per this many bytes of capacity).
  std::size_t assumed_object_bytes = 256;
};

class S3Fifo {
 public:
  using Handle = uint32_t;
  static constexpr Handle kNone = UINT32_MAX;
  static constexpr uint8_t kMaxFreq = 3;

  /// Per-object overhead charged on top of the owner's bytes (this policy's node).
  static std::size_t node_overhead() noexcept { return sizeof(Node); }

  explicit S3Fifo(const S3FifoSettings& settings);

  /// Admits an object of `bytes` (the owner's whole cost for it) under key hash `hash`.
  /// First evicts until it fits, calling on_evict(Handle, uint64_t hash) for each victim
  /// before the victim's handle is recycled. An object recently evicted from S (a ghost hit)
  /// goes straight to M. Returns the new handle, or kNone when the object alone exceeds the
  /// capacity (nothing is evicted then).
  template <class OnEvict>
  Handle insert(uint64_t hash, std::size_t bytes, OnEvict&& on_evict) {
    return insert_into(hash, bytes, ghost_take(hash) ? kMain : kSmall, 0, on_evict);
  }

  /// Replaces object `old` (same key, new payload, e.g. a refreshed answer) by one of `bytes`:
  /// it keeps its queue and its frequency, so refreshing a hot entry does not demote it.
  /// Returns the new handle (possibly different) or kNone as for insert().
  template <class OnEvict>
  Handle reinsert(Handle old, std::size_t bytes, OnEvict&& on_evict) {
    const Node& n = nodes_[old];
    const uint64_t hash = n.hash;
    const uint8_t queue = n.queue;
    const uint8_t freq = n.freq;
    remove(old);
    return insert_into(hash, bytes, queue, freq, on_evict);
  }

  /// Records a hit: bumps the object's frequency, saturating at kMaxFreq. Safe to call from
  /// several threads that hold the owner's lock in *shared* mode (relaxed atomic; a lost
  /// increment under a race is harmless, the counter is a hint).
  void touch(Handle h) noexcept {
    std::atomic_ref<uint8_t> f(nodes_[h].freq);
    const uint8_t v = f.load(std::memory_order_relaxed);
    if (v < kMaxFreq) f.store(static_cast<uint8_t>(v + 1), std::memory_order_relaxed);
  }

  /// Asks the CPU to start loading the ghost slot of `hash` (what an insert of it reads, and
  /// where an evicted object of that hash goes). A hint only, as the two below.
  void prefetch_ghost(uint64_t hash) const noexcept;
  /// Asks for object h's node.
  void prefetch_node(Handle h) const noexcept { __builtin_prefetch(&nodes_[h]); }
  /// The object eviction would look at first (S's oldest), or kNone: for the owner's hints.
  Handle oldest_small() const noexcept { return small_.tail; }

  /// Removes an object explicitly (flush, expiry, a TTL-0 answer). It does not enter the ghost.
  void remove(Handle h) noexcept;
  /// Removes every object and forgets the ghost.
  void clear() noexcept;

  uint64_t hash_of(Handle h) const noexcept { return nodes_[h].hash; }
  uint8_t freq_of(Handle h) const noexcept { return nodes_[h].freq; }
  bool in_main(Handle h) const noexcept { return nodes_[h].queue == kMain; }

  std::size_t capacity_bytes() const noexcept { return capacity_; }
  /// Everything charged: objects, their nodes, and the ghost table.
  std::size_t used_bytes() const noexcept { return small_bytes_ + main_bytes_ + ghost_bytes(); }
  std::size_t small_bytes() const noexcept { return small_bytes_; }
  std::size_t main_bytes() const noexcept { return main_bytes_; }
  std::size_t ghost_bytes() const noexcept { return ghost_.size() * sizeof(GhostSlot); }
  std::size_t object_count() const noexcept { return count_; }
  /// Slots ever handed out: the owner sizes its payload table to this.
  std::size_t handle_limit() const noexcept { return nodes_.size(); }

 private:
  enum Queue : uint8_t { kFree = 0, kSmall = 1, kMain = 2 };
  struct Node {
    uint64_t hash = 0;
    uint32_t bytes = 0;   // charged bytes: owner's + node overhead
    Handle prev = kNone;  // towards the head (newer)
    Handle next = kNone;  // towards the tail (older); also the free-list link
    uint8_t freq = 0;
    uint8_t queue = kFree;
  };
  struct List {
    Handle head = kNone;  // newest
    Handle tail = kNone;  // oldest, next to leave
  };
  // One ghost slot: a fingerprint of an evicted key hash and when (in units of bytes evicted
  // from S) it was evicted. Direct-mapped: a newer ghost may overwrite an older one, which
  // only shortens the older one's memory, as a FIFO would have done eventually.
  struct GhostSlot {
    uint32_t fingerprint = 0;
    uint32_t stamp = 0;
  };

  template <class OnEvict>
  Handle insert_into(uint64_t hash, std::size_t bytes, uint8_t queue, uint8_t freq,
                     OnEvict& on_evict) {
    const std::size_t charged = bytes + sizeof(Node);
    if (charged > capacity_ || charged + ghost_bytes() > capacity_ || charged > UINT32_MAX) {
      return kNone;
    }
    while (used_bytes() + charged > capacity_ && count_ > 0) {
      const Handle v = evict_one();
      on_evict(v, nodes_[v].hash);
      release(v);
    }
    if (used_bytes() + charged > capacity_) return kNone;
    const Handle h = allocate();
    Node& n = nodes_[h];
    n.hash = hash;
    n.bytes = static_cast<uint32_t>(charged);
    n.freq = freq;
    link_head(h, queue);
    return h;
  }

  Handle allocate();
  void release(Handle h) noexcept;
  void link_head(Handle h, uint8_t queue) noexcept;
  void unlink(Handle h) noexcept;
  /// Chooses a victim, moving objects between queues on the way; returns it unlinked.
  Handle evict_one() noexcept;
  Handle evict_small() noexcept;
  Handle evict_main() noexcept;
  void ghost_add(uint64_t hash, uint32_t bytes) noexcept;
  bool ghost_take(uint64_t hash) noexcept;
  List& list(uint8_t queue) noexcept { return queue == kSmall ? small_ : main_; }

  std::size_t capacity_;
  std::size_t small_target_;
  uint8_t promote_threshold_;
  std::vector<Node> nodes_;
  Handle free_ = kNone;
  List small_;
  List main_;
  std::size_t small_bytes_ = 0;
  std::size_t main_bytes_ = 0;
  std::size_t count_ = 0;
  std::vector<GhostSlot> ghost_;  // a power of two in size, never empty
  // The slot of a mixed hash `m` (direct-mapped; the fingerprint is m's other half).
  std::size_t ghost_index(uint64_t m) const noexcept { return m & (ghost_.size() - 1); }
  uint32_t ghost_clock_ = 0;  // bytes evicted from S, in kGhostUnit units (wraps; harmless)
};

}  // namespace hg::cache
