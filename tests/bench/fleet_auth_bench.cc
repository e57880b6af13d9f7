// What --fleet-key-file costs the fleet's CPU: per L2 hit (an instance reads a value from
// Redis: its Redis key name, the HMAC check, then decode_value as without a key) and per miss
// (the instance that asked upstream stores the value: encode_value, then the tag), with a key
// against without, on one typical answer (a CNAME and two A records, 94 bytes of message).
// Only the fleet's own work is timed here, not Redis's round trip nor the cache insert that
// follows either way.
//
//   cmake -S . -B build -DHG_BENCH=ON && cmake --build build -j2 --target hg_fleet_auth_bench
//   ./build/tests/bench/hg_fleet_auth_bench
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "cache/key.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/fleet/redis_value.h"
#include "wire/message.h"
#include "wire/name.h"

namespace {

using namespace hg;
namespace fleet = hg::resolver::fleet;

const std::string kSecret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

cache::CacheKey key() {
  return cache::CacheKey::make(*wire::Name::from_text("www.example.com."), wire::RRType::A, 1,
                               false, false);
}

std::vector<uint8_t> message() {
  // www.example.com CNAME cdn.example.net, which has two A records.
  std::vector<uint8_t> m{0, 0, 0x81, 0x80, 0, 1, 0, 3, 0, 0, 0, 0};
  const auto name = wire::Name::from_text("www.example.com.");  // kept: wire() is a view into it
  const auto q = name->wire();
  m.insert(m.end(), q.begin(), q.end());
  m.insert(m.end(), {0, 1, 0, 1});
  m.insert(m.end(), {0xC0, 0x0C, 0, 5, 0, 1, 0, 0, 0x0E, 0x10, 0, 17});
  m.insert(m.end(), {3, 'c', 'd', 'n', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'n', 'e', 't', 0});
  const uint16_t cdn = 12 + static_cast<uint16_t>(q.size()) + 4 + 12;
  for (uint8_t last : {uint8_t{1}, uint8_t{2}}) {
    m.insert(m.end(), {static_cast<uint8_t>(0xC0 | (cdn >> 8)), static_cast<uint8_t>(cdn), 0, 1, 0,
                       1, 0, 0, 0, 60, 0, 4, 192, 0, 2, last});
  }
  return m;
}

void BM_L2Hit(benchmark::State& state) {
  const bool keyed = state.range(0) != 0;
  auto auth = fleet::FleetAuth::create(fleet::bytes(kSecret), nullptr);
  const auto k = key();
  auto value = fleet::encode_value(k, 1'700'000'000'000, message(), keyed);
  if (keyed) fleet::seal_value(*auth, fleet::cache_key("hg:", k), value);
  wire::Message parsed;
  for (auto _ : state) {
    if (keyed) {
      const std::string name = fleet::cache_key("hg:", k);
      if (fleet::open_value(*auth, name, value) != fleet::AuthStatus::Ok)
        state.SkipWithError("tag");
    }
    const auto d = fleet::decode_value(value, k, parsed);
    if (d.status != fleet::ValueStatus::Ok) state.SkipWithError("decode");
    benchmark::DoNotOptimize(d);
  }
  state.counters["value_bytes"] = static_cast<double>(value.size());
}
BENCHMARK(BM_L2Hit)->Arg(0)->Arg(1)->ArgName("key");

void BM_StoreAfterMiss(benchmark::State& state) {
  const bool keyed = state.range(0) != 0;
  auto auth = fleet::FleetAuth::create(fleet::bytes(kSecret), nullptr);
  const auto k = key();
  const auto msg = message();
  std::size_t size = 0;
  for (auto _ : state) {
    auto value = fleet::encode_value(k, 1'700'000'000'000, msg, keyed);
    if (keyed) fleet::seal_value(*auth, fleet::cache_key("hg:", k), value);
    size = value.size();
    benchmark::DoNotOptimize(value);
  }
  state.counters["value_bytes"] = static_cast<double>(size);
}
BENCHMARK(BM_StoreAfterMiss)->Arg(0)->Arg(1)->ArgName("key");

}  // namespace

BENCHMARK_MAIN();
