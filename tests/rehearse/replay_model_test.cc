// The replay against theory and against a brute-force model:
// (a) Poisson traffic through the replay gives, per name, the renewal-theory upstream count
//     λ/(1+λT)·D within its statistical error;
// (b) on small random traces the replay's per-name counts equal, exactly, those of a
//     reference TTL cache written here from the definition.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "tests/rehearse/replay_test_util.h"
#include "tools/rehearse/replay/summary.h"

namespace hg::rehearse::testing {
namespace {

using cache::testing::nm;

// (a) For one name with Poisson queries at rate λ and a cache that sets its timer at a miss
// and does not reset it on hits, the time between two misses is T (the entry's life) plus the
// wait for the next query after expiry, which is Exp(λ) because Poisson arrivals forget the
// past. So misses form a renewal process with cycle mean μ = T + 1/λ and variance σ² = 1/λ².
// Over a trace of D seconds: E[N] ≈ D/μ = λD/(1+λT), and by the renewal central limit theorem
// Var[N] ≈ Dσ²/μ³. We accept |N − D/μ| ≤ 5·sd + 2 (5 standard deviations, and 2 for the
// partial cycles at the two ends). The seed is fixed, so the test is deterministic; the
// bound is what makes it meaningful: a replay that reset the timer on hits, or counted hits
// as misses, or used the wrong TTL, lands hundreds of sd away for the hot names.
TEST(ReplayModel, PoissonTrafficMatchesTheRenewalFormula) {
  const double rates[] = {0.01, 0.03, 0.1, 0.3, 1, 3, 10, 50};
  constexpr double kD = 10000;  // seconds
  constexpr uint32_t kOld = 3600, kNew = 60;
  TraceBuilder t;
  std::mt19937_64 rng(20260101);
  for (std::size_t i = 0; i < std::size(rates); ++i) {
    const std::string name = nm("n", static_cast<long>(i), ".example.com");
    std::exponential_distribution<double> gap(rates[i]);
    for (double s = gap(rng); s < kD; s += gap(rng)) {
      const auto ns = static_cast<int64_t>(s * 1e9);
      t.query(ns, name);
      t.answer(ns + kMs / 10, name, kOld);
    }
  }
  ReplayConfig c;
  c.prefetch = false;     // the plain TTL cache the formula describes
  c.upstream_rtt_ns = 0;  // and no coalescing window
  c.schedule.push_back(rule("example.com=60"));
  const ReplayResult r = t.run(c);

  for (std::size_t i = 0; i < std::size(rates); ++i) {
    const std::string name = nm("n", static_cast<long>(i), ".example.com");
    const NameReport* n = find(r, name);
    ASSERT_NE(n, nullptr) << name;
    const double lambda = rates[i];
    for (const auto& [ttl, got] :
         {std::pair{kOld, n->before.upstream}, {kNew, n->after.upstream}}) {
      const double mu = ttl + 1 / lambda;
      const double expect = kD / mu;  // = λ/(1+λT)·D
      const double sd = std::sqrt(kD / (lambda * lambda) / (mu * mu * mu));
      EXPECT_NEAR(static_cast<double>(got), expect, 5 * sd + 2)
          << name << " λ=" << lambda << " T=" << ttl << " sd=" << sd;
    }
  }
  // The load multiplier (1+λT_old)/(1+λT_new): about T_old/T_new = 60 for the hottest name,
  // (1+36)/(1+0.6) ≈ 23 for the coldest (whose before-count is only ~3, hence the slack).
  const NameReport* hot = find(r, "n7.example.com");
  EXPECT_GT(static_cast<double>(hot->after.upstream) / static_cast<double>(hot->before.upstream),
            40);
}

// (b) The reference: per question, a miss at t (ms) is in flight until t + rtt and the answer
// lives until t + rtt + TTL·1000; a query is coalesced while in flight, a hit before expiry,
// a miss otherwise. TTL after = min(TTL, cap) for names under the capped zone once the query
// time reaches the switch.
struct Reference {
  int64_t rtt_ms;
  int64_t switch_ms;
  uint32_t cap;
  struct State {
    int64_t inflight = INT64_MIN, expires = INT64_MIN;
    uint64_t upstream = 0, coalesced = 0;
  };
  std::map<std::string, State> runs[2];

  void query(int64_t ms, const std::string& name, uint32_t ttl, bool capped) {
    for (int run = 0; run < 2; ++run) {
      State& s = runs[run][name];
      if (ms < s.inflight) {
        ++s.coalesced;
      } else if (ms >= s.expires) {
        ++s.upstream;
        uint32_t t = ttl;
        if (run == 1 && capped && ms >= switch_ms) t = std::min(t, cap);
        s.inflight = ms + rtt_ms;
        s.expires = ms + rtt_ms + int64_t{t} * 1000;
      }
    }
  }
};

TEST(ReplayModel, SmallTracesAgreeExactlyWithABruteForceTtlCache) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    const uint32_t ttls[] = {0, 1, 5, 30, 300};
    const char* zones[] = {".example.com", ".other.net"};
    std::uniform_int_distribution<int64_t> when_ms(0, 3'600'000);
    std::uniform_int_distribution<int> pick_name(0, 7);
    std::uniform_int_distribution<int> pick_ttl(0, 4);
    std::uniform_int_distribution<int> pick_rtt(0, 50);
    std::map<std::string, uint32_t> ttl_of;
    for (int i = 0; i < 8; ++i)
      ttl_of[nm("h", i, zones[i % 2])] = ttls[pick_ttl(rng)];
    const int64_t rtt_ms = pick_rtt(rng);
    const int64_t switch_ms = when_ms(rng);
    const uint32_t cap = ttls[1 + pick_ttl(rng) % 4];

