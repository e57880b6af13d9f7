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
#include "tests/bench/hit_path.h"
#include "wire/owned.h"
#include "wire/rdata.h"

namespace {

using namespace hg;
using bench::name_of;

enum Mode : int64_t { kOff = 0, kInZone = 1, kInZoneTtl0 = 2, kOtherZone = 3 };

void BM_Hit(benchmark::State& state) {
  const auto mode = static_cast<Mode>(state.range(0));
  // 1000 cached names, asked round robin (so the shadow table holds 1000 entries too).
  bench::HitPath hit(state);
  if (mode == kInZone) hit.shared.shadow.set(name_of("example.com"), 3600, hit.now);
  if (mode == kInZoneTtl0) hit.shared.shadow.set(name_of("example.com"), 0, hit.now);
  if (mode == kOtherZone) hit.shared.shadow.set(name_of("example.org"), 60, hit.now);
  hit.run(state);
  state.SetLabel(mode == kOff          ? "no shadow zone"
                 : mode == kInZone     ? "in a shadow zone, shadow hit"
                 : mode == kInZoneTtl0 ? "in a shadow zone, shadow miss + refill"
                                       : "shadow zone set, name not in it");
}
}  // namespace

// HG_BENCH_ITERATIONS=N: see run_benchmarks().
int main(int argc, char** argv) {
  auto* b = benchmark::RegisterBenchmark("BM_Hit", BM_Hit)
                ->Arg(kOff)
                ->Arg(kInZone)
                ->Arg(kInZoneTtl0)
                ->Arg(kOtherZone);
  return hg::bench::run_benchmarks(argc, argv, b);
}
