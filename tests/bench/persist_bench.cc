// Warm-restart cache file benchmarks: loading and saving 100k cached answers (each a CNAME
// and an A record, like a typical web name), in memory (encode/load) so the disk is not
// measured, plus the whole save_file with its fsyncs.
//
//   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DHG_BENCH=ON -DHG_TESTS=OFF
//   cmake --build build-bench -j2 --target hg_persist_bench
//   ./build-bench/tests/bench/hg_persist_bench
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cache/cache.h"
#include "cache/persist.h"
#include "wire/owned.h"
#include "wire/rdata.h"

namespace {

using namespace hg::cache;
namespace wire = hg::wire;

constexpr std::size_t kEntries = 100'000;
const Time kNow{Seconds{1'000'000}};
const persist::WallTime kWall{Millis{1'780'000'000'000}};

wire::Name name_of(const char* prefix, std::size_t i, const char* suffix) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s%zu%s", prefix, i, suffix);
  return *wire::Name::from_text(buf);
}

CacheSettings settings() {
  CacheSettings s;
  s.max_bytes = std::size_t{256} << 20;  // room for all of them
  return s;
}

void fill(Cache& cache) {
  std::vector<uint8_t> bytes;
  wire::Message msg;
  for (std::size_t i = 0; i < kEntries; ++i) {
    const wire::Name q = name_of("www", i, ".bench.example.com");
    const wire::Name target = name_of("edge", i % 977, ".cdn.example.net");
    wire::OwnedMessage m;
    m.header.set(wire::flag::QR, true);
    m.header.set(wire::flag::RA, true);
    m.questions.push_back({q, wire::RRType::A, 1});
    m.answer.push_back({q, wire::RRType::CNAME, 1, 3600, wire::RdataName{target}});
    m.answer.push_back(
        {target, wire::RRType::A, 1, 300, wire::RdataA{{192, 0, 2, static_cast<uint8_t>(i)}}});
    bytes = wire::to_wire(m);
    if (!msg.parse(bytes)) std::abort();
    cache.insert(CacheKey::make(q, wire::RRType::A, 1, false, false), msg,
                 kNow - Seconds{static_cast<int64_t>(i % 200)});
  }
  if (cache.stats().entries != kEntries) std::abort();
}

const std::vector<uint8_t>& file() {
  static const std::vector<uint8_t> f = [] {
    Cache c(settings());
    fill(c);
    return persist::encode(c.snapshot(), kNow, kWall, Seconds{86400});
  }();
  return f;
}

void BM_Load100k(benchmark::State& state) {
  const auto& f = file();
  for (auto _ : state) {
    state.PauseTiming();
    auto cache = std::make_unique<Cache>(settings());
    state.ResumeTiming();
    const auto r = persist::load(*cache, f, kNow + Seconds{5}, kWall + Seconds{5});
    if (r.loaded != kEntries) state.SkipWithError("not every entry loaded");
    state.PauseTiming();
    cache.reset();
    state.ResumeTiming();
  }
  state.counters["file_MiB"] = static_cast<double>(f.size()) / (1 << 20);
}
BENCHMARK(BM_Load100k)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

void BM_Encode100k(benchmark::State& state) {
  Cache c(settings());
  fill(c);
  for (auto _ : state) {
    auto f = persist::encode(c.snapshot(), kNow, kWall, Seconds{86400});
    benchmark::DoNotOptimize(f.data());
  }
}
BENCHMARK(BM_Encode100k)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

void BM_SaveFile100k(benchmark::State& state) {
  Cache c(settings());
  fill(c);
  char dir[] = "/tmp/hg-persist-bench-XXXXXX";
  if (::mkdtemp(dir) == nullptr) std::abort();
  const std::string path = std::string(dir) + "/cache";
  for (auto _ : state) {
    const auto r = persist::save_file(c, path, kNow, kWall);
    if (!r.ok) state.SkipWithError(r.error.c_str());
  }
  ::unlink(path.c_str());
  ::rmdir(dir);
}
BENCHMARK(BM_SaveFile100k)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
