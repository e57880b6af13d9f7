// InflightTable: the queries hourglass is resolving right now, by cache key, each with the
// clients waiting for it. Identical queries (same key) arriving while one is in flight — from
// any client, over UDP or TCP, on any thread — join it, so exactly one upstream query is
// sent (docs/architecture.md §2, step 6). The table knows nothing of c-ares or sockets: it stores
// Waiters and hands them back when the query completes, fails, or a waiter's deadline passes.
//
// Bounds: at most `max_entries` queries in flight (a flood of unique names cannot grow
// memory past that) and at most `max_waiters` per query; callers answer SERVFAIL beyond them.
//
// Fair shares (docs/security.md, "Fair shares of the in-flight table"): one flooding client
// must not take every entry from the others, nor one dead zone every entry from the live ones.
//   - Per source: an entry remembers the source (a client address aggregated, see
//     client_source() in fair_share.h) whose query created it; a source holding
//     `source_share` entries gets SourceShareFull for its next new name. Only creating counts:
//     a client joining an entry adds no upstream query and no entry (waiters have their own
//     bounds), and a prefetch has no source at all.
//   - Per zone: every entry is counted under its zone's tag (the name minus its first label).
//     A zone whose upstream queries timed out `zone_fail_after` times in a row is failing; a
//     failing zone holding `zone_cap` entries gets ZoneCapped for its next new name. An answer
//     from the zone clears the streak at once; a streak with no timeout for
//     `zone_fail_memory` is forgotten. At most `max_failing_zones` streaks are remembered.
// Both counts live in maps that hold a key only while its count is above zero, so they never
// hold more keys than the table has entries; complete() is the one place that releases them.
//
// Thread-safe: one mutex; every operation is O(waiters of one key) under it, except a sweep
// of the streaks (O(max_failing_zones), at most once a second) and failing_zones() (stats).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/key.h"
#include "resolver/net/event_loop.h"

namespace hg::resolver {

enum class JoinOutcome : uint8_t {
  Created,          ///< the caller must start the upstream query
  Joined,           ///< an upstream query is already running; the waiter will be answered
  TableFull,        ///< too many queries in flight: answer SERVFAIL now
  WaitersFull,      ///< too many clients waiting for this key: answer SERVFAIL now
  SourceShareFull,  ///< the client's source holds its share of entries: answer SERVFAIL now
  ZoneCapped,       ///< the name's zone keeps timing out and holds its cap: SERVFAIL now
};

/// Who asked for a new entry and where its name lies, for the fair shares; 0: not counted.
struct JoinOrigin {
  uint64_t source = 0;  ///< client_source() of the client; 0 for none (tests, a prefetch)
  uint64_t zone = 0;    ///< zone_tag() of the name; 0 for none (a top-level name, the root)
};

/// How an entry's upstream query ended, for the per-zone timeout streaks.
enum class Completion : uint8_t {
  Other,     ///< a failure that says nothing of the zone's servers (or no zone to tell)
  Answered,  ///< the zone answered: its streak ends and it is uncapped
  TimedOut,  ///< no answer in time: one more step of the zone's streak
};

struct InflightSettings {
  std::size_t max_entries = 4096;
  std::size_t max_waiters = 256;          ///< per key
  std::size_t max_total_waiters = 65536;  ///< all keys together (a waiter is ~0.5 KiB)
  /// Entries one source may have created and still in flight; 0 or >= max_entries: no limit.
  std::size_t source_share = 512;
  /// Entries a failing zone may have in flight; 0: no cap.
  std::size_t zone_cap = 32;
  uint32_t zone_fail_after = 8;          ///< timeouts in a row that make a zone failing
  Millis zone_fail_memory{30000};        ///< a streak with no timeout this long is forgotten
  std::size_t max_failing_zones = 1024;  ///< streaks remembered at most
};

/// `W` must have a `MonoTime deadline` member.
template <class Key, class Hash, class W>
class InflightTable {
 public:
  explicit InflightTable(InflightSettings s = {}) : settings_(s) {}

