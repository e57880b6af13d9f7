// libFuzzer target for the warm-restart cache file loader (cache/persist.h).
//
// The first input byte picks a mode; the rest is the file. In mode "resealed" (odd first
// byte) the target writes the correct CRC-32C into the file's last four bytes before loading,
// so the fuzzer gets past the checksum and exercises the structure checks, wire/ parsing and
// the cache's own validation — where a crafted (rather than damaged) file would attack.
//
// Properties checked, each a crash (abort) when violated:
//  1. load() returns, never throws; a Rejected file leaves the cache empty.
//  2. A Loaded file accounts for every entry: loaded + expired + refused == in_file, and the
//     cache holds at most `loaded` entries.
//  3. Every loaded entry renders to a message that wire/ parses in Strict mode, with the
//     entry's question.
//  4. Saving the loaded cache and loading that file again loads the same number of entries.
//  5. No loaded entry was inserted after now: insert times from the future (a forged file
//     that would pin a TTL) are refused, never clamped into a long life.
//  6. check_header(), which load_file() runs on the first 32 bytes before reading the rest,
//     refuses exactly what load() refuses for the same header and size, with the same words
//     (so the early refusal never lets through, or stops, a file load() would treat
//     otherwise).
//
// Built with -fsanitize=fuzzer,address,undefined when HG_FUZZ=ON (clang); otherwise linked
// with replay_main.cc and ctest replays tests/fuzz/corpus/cache_file/.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "base/bytes.h"
#include "base/crc32c.h"
#include "cache/cache.h"
#include "cache/persist.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/message.h"
#include "wire/reader.h"

namespace {

using namespace hg::cache;
using persist::LoadReport;

// The instant every load happens at: the seeds were written with these clocks.
const Time kNow{Seconds{1'000'000}};
const persist::WallTime kWallNow{Millis{1'780'000'000'000}};

using hg::fuzz::check;

CacheSettings settings() {
  CacheSettings s;
  s.max_bytes = std::size_t{4} << 20;
  s.shards = 2;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool reseal = (data[0] & 1) != 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if (reseal && file.size() >= 12) {
    const uint32_t crc =
        hg::base::crc32c(std::span<const uint8_t>(file).subspan(8, file.size() - 12));
    hg::base::store_u32(file.data() + file.size() - 4, crc);
  }

  Cache cache(settings());
  const LoadReport r = persist::load(cache, file, kNow, kWallNow);
  const CacheStats st = cache.stats();
  const auto early = persist::check_header(
      std::span<const uint8_t>(file).first(std::min(file.size(), persist::kHeaderSize)),
      file.size());
  if (early) {
    check(r.status == LoadReport::Status::Rejected && r.problem == early->problem &&
              r.newer == early->newer,
          "check_header() and load() disagree about a header");
  }
  if (r.status != LoadReport::Status::Loaded) {
    check(st.entries == 0, "a rejected file inserted entries");
    return 0;
  }
  check(r.loaded + r.expired + r.refused == r.in_file, "entries unaccounted for");
  check(st.entries <= r.loaded, "more entries cached than loaded");

  for (const auto& e : cache.snapshot()) {
    check(e->inserted_at() <= kNow, "an entry from the future was loaded");
    const std::vector<uint8_t> bytes = e->to_wire(kNow);
    hg::wire::Message m;
    check(m.parse(bytes, hg::wire::ParseMode::Strict).has_value(), "a loaded entry does not parse");
    check(m.questions().size() == 1 && m.questions()[0].type == e->qtype(),
          "a loaded entry lost its question");
  }

  const std::vector<uint8_t> again =
      persist::encode(cache.snapshot(), kNow, kWallNow, cache.settings().stale_max);
  Cache second(settings());
  const LoadReport r2 = persist::load(second, again, kNow, kWallNow);
  check(r2.status == LoadReport::Status::Loaded, "a file we wrote was rejected");
  check(r2.loaded == st.entries, "a file we wrote did not load every entry");
  return 0;
}
