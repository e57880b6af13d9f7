// hg_cache_memory — bytes per cached answer, counted rather than timed (so a loaded machine
// does not change the figure): N answers of a typical mix are inserted into a Cache, and the
// heap in use (glibc mallinfo2: every malloc chunk with its header and rounding) and the
// process RSS are read before and after, beside what the cache charges against its budget.
//
//   hg_cache_memory [N ...]        (default: 100000 1000000)
//
// The mix, by share of entries: 45% one A record, 20% two A records, 20% one AAAA, 15% a
// CNAME to a CDN name plus one A record — names like "host123.svc.example.com".
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/clock.h"
#include "tests/bench/bench_answers.h"
#include "wire/owned.h"
#include "wire/rdata.h"

namespace {

using hg::cache::Cache;
using hg::cache::CacheKey;
using hg::cache::CacheSettings;
using hg::cache::ManualClock;
namespace wire = hg::wire;
using hg::bench::name_of;

std::vector<uint8_t> answer_for(std::size_t i, const std::string& qname, wire::RRType& qtype) {
  wire::OwnedMessage m;
  m.header.id = 1;
  m.header.set(wire::flag::QR, true);
  m.header.set(wire::flag::RD, true);
  m.header.set(wire::flag::RA, true);
  const std::size_t kind = i % 20;  // 0-8: A, 9-12: 2 A, 13-16: AAAA, 17-19: CNAME + A
  const auto b = static_cast<uint8_t>(i & 0xff);
  qtype = kind >= 13 && kind <= 16 ? wire::RRType::AAAA : wire::RRType::A;
  m.questions.push_back({name_of(qname), qtype, 1});
  if (kind <= 12) {
    m.answer.push_back({name_of(qname), wire::RRType::A, 1, 300, wire::RdataA{{192, 0, 2, b}}});
    if (kind >= 9)
      m.answer.push_back({name_of(qname), wire::RRType::A, 1, 300, wire::RdataA{{192, 0, 3, b}}});
  } else if (kind <= 16) {
    wire::RdataAAAA v6{};
    v6.address[0] = 0x20;
    v6.address[1] = 0x01;
    v6.address[2] = 0x0d;
    v6.address[3] = 0xb8;
    v6.address[15] = b;
    m.answer.push_back({name_of(qname), wire::RRType::AAAA, 1, 300, v6});
  } else {
    char cdn[64];
    std::snprintf(cdn, sizeof cdn, "e%zu.cdn.example.net", i % 1000);
    m.answer.push_back(
        {name_of(qname), wire::RRType::CNAME, 1, 3600, wire::RdataName{name_of(cdn)}});
    m.answer.push_back({name_of(cdn), wire::RRType::A, 1, 60, wire::RdataA{{198, 51, 100, b}}});
  }
  return wire::to_wire(m);
}

// Small chunks (uordblks) and the large ones glibc takes straight from mmap (hblkhd).
std::size_t heap_in_use() {
  const auto mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

std::size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * 4096;
}

void measure(std::size_t n) {
  ManualClock clock;
  const std::size_t heap0 = heap_in_use();
  const std::size_t rss0 = rss_bytes();
  std::size_t wire_bytes = 0;
  {
    // The daemon's default budget (64 MiB), or more when n entries need it: nothing evicted.
    const std::size_t budget = std::max<std::size_t>(std::size_t{64} << 20, n * 512);
    auto cache = std::make_unique<Cache>(CacheSettings{.max_bytes = budget, .shards = 16});
    const std::size_t heap_empty = heap_in_use();
    // What an empty cache already charges: S3-FIFO's ghost tables, sized by the budget and
    // charged up front. The heap figure counts them in the empty cache, so they are shown
    // apart from the per-entry charge too.
    const std::size_t charged_empty = cache->stats().bytes;
    for (std::size_t i = 0; i < n; ++i) {
      const std::string q = hg::bench::host(i, "host", ".svc.example.com");
      wire::RRType qtype = wire::RRType::A;
      const auto bytes = answer_for(i, q, qtype);
      wire_bytes += bytes.size();
      wire::Message msg;
      if (!msg.parse(bytes)) std::abort();
      cache->insert(CacheKey::make(name_of(q), qtype, 1, false, false), msg, clock.now());
    }
    const auto stats = cache->stats();
    const std::size_t heap1 = heap_in_use();
    const std::size_t rss1 = rss_bytes();
    if (stats.entries != n) {
      std::fprintf(stderr, "hg_cache_memory: only %zu of %zu entries were cached\n", stats.entries,
                   n);
      std::exit(1);
    }
    const auto per = [n](std::size_t bytes) {
      return static_cast<double>(bytes) / static_cast<double>(n);
    };
    std::printf(
        "%zu entries (budget %zu MiB): heap %.1f B/entry (+ %.1f MiB for the empty cache), "
        "charged %.1f B/entry (+ %.1f MiB ghost tables; %.1f B/entry with them), "
        "RSS +%.1f MiB (%.1f B/entry); answers on the wire %.1f B each\n",
        n, budget >> 20, per(heap1 - heap_empty),
        static_cast<double>(heap_empty - heap0) / (1 << 20), per(stats.bytes - charged_empty),
        static_cast<double>(charged_empty) / (1 << 20), per(stats.bytes),
        static_cast<double>(rss1 - rss0) / (1 << 20), per(rss1 - rss0), per(wire_bytes));
  }
  malloc_trim(0);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[i], &end, 10);
    if (end == argv[i] || *end != '\0' || v == 0 || v > 10'000'000) {
      std::fprintf(stderr, "hg_cache_memory: '%s' is not an entry count in 1..10000000\n", argv[i]);
      return 2;
    }
    sizes.push_back(static_cast<std::size_t>(v));
  }
  if (sizes.empty()) sizes = {100'000, 1'000'000};
  for (std::size_t n : sizes)
    measure(n);
  return 0;
}
