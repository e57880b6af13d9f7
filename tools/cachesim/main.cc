// hourglass-cachesim: an eviction simulator. It drives the cache's real eviction policy
// (hg::cache::S3Fifo, the class every cache shard owns) and an LRU baseline with the same
// byte budget and the same per-object charge through synthetic DNS workloads, and prints
// hit ratios as a Markdown table (docs/cache.md holds the result and the command).
//
// Workloads (seeded, so every run prints the same table):
//   zipf   — Zipf(α) popularity over N names (default α=0.9, N=1M);
//   flood  — the same, plus one-hit names (a random-subdomain attack) making half the queries.
// Cache sizes are fractions of the working set: the bytes of all N names.
// Object sizes vary per name (150..449 bytes), so the policies are compared in bytes.
//
// --full runs the whole hg::cache::Cache instead of the bare policy: real DNS answers (1 to 8
// A records per name), keys, entries, 16 shards each with its own S3-FIFO and budget, honest
// byte accounting. The LRU baseline is then charged each name's real entry size.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/cache.h"
#include "cache/clock.h"
#include "cache/entry.h"
#include "cache/key.h"
#include "cache/s3fifo.h"
#include "wire/message.h"
#include "wire/name.h"

namespace {

using hg::cache::S3Fifo;
using hg::cache::S3FifoSettings;

constexpr uint64_t mix(uint64_t x) noexcept {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

uint32_t object_bytes(uint64_t id) {
  return 150 + static_cast<uint32_t>(mix(id ^ 0x5eed) % 300);
}

/// Inverse-CDF Zipf sampler over ranks 0..n-1 with P(k) ∝ 1/(k+1)^alpha.
class Zipf {
 public:
  Zipf(std::size_t n, double alpha) : cdf_(n) {
    double sum = 0;
    for (std::size_t k = 0; k < n; ++k) {
      sum += 1.0 / std::pow(static_cast<double>(k + 1), alpha);
      cdf_[k] = sum;
    }
    for (double& c : cdf_)
      c /= sum;
  }
  template <class Rng>
  uint64_t operator()(Rng& rng) const {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    if (it == cdf_.end()) --it;
    return static_cast<uint64_t>(it - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

/// The baseline: exact LRU, charged the same per-object overhead as S3Fifo's node.
class Lru {
 public:
  explicit Lru(std::size_t capacity) : capacity_(capacity) {}
  bool lookup_id(uint64_t id) { return lookup(mix(id)); }
  void insert_id(uint64_t id) { insert(mix(id), object_bytes(id)); }
  bool lookup(uint64_t key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    unlink(it->second);
    push_front(it->second);
    return true;
  }
  void insert(uint64_t key, std::size_t bytes) {
    const std::size_t charged = bytes + S3Fifo::node_overhead();
    if (charged > capacity_) return;
    while (used_ + charged > capacity_) {
      const uint32_t v = tail_;
      unlink(v);
      used_ -= nodes_[v].bytes;
      index_.erase(nodes_[v].key);
      free_.push_back(v);
    }
    uint32_t h;
    if (!free_.empty()) {
      h = free_.back();
      free_.pop_back();
    } else {
      h = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[h] = Node{key, static_cast<uint32_t>(charged), kNone, kNone};
    push_front(h);
    used_ += charged;
    index_.emplace(key, h);
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    uint64_t key;
    uint32_t bytes;
    uint32_t prev, next;
  };
  void unlink(uint32_t h) {
    Node& n = nodes_[h];
    (n.prev != kNone ? nodes_[n.prev].next : head_) = n.next;
    (n.next != kNone ? nodes_[n.next].prev : tail_) = n.prev;
  }
  void push_front(uint32_t h) {
    Node& n = nodes_[h];
    n.prev = kNone;
    n.next = head_;
    (head_ != kNone ? nodes_[head_].prev : tail_) = h;
    head_ = h;
  }
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  std::unordered_map<uint64_t, uint32_t> index_;
  uint32_t head_ = kNone, tail_ = kNone;
};

/// The real policy with the owner-side index a cache shard keeps.
class S3 {
 public:
  explicit S3(const S3FifoSettings& s) : policy_(s) {}
  bool lookup_id(uint64_t id) { return lookup(mix(id)); }
  void insert_id(uint64_t id) { insert(mix(id), object_bytes(id)); }
  bool lookup(uint64_t key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    policy_.touch(it->second);
    return true;
  }
  void insert(uint64_t key, std::size_t bytes) {
    const S3Fifo::Handle h = policy_.insert(
        key, bytes, [this](S3Fifo::Handle, uint64_t victim) { index_.erase(victim); });
    if (h != S3Fifo::kNone) index_.emplace(key, h);
  }

 private:
  S3Fifo policy_;
  std::unordered_map<uint64_t, S3Fifo::Handle> index_;
};

namespace dns {

namespace wire = hg::wire;
using hg::cache::Cache;
using hg::cache::CacheKey;

// The upstream answer for name id: "n<id>.sim. A" with 1..8 A records, TTL 1 day, each
// answer's owner a pointer to the question (as real servers compress).
std::vector<uint8_t> answer(uint64_t id) {
  char label[24];
  const int len = std::snprintf(label, sizeof label, "n%llu", static_cast<unsigned long long>(id));
  std::vector<uint8_t> p = {0, 0, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0};
  p.push_back(static_cast<uint8_t>(len));
  p.insert(p.end(), label, label + len);
  p.insert(p.end(), {3, 's', 'i', 'm', 0, 0, 1, 0, 1});
  const auto records = static_cast<uint8_t>(1 + mix(id ^ 0xa5) % 8);
  p[7] = records;
  for (uint8_t i = 0; i < records; ++i) {
    p.insert(p.end(), {0xc0, 0x0c, 0, 1, 0, 1, 0, 1, 0x51, 0x80, 0, 4, 192, 0, 2, i});
  }
  return p;
}

CacheKey key(uint64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "n%llu.sim", static_cast<unsigned long long>(id));
  return CacheKey::make(*wire::Name::from_text(text), wire::RRType::A, 1, false, false);
}

/// What the real cache charges for name id (entry + index + policy node).
std::size_t charged_bytes(uint64_t id) {
  const auto bytes = answer(id);
  wire::Message m;
  (void)m.parse(bytes);
  hg::cache::TtlCaps caps;
  auto built = hg::cache::Entry::build(key(id), m, {}, caps, hg::cache::Time{}, false);
  return built.entry->memory_bytes() + Cache::kIndexBytesPerEntry + S3Fifo::node_overhead();
}

class Full {
 public:
  explicit Full(std::size_t capacity)
      : cache_(hg::cache::CacheSettings{.max_bytes = capacity, .shards = 16, .prefetch = false}) {}
  bool lookup_id(uint64_t id) { return static_cast<bool>(cache_.lookup(key(id), now_)); }
  void insert_id(uint64_t id) {
    const auto bytes = answer(id);
    wire::Message m;
    (void)m.parse(bytes);
    cache_.insert(key(id), m, now_);
  }

 private:
  Cache cache_;
  hg::cache::Time now_ = hg::cache::ManualClock{}.now();
};

/// LRU charged each name's real entry size (computed once per name and remembered; the
/// flood's one-hit names are sized by the same formula).
class FullLru {
 public:
  explicit FullLru(std::size_t capacity) : lru_(capacity) {}
  bool lookup_id(uint64_t id) { return lru_.lookup(mix(id)); }
  void insert_id(uint64_t id) { lru_.insert(mix(id), charged_bytes(id) - S3Fifo::node_overhead()); }

 private:
  Lru lru_;
};

}  // namespace dns

struct Options {
  std::size_t names = 1'000'000;
  double alpha = 0.9;
  std::size_t warmup = 1'000'000;
  std::size_t requests = 4'000'000;
  uint64_t seed = 42;
  double small_ratio = 0.10;
  int promote = 1;
  bool full = false;
};

struct Outcome {
  double zipf_hit = 0;  // hit ratio over the Zipf (repeatable) queries
  double all_hit = 0;   // over every query, flood included
};

template <class Policy>
Outcome run(Policy& cache, const Zipf& zipf, const Options& o, bool flood) {
  std::mt19937_64 rng(o.seed);
  std::bernoulli_distribution is_flood(0.5);
  uint64_t next_unique = uint64_t{1} << 40;  // one-hit names live far from the Zipf ids
  std::size_t zipf_q = 0, zipf_hits = 0, all_q = 0, all_hits = 0;
  for (std::size_t i = 0; i < o.warmup + o.requests; ++i) {
    const bool one_hit = flood && is_flood(rng);
    const uint64_t id = one_hit ? next_unique++ : zipf(rng);
    const bool hit = cache.lookup_id(id);
    if (!hit) cache.insert_id(id);
    if (i < o.warmup) continue;
    ++all_q;
    all_hits += hit;
    if (!one_hit) {
      ++zipf_q;
      zipf_hits += hit;
    }
  }
  return {zipf_q ? static_cast<double>(zipf_hits) / static_cast<double>(zipf_q) : 0,
          all_q ? static_cast<double>(all_hits) / static_cast<double>(all_q) : 0};
}

bool parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--help" || a == "-h") return false;
    if (a == "--full") {
      o.full = true;
      continue;
    }
    if (!(v = next())) return false;
    if (a == "--names") {
      o.names = std::strtoull(v, nullptr, 10);
    } else if (a == "--alpha") {
      o.alpha = std::strtod(v, nullptr);
    } else if (a == "--warmup") {
      o.warmup = std::strtoull(v, nullptr, 10);
    } else if (a == "--requests") {
      o.requests = std::strtoull(v, nullptr, 10);
    } else if (a == "--seed") {
      o.seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--small-ratio") {
      o.small_ratio = std::strtod(v, nullptr);
    } else if (a == "--promote") {
      o.promote = std::atoi(v);
    } else {
      return false;
    }
  }
  return o.names > 0 && o.requests > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_args(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: hourglass-cachesim [--names 1000000] [--alpha 0.9] [--warmup 1000000]\n"
                 "                          [--requests 4000000] [--seed 42]\n"
                 "                          [--small-ratio 0.10] [--promote 1] [--full]\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  const Zipf zipf(o.names, o.alpha);
  std::size_t working_set = 0;
  for (uint64_t id = 0; id < o.names; ++id) {
    working_set += o.full ? dns::charged_bytes(id) : object_bytes(id);
  }

  std::printf("%s\n", o.full ? "Whole hg::cache::Cache (16 shards, real DNS entries) vs LRU"
                             : "The S3Fifo policy vs LRU");
  std::printf(
      "Zipf alpha=%.2f over %zu names (working set %.1f MiB), %zu warm-up + %zu measured "
      "requests, seed %llu\n\n",
      o.alpha, o.names, static_cast<double>(working_set) / (1 << 20), o.warmup, o.requests,
      static_cast<unsigned long long>(o.seed));
  std::printf(
      "| workload | cache size | LRU hit | S3-FIFO hit | S3-FIFO - LRU | LRU hit (all) | "
      "S3-FIFO hit (all) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  bool ok = true;
  for (bool flood : {false, true}) {
    for (double pct : {1.0, 5.0, 10.0}) {
      const auto capacity = static_cast<std::size_t>(static_cast<double>(working_set) * pct / 100);
      Outcome l, s;
      if (o.full) {
        dns::FullLru lru(capacity);
        dns::Full cache(capacity);
        l = run(lru, zipf, o, flood);
        s = run(cache, zipf, o, flood);
      } else {
        Lru lru(capacity);
        S3 s3(S3FifoSettings{.capacity_bytes = capacity,
                             .small_ratio = o.small_ratio,
                             .promote_threshold = static_cast<uint8_t>(o.promote)});
        l = run(lru, zipf, o, flood);
        s = run(s3, zipf, o, flood);
      }
      ok = ok && s.zipf_hit >= l.zipf_hit;
      std::printf("| %s | %.0f %% | %.2f %% | %.2f %% | %+.2f pt | %.2f %% | %.2f %% |\n",
                  flood ? "zipf + 50 % one-hit flood" : "zipf", pct, 100 * l.zipf_hit,
                  100 * s.zipf_hit, 100 * (s.zipf_hit - l.zipf_hit), 100 * l.all_hit,
                  100 * s.all_hit);
      std::fflush(stdout);
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "\n\"hit\" counts the Zipf queries only (the flood's names are never repeated, so "
      "no policy can hit them); \"(all)\" counts every query. %.1f s.\n",
      secs);
  return ok ? 0 : 1;
}
