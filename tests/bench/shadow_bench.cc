// The cost of shadow-ttl on the daemon's hit path: QueryEngine::on_query for a cached name
// (admission, key, lookup, render — everything a UDP hit pays except the socket calls), with
// no shadow zone, with one zone the name is in (shadow entry fresh: the common case), with
// one zone it is in and shadow TTL 0 (every hit is a shadow miss and refills: the worst case),
// and with one zone it is not in.
//
//   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DHG_BENCH=ON -DHG_TESTS=OFF
//   cmake --build build-bench -j2 --target hg_shadow_bench
//   ./build-bench/tests/bench/hg_shadow_bench --benchmark_repetitions=5
// Instructions per hit (callgrind; the difference of two fixed iteration counts):
//   HG_BENCH_ITERATIONS=20000 valgrind --tool=callgrind hg_shadow_bench --benchmark_filter='/1$'
//   (and the same with 10000; (Ir(20000) - Ir(10000)) / 10000)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "resolver/server.h"
#include "tests/bench/bench_answers.h"
#include "wire/owned.h"
#include "wire/rdata.h"

namespace {

using namespace hg;
using bench::name_of;
using resolver::MonoTime;

std::vector<uint8_t> answer_for(const std::string& qname) {
  return bench::cdn_answer_for(qname);
}

std::vector<uint8_t> query_for(const std::string& qname) {
  wire::OwnedMessage m;
  m.header.id = 0x1234;
  m.header.set(wire::flag::RD, true);
  m.questions.push_back({name_of(qname), wire::RRType::A, 1});
  m.edns = wire::OwnedEdns{};
  return wire::to_wire(m);
}

enum Mode : int64_t { kOff = 0, kInZone = 1, kInZoneTtl0 = 2, kOtherZone = 3 };

void BM_Hit(benchmark::State& state) {
  const auto mode = static_cast<Mode>(state.range(0));
  MonoTime now{std::chrono::milliseconds{10'000'000}};
  resolver::EventLoop loop(resolver::EventLoop::Options{.clock = [&now] { return now; }});
  resolver::Shared shared{resolver::Config{}};
  resolver::QueryEngine engine(
      shared, loop, [](std::span<const uint8_t>, const resolver::Upstream::Callback&) {}, 0);
  // 1000 cached names, asked round robin (so the shadow table holds 1000 entries too).
  constexpr int kNames = 1000;
  std::vector<std::vector<uint8_t>> queries;
  for (int i = 0; i < kNames; ++i) {
    const std::string n = "host" + std::to_string(i) + ".bench.example.com";
    const auto bytes = answer_for(n);
    wire::Message msg;
    if (!msg.parse(bytes, wire::ParseMode::Strict)) state.SkipWithError("bad answer");
    shared.cache.insert(cache::CacheKey::make(name_of(n), wire::RRType::A, 1, false, false), msg,
                        now);
    queries.push_back(query_for(n));
  }
  if (mode == kInZone) shared.shadow.set(name_of("example.com"), 3600, now);
  if (mode == kInZoneTtl0) shared.shadow.set(name_of("example.com"), 0, now);
  if (mode == kOtherZone) shared.shadow.set(name_of("example.org"), 60, now);
  std::vector<uint8_t> out(1232);
  resolver::Route route;
  // One pass before timing: the shadow table holds every name (as after the daemon's own
  // fills), so the loop measures the steady state, also under callgrind's few iterations.
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
  state.SetLabel(mode == kOff          ? "no shadow zone"
                 : mode == kInZone     ? "in a shadow zone, shadow hit"
                 : mode == kInZoneTtl0 ? "in a shadow zone, shadow miss + refill"
                                       : "shadow zone set, name not in it");
}
}  // namespace

// HG_BENCH_ITERATIONS=N runs each case exactly N iterations once (no timing-driven runs):
// for instruction counts under callgrind, where two N give the exact cost per hit.
int main(int argc, char** argv) {
  auto* b = benchmark::RegisterBenchmark("BM_Hit", BM_Hit)
                ->Arg(kOff)
                ->Arg(kInZone)
                ->Arg(kInZoneTtl0)
                ->Arg(kOtherZone);
  if (const char* n = std::getenv("HG_BENCH_ITERATIONS"); n != nullptr && std::atoll(n) > 0)
    b->Iterations(std::atoll(n));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