    // Query times: uniform, plus bursts inside the RTT to exercise coalescing.
    std::vector<std::pair<int64_t, std::string>> qs;
    for (int i = 0; i < 1500; ++i) {
      const std::string name = std::next(ttl_of.begin(), pick_name(rng))->first;
      const int64_t ms = when_ms(rng);
      qs.emplace_back(ms, name);
      if (i % 10 == 0) qs.emplace_back(ms + rtt_ms / 2, name);
    }
    std::stable_sort(qs.begin(), qs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // The first event fixes the trace's start: put one at 0 so ms offsets are exact.
    TraceBuilder t;
    t.query(0, "start.example.org").answer(1, "start.example.org", 60);
    Reference ref{rtt_ms, switch_ms, cap, {}};
    ref.query(0, "start.example.org", 60, false);
    for (const auto& [ms, name] : qs) {
      t.query(ms * kMs, name);
      t.answer(ms * kMs + kMs / 2, name, ttl_of[name]);
      ref.query(ms, name, ttl_of[name], name.ends_with(".example.com"));
    }
    ReplayConfig c;
    c.prefetch = false;
    c.upstream_rtt_ns = rtt_ms * kMs;
    c.schedule.push_back(rule(std::string("example.com=") + std::to_string(cap) + "@+" +
                              std::to_string(switch_ms) + "ms"));
    const ReplayResult r = t.run(c);
    uint64_t total[2] = {0, 0};
    for (const auto& [name, s] : ref.runs[0]) {
      const NameReport* n = find(r, name);
      ASSERT_NE(n, nullptr) << name;
      const auto& s1 = ref.runs[1].at(name);
      EXPECT_EQ(n->before.upstream, s.upstream) << "round " << round << " " << name;
      EXPECT_EQ(n->before.coalesced, s.coalesced) << "round " << round << " " << name;
      EXPECT_EQ(n->after.upstream, s1.upstream) << "round " << round << " " << name;
      EXPECT_EQ(n->after.coalesced, s1.coalesced) << "round " << round << " " << name;
      total[0] += s.upstream;
      total[1] += s1.upstream;
    }
    EXPECT_EQ(r.before.upstream, total[0]);
    EXPECT_EQ(r.after.upstream, total[1]);
    EXPECT_EQ(r.queries, qs.size() + 1);
  }
}

// (c) The settled window against the reference: after the last switch, once every copy the
// after run fetched before it with a TTL the switch lowers has run out, the after run holds
// only lowered TTLs. The reference computes that moment and the window's upstream counts and
// busiest 1 s bucket from its own miss times; the report's settled figures must equal them.
TEST(ReplayModel, SettledWindowFiguresEqualTheReference) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 10; ++round) {
    const uint32_t ttls[] = {5, 30, 120, 300, 600};
    std::uniform_int_distribution<int64_t> when_ms(0, 3'600'000);
    std::uniform_int_distribution<int> pick_name(0, 7);
    std::uniform_int_distribution<int> pick_ttl(0, 4);
    std::map<std::string, uint32_t> ttl_of;
    for (int i = 0; i < 8; ++i)
      ttl_of[nm("s", i, i % 2 ? ".example.com" : ".other.net")] = ttls[pick_ttl(rng)];
    const int64_t rtt_ms = 5;
    const int64_t switch_ms = 600'000 + when_ms(rng) / 3;  // 10 to 30 min into the hour
    const uint32_t cap = 10;

    std::vector<std::pair<int64_t, std::string>> qs;
    for (int i = 0; i < 4000; ++i)
      qs.emplace_back(when_ms(rng), std::next(ttl_of.begin(), pick_name(rng))->first);
    std::stable_sort(qs.begin(), qs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    TraceBuilder t;
    t.query(0, "start.example.org").answer(1, "start.example.org", 60);
    Reference ref{rtt_ms, switch_ms, cap, {}};
    ref.query(0, "start.example.org", 60, false);
    // The reference's own bookkeeping: every miss time per run, and when the last copy
    // fetched before the switch with a TTL above the cap (a name under example.com) expires.
    std::vector<int64_t> misses[2] = {{0}, {0}};
    int64_t old_until = INT64_MIN;
    int64_t last_event_ns = 1;
    for (const auto& [ms, name] : qs) {
      t.query(ms * kMs, name);
      t.answer(ms * kMs + kMs / 2, name, ttl_of[name]);
      last_event_ns = std::max(last_event_ns, ms * kMs + kMs / 2);
      const bool capped = name.ends_with(".example.com");
      uint64_t up_before[2] = {ref.runs[0][name].upstream, ref.runs[1][name].upstream};
      ref.query(ms, name, ttl_of[name], capped);
      for (int run = 0; run < 2; ++run) {
        if (ref.runs[run][name].upstream == up_before[run]) continue;
        misses[run].push_back(ms);
        if (run == 1 && capped && ms < switch_ms && ttl_of[name] > cap) {
          old_until = std::max(old_until, ms + rtt_ms + int64_t{ttl_of[name]} * 1000);
        }
      }
    }
    ReplayConfig c;
    c.prefetch = false;
    c.upstream_rtt_ns = rtt_ms * kMs;
    c.schedule.push_back(
        rule("example.com=" + std::to_string(cap) + "@+" + std::to_string(switch_ms) + "ms"));
    const ReplayResult r = t.run(c);

    // The reference window: from max(switch, old copies' end), rounded up to a whole second
    // (1 s buckets from the trace's start), to the last event.
    const int64_t from_ms = std::max(switch_ms, old_until);
    const int64_t b0 = (from_ms + 999) / 1000;
    std::map<int64_t, uint64_t> per_s[2];
    uint64_t count[2] = {0, 0};
    for (int run = 0; run < 2; ++run) {
      for (int64_t ms : misses[run]) {
        if (ms / 1000 < b0) continue;
        ++count[run];
        ++per_s[run][ms / 1000];
      }
    }
    uint64_t peak[2] = {0, 0};
    for (int run = 0; run < 2; ++run)
      for (const auto& [sec, n] : per_s[run])
        peak[run] = std::max(peak[run], n);
    const double secs = static_cast<double>(last_event_ns - b0 * kSec) / 1e9;

    ASSERT_TRUE(r.settled_from_ns().has_value()) << "round " << round;
    EXPECT_EQ(*r.settled_from_ns(), kT0 + from_ms * kMs) << "round " << round;
    const auto w = settled_figures(r);
    ASSERT_TRUE(w.has_value()) << "round " << round;
    EXPECT_EQ(w->from_ns, kT0 + b0 * kSec) << "round " << round;
    EXPECT_EQ(w->upstream_before, count[0]) << "round " << round;
    EXPECT_EQ(w->upstream_after, count[1]) << "round " << round;
    EXPECT_DOUBLE_EQ(w->peak_qps_before, static_cast<double>(peak[0])) << "round " << round;
    EXPECT_DOUBLE_EQ(w->peak_qps_after, static_cast<double>(peak[1])) << "round " << round;
    EXPECT_NEAR(w->mean_qps_before, static_cast<double>(count[0]) / secs, 1e-9);
    EXPECT_NEAR(w->mean_qps_after, static_cast<double>(count[1]) / secs, 1e-9);
    // Settled is where the lowered TTL shows in full: at least the whole trace's multiplier.
    EXPECT_GE(static_cast<double>(w->upstream_after) / static_cast<double>(w->upstream_before),
              static_cast<double>(r.after.upstream) / static_cast<double>(r.before.upstream) - 1e-9)
        << "round " << round;
  }
}

