// The cost of the top-names sketch (resolver/query/top_names.h) that `hourglass-ctl top` reads: one
// sampled update (lock + space-saving add), for a name already counted and for a flood of
// distinct names (every counter scanned, the smallest replaced). A query pays this once in 16
// on average, and an increment and a branch otherwise.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "resolver/query/top_names.h"

namespace {

using hg::resolver::TopNames;
using hg::wire::Name;

std::vector<Name> names(std::size_t n) {
  std::vector<Name> out;
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(Name::from_text("n" + std::to_string(i) + ".bench.example.com").value());
  return out;
}

void BM_TopNamesUpdateCountedName(benchmark::State& state) {
  const auto hot = names(64);  // every counter taken; the name looked up is the last one
  TopNames t;
  for (const auto& n : hot)
    t.on_query(n);
  for (auto _ : state)
    t.on_query(hot.back());
}
BENCHMARK(BM_TopNamesUpdateCountedName);

void BM_TopNamesUpdateFloodOfNewNames(benchmark::State& state) {
  const auto flood = names(10000);
  TopNames t;
  std::size_t i = 0;
  for (auto _ : state) {
    t.on_query(flood[i]);
    i = (i + 7919) % flood.size();
  }
}
BENCHMARK(BM_TopNamesUpdateFloodOfNewNames);

}  // namespace

BENCHMARK_MAIN();
