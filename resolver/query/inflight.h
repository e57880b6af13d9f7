// InflightTable: the queries hourglass is resolving right now, by cache key, each with the
// clients waiting for it. Identical queries (same key) arriving while one is in flight — from
// any client, over UDP or TCP, on any thread — join it, so exactly one upstream query is
// sent (docs/architecture.md §2, step 6). The table knows nothing of c-ares or sockets: it stores
// Waiters and hands them back when the query completes, fails, or a waiter's deadline passes.
//
// Bounds: at most `max_entries` queries in flight (a flood of unique names cannot grow
// memory past that) and at most `max_waiters` per query; callers answer SERVFAIL beyond them.
//
// Thread-safe: one mutex; every operation is O(waiters of one key) under it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "resolver/net/event_loop.h"

namespace hg::resolver {

enum class JoinOutcome : uint8_t {
  Created,      ///< the caller must start the upstream query
  Joined,       ///< an upstream query is already running; the waiter will be answered
  TableFull,    ///< too many queries in flight: answer SERVFAIL now
  WaitersFull,  ///< too many clients waiting for this key: answer SERVFAIL now
};

struct InflightSettings {
  std::size_t max_entries = 4096;
  std::size_t max_waiters = 256;          ///< per key
  std::size_t max_total_waiters = 65536;  ///< all keys together (a waiter is ~0.5 KiB)
};

/// `W` must have a `MonoTime deadline` member.
template <class Key, class Hash, class W>
class InflightTable {
 public:
  explicit InflightTable(InflightSettings s = {}) : settings_(s) {}

  /// Adds `w` under `key`; creates the entry (owned by `owner`, the worker that will send the
  /// upstream query and run its timers) when absent.
  JoinOutcome join(const Key& key, W&& w, MonoTime now, int owner = 0) {
    std::lock_guard lock(mu_);
    if (total_waiters_ >= settings_.max_total_waiters) return JoinOutcome::WaitersFull;
    auto it = map_.find(key);
    if (it == map_.end()) {
      if (map_.size() >= settings_.max_entries) return JoinOutcome::TableFull;
      it = insert_entry(key);
      it->second.owner = owner;
      it->second.started = now;
      if (!spare_.empty()) {  // a list handed back by recycle(): no allocation
        it->second.waiters = std::move(spare_.back());
        spare_.pop_back();
      }
      it->second.waiters.push_back(std::move(w));
      ++total_waiters_;
      return JoinOutcome::Created;
    }
    if (it->second.waiters.size() >= settings_.max_waiters) return JoinOutcome::WaitersFull;
    it->second.waiters.push_back(std::move(w));
    ++total_waiters_;
    return JoinOutcome::Joined;
  }

  /// Creates an entry with no waiter (a prefetch). False when one exists or the table is full.
  bool start_background(const Key& key, MonoTime now, int owner = 0) {
    std::lock_guard lock(mu_);
    if (map_.size() >= settings_.max_entries || map_.contains(key)) return false;
    auto& e = insert_entry(key)->second;
    e.owner = owner;
    e.started = now;
    return true;
  }

  /// When the upstream query for `key` started, if one is in flight.
  std::optional<MonoTime> started_at(const Key& key) const {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second.started;
  }

  /// The upstream query finished (answer or failure): removes the entry and returns every
  /// waiter still waiting.
  std::vector<W> complete(const Key& key) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return {};
    std::vector<W> out = std::move(it->second.waiters);
    total_waiters_ -= out.size();
    auto node = map_.extract(it);
    if (spare_nodes_.size() < kMaxSpare) spare_nodes_.push_back(std::move(node));
    return out;
  }

  /// Hands back a list complete() returned, once its waiters are answered: its buffer serves
  /// a later entry, so a steady stream of misses allocates no waiter lists. At most
  /// kMaxSpare lists are kept.
  void recycle(std::vector<W>&& done) {
    done.clear();  // the waiters' own destructors run outside the lock
    if (done.capacity() == 0) return;
    std::lock_guard lock(mu_);
    if (spare_.size() < kMaxSpare) spare_.push_back(std::move(done));
  }

  /// Removes and returns the waiters whose deadline is at or before `now`; the entry stays
  /// (the upstream query goes on, and its answer will still be cached).
  std::vector<W> take_due(const Key& key, MonoTime now) {
    std::lock_guard lock(mu_);
    std::vector<W> due;
    auto it = map_.find(key);
    if (it == map_.end()) return due;
    auto& ws = it->second.waiters;
    auto keep =
        std::stable_partition(ws.begin(), ws.end(), [&](const W& w) { return w.deadline > now; });
    due.assign(std::make_move_iterator(keep), std::make_move_iterator(ws.end()));
    ws.erase(keep, ws.end());
    total_waiters_ -= due.size();
    return due;
  }

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return map_.size();
  }
  std::size_t waiters() const {
    std::lock_guard lock(mu_);
    return total_waiters_;
  }

 private:
  struct Entry {
    std::vector<W> waiters;
    int owner = 0;
    MonoTime started{};
  };
  using Map = std::unordered_map<Key, Entry, Hash>;

  // A new entry in a map node complete() kept, if there is one: a steady stream of misses
  // then allocates no nodes (a node holds the whole key, a few hundred bytes).
  typename Map::iterator insert_entry(const Key& key) {
    if (spare_nodes_.empty()) return map_.emplace(key, Entry{}).first;
    typename Map::node_type node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = key;
    node.mapped() = Entry{};
    return map_.insert(std::move(node)).position;
  }

  InflightSettings settings_;
  mutable std::mutex mu_;
  Map map_;
  std::size_t total_waiters_ = 0;
  static constexpr std::size_t kMaxSpare = 64;
  std::vector<std::vector<W>> spare_;                 // empty lists with a buffer, from recycle()
  std::vector<typename Map::node_type> spare_nodes_;  // nodes complete() took out
};

}  // namespace hg::resolver