TEST(ReplayModel, ScheduleThatMatchesNothingOrSwitchesOutsideTheTraceIsWarned) {
  TraceBuilder t;
  for (int i = 0; i < 100; ++i) {
    t.query(i * kSec, "www.example.com");
    t.answer(i * kSec + kMs, "www.example.com", 40);
  }
  ReplayConfig c;
  c.upstream_rtt_ns = 0;
  c.schedule = {rule("exmaple.com=60@+10s"), rule("example.com=20@+2h"),
                rule("example.com=30@+50s")};
  const ReplayResult r = t.run(c);
  const auto w = schedule_warnings(r, c);
  ASSERT_EQ(w.size(), 2u) << ::testing::PrintToString(w);
  EXPECT_NE(w[0].find("--schedule exmaple.com.=60: no question or record"), std::string::npos)
      << w[0];
  EXPECT_NE(w[1].find("--schedule example.com.=20: switches at 2026-01-01T02:00:00Z, after the "
                      "trace ends"),
            std::string::npos)
      << w[1];
  EXPECT_EQ(r.rule_matched, (std::vector<uint8_t>{0, 1, 1}));
  // The rule past the end does not hold the settled window back: it starts when the last
  // copy fetched before the +50 s switch (TTL 40, a query every second, so at a whole second)
  // expires.
  int64_t last_before_switch = -1;
  for (int64_t b = 0; b < 50; ++b)
    if (r.buckets_after[static_cast<std::size_t>(b)] > 0) last_before_switch = b;
  ASSERT_GE(last_before_switch, 0);
  ASSERT_TRUE(r.settled_from_ns().has_value());
  EXPECT_EQ(*r.settled_from_ns(), kT0 + (last_before_switch + 40) * kSec);
}

}  // namespace
}  // namespace hg::rehearse::testing
