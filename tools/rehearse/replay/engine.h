// ReplayEngine: recorded client traffic through the real cache, at today's TTLs and at planned
// ones, in one streaming pass. See docs/rehearsal.md for the model and every rule below.
//
//   ReplayEngine engine(config);
//   while (reader.next(ev) == ReadStatus::Event) engine.add(ev);   // events in time order
//   ReplayResult r = engine.finish();
//
// Two hg::cache::Cache instances ("before" and "after") see the same client queries at the
// trace's own times. A query that misses (or finds only a stale entry) counts one upstream
// query, and the recorded response for that question nearest in time is inserted
// `upstream_rtt` later; queries for the same question meanwhile are coalesced onto it. The
// "before" cache gets that response with its TTLs recovered to what the upstream gave (the
// TTL that began the recorder's current cache lifetime of the RRset, see docs/rehearsal.md);
// the "after"
// cache gets the same TTLs lowered by the schedule in force at that moment, and has the
// --ttl-cap caps set. Prefetch follows the daemon's rule (cache::prefetch_due with the cache's
// window, one claim per entry) with a seeded generator, so a replay is reproducible.
//
// The first stage, which reads the DNS messages, is EventClassifier (classifier.h);
// replay_pipelined (pipeline.h) runs the two stages on two threads; the --schedule rules
// and their grammar are in schedule.h.
//
// Memory: one state per distinct question (with the responses seen in the last
// `lookahead` of trace time and the recovered TTL of each RRset), plus the two caches and
// the per-bucket series; never a copy of the whole trace.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "cache/cache.h"
#include "cache/key.h"
#include "tools/rehearse/replay/classifier.h"
#include "tools/rehearse/replay/schedule.h"
#include "tools/rehearse/trace/trace.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/reencode.h"
#include "wire/types.h"

namespace hg::rehearse {

struct ReplayConfig {
  std::vector<ScheduleRule> schedule;
  std::vector<std::pair<wire::Name, uint32_t>> ttl_caps;  ///< --ttl-cap, "after" run only
  std::size_t cache_bytes = std::size_t{64} << 20;
  bool prefetch = true;
  std::optional<int64_t> upstream_rtt_ns;  ///< unset: the median FORWARDER RTT, else 20 ms
  int64_t bucket_ns = 1'000'000'000;
  /// How far the reader runs ahead of the replay, so that a miss can use a response recorded
  /// just after it ("nearest in time") and events slightly out of order are put right.
  int64_t lookahead_ns = 5'000'000'000;
  uint64_t seed = 1;  ///< prefetch draws
  cache::TtlSettings ttl{};
};

/// Counts for one run (before or after) of one question or of the whole trace.
struct RunCounts {
  uint64_t upstream = 0;     ///< misses and prefetches sent upstream
  uint64_t prefetches = 0;   ///< of which prefetch refreshes
  uint64_t coalesced = 0;    ///< client queries that waited on an outstanding miss
  uint64_t peak_bucket = 0;  ///< most upstream queries in one bucket
};
struct NameReport {
  wire::Name name;  ///< lowercased
  wire::RRType qtype = wire::RRType::A;
  uint64_t queries = 0;
  uint64_t recorded_upstream = 0;  ///< FORWARDER_QUERY seen for this question
  RunCounts before, after;
};

struct ReplayResult {
  uint64_t queries = 0;            ///< client queries replayed
  uint64_t responses = 0;          ///< client responses read
  uint64_t recorded_upstream = 0;  ///< FORWARDER_QUERY events (the recorder's own misses)
  uint64_t recorded_upstream_responses = 0;
  uint64_t undecodable = 0;        ///< messages that are not DNS, or have no question: skipped
  uint64_t unanswered_misses = 0;  ///< misses with no recorded response for the question at all
  uint64_t warm_entries = 0;       ///< questions the recorder already had cached at first sight
  uint64_t distinct_questions = 0;
  int64_t first_ns = 0, last_ns = 0;
  int64_t bucket_ns = 1'000'000'000;
  int64_t upstream_rtt_ns = 0;
  bool rtt_measured = false;      ///< the RTT used is the median of FORWARDER pairs
  uint64_t rtt_samples = 0;       ///< FORWARDER query/response pairs measured (whole trace)
  int64_t rtt_median_all_ns = 0;  ///< their median over the whole trace
  RunCounts before, after;
  std::vector<uint64_t> buckets_before, buckets_after;  ///< upstream queries per bucket
  std::vector<int64_t> switch_ns;  ///< schedule switch times inside the trace (absolute ns)
  /// Per --schedule rule (in order): whether a question's name or a fetched record's owner
  /// was at or below its zone. A rule that matched nothing changed nothing (a typo?).
  std::vector<uint8_t> rule_matched;
  /// Per --schedule rule: when it switches (absolute ns; INT64_MIN for a rule without a time),
  /// and the latest moment a copy the "after" run fetched before that switch, with a TTL the
  /// rule lowers, is still cached (INT64_MIN: none). After both, the rule is fully in force.
  std::vector<int64_t> rule_at_ns, old_copies_until_ns;
  /// The start of the settled window: the last switch inside the trace, or later when copies
  /// older than a switch (up to that one) outlive it. nullopt: no timed switch inside the
  /// trace, or the old copies outlive the trace.
  std::optional<int64_t> settled_from_ns() const noexcept;
  std::vector<NameReport> names;  ///< per (name, qtype), unordered
  bool has_forwarder() const noexcept { return recorded_upstream > 0; }
  double duration_s() const noexcept;
};

class ReplayEngine {
 public:
  explicit ReplayEngine(const ReplayConfig& config);
  ~ReplayEngine();
  ReplayEngine(const ReplayEngine&) = delete;
  ReplayEngine& operator=(const ReplayEngine&) = delete;

