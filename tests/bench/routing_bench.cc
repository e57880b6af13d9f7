// The cost of routing (resolver/query/local_names.h) on the daemon's hit path:
// QueryEngine::on_query for a cached name with no routing at all, with the default routing (the
// special-use zones only), and with 50 forward zones and a 5000-line hosts file loaded; and
// Routing::route() alone for a name whose TLD no rule uses, one under a forward zone, and a hosts
// name.
//
//   cmake -S . -B build -DHG_BENCH=ON && cmake --build build --target hg_routing_bench
//   ./build/tests/bench/hg_routing_bench --benchmark_repetitions=5
// Instructions per hit (callgrind; the difference of two fixed iteration counts, which a
// loaded machine does not disturb):
//   HG_BENCH_ITERATIONS=20000 valgrind --tool=callgrind hg_routing_bench
//   --benchmark_filter=BM_Hit/0 (and 10000; (Ir(20000) - Ir(10000)) / 10000)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "resolver/query/query_engine.h"
#include "tests/bench/bench_answers.h"
#include "tests/bench/hit_path.h"
#include "wire/owned.h"

namespace {

using namespace hg;
using bench::name_of;

enum Mode : int64_t { kNone = 0, kDefault = 1, kLoaded = 2 };

std::shared_ptr<const resolver::Routing> routing(Mode mode) {
  resolver::Routing::Input in;
  if (mode == kLoaded) {
    // 50 forward zones under 10 TLDs (none of them .com, as for a VPN or two and a home
    // router), and 5000 hosts names.
    for (int i = 0; i < 50; ++i)
      in.forward.push_back(resolver::parse_forward_spec("zone" + std::to_string(i) + ".corp" +
                                                        std::to_string(i % 10) + "=127.0.0." +
                                                        std::to_string(2 + i % 5))
                               .value());
    std::string hosts;
    for (int i = 0; i < 5000; ++i)
      hosts += "10." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ".1 host" +
               std::to_string(i) + ".lan host" + std::to_string(i) + "\n";
    in.hosts.push_back({"bench", resolver::parse_hosts(hosts).lines});
  }
  return resolver::Routing::build(in).value();
}

void BM_Hit(benchmark::State& state) {
  const auto mode = static_cast<Mode>(state.range(0));
  bench::HitPath hit(state);
  if (mode != kNone)
    hit.engine.set_routing(routing(mode),
                           [](uint32_t, std::span<const uint8_t>, resolver::Upstream::Callback) {});
  hit.run(state);
  state.SetLabel(mode == kNone      ? "no routing"
                 : mode == kDefault ? "special-use zones only"
                                    : "50 forward zones + 5000 hosts lines");
}

void BM_Route(benchmark::State& state) {
  static const auto r = routing(kLoaded);
  const char* names[] = {"www.bench.example.com", "a.b.zone7.corp7", "host4321.lan"};
  const auto n = name_of(names[state.range(0)]);
  for (auto _ : state)
    benchmark::DoNotOptimize(r->route(n, wire::RRType::A));
  state.SetLabel(names[state.range(0)]);
}

}  // namespace

int main(int argc, char** argv) {
  auto* b = benchmark::RegisterBenchmark("BM_Hit", BM_Hit)->Arg(kNone)->Arg(kDefault)->Arg(kLoaded);
  benchmark::RegisterBenchmark("BM_Route", BM_Route)->Arg(0)->Arg(1)->Arg(2);
  return hg::bench::run_benchmarks(argc, argv, b);
}