  /// Adds `w` under `key`; creates the entry (owned by `owner`, the worker that will send the
  /// upstream query and run its timers) when absent.
  /// `origin` is counted against its source's share and its zone's cap when an entry is
  /// created (not when the waiter joins one).
  JoinOutcome join(const Key& key, W&& w, MonoTime now, int owner = 0, JoinOrigin origin = {}) {
    std::lock_guard lock(mu_);
    if (total_waiters_ >= settings_.max_total_waiters) return JoinOutcome::WaitersFull;
    auto it = map_.find(key);
    if (it == map_.end()) {
      if (map_.size() >= settings_.max_entries) return JoinOutcome::TableFull;
      if (origin.source != 0 && share_limited() &&
          source_counts_.get(origin.source) >= settings_.source_share)
        return JoinOutcome::SourceShareFull;
      if (zone_capped(origin.zone, now)) return JoinOutcome::ZoneCapped;
      it = insert_entry(key);
      it->second.owner = owner;
      it->second.started = now;
      count_origin(it->second, origin);
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
  /// A failing zone at its cap gets no prefetch either (`zone`: zone_tag() of the name).
  bool start_background(const Key& key, MonoTime now, int owner = 0, uint64_t zone = 0) {
    std::lock_guard lock(mu_);
    if (map_.size() >= settings_.max_entries || map_.contains(key)) return false;
    if (zone_capped(zone, now)) return false;
    auto& e = insert_entry(key)->second;
    e.owner = owner;
    e.started = now;
    count_origin(e, JoinOrigin{.source = 0, .zone = zone});
    return true;
  }

  /// When the upstream query for `key` started, if one is in flight.
  std::optional<MonoTime> started_at(const Key& key) const {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second.started;
  }

  /// The upstream query finished (answer or failure): removes the entry, releases what it
  /// counted against its source and zone, notes `how` in the zone's streak, and returns every
  /// waiter still waiting.
  std::vector<W> complete(const Key& key, Completion how = Completion::Other, MonoTime now = {}) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return {};
    std::vector<W> out = std::move(it->second.waiters);
    total_waiters_ -= out.size();
    const Entry& e = it->second;
    if (e.source != 0) source_counts_.sub(e.source);
    if (e.zone != 0) {
      zone_counts_.sub(e.zone);
      note_zone(e.zone, how, now);
    }
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
  /// Entries created by `source` still in flight.
  std::size_t source_entries(uint64_t source) const {
    std::lock_guard lock(mu_);
    return source_counts_.get(source);
  }
  /// Entries of `zone` in flight.
  std::size_t zone_entries(uint64_t zone) const {
    std::lock_guard lock(mu_);
    return zone_counts_.get(zone);
  }
  /// Sources, and zones, with an entry in flight (never more than size()).
  std::size_t sources() const {
    std::lock_guard lock(mu_);
    return source_counts_.size();
  }
  std::size_t zones() const {
    std::lock_guard lock(mu_);
    return zone_counts_.size();
  }
  /// Zones whose streak makes them failing now (capped), and streaks remembered.
  std::size_t failing_zones(MonoTime now) const {
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(std::count_if(
        streaks_.begin(), streaks_.end(), [&](const auto& kv) { return failing(kv.second, now); }));
  }
  std::size_t zone_streaks() const {
    std::lock_guard lock(mu_);
    return streaks_.size();
  }

 private:
  struct Entry {
    std::vector<W> waiters;
    int owner = 0;
    MonoTime started{};
    uint64_t source = 0;  // counted in source_counts_ (0: not counted)
    uint64_t zone = 0;    // counted in zone_counts_ (0: not counted)
  };
  using Map = std::unordered_map<Key, Entry, Hash>;

  // Counts by a 64-bit tag; a tag is present only while its count is above zero, so the map
  // holds at most as many tags as the table has entries. Removed nodes are kept (up to
  // kMaxSpare) for the next new tag, so a steady stream of misses allocates nothing here.
  class CountMap {
   public:
    std::size_t get(uint64_t tag) const {
      auto it = map_.find(tag);
      return it == map_.end() ? 0 : it->second;
    }
    void add(uint64_t tag) {
      auto it = map_.find(tag);
      if (it != map_.end()) {
        ++it->second;  // at most max_entries: cannot wrap
        return;
      }
      if (spare_.empty()) {
        map_.emplace(tag, 1);
        return;
      }
      auto node = std::move(spare_.back());
      spare_.pop_back();
      node.key() = tag;
      node.mapped() = 1;
      map_.insert(std::move(node));
    }
    // Only for a tag add() counted (an entry's own): never below zero, never a stray key.
    void sub(uint64_t tag) {
      auto it = map_.find(tag);
      if (it == map_.end()) return;
      if (--it->second > 0) return;
      auto node = map_.extract(it);
      if (spare_.size() < kMaxSpare) spare_.push_back(std::move(node));
    }
    std::size_t size() const { return map_.size(); }

   private:
    // Seeded: a source tag is an address prefix a client picks (and forges, over UDP), and
    // std::hash of an integer is the integer, so tags chosen to share a bucket would make
    // every lookup under the table's lock walk a chain of them.
    struct TagHash {
      std::size_t operator()(uint64_t tag) const noexcept {
        uint8_t b[8];
        std::memcpy(b, &tag, sizeof b);
        return static_cast<std::size_t>(cache::seeded_hash(b));
      }
    };
    using Counts = std::unordered_map<uint64_t, uint32_t, TagHash>;
    Counts map_;
    std::vector<typename Counts::node_type> spare_;
  };

  // A zone's timeouts in a row, and when the last one was noted.
  struct Streak {
    uint32_t timeouts = 0;
    MonoTime last{};
  };

  bool share_limited() const {
    return settings_.source_share != 0 && settings_.source_share < settings_.max_entries;
  }
  bool failing(const Streak& s, MonoTime now) const {
    return s.timeouts >= settings_.zone_fail_after && now - s.last < settings_.zone_fail_memory;
  }
  // Whether a new entry for `zone` must be refused: the zone is failing and at its cap.
  bool zone_capped(uint64_t zone, MonoTime now) const {
    if (zone == 0 || settings_.zone_cap == 0 || streaks_.empty()) return false;
    auto it = streaks_.find(zone);
    return it != streaks_.end() && failing(it->second, now) &&
           zone_counts_.get(zone) >= settings_.zone_cap;
  }
  void count_origin(Entry& e, JoinOrigin origin) {
    e.source = share_limited() ? origin.source : 0;
    e.zone = origin.zone;
    if (e.source != 0) source_counts_.add(e.source);
    if (e.zone != 0) zone_counts_.add(e.zone);
  }
  // The zone's streak after one of its queries ended `how`.
  void note_zone(uint64_t zone, Completion how, MonoTime now) {
    if (how == Completion::Answered) {
      if (!streaks_.empty()) streaks_.erase(zone);
      return;
    }
    if (how != Completion::TimedOut || settings_.zone_cap == 0) return;
    auto it = streaks_.find(zone);
    if (it == streaks_.end()) {
      if (streaks_.size() >= settings_.max_failing_zones && !make_room(now)) return;
      it = streaks_.emplace(zone, Streak{}).first;
    } else if (now - it->second.last >= settings_.zone_fail_memory) {
      it->second.timeouts = 0;  // an old streak is forgotten, not continued
    }
    if (it->second.timeouts < UINT32_MAX) ++it->second.timeouts;
    it->second.last = now;
  }
  // Full: forgets every streak not (or no longer) failing. Such a sweep is O(max_failing_zones),
  // so it runs at most once a second; until it frees a place, new zones' streaks are not kept
  // (the zones already failing stay capped, and the per-source share still bounds a flood).
  bool make_room(MonoTime now) {
    if (swept_ && now - *swept_ < Millis{1000}) return false;
    swept_ = now;
    std::erase_if(streaks_, [&](const auto& kv) { return !failing(kv.second, now); });
    return streaks_.size() < settings_.max_failing_zones;
  }

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
  CountMap source_counts_;
  CountMap zone_counts_;
  std::unordered_map<uint64_t, Streak> streaks_;  // zone tags: seeded hashes already
  std::optional<MonoTime> swept_;
  static constexpr std::size_t kMaxSpare = 64;
  std::vector<std::vector<W>> spare_;                 // empty lists with a buffer, from recycle()
  std::vector<typename Map::node_type> spare_nodes_;  // nodes complete() took out
};

}  // namespace hg::resolver
