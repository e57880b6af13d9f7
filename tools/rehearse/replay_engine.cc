// ReplayEngine: see replay_engine.h and docs/rehearsal.md.
#include "tools/rehearse/replay_engine.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "base/bytes.h"
#include "base/duration.h"
#include "base/hash.h"
#include "base/unix_time.h"
#include "cache/ttl_policy.h"

namespace hg::rehearse {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kDefaultRtt = 20 * kMs;
// The recorder's own upstream query for a client query follows it within this time.
constexpr int64_t kForwarderWindow = kSec;
// Responses kept per question at most (a trace of responses whose queries never come).
constexpr std::size_t kMaxStoredPerQuestion = 4096;
// FORWARDER RTT samples kept for the median (a uniform reservoir beyond that).
constexpr std::size_t kRttReservoir = 65536;
// Before the first replayed query: FORWARDER pairs enough for a median, or this much trace.
constexpr std::size_t kRttWarmupSamples = 1000;
constexpr int64_t kRttWarmup = 60 * kSec;
// Distinct client query byte strings remembered (known_query), and the longest one.
constexpr std::size_t kMaxKnownQueries = std::size_t{1} << 21;
constexpr std::size_t kMaxKnownQueryBytes = 512;
// The bytes of the known client queries together, at most.
constexpr std::size_t kMaxKnownQueryArena = std::size_t{64} << 20;

// The identity of an RRset within a question's answers: owner (lowercased), type, class.
// FNV-1a: these hashes are only compared among one question's few RRsets.
uint64_t rrset_hash(std::span<const uint8_t> owner_wire, wire::RRType type, uint16_t klass) {
  uint64_t h = base::kFnv1aBasis;
  auto mix = [&h](uint8_t b) { h = base::fnv1a_step(h, b); };
  for (uint8_t b : owner_wire)
    mix(wire::ascii_lower(b));
  const auto t = static_cast<uint16_t>(type);
  mix(static_cast<uint8_t>(t >> 8));
  mix(static_cast<uint8_t>(t));
  mix(static_cast<uint8_t>(klass >> 8));
  mix(static_cast<uint8_t>(klass));
  return h;
}

uint64_t rrset_hash(const wire::Name& owner, wire::RRType type, uint16_t klass) {
  return rrset_hash(owner.wire(), type, klass);
}

// The same for a record of a parsed message; an owner that is a pointer to the question's
// name (offset 12, nearly every answer record) is hashed without decompressing it.
uint64_t rrset_hash(const wire::Message& m, const wire::RecordView& rr) {
  const auto p = m.packet();
  if (rr.offset + 1u < p.size() && p[rr.offset] == 0xC0 && p[rr.offset + 1] == 12 &&
      !m.questions().empty())
    return rrset_hash(m.questions().front().name.wire(), rr.type, rr.klass);
  return rrset_hash(m.owner(rr), rr.type, rr.klass);
}

// True when `p` has the bytes of `stored` except the ID and the TTL fields of `records`.
template <class Rec>
bool same_but_id_and_ttls(std::span<const uint8_t> stored, std::span<const uint8_t> p,
                          std::span<const Rec> records) {
  if (p.size() != stored.size() || p.size() < 12) return false;
  std::size_t from = 2;
  for (const Rec& rr : records) {
    if (std::memcmp(p.data() + from, stored.data() + from, rr.ttl_offset - from) != 0) return false;
    from = rr.ttl_offset + 4u;
  }
  return std::memcmp(p.data() + from, stored.data() + from, p.size() - from) == 0;
}

// The end of the question of `m` when its first name is uncompressed, else 0.
std::size_t question_end(std::span<const uint8_t> m) {
  if (m.size() < 12 || (m[4] == 0 && m[5] == 0)) return 0;
  std::size_t p = 12;
  while (p < m.size() && p < 12 + 256) {
    const uint8_t len = m[p];
    if (len == 0) {
      p += 5;
      return p <= m.size() ? p : 0;
    }
    if ((len & 0xC0) != 0) return 0;
    p += std::size_t{len} + 1;
  }
  return 0;
}

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

std::optional<int64_t> ReplayResult::settled_from_ns() const noexcept {
  std::optional<int64_t> last_switch;
  for (int64_t t : switch_ns)
    if (t >= first_ns && t <= last_ns) last_switch = std::max(last_switch.value_or(t), t);
  if (!last_switch) return std::nullopt;
  int64_t from = *last_switch;
  for (std::size_t i = 0; i < rule_at_ns.size() && i < old_copies_until_ns.size(); ++i)
    if (rule_at_ns[i] != INT64_MIN && rule_at_ns[i] <= *last_switch)
      from = std::max(from, old_copies_until_ns[i]);
  if (from >= last_ns) return std::nullopt;
  return from;
}

double ReplayResult::duration_s() const noexcept {
  const double d = static_cast<double>(last_ns - first_ns) / 1e9;
  return d > 0 ? d : 0;
}

ReplayEngine::ReplayEngine(const ReplayConfig& config) : config_(config) {
  if (config_.bucket_ns <= 0) config_.bucket_ns = kSec;
  if (config_.lookahead_ns < 0) config_.lookahead_ns = 0;
  cache::CacheSettings s;
  s.max_bytes = config_.cache_bytes;
  s.shards = 1;  // one thread; and the whole budget in one shard, as a small cache wants
  s.ttl = config_.ttl;
  s.prefetch = false;  // decided here with a seeded generator, by the cache's own rule
  for (auto& c : caches_)
    c = std::make_unique<cache::Cache>(s);
  rng_[0].seed(config_.seed);
  rng_[1].seed(config_.seed);
  result_.bucket_ns = config_.bucket_ns;
}

ReplayEngine::~ReplayEngine() = default;

cache::Time ReplayEngine::ctime(int64_t t_ns) const noexcept {
  return cache::Time{cache::Seconds{1'000'000}} + cache::Millis{(t_ns - result_.first_ns) / kMs};
}

uint32_t EventClassifier::intern(const cache::CacheKey& key, EventBatch& out) {
  // index_ holds the first question of each hash; equal hashes (2^-64 per pair) chain by next.
  const auto id = static_cast<uint32_t>(questions_.size());
  auto [first, fresh] = index_.try_emplace(key.hash, id);
  if (!fresh) {
    uint32_t i = *first;
    for (;;) {
      if (questions_[i].key == key) return i;
      if (questions_[i].next == UINT32_MAX) break;
      i = questions_[i].next;
    }
    questions_[i].next = id;
  }
  questions_.push_back(Question{key, UINT32_MAX});
  out.new_questions.push_back(key);
  return id;
}

std::optional<uint32_t> EventClassifier::known_query(std::span<const uint8_t> message) const {
  if (message.size() < 12 || message.size() > kMaxKnownQueryBytes) return std::nullopt;
  const std::string_view tail(reinterpret_cast<const char*>(message.data()) + 2,
                              message.size() - 2);
  const uint32_t* k = known_index_.find(std::hash<std::string_view>{}(tail));
  if (k == nullptr) return std::nullopt;
  const KnownQuery& e = known_[*k];
  // Another byte string with the same hash: parsed, as a new one is.
  const uint8_t* bytes = e.len <= KnownQuery::kInline ? e.bytes : query_arena_.data() + e.offset;
  if (e.len != tail.size() || std::memcmp(bytes, tail.data(), e.len) != 0) return std::nullopt;
  return e.q;
}

void EventClassifier::remember_query(std::span<const uint8_t> message, uint32_t q) {
  if (message.size() < 12 || message.size() > kMaxKnownQueryBytes ||
      known_.size() >= kMaxKnownQueries || query_arena_.size() >= kMaxKnownQueryArena)
    return;
  const std::string_view tail(reinterpret_cast<const char*>(message.data()) + 2,
                              message.size() - 2);
  const auto [k, fresh] = known_index_.try_emplace(std::hash<std::string_view>{}(tail),
                                                   static_cast<uint32_t>(known_.size()));
  if (!fresh) return;  // the hash belongs to other bytes: this one stays unremembered
  KnownQuery& e = known_.emplace_back();
  e.q = q;
  e.len = static_cast<uint32_t>(tail.size());
  if (tail.size() <= KnownQuery::kInline) {
    std::memcpy(e.bytes, tail.data(), tail.size());
  } else {
    e.offset = query_arena_.size();
    query_arena_.insert(query_arena_.end(), tail.begin(), tail.end());
  }
}

const EventClassifier::Layout* EventClassifier::known_response(std::span<const uint8_t> message,
                                                               uint64_t& slot) const {
  const std::size_t qend = question_end(message);
  if (qend == 0) {
    slot = 0;
    return nullptr;
  }
  slot = std::hash<std::string_view>{}(
             std::string_view(reinterpret_cast<const char*>(message.data()) + 2, qend - 2)) |
         1;  // 0: not to be remembered
  const uint32_t* at = layout_index_.find(slot);
  if (at == nullptr) return nullptr;
  const Layout& l = layouts_[*at];
  if (!same_but_id_and_ttls(std::span<const uint8_t>(l.bytes), message,
                            std::span<const RecordTtl>(l.records)))
    return nullptr;
  return &l;
}

void EventClassifier::classify(const TraceEvent& ev, EventBatch& out) {
  ClassifiedEvent& c = out.events.emplace_back();
  c.time_ns = ev.time_ns;
  c.query_time_ns = ev.query_time_ns;
  c.side = ev.side;
  c.role = ev.role;
  // A client query only needs its question; the same bytes (but the ID) give the same one.
  if (ev.side == Side::Client && ev.role == Role::Query) {
    if (const auto known = known_query(ev.message)) {
      c.q = *known;
      return;
    }
  }
  uint64_t slot = 0;
  const Layout* layout = nullptr;
  if (ev.role == Role::Response) layout = known_response(ev.message, slot);
  if (layout != nullptr) {
    c.q = layout->q;
    c.id = static_cast<uint16_t>((ev.message[0] << 8) | ev.message[1]);
    c.content =
        (uint64_t{static_cast<uint32_t>(layout - layouts_.data())} + 1) << 32 | layout->version;
  } else {
    if (!msg_.parse(ev.message, wire::ParseMode::Lenient) || msg_.questions().empty()) {
      c.undecodable = true;
      return;
    }
    const cache::CacheKey key = cache::CacheKey::from_query(msg_);
    c.q = intern(key, out);
    c.id = msg_.header().id;
    if (ev.side == Side::Client && ev.role == Role::Query) remember_query(ev.message, c.q);
    if (ev.role == Role::Response) {
      records_scratch_.clear();
      for (const wire::RecordView& rr : msg_.records())
        records_scratch_.push_back({rr.ttl_offset, rrset_hash(msg_, rr)});
      if (slot != 0) {
        auto [at, fresh] = layout_index_.try_emplace(slot, static_cast<uint32_t>(layouts_.size()));
        if (fresh) layouts_.emplace_back();
        Layout& l = layouts_[*at];
        l.q = c.q;
        ++l.version;
        l.bytes.assign(ev.message.begin(), ev.message.end());
        l.records = records_scratch_;
        c.content = (uint64_t{*at} + 1) << 32 | l.version;
      }
    }
  }
  if (ev.role != Role::Response) return;
  const std::vector<RecordTtl>& records = layout != nullptr ? layout->records : records_scratch_;
  c.message_offset = static_cast<uint32_t>(out.bytes.size());
  c.message_size = static_cast<uint32_t>(ev.message.size());
  out.bytes.insert(out.bytes.end(), ev.message.begin(), ev.message.end());
  c.records_offset = static_cast<uint32_t>(out.records.size());
  c.records_size = static_cast<uint32_t>(records.size());
  out.records.insert(out.records.end(), records.begin(), records.end());
}

void ReplayEngine::add(const TraceEvent& ev) {
  one_.clear();
  classifier_.classify(ev, one_);
  apply(one_);
}

void ReplayEngine::push_pending(int64_t time_ns, uint32_t q) {
  const Pending p{time_ns, seq_++, q};
  auto pos = pending_.end();
  while (pos != pending_.begin() && p < *std::prev(pos))
    --pos;
  pending_.insert(pos, p);
}

void ReplayEngine::prefetch_state(uint32_t q) const noexcept {
  if (q >= states_.size()) return;
  const QState& s = states_[q];
  const char* const begin = reinterpret_cast<const char*>(&s);
  __builtin_prefetch(begin);
  for (const char* line = reinterpret_cast<const char*>(&s.key.hash); line < begin + sizeof(QState);
       line += 64)
    __builtin_prefetch(line);
}

void ReplayEngine::apply(const EventBatch& batch) {
  // The classifier numbers questions in order of first appearance, batch after batch.
  for (const cache::CacheKey& key : batch.new_questions)
    states_.emplace_back().key = key;
  // With many names the replay waits on memory more than it computes: the states of the
  // events a few places ahead are fetched while this one is handled.
  constexpr std::size_t kAhead = 8;
  for (std::size_t i = 0; i < std::min(kAhead, batch.events.size()); ++i)
    prefetch_state(batch.events[i].q);
  for (std::size_t i = 0; i < batch.events.size(); ++i) {
    const ClassifiedEvent& ev = batch.events[i];
    if (i + kAhead < batch.events.size()) prefetch_state(batch.events[i + kAhead].q);
    ++events_;
    if (!started_) {
      started_ = true;
      result_.first_ns = ev.time_ns;
      result_.last_ns = ev.time_ns;
      latest_ns_ = ev.time_ns;
      for (auto& r : config_.schedule) {
        if (r.when == ScheduleRule::When::FromStart) {
          r.at_ns = base::add_ns(r.at_ns, result_.first_ns);
          r.when = ScheduleRule::When::Absolute;
        }
        if (r.when == ScheduleRule::When::Absolute) result_.switch_ns.push_back(r.at_ns);
      }
      result_.rule_matched.assign(config_.schedule.size(), 0);
      result_.old_copies_until_ns.assign(config_.schedule.size(), INT64_MIN);
      for (const auto& r : config_.schedule)
        result_.rule_at_ns.push_back(r.when == ScheduleRule::When::Always ? INT64_MIN : r.at_ns);
      std::sort(result_.switch_ns.begin(), result_.switch_ns.end());
      result_.switch_ns.erase(std::unique(result_.switch_ns.begin(), result_.switch_ns.end()),
                              result_.switch_ns.end());
    }
    latest_ns_ = std::max(latest_ns_, ev.time_ns);
    result_.last_ns = latest_ns_;
    if (ev.undecodable) {
      ++result_.undecodable;
      continue;
    }
    const std::span<const uint8_t> message(batch.bytes.data() + ev.message_offset, ev.message_size);
    const std::span<const RecordTtl> records(batch.records.data() + ev.records_offset,
                                             ev.records_size);
    QState& s = states_[ev.q];
    if (ev.side == Side::Upstream) {
      any_forwarder_ = true;
      if (ev.role == Role::Query) {
        ++result_.recorded_upstream;
        ++s.recorded_upstream;
        if (s.first_fwd_query_ns == INT64_MIN) s.first_fwd_query_ns = ev.time_ns;
        s.last_fwd_query_ns = ev.time_ns;
        s.last_fwd_id = ev.id;
      } else {
        ++result_.recorded_upstream_responses;
        int64_t rtt = -1;
        if (ev.query_time_ns > 0) {
          rtt = ev.time_ns - ev.query_time_ns;
        } else if (s.last_fwd_query_ns != INT64_MIN && s.last_fwd_id == ev.id) {
          rtt = ev.time_ns - s.last_fwd_query_ns;
        }
        if (rtt >= 0 && rtt < 60 * kSec) {
          ++result_.rtt_samples;
          if (rtt_samples_.size() < kRttReservoir) {
            rtt_samples_.push_back(rtt);
          } else {
            std::uniform_int_distribution<uint64_t> pick(0, result_.rtt_samples - 1);
            const uint64_t j = pick(rng_[0]);
            if (j < kRttReservoir) rtt_samples_[j] = rtt;
          }
        }
        on_response(ev, message, records);
      }
    } else if (ev.role == Role::Query) {
      push_pending(ev.time_ns, ev.q);
    } else {
      ++result_.responses;
      on_response(ev, message, records);
    }
    drain(latest_ns_ - config_.lookahead_ns);
  }
}

void ReplayEngine::on_response(const ClassifiedEvent& ev, std::span<const uint8_t> message,
                               std::span<const RecordTtl> records) {
  QState& s = states_[ev.q];
  const bool upstream = ev.side == Side::Upstream;
  for (const RecordTtl& rr : records) {
    const uint64_t h = rr.rrset;
    const uint32_t v = cache::sanitize_ttl(base::load_u32(message.data() + rr.ttl_offset));
    auto it = std::find_if(s.rrsets.begin(), s.rrsets.end(),
                           [h](const RrsetTtl& x) { return x.hash == h; });
    if (it == s.rrsets.end()) {
      s.rrsets.push_back({h, v, ev.time_ns, v});
      continue;
    }
    it->max_ttl = std::max(it->max_ttl, v);
    // A recorder's cache answer counts down from the TTL its lifetime began with; an answer
    // above that countdown (by more than a second of rounding) began a new lifetime: the
    // recorder asked upstream again, and this is the upstream's TTL. FORWARDER answers are
    // the upstream's TTL by definition.
    const int64_t elapsed_s = (ev.time_ns - it->lifetime_start_ns) / kSec;
    const int64_t expected = int64_t{it->lifetime_ttl} - elapsed_s;
    if (upstream || int64_t{v} > expected + 1) {
      it->lifetime_ttl = v;
      it->lifetime_start_ns = ev.time_ns;
    }
  }
  // Keep the latest response at or before what has been replayed, and everything after it.
  while (s.responses.size() >= 2 &&
         (s.responses[1].time_ns <= replayed_ns_ || s.responses.size() >= kMaxStoredPerQuestion))
    s.responses.pop_front();
  // The same answer again (only the ID and the TTLs differ: a recorder's cache hits) widens
  // the last stored one's time span instead of storing a copy; which of the copies a miss
  // takes changes nothing, its TTLs are recovered from the RRsets' lifetimes anyway.
  if (!s.responses.empty()) {
    Stored& last = s.responses.back();
    if (last.time_last_ns <= ev.time_ns && last.from_upstream == upstream &&
        ((ev.content != 0 && ev.content == last.content) ||
         same_but_id_and_ttls(std::span<const uint8_t>(last.bytes), message, records))) {
      last.time_last_ns = ev.time_ns;
      return;
    }
  }
  Stored st{ev.time_ns, ev.time_ns, upstream, ev.content, {}};
  st.bytes.assign(message.begin(), message.end());
  // Out-of-order responses go to their place (rare; a deque keeps this cheap at the end).
  auto pos = s.responses.end();
  while (pos != s.responses.begin() && std::prev(pos)->time_ns > ev.time_ns)
    --pos;
  s.responses.insert(pos, std::move(st));
}

void ReplayEngine::start() {
  replaying_ = true;
  if (config_.upstream_rtt_ns) {
    result_.upstream_rtt_ns = *config_.upstream_rtt_ns;
  } else if (!rtt_samples_.empty()) {
    result_.upstream_rtt_ns = median(rtt_samples_);
    result_.rtt_measured = true;
  } else {
    result_.upstream_rtt_ns = kDefaultRtt;
  }
  for (const auto& [zone, cap] : config_.ttl_caps)
    caches_[1]->set_ttl_cap(zone, cap, ctime(result_.first_ns));
}

void ReplayEngine::drain(int64_t up_to_ns) {
  // The default RTT is the median of the recorder's FORWARDER pairs: gather some before the
  // first query is replayed (the queries wait, up to a minute of trace time).
  if (!replaying_ && !force_ && !config_.upstream_rtt_ns &&
      rtt_samples_.size() < kRttWarmupSamples &&
      latest_ns_ - result_.first_ns < kRttWarmup + config_.lookahead_ns)
    return;
  while (!pending_.empty() && pending_.front().time_ns <= up_to_ns) {
    if (!replaying_) start();
    const Pending p = pending_.front();
    pending_.pop_front();
    if (pending_.size() > 8) prefetch_state(pending_[8].q);
    replayed_ns_ = std::max(replayed_ns_, p.time_ns);
    replay_query(p);
  }
}

const ReplayEngine::Stored* ReplayEngine::nearest(QState& s, int64_t t) {
  auto& r = s.responses;
  while (r.size() >= 2 && r[1].time_ns <= t)
    r.pop_front();
  if (r.empty()) return nullptr;
  if (r[0].time_ns > t || r.size() == 1) return &r[0];
  // r[0] begins at or before t, r[1] after it: the nearer one, the earlier on a tie.
  const int64_t d0 = t <= r[0].time_last_ns ? 0 : t - r[0].time_last_ns;
  return (r[1].time_ns - t) < d0 ? &r[1] : &r[0];
}

void ReplayEngine::mark_rules(const wire::Name& owner) {
  for (std::size_t i = 0; i < config_.schedule.size(); ++i) {
    if (!result_.rule_matched[i] && owner.is_subdomain_of(config_.schedule[i].zone)) {
      result_.rule_matched[i] = 1;
    }
  }
}

void ReplayEngine::note_old_copy(const wire::Message& m, int64_t t, int64_t at) {
  // The entry lives as long as its shortest record (the cache's rule), at most the cache's
  // ceiling; it is an old copy for each rule not yet in force at t that would lower a record.
  const std::size_t n =
      m.section(wire::Section::Answer).size() + m.section(wire::Section::Authority).size();
  const auto records = m.records().first(n);  // answer, then authority (OPT is not among them)
  uint32_t shortest = UINT32_MAX;
  for (const wire::RecordView& rr : records)
    shortest = std::min(shortest, rr.ttl);
  if (shortest == UINT32_MAX) return;
  const int64_t expiry = at + static_cast<int64_t>(std::min(shortest, config_.ttl.max_ttl)) * kSec;
  for (std::size_t i = 0; i < config_.schedule.size(); ++i) {
    const ScheduleRule& rule = config_.schedule[i];
    if (rule.when == ScheduleRule::When::Always || rule.at_ns <= t) continue;
    if (result_.old_copies_until_ns[i] >= expiry) continue;
    bool lowered = false;
    for (const wire::RecordView& rr : records)
      lowered = lowered || (rr.ttl > rule.ttl && m.owner(rr).is_subdomain_of(rule.zone));
    if (lowered) result_.old_copies_until_ns[i] = expiry;
  }
}

std::optional<uint32_t> ReplayEngine::cap_at(const wire::Name& owner, int64_t t) const {
  std::optional<uint32_t> best;
  for (const auto& r : config_.schedule) {
    if (r.when != ScheduleRule::When::Always && t < r.at_ns) continue;
    if (!owner.is_subdomain_of(r.zone)) continue;
    if (!best || r.ttl < *best) best = r.ttl;
  }
  return best;
}

uint32_t ReplayEngine::recovered_ttl(const QState& s, uint64_t rrset, uint32_t wire_ttl) const {
  for (const RrsetTtl& r : s.rrsets)
    if (r.hash == rrset) return r.lifetime_ttl;
  return cache::sanitize_ttl(wire_ttl);
}

bool ReplayEngine::was_cached(const QState& s, const Stored& r, int64_t t) {
  if (any_forwarder_) {
    // The recorder's upstream is in the trace: a first client query it did not forward
    // within a second was answered from its cache.
    return !(s.first_fwd_query_ns != INT64_MIN && s.first_fwd_query_ns >= t - kForwarderWindow &&
             s.first_fwd_query_ns <= t + kForwarderWindow);
  }
  // Only client traffic: an answer whose TTL is below the largest seen for its RRset had
  // been counting down in the recorder's cache.
  if (r.from_upstream || !scratch_msg_.parse(r.bytes, wire::ParseMode::Lenient)) return false;
  for (const wire::RecordView& rr : scratch_msg_.records()) {
    const uint64_t h = rrset_hash(scratch_msg_, rr);
    for (const RrsetTtl& x : s.rrsets)
      if (x.hash == h && cache::sanitize_ttl(rr.ttl) < x.max_ttl) return true;
  }
  return false;
}

void ReplayEngine::seed(QState& s, const Stored& r, int64_t t) {
  for (int run = 0; run < 2; ++run) {
    // Made fit for the cache as the daemon does with an upstream answer (re-encoded by our
    // writer, OPT dropped), then each record gets the TTL this run's cache would see.
    if (normalizer_.normalize(r.bytes) != wire::NormalizeStatus::Ok) return;
    const wire::Message& m = normalizer_.message();
    for (std::size_t i = 0; i < m.records().size(); ++i) {
      const wire::RecordView& rr = m.records()[i];
      uint32_t ttl = cache::sanitize_ttl(rr.ttl);
      if (run == 1) {
        const wire::Name owner = m.owner(rr);
        mark_rules(owner);
        if (auto cap = cap_at(owner, t)) ttl = std::min(ttl, *cap);
      }
      normalizer_.set_ttl(i, ttl);
    }
    if (run == 1) note_old_copy(m, t, t);
    (void)caches_[run]->insert(s.key, m, ctime(t));
  }
}

void ReplayEngine::fetch(int run, QState& s, int64_t t_query, int64_t at) {
  const Stored* r = nearest(s, t_query);
  if (r == nullptr) {
    if (run == 0) ++result_.unanswered_misses;
    return;
  }
  if (normalizer_.normalize(r->bytes) != wire::NormalizeStatus::Ok) return;
  const wire::Message& m = normalizer_.message();
  for (std::size_t i = 0; i < m.records().size(); ++i) {
    const wire::RecordView& rr = m.records()[i];
    const wire::Name owner = m.owner(rr);
    uint32_t ttl = recovered_ttl(s, rrset_hash(owner, rr.type, rr.klass), rr.ttl);
    if (run == 1) {
      mark_rules(owner);
      if (auto cap = cap_at(owner, t_query)) ttl = std::min(ttl, *cap);
    }
    normalizer_.set_ttl(i, ttl);
  }
  if (run == 1) note_old_copy(m, t_query, at);
  (void)caches_[run]->insert(s.key, m, ctime(at));
}

void ReplayEngine::count_upstream(int run, QState& s, int64_t t, bool prefetch) {
  RunState& rs = s.run[run];
  ++rs.counts.upstream;
  if (prefetch) ++rs.counts.prefetches;
  RunCounts& total = run == 0 ? result_.before : result_.after;
  ++total.upstream;
  if (prefetch) ++total.prefetches;
  const int64_t b = std::max<int64_t>(0, (t - result_.first_ns) / config_.bucket_ns);
  auto& series = run == 0 ? result_.buckets_before : result_.buckets_after;
  if (series.size() <= static_cast<std::size_t>(b)) series.resize(static_cast<std::size_t>(b) + 1);
  ++series[static_cast<std::size_t>(b)];
  if (rs.bucket != b) {
    rs.bucket = b;
    rs.bucket_count = 0;
  }
  rs.counts.peak_bucket = std::max(rs.counts.peak_bucket, ++rs.bucket_count);
}

void ReplayEngine::replay_run(int run, QState& s, int64_t t) {
  RunState& rs = s.run[run];
  if (t < rs.inflight_until) {
    ++rs.counts.coalesced;
    ++(run == 0 ? result_.before : result_.after).coalesced;
    return;
  }
  const cache::Time now = ctime(t);
  const cache::Hit hit = caches_[run]->lookup(s.key, now);
  if (hit.freshness == cache::Freshness::Fresh) {
    if (!config_.prefetch) return;
    const cache::Entry& e = *hit.entry;
    const double window = caches_[run]->settings().prefetch_window;
    const auto ttl_ms = static_cast<double>((e.expires_at() - e.inserted_at()).count());
    const auto left_ms = static_cast<double>((e.expires_at() - now).count());
    if (left_ms >= ttl_ms * window) return;  // the draw only inside the window, as the cache
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    if (cache::prefetch_due(e.inserted_at(), e.expires_at(), now, window, u01(rng_[run])) &&
        e.try_claim_prefetch()) {
      count_upstream(run, s, t, true);
      // The refresh lands rtt later; clients keep hitting the old entry meanwhile.
      fetch(run, s, t, t + result_.upstream_rtt_ns);
    }
    return;
  }
  // Miss, or stale (the daemon refreshes first and never fails here): ask upstream.
  count_upstream(run, s, t, false);
  rs.inflight_until = t + result_.upstream_rtt_ns;
  fetch(run, s, t, t + result_.upstream_rtt_ns);
}

void ReplayEngine::replay_query(const Pending& p) {
  QState& s = states_[p.q];
  const int64_t t = p.time_ns;
  ++result_.queries;
  if (s.queries == 0) mark_rules(s.key.qname);
  if (++s.queries == 1) {
    if (const Stored* r = nearest(s, t); r != nullptr && was_cached(s, *r, t)) {
      seed(s, *r, t);
      ++result_.warm_entries;
    }
  }
  replay_run(0, s, t);
  replay_run(1, s, t);
}

ReplayResult ReplayEngine::finish() {
  force_ = true;
  drain(INT64_MAX);
  if (!replaying_) start();
  result_.rtt_median_all_ns = median(rtt_samples_);
  for (auto* series : {&result_.buckets_before, &result_.buckets_after}) {
    // Both series span the whole trace, so a plot and the mean QPS use the same length.
    const auto n = static_cast<std::size_t>(
        std::max<int64_t>(0, (result_.last_ns - result_.first_ns) / config_.bucket_ns) + 1);
    if (series->size() < n) series->resize(n);
  }
  for (uint64_t v : result_.buckets_before)
    result_.before.peak_bucket = std::max(result_.before.peak_bucket, v);
  for (uint64_t v : result_.buckets_after)
    result_.after.peak_bucket = std::max(result_.after.peak_bucket, v);

  // Per (name, qtype): DO/CD/class variants of one question are one line of the report.
  std::unordered_map<std::string, std::size_t> by_name;
  for (const QState& s : states_) {
    if (s.queries == 0 && s.recorded_upstream == 0) continue;
    std::string k(s.key.qname.wire().begin(), s.key.qname.wire().end());
    const auto t = static_cast<uint16_t>(s.key.qtype);
    k.push_back(static_cast<char>(t >> 8));
    k.push_back(static_cast<char>(t & 0xff));
    auto [it, fresh] = by_name.try_emplace(std::move(k), result_.names.size());
    if (fresh) {
      result_.names.emplace_back();
      result_.names.back().name = s.key.qname;
      result_.names.back().qtype = s.key.qtype;
    }
    NameReport& n = result_.names[it->second];
    n.queries += s.queries;
    n.recorded_upstream += s.recorded_upstream;
    for (int run = 0; run < 2; ++run) {
      RunCounts& dst = run == 0 ? n.before : n.after;
      const RunCounts& src = s.run[run].counts;
      dst.upstream += src.upstream;
      dst.prefetches += src.prefetches;
      dst.coalesced += src.coalesced;
      dst.peak_bucket = std::max(dst.peak_bucket, src.peak_bucket);
    }
  }
  result_.distinct_questions = result_.names.size();
  return std::move(result_);
}

ReadStatus replay_pipelined(TraceReader& reader, ReplayEngine& engine,
                            const std::function<void()>& on_batch) {
  // Batches of this many events go from the reading thread to this one; at most kBatches are
  // filled or being filled at once, so memory stays bounded whichever side is slower.
  constexpr std::size_t kBatchEvents = 4096;
  constexpr std::size_t kBatches = 8;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<EventBatch>> full, empty;
  for (std::size_t i = 0; i < kBatches; ++i)
    empty.push_back(std::make_unique<EventBatch>());
  bool done = false;
  ReadStatus status = ReadStatus::End;
  std::exception_ptr failure;
  EventClassifier& classifier = engine.classifier();

  std::thread reading([&] {
    try {
      TraceEvent ev;
      std::unique_ptr<EventBatch> b;
      for (;;) {
        if (!b) {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return !empty.empty(); });
          b = std::move(empty.front());
          empty.pop_front();
          b->clear();
        }
        const ReadStatus st = reader.next(ev);
        if (st == ReadStatus::Event) {
          classifier.classify(ev, *b);
          if (b->events.size() < kBatchEvents) continue;
        }
        {
          std::lock_guard lock(mu);
          full.push_back(std::move(b));
          b = nullptr;  // the next event takes another batch from `empty`
          if (st != ReadStatus::Event) {
            status = st;
            done = true;
          }
        }
        cv.notify_all();
        if (st != ReadStatus::Event) return;
      }
    } catch (...) {
      // Out of memory, most likely: stop, and let the applying thread rethrow it.
      {
        std::lock_guard lock(mu);
        failure = std::current_exception();
        done = true;
      }
      cv.notify_all();
    }
  });

  std::exception_ptr apply_failure;
  for (;;) {
    std::unique_ptr<EventBatch> b;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !full.empty() || done; });
      if (full.empty()) break;
      b = std::move(full.front());
      full.pop_front();
    }
    if (apply_failure == nullptr) {
      try {
        engine.apply(*b);
        if (on_batch) on_batch();
      } catch (...) {
        apply_failure = std::current_exception();  // keep taking batches: the reader must end
      }
    }
    {
      std::lock_guard lock(mu);
      empty.push_back(std::move(b));
    }
    cv.notify_all();
  }
  reading.join();
  if (apply_failure != nullptr) std::rethrow_exception(apply_failure);
  if (failure != nullptr) std::rethrow_exception(failure);
  return status;
}

