// ReplayEngine: see engine.h and docs/rehearsal.md.
#include "tools/rehearse/replay/engine.h"

#include <algorithm>
#include <climits>
#include <string>
#include <unordered_map>

#include "base/bytes.h"
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

}  // namespace hg::rehearse
