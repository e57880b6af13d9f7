// The daemon's hit path for the micro-benchmarks that time it (routing_bench, shadow_bench):
// QueryEngine::on_query on a test clock over names already in the cache — admission, key,
// lookup and render, everything a UDP hit pays except the socket calls. A benchmark sets up
// what it compares (routing, shadow zones) on `engine` or `shared`, then calls run().
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "resolver/query/query_engine.h"
#include "tests/bench/bench_answers.h"
#include "wire/owned.h"

namespace hg::bench {

/// An A query for `qname` (ID 0x1234, RD, EDNS).
inline std::vector<uint8_t> query_for(const std::string& qname) {
  wire::OwnedMessage m;
  m.header.id = 0x1234;
  m.header.set(wire::flag::RD, true);
  m.questions.push_back({name_of(qname), wire::RRType::A, 1});
  m.edns = wire::OwnedEdns{};
  return wire::to_wire(m);
}

struct HitPath {
  /// Names cached and asked: host0.bench.example.com .. host999.bench.example.com.
  static constexpr int kNames = 1000;

  resolver::MonoTime now{std::chrono::milliseconds{10'000'000}};
  resolver::EventLoop loop{resolver::EventLoop::Options{.clock = [this] { return now; }}};
  resolver::Shared shared{resolver::Config{}};
  resolver::QueryEngine engine{
      shared, loop, [](std::span<const uint8_t>, const resolver::Upstream::Callback&) {}, 0};
  std::vector<std::vector<uint8_t>> queries;

  /// Caches cdn_answer_for() of every name at `now` and makes the queries for them.
  explicit HitPath(benchmark::State& state) {
    for (int i = 0; i < kNames; ++i) {
      const std::string n = "host" + std::to_string(i) + ".bench.example.com";
      const auto bytes = cdn_answer_for(n);
      wire::Message msg;
      if (!msg.parse(bytes, wire::ParseMode::Strict)) state.SkipWithError("bad answer");
      shared.cache.insert(cache::CacheKey::make(name_of(n), wire::RRType::A, 1, false, false), msg,
                          now);
      queries.push_back(query_for(n));
    }
  }

  /// One pass over the queries before timing (what the daemon's own first asks would have
  /// filled, e.g. the shadow table, is there: the loop measures the steady state, also under
  /// callgrind's few iterations), then the timed loop asking them round robin. Skips with an
  /// error unless every query was a hit.
  void run(benchmark::State& state) {
    std::vector<uint8_t> out(1232);
    resolver::Route route;
    for (const auto& q : queries)
      benchmark::DoNotOptimize(engine.on_query(q, nullptr, route, out));
    std::size_t i = 0;
    for (auto _ : state) {
      auto r = engine.on_query(queries[i], nullptr, route, out);
      benchmark::DoNotOptimize(r);
      if (++i == queries.size()) i = 0;
    }
    if (shared.stats.hits.load() != static_cast<uint64_t>(state.iterations()) + kNames)
      state.SkipWithError("not every query was a hit");
  }
};

/// main() of a hit-path benchmark: HG_BENCH_ITERATIONS=N runs each case of `hit` exactly N
/// iterations once (no timing-driven runs), for instruction counts under callgrind, where two
/// N give the exact cost per hit; then the benchmarks the command line selects.
inline int run_benchmarks(int argc, char** argv, benchmark::internal::Benchmark* hit) {
  if (const char* n = std::getenv("HG_BENCH_ITERATIONS"); n != nullptr && std::atoll(n) > 0)
    hit->Iterations(std::atoll(n));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace hg::bench