std::optional<int64_t> parse_duration_ns(std::string_view text) {
  const auto d = base::parse_duration(text);
  if (!d || d->count() > std::numeric_limits<int64_t>::max() / kMs) return std::nullopt;
  return d->count() * kMs;
}

std::optional<ScheduleRule> parse_schedule(std::string_view text, std::string& why) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    why = "expected ZONE=TTL or ZONE=TTL@TIME";
    return std::nullopt;
  }
  ScheduleRule rule;
  auto zone = wire::Name::from_text(text.substr(0, eq));
  if (!zone) {
    why = "the zone is not a domain name";
    return std::nullopt;
  }
  rule.zone = zone->lowercased();
  std::string_view rest = text.substr(eq + 1);
  std::string_view when;
  const auto at = rest.find('@');
  if (at != std::string_view::npos) {
    when = rest.substr(at + 1);
    rest = rest.substr(0, at);
  }
  const auto ttl = parse_duration_ns(rest);
  if (!ttl || *ttl % kSec != 0 || *ttl / kSec > 0x7fffffff) {
    why = "the TTL must be whole seconds (60, 90s, 5m, 1h) up to 2147483647 s";
    return std::nullopt;
  }
  rule.ttl = static_cast<uint32_t>(*ttl / kSec);
  if (at != std::string_view::npos && when.empty()) {
    why = "nothing after '@': expected +DURATION, YYYY-MM-DDTHH:MM:SSZ or Unix seconds";
    return std::nullopt;
  }
  if (when.empty()) return rule;
  if (when.front() == '+') {
    const auto d = parse_duration_ns(when.substr(1));
    if (!d) {
      why = "the time after '@+' must be a duration (90s, 15m, 2h, 1d)";
      return std::nullopt;
    }
    rule.when = ScheduleRule::When::FromStart;
    rule.at_ns = *d;
    return rule;
  }
  if (when.find('T') != std::string_view::npos) {
    std::tm tm{};
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, n = 0;
    const std::string w(when);
    if (std::sscanf(w.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
        (static_cast<std::size_t>(n) != w.size() &&
         !(static_cast<std::size_t>(n) + 1 == w.size() && w.back() == 'Z')) ||
        mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
      why = "the time must be YYYY-MM-DDTHH:MM:SSZ (UTC)";
      return std::nullopt;
    }
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    // Years up to 9999 parse, but past ~2255 a time no longer fits int64 nanoseconds.
    const auto at_ns = base::unix_ns(timegm(&tm), 0);
    if (!at_ns) {
      why = "the time must be between 1970 and 2255";
      return std::nullopt;
    }
    rule.when = ScheduleRule::When::Absolute;
    rule.at_ns = *at_ns;
    return rule;
  }
  uint64_t unix_s = 0;
  auto [p, ec] = std::from_chars(when.data(), when.data() + when.size(), unix_s);
  if (ec != std::errc{} || p != when.data() + when.size() || !base::unix_ns(unix_s, 0)) {
    why =
        "the time must be +DURATION (after the trace's start), YYYY-MM-DDTHH:MM:SSZ or Unix "
        "seconds";
    return std::nullopt;
  }
  rule.when = ScheduleRule::When::Absolute;
  rule.at_ns = *base::unix_ns(unix_s, 0);
  return rule;
}

}  // namespace hg::rehearse
