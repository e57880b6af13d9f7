// hourglass-rehearse synth: deterministic by seed, read back by the trace readers, and its
// recorder behaves as its model says — checked event by event against a brute-force TTL
// cache written here, and in aggregate against the renewal formula D / (1/λ + rtt + T).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/bytes.h"
#include "tests/rehearse/trace_test_util.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/trace/synth.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {
namespace {

using namespace test;

// The question name (uncompressed, as synth writes it) and an answer's TTL.
std::string qname(std::span<const uint8_t> m) {
  std::string s;
  std::size_t p = 12;
  while (p < m.size() && m[p] != 0) {
    s.append(reinterpret_cast<const char*>(&m[p + 1]), m[p]);
    s += '.';
    p += 1 + m[p];
  }
  return s;
}
uint32_t answer_ttl(std::span<const uint8_t> m) {
  const std::size_t p = m.size() - 10;  // TTL, RDLENGTH, 4 bytes RDATA
  return base::load_u32(&m[p]);
}

TEST(Synth, SameSeedSameFileOtherSeedOtherFile) {
  TempDir dir;
  SynthOptions o;
  o.names = 50;
  o.qps = 200;
  o.duration_s = 20;
  o.ttl_min = 5, o.ttl_max = 500;
  SynthResult r1, r2, r3;
  std::string err;
  ASSERT_TRUE(synthesize(o, dir.file("a"), r1, err)) << err;
  ASSERT_TRUE(synthesize(o, dir.file("b"), r2, err)) << err;
  o.seed = 2;
  ASSERT_TRUE(synthesize(o, dir.file("c"), r3, err)) << err;
  EXPECT_EQ(read_file(dir.file("a")), read_file(dir.file("b")));
  EXPECT_NE(read_file(dir.file("a")), read_file(dir.file("c")));
  EXPECT_GT(r1.queries, 3000u);
  EXPECT_LT(r1.queries, 5000u);
}

// Replays the generated dnstap with a brute-force recorder: every client answer's TTL and
// every upstream query must be exactly where the model puts them.
TEST(Synth, DnstapMatchesABruteForceRecorder) {
  TempDir dir;
  SynthOptions o;
  o.names = 20;
  o.zipf = 0.8;
  o.qps = 100;
  o.duration_s = 600;
  o.ttl_min = 2, o.ttl_max = 120;
  o.rtt_ms = 30;
  SynthResult res;
  std::string err;
  ASSERT_TRUE(synthesize(o, dir.file("t.tap"), res, err)) << err;
  TraceError terr;
  auto r = open_trace(dir.file("t.tap"), {}, terr);
  ASSERT_NE(r, nullptr) << terr.to_string();
  std::map<std::string, std::size_t> rank;
  for (std::size_t k = 0; k < o.names; ++k)
    rank[synth_name(o, k)] = k;
  struct State {
    int64_t answer_at = INT64_MIN, expiry = INT64_MIN;
    uint64_t queries = 0, upstream = 0, fq = 0;
  };
  std::vector<State> st(o.names);
  const int64_t rtt = 30'000'000;
  TraceEvent ev;
  int64_t prev = 0;
  uint64_t events = 0, hits = 0;
  while (r->next(ev) == ReadStatus::Event) {
    ++events;
    ASSERT_GE(ev.time_ns, prev) << "events in time order";
    prev = ev.time_ns;
    const auto it = rank.find(qname(ev.message));
    ASSERT_NE(it, rank.end());
    State& s = st[it->second];
    const uint32_t ttl = res.names[it->second].ttl;
    if (ev.side == Side::Upstream) {
      if (ev.role == Role::Query) ++s.fq;
      if (ev.role == Role::Response) {
        EXPECT_EQ(answer_ttl(ev.message), ttl);
      }
      continue;
    }
    if (ev.role == Role::Query) {
      ++s.queries;
      if (ev.time_ns >= s.answer_at && ev.time_ns >= s.expiry) {  // a miss
        ++s.upstream;
        s.answer_at = ev.time_ns + rtt;
        s.expiry = s.answer_at + int64_t{ttl} * 1'000'000'000;
      }
      continue;
    }
    // A client response: the full TTL when it came with the upstream answer, else counted
    // down from the timer set at that answer.
    const uint32_t got = answer_ttl(ev.message);
    if (ev.time_ns == s.answer_at) {
      EXPECT_EQ(got, ttl);
    } else {
      ++hits;
      EXPECT_EQ(got, static_cast<uint32_t>((s.expiry - ev.time_ns) / 1'000'000'000));
      EXPECT_EQ(ev.time_ns - ev.query_time_ns, kServiceNs);
    }
  }
  EXPECT_EQ(r->error().what, "");
  EXPECT_EQ(events, res.events);
  EXPECT_GT(hits, res.queries / 2);
  for (std::size_t k = 0; k < o.names; ++k) {
    EXPECT_EQ(st[k].queries, res.names[k].queries) << k;
    EXPECT_EQ(st[k].upstream, res.names[k].upstream) << k;
    EXPECT_EQ(st[k].fq, res.names[k].upstream) << k;
  }
}

// Per name, a renewal process: a miss, rtt + T of cache, then an exponential wait for the
// next query. Expected misses over D: D / (1/λ + rtt + T), Poisson-like spread.
TEST(Synth, UpstreamCountsFollowTheTtlCacheFormula) {
  TempDir dir;
  SynthOptions o;
  o.names = 8;
  o.zipf = 1.5;
  o.qps = 60;
  o.duration_s = 4 * 3600;
  o.ttl_min = 60, o.ttl_max = 60;
  o.rtt_ms = 20;
  SynthResult res;
  std::string err;
  ASSERT_TRUE(synthesize(o, "/dev/null", res, err)) << err;
  for (std::size_t k = 0; k < o.names; ++k) {
    const auto& t = res.names[k];
    const double expected = o.duration_s / (1.0 / t.rate + 0.020 + t.ttl);
    EXPECT_NEAR(static_cast<double>(t.upstream), expected, 4 * std::sqrt(expected) + 2)
        << "rank " << k + 1 << " rate " << t.rate;
    EXPECT_NEAR(static_cast<double>(t.queries), t.rate * o.duration_s,
                5 * std::sqrt(t.rate * o.duration_s) + 2);
  }
}

TEST(Synth, PcapHoldsTheClientTraffic) {
  TempDir dir;
  SynthOptions o;
  o.names = 10;
  o.qps = 50;
  o.duration_s = 30;
  o.format = SynthFormat::Pcap;
  SynthResult res;
  std::string err;
  ASSERT_TRUE(synthesize(o, dir.file("t.pcap"), res, err)) << err;
  TraceError terr;
  auto r = open_trace(dir.file("t.pcap"), {}, terr);
  ASSERT_NE(r, nullptr) << terr.to_string();
  auto all = read_all(*r);
  EXPECT_EQ(all.last, ReadStatus::End);
  ASSERT_EQ(all.events.size(), 2 * res.queries);
  uint64_t matched = 0;
  for (const auto& e : all.events)
    if (e.role == Role::Response && e.query_time_ns != 0) ++matched;
  EXPECT_EQ(matched, res.queries) << "every answer matched to its query";
  EXPECT_EQ(r->skipped(), 0u);
}

TEST(Synth, CommandLineErrorsExit2) {
  TempDir dir;
  auto run = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    return run_synth(static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_EQ(run({"synth", "--qps", "0", "-o", dir.file("x")}), 2);
  EXPECT_EQ(run({"synth", "--ttl", "10-5", "-o", dir.file("x")}), 2);
  EXPECT_EQ(run({"synth", "--ttl", "abc", "-o", dir.file("x")}), 2);
  EXPECT_EQ(run({"synth", "--duration", "-3", "-o", dir.file("x")}), 2);
  EXPECT_EQ(run({"synth", "--format", "json", "-o", dir.file("x")}), 2);
  EXPECT_EQ(run({"synth", "--names", "0", "-o", dir.file("x")}), 2);
  EXPECT_EQ(run({"synth"}), 2);
  EXPECT_EQ(run({"synth", "-o", dir.file("no/such/dir/x")}), 2);
  EXPECT_EQ(run({"synth", "--names", "5", "--qps", "10", "--duration", "1m", "--ttl", "30-60",
                 "--format", "pcap", "-o", dir.file("ok.pcap"), "--truth", dir.file("t.csv")}),
            0);
  const Bytes csv = read_file(dir.file("t.csv"));
  EXPECT_EQ(std::string(csv.begin(), csv.end())
                .rfind("rank,name,ttl,rate,queries,upstream\n1,"
                       "n0.synth.example.,",
                       0),
            0u);
}

}  // namespace
}  // namespace hg::rehearse
