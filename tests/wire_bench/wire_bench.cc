// Micro-benchmarks of the wire/ hot paths on captured responses (tests/vectors/):
// Message::parse (Lenient, the upstream-answer mode), read_name on a compressed name, and the
// writer building a typical answer. Not a test: numbers go in notes, not in assertions.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "wire/message.h"
#include "wire/owned.h"
#include "wire/print.h"
#include "wire/writer.h"

namespace {

using namespace hg::wire;

std::vector<uint8_t> load(const std::string& name) {
  const std::string path = std::string(HG_VECTORS_DIR) + "/" + name + ".bin";
  std::vector<uint8_t> bytes(65535);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    std::abort();
  }
  bytes.resize(std::fread(bytes.data(), 1, bytes.size(), f));
  std::fclose(f);
  return bytes;
}

// `packet` parsed (Strict); a vector that does not parse ends the run.
Message parsed(const std::vector<uint8_t>& packet) {
  Message m;
  if (!m.parse(packet)) std::abort();
  return m;
}

// Parses one vector repeatedly with a reused Message (steady state: no allocation).
void BM_ParseLenient(benchmark::State& state, const char* name) {
  const auto packet = load(name);
  Message m;
  for (auto _ : state) {
    auto st = m.parse(packet, ParseMode::Lenient);
    benchmark::DoNotOptimize(st);
    benchmark::DoNotOptimize(m.records().data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * packet.size()));
  state.SetLabel(std::to_string(packet.size()) + " B, " + std::to_string(m.records().size()) +
                 " RRs");
}
BENCHMARK_CAPTURE(BM_ParseLenient, a_72B, "a");
BENCHMARK_CAPTURE(BM_ParseLenient, ns_glue_116B, "ns");
BENCHMARK_CAPTURE(BM_ParseLenient, srv_153B, "srv");
BENCHMARK_CAPTURE(BM_ParseLenient, txt_long_309B, "txt_long");
BENCHMARK_CAPTURE(BM_ParseLenient, big_928B, "big");

// A fresh Message per parse: what a one-shot caller pays (vector allocations included).
void BM_ParseFreshMessage(benchmark::State& state) {
  const auto packet = load("ns");
  for (auto _ : state) {
    Message m;
    auto st = m.parse(packet, ParseMode::Lenient);
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_ParseFreshMessage);

// Decoding the compressed owner of the last record of ns.bin (a pointer into the question).
void BM_ReadName(benchmark::State& state) {
  const auto packet = load("srv");
  const auto offset = parsed(packet).records().back().offset;
  for (auto _ : state) {
    WireReader r(packet, offset);
    auto n = read_name(r);
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_ReadName);

void BM_SkipName(benchmark::State& state) {
  const auto packet = load("srv");
  const auto offset = parsed(packet).records().back().offset;
  for (auto _ : state) {
    WireReader r(packet, offset);
    auto st = skip_name(r);
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_SkipName);

// Writing a 2-record answer with compression: header, question, 2 x A, OPT.
void BM_WriterAnswer(benchmark::State& state) {
  const Name qname = Name::from_text("www.hg.test").value();
  std::vector<uint8_t> buf(1232);
  for (auto _ : state) {
    WireWriter w(buf);
    uint8_t header[12] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 1};
    bool ok = w.bytes(header) && w.name(qname) && w.u16(1) && w.u16(1);
    for (uint8_t i = 1; i <= 2; ++i) {
      const uint8_t addr[4] = {192, 0, 2, i};
      ok = ok && w.name(qname) && w.u16(1) && w.u16(1) && w.u32(300) && w.u16(4) && w.bytes(addr);
    }
    ok = ok && write_opt(w, OptSpec{});
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(buf.data());
  }
}
BENCHMARK(BM_WriterAnswer);

// The slow, convenient paths, for scale: owned model, rewrite, and dig-style text.
void BM_ToOwned(benchmark::State& state) {
  const auto packet = load("ns");
  const Message m = parsed(packet);
  for (auto _ : state) {
    auto o = to_owned(m);
    benchmark::DoNotOptimize(o);
  }
}
BENCHMARK(BM_ToOwned);

void BM_WriteOwned(benchmark::State& state) {
  const auto packet = load("ns");
  const Message m = parsed(packet);
  const auto o = to_owned(m).value();
  std::vector<uint8_t> buf(65535);
  for (auto _ : state) {
    WireWriter w(buf);
    auto out = write_message(w, o);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_WriteOwned);

void BM_Print(benchmark::State& state) {
  const auto packet = load("ns");
  const Message m = parsed(packet);
  for (auto _ : state) {
    auto s = print_message(m);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_Print);

}  // namespace

BENCHMARK_MAIN();