  /// Feeds one event (events in time order; small disorder within the lookahead is fine):
  /// classifier().classify, then apply.
  void add(const TraceEvent& ev);
  /// Feeds events the classifier returned, in order. Every batch must come from classifier().
  void apply(const EventBatch& batch);
  /// The first stage. add() uses it; replay_pipelined hands it to the reading thread, which
  /// then is the only one to touch it (apply never does).
  EventClassifier& classifier() noexcept { return classifier_; }
  /// Replays what is still pending and returns the figures. Call once.
  ReplayResult finish();

  uint64_t events() const noexcept { return events_; }
  uint64_t replayed() const noexcept { return result_.queries; }
  int64_t now_ns() const noexcept { return latest_ns_; }
  int64_t first_ns() const noexcept { return result_.first_ns; }

 private:
  struct Stored {
    int64_t time_ns;       // first recorded
    int64_t time_last_ns;  // last recorded (the same answer, seen again)
    bool from_upstream;    // FORWARDER_RESPONSE: TTLs as the upstream gave them
    uint64_t content;      // ClassifiedEvent::content
    std::vector<uint8_t> bytes;
  };
  // The TTL recovery of one RRset (docs/rehearsal.md § TTL recovery): the TTL that started the
  // recorder's current cache lifetime of it, when that was seen, and the largest TTL seen.
  struct RrsetTtl {
    uint64_t hash;
    uint32_t lifetime_ttl;
    int64_t lifetime_start_ns;
    uint32_t max_ttl;
  };
  struct RunState {
    int64_t inflight_until = INT64_MIN;
    int64_t bucket = -1;
    uint64_t bucket_count = 0;
    RunCounts counts;
  };
  struct QState {
    cache::CacheKey key;
    uint64_t queries = 0;
    uint64_t recorded_upstream = 0;
    int64_t first_fwd_query_ns = INT64_MIN;
    int64_t last_fwd_query_ns = INT64_MIN;
    uint16_t last_fwd_id = 0;
    std::deque<Stored> responses;
    std::vector<RrsetTtl> rrsets;
    RunState run[2];
  };
  // A client query waiting to be replayed (lookahead_ns after it was read), in order of time
  // and then of arrival.
  struct Pending {
    int64_t time_ns;
    uint64_t seq;
    uint32_t q;
    friend bool operator<(const Pending& a, const Pending& b) noexcept {
      return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.seq < b.seq;
    }
  };
  void push_pending(int64_t time_ns, uint32_t q);
  /// Asks the CPU for the cache lines of question q's state that the replay reads (the name at
  /// the start of the key; its hash and the counters after it), some events ahead of use.
  void prefetch_state(uint32_t q) const noexcept;
  void on_response(const ClassifiedEvent& ev, std::span<const uint8_t> message,
                   std::span<const RecordTtl> records);
  void drain(int64_t up_to_ns);
  void start();
  void replay_query(const Pending& p);
  void replay_run(int run, QState& s, int64_t t);
  void count_upstream(int run, QState& s, int64_t t, bool prefetch);
  /// Inserts the nearest recorded response into run's cache at `at` with TTLs per the run.
  void fetch(int run, QState& s, int64_t t_query, int64_t at);
  const Stored* nearest(QState& s, int64_t t);
  std::optional<uint32_t> cap_at(const wire::Name& owner, int64_t t) const;
  uint32_t recovered_ttl(const QState& s, uint64_t rrset, uint32_t wire_ttl) const;
  bool was_cached(const QState& s, const Stored& r, int64_t t);
  void seed(QState& s, const Stored& r, int64_t t);
  /// Marks the rules whose zone `owner` is at or below (rule_matched).
  void mark_rules(const wire::Name& owner);
  /// For a copy the after run caches at `at` (query time t) with these records: if a rule that
  /// switches later would lower one of them, the copy's expiry extends old_copies_until_ns.
  void note_old_copy(const wire::Message& m, int64_t t, int64_t at);
  cache::Time ctime(int64_t t_ns) const noexcept;

  ReplayConfig config_;
  std::unique_ptr<cache::Cache> caches_[2];
  EventClassifier classifier_;
  EventBatch one_;  // add()'s batch of one
  std::vector<QState> states_;
  // Read but not yet replayed client queries. Traces are in time order, so nearly every one
  // goes at the back; a late one is put in its place (a heap cost a tenth of the replay).
  std::deque<Pending> pending_;
  std::vector<int64_t> rtt_samples_;
  std::mt19937_64 rng_[2];
  wire::Message scratch_msg_;
  wire::AnswerNormalizer normalizer_;  // recorded answers, made fit for the caches
  ReplayResult result_;
  uint64_t events_ = 0;
  uint64_t seq_ = 0;
  int64_t latest_ns_ = INT64_MIN;
  int64_t replayed_ns_ = INT64_MIN;  // time of the latest query replayed
  bool force_ = false;               // finish(): replay everything pending now
  bool started_ = false;             // first event seen: t0 known, relative schedule resolved
  bool replaying_ = false;           // RTT fixed, queries being replayed
  bool any_forwarder_ = false;
};

}  // namespace hg::rehearse
