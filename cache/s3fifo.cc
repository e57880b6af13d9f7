// S3-FIFO eviction (see s3fifo.h for the picture and the reasons).
#include "cache/s3fifo.h"

#include <bit>
#include <cassert>

#include "base/hash.h"

namespace hg::cache {
namespace {

// The ghost clock counts bytes evicted from S in units of 64, so a 32-bit stamp covers a
// window of 256 GiB; a stamp that wraps around only makes a stale ghost look recent, which
// costs one object a place in M instead of S — never a wrong answer.
constexpr std::size_t kGhostUnit = 64;
constexpr std::size_t kMinGhostSlots = 16;
constexpr std::size_t kMaxGhostSlots = std::size_t{1} << 24;

// The owner's hash may have its top bits fixed by shard selection; remix before slicing.
constexpr uint64_t mix(uint64_t x) noexcept {
  return base::fmix64(x);
}

}  // namespace

S3Fifo::S3Fifo(const S3FifoSettings& settings)
    : capacity_(settings.capacity_bytes),
      small_target_(static_cast<std::size_t>(static_cast<double>(settings.capacity_bytes) *
                                             settings.small_ratio)),
      promote_threshold_(settings.promote_threshold) {
  std::size_t slots = settings.capacity_bytes / (settings.assumed_object_bytes | 1);
  if (slots < kMinGhostSlots) slots = kMinGhostSlots;
  if (slots > kMaxGhostSlots) slots = kMaxGhostSlots;
  ghost_.resize(std::bit_ceil(slots));
}

S3Fifo::Handle S3Fifo::allocate() {
  if (free_ != kNone) {
    const Handle h = free_;
    free_ = nodes_[h].next;
    nodes_[h] = Node{};
    return h;
  }
  assert(nodes_.size() < kNone);
  nodes_.emplace_back();
  return static_cast<Handle>(nodes_.size() - 1);
}

void S3Fifo::release(Handle h) noexcept {
  Node& n = nodes_[h];
  n.queue = kFree;
  n.prev = kNone;
  n.next = free_;
  free_ = h;
}

void S3Fifo::link_head(Handle h, uint8_t queue) noexcept {
  Node& n = nodes_[h];
  List& l = list(queue);
  n.queue = queue;
  n.prev = kNone;
  n.next = l.head;
  if (l.head != kNone) nodes_[l.head].prev = h;
  l.head = h;
  if (l.tail == kNone) l.tail = h;
  (queue == kSmall ? small_bytes_ : main_bytes_) += n.bytes;
  ++count_;
}

void S3Fifo::unlink(Handle h) noexcept {
  Node& n = nodes_[h];
  assert(n.queue == kSmall || n.queue == kMain);
  List& l = list(n.queue);
  if (n.prev != kNone) {
    nodes_[n.prev].next = n.next;
  } else {
    l.head = n.next;
  }
  if (n.next != kNone) {
    nodes_[n.next].prev = n.prev;
  } else {
    l.tail = n.prev;
  }
  (n.queue == kSmall ? small_bytes_ : main_bytes_) -= n.bytes;
  --count_;
  n.prev = n.next = kNone;
}

void S3Fifo::remove(Handle h) noexcept {
  unlink(h);
  release(h);
}

void S3Fifo::clear() noexcept {
  for (Handle h = 0; h < nodes_.size(); ++h) {
    if (nodes_[h].queue != kFree) remove(h);
  }
  for (GhostSlot& g : ghost_)
    g = GhostSlot{};
}

S3Fifo::Handle S3Fifo::evict_one() noexcept {
  assert(count_ > 0);
  // Evict from S while it holds more than its share (or M is empty); otherwise from M.
  if (small_.tail != kNone && (small_bytes_ > small_target_ || main_.tail == kNone)) {
    const Handle v = evict_small();
    if (v != kNone) return v;
  }
  return evict_main();
}

S3Fifo::Handle S3Fifo::evict_small() noexcept {
  while (small_.tail != kNone) {
    const Handle t = small_.tail;
    unlink(t);
    if (nodes_[t].freq >= promote_threshold_) {
      // Seen again while on probation: it earns a place in M. The frequency goes with it,
      // so M's second-chance loop still knows how hot it is.
      link_head(t, kMain);
      continue;
    }
    ghost_add(nodes_[t].hash, nodes_[t].bytes);
    return t;
  }
  return kNone;  // everything in S was promoted
}

S3Fifo::Handle S3Fifo::evict_main() noexcept {
  // Terminates: every pass over an object lowers its frequency, which starts at most 3.
  while (true) {
    const Handle t = main_.tail;
    assert(t != kNone);
    Node& n = nodes_[t];
    unlink(t);
    if (n.freq > 0) {
      --n.freq;
      link_head(t, kMain);
      continue;
    }
    return t;
  }
}

void S3Fifo::ghost_add(uint64_t hash, uint32_t bytes) noexcept {
  ghost_clock_ += static_cast<uint32_t>((bytes + kGhostUnit - 1) / kGhostUnit);
  const uint64_t m = mix(hash);
  GhostSlot& g = ghost_[ghost_index(m)];
  g.fingerprint = static_cast<uint32_t>(m >> 32) | 1;  // never 0, which marks an empty slot
  g.stamp = ghost_clock_;
}

void S3Fifo::prefetch_ghost(uint64_t hash) const noexcept {
  __builtin_prefetch(&ghost_[ghost_index(mix(hash))]);
}

bool S3Fifo::ghost_take(uint64_t hash) noexcept {
  const uint64_t m = mix(hash);
  GhostSlot& g = ghost_[ghost_index(m)];
  if (g.fingerprint != (static_cast<uint32_t>(m >> 32) | 1)) return false;
  // The ghost remembers as many bytes of evictees as M can hold (the paper sizes G like M).
  const auto window = static_cast<uint32_t>((capacity_ - small_target_) / kGhostUnit);
  const bool recent = static_cast<uint32_t>(ghost_clock_ - g.stamp) <= window;
  g = GhostSlot{};
  return recent;
}

}  // namespace hg::cache
