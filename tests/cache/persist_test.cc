// The cache file: round trips with a ManualClock, the wall-clock ageing arithmetic, and every
// kind of damaged file (each must load nothing and say why).
#include "cache/persist.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cache/clock.h"
#include "cache_test_util.h"

namespace hg::cache::persist {
namespace {

using namespace hg::cache::testing;
using wire::RCode;
using Status = LoadReport::Status;

constexpr WallTime kWall0{Millis{1'780'000'000'000}};  // some day in 2026

std::vector<uint8_t> wire_of(const Entry& e, Time now) {
  return e.to_wire(now);
}

std::shared_ptr<const Entry> find(const Cache& c, const CacheKey& k) {
  for (const auto& e : c.snapshot())
    if (e->matches(k)) return e;
  return nullptr;
}

class PersistTest : public ::testing::Test {
 protected:
  CacheSettings settings_{.max_bytes = 1 << 20, .shards = 4, .stale_max = Seconds{60}};
  ManualClock clock_;
  Cache cache_{settings_};

  void put(const OwnedMessage& m, const CacheKey& k) {
    const Packet p(m);
    ASSERT_EQ(cache_.insert(k, p.msg, clock_.now()), InsertOutcome::Cached);
  }
  void fill() {
    OwnedMessage pos = response("www.example.com");
    pos.answer.push_back(CNAME("www.example.com", 3600, "web.example.net"));
    pos.answer.push_back(A("web.example.net", 300, 7));
    pos.authority.push_back(NS("example.net", 86400, "ns1.example.net"));
    pos.additional.push_back(A("ns1.example.net", 86400, 53));
    put(pos, key("www.example.com"));
    OwnedMessage nx = response("nope.example.com", RRType::A, RCode::NXDomain);
    nx.authority.push_back(SOA("example.com", 3600, 120));
    put(nx, key("nope.example.com"));
    OwnedMessage nodata = response("www.example.com", RRType::AAAA);
    nodata.authority.push_back(SOA("example.com", 3600, 90));
    put(nodata, key("www.example.com", RRType::AAAA));
    OwnedMessage signed_ = response("dnssec.example.com");
    signed_.header.set(wire::flag::AD, true);
    signed_.answer.push_back(A("dnssec.example.com", 120, 9));
    put(signed_, CacheKey::make(N("dnssec.example.com"), RRType::A, 1, true, true));
  }
};

TEST(Crc32c, MatchesTheCheckValue) {
  // The standard check value of CRC-32C over the ASCII digits 1-9 (RFC 3720 B.4 family).
  const std::string s = "123456789";
  EXPECT_EQ(crc32c({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xE3069283u);
  // Continuing a CRC over two halves equals the CRC of the whole.
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  EXPECT_EQ(crc32c({p + 4, 5}, crc32c({p, 4})), 0xE3069283u);
}

TEST(Ageing, WallTimeAgoBecomesMonotonicTimeAgo) {
  const Time now{Seconds{50}};  // a machine booted 50 s ago
  EXPECT_EQ(to_monotonic(kWall0 - Seconds{10}, now, kWall0), now - Seconds{10});
  // Older than the boot: the monotonic time goes below zero, which is fine (signed).
  EXPECT_EQ(to_monotonic(kWall0 - Seconds{3600}, now, kWall0), Time{Seconds{50 - 3600}});
  // Inserted "in the future" (the wall clock was set back): counts as inserted now.
  EXPECT_EQ(to_monotonic(kWall0 + Seconds{30}, now, kWall0), now);
  // Absurd times from a crafted file saturate at a century old instead of overflowing.
  EXPECT_EQ(to_monotonic(WallTime{Millis{INT64_MIN + 1}}, now, kWall0),
            now - Millis{int64_t{100} * 366 * 86400 * 1000});
  EXPECT_EQ(to_wall(now - Millis{1500}, now, kWall0), kWall0 - Millis{1500});
  EXPECT_EQ(to_wall(now + Seconds{1}, now, kWall0), kWall0);
  // The two are inverses across a restart: mono times differ, wall times line up.
  const Time t_before{Seconds{900}};
  const WallTime w = to_wall(t_before - Seconds{42}, t_before, kWall0);
  EXPECT_EQ(to_monotonic(w, Time{Seconds{7}}, kWall0 + Seconds{5}), Time{Seconds{7}} - Seconds{47});
}

TEST_F(PersistTest, RoundTripAgesEveryRecordByTheDowntime) {
  fill();
  clock_.advance(Seconds{20});
  const std::vector<uint8_t> file = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});

  // A new process: another monotonic origin, 7 s of wall time later.
  ManualClock later(Time{Seconds{123}});
  Cache restored(settings_);
  const LoadReport r = load(restored, file, later.now(), kWall0 + Seconds{7});
  ASSERT_EQ(r.status, Status::Loaded) << r.problem;
  EXPECT_EQ(r.in_file, 4u);
  EXPECT_EQ(r.loaded, 4u);
  EXPECT_EQ(r.expired, 0u);
  EXPECT_EQ(r.refused, 0u);
  EXPECT_EQ(r.saved_at, kWall0);
  EXPECT_EQ(restored.stats().entries, 4u);

  // Every entry renders, record by record, exactly as the old cache would 7 s on.
  for (const auto& old : cache_.snapshot()) {
    const CacheKey k = CacheKey::make(old->qname(), old->qtype(), old->qclass(), old->dnssec_ok(),
                                      old->checking_disabled());
    const auto now = find(restored, k);
    ASSERT_NE(now, nullptr) << old->qname().to_text();
    EXPECT_EQ(wire_of(*now, later.now()), wire_of(*old, clock_.now() + Seconds{7}));
    EXPECT_EQ(now->expires_at() - later.now(), old->expires_at() - (clock_.now() + Seconds{7}));
    EXPECT_EQ(now->kind(), old->kind());
    EXPECT_EQ(now->authentic_data(), old->authentic_data());
    EXPECT_EQ(now->ttl(), old->ttl());
  }
  const Hit hit = restored.lookup(key("www.example.com"), later.now());
  ASSERT_EQ(hit.freshness, Freshness::Fresh);
  EXPECT_EQ(hit.entry->remaining_ttl(0, later.now()), 3600u - 27);
  EXPECT_EQ(hit.entry->remaining_ttl(1, later.now()), 300u - 27);
}

TEST_F(PersistTest, AnEntryThatExpiredDuringTheDowntimeComesBackStaleThenGoes) {
  OwnedMessage m = response("short.example.com");
  m.answer.push_back(A("short.example.com", 2));
  put(m, key("short.example.com"));
  const auto file = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});

  ManualClock later;
  {
    Cache restored(settings_);  // down 5 s: expired 3 s ago, inside the 60 s stale window
    const LoadReport r = load(restored, file, later.now(), kWall0 + Seconds{5});
    EXPECT_EQ(r.loaded, 1u);
    EXPECT_EQ(restored.lookup(key("short.example.com"), later.now()).freshness, Freshness::Stale);
    // The window closes 62 s after the original insert, wherever the clocks started.
    EXPECT_EQ(restored.lookup(key("short.example.com"), later.now() + Millis{56'999}).freshness,
              Freshness::Stale);
    EXPECT_EQ(restored.lookup(key("short.example.com"), later.now() + Seconds{57}).freshness,
              Freshness::Miss);
  }
  {
    Cache restored(settings_);  // down 62 s: past the window, not loaded at all
    const LoadReport r = load(restored, file, later.now(), kWall0 + Seconds{62});
    EXPECT_EQ(r.status, Status::Loaded);
    EXPECT_EQ(r.loaded, 0u);
    EXPECT_EQ(r.expired, 1u);
    EXPECT_EQ(restored.stats().entries, 0u);
  }
  {
    Cache restored(settings_);  // the wall clock went back: counts as inserted now, fresh
    const LoadReport r = load(restored, file, later.now(), kWall0 - Seconds{3600});
    EXPECT_EQ(r.loaded, 1u);
    const Hit h = restored.lookup(key("short.example.com"), later.now());
    ASSERT_EQ(h.freshness, Freshness::Fresh);
    EXPECT_EQ(h.entry->remaining_ttl(0, later.now()), 2u);
  }
}

TEST_F(PersistTest, TodaysTtlPolicyAppliesToLoadedEntries) {
  fill();
  const auto file = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});
  CacheSettings s = settings_;
  s.ttl.max_ttl = 100;
  s.ttl.negative_max_ttl = 30;
  Cache restored(s);
  restored.set_ttl_cap(N("dnssec.example.com"), 10, clock_.now());
  const LoadReport r = load(restored, file, clock_.now(), kWall0);
  ASSERT_EQ(r.loaded, 4u);
  for (const auto& e : restored.snapshot()) {
    for (const auto& rec : e->records())
      EXPECT_LE(rec.ttl, 100u) << e->qname().to_text();
  }
  EXPECT_EQ(find(restored, key("nope.example.com"))->ttl(), 30u);
  EXPECT_EQ(
      find(restored, CacheKey::make(N("dnssec.example.com"), RRType::A, 1, true, true))->ttl(),
      10u);
}

TEST_F(PersistTest, AnEntryTodaysPolicyShortensPastItsStaleWindowIsNotLoaded) {
  OwnedMessage m = response("long.example.com");
  m.answer.push_back(A("long.example.com", 3600));
  put(m, key("long.example.com"));
  const auto file = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});
  CacheSettings s = settings_;
  s.ttl.max_ttl = 100;  // expired 100 s after insert, window over at 160 s
  Cache restored(s);
  const LoadReport r = load(restored, file, clock_.now(), kWall0 + Seconds{200});
  EXPECT_EQ(r.loaded, 0u);
  EXPECT_EQ(r.expired, 1u);
  EXPECT_EQ(restored.stats().entries, 0u);
}

TEST_F(PersistTest, ASmallerCacheKeepsTheNewestEntries) {
  for (int i = 0; i < 400; ++i) {
    OwnedMessage m = response(nm("host", i, ".example.org"));
    m.answer.push_back(A(nm("host", i, ".example.org"), 3600));
    put(m, key(nm("host", i, ".example.org")));
    clock_.advance(Millis{10});
  }
  const auto file = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});
  Cache small(CacheSettings{.max_bytes = 16 << 10, .shards = 1});
  const LoadReport r = load(small, file, clock_.now(), kWall0);
  ASSERT_EQ(r.status, Status::Loaded);
  EXPECT_GT(r.loaded, 0u);
  EXPECT_LT(small.stats().entries, 400u);
  EXPECT_TRUE(small.peek(key("host399.example.org"), clock_.now()));
  EXPECT_FALSE(small.peek(key("host0.example.org"), clock_.now()));
}

// --- damaged files ---------------------------------------------------------------------------

void reseal(std::vector<uint8_t>& f) {
  const uint32_t crc = crc32c(std::span<const uint8_t>(f).subspan(8, f.size() - 12));
  wire::store_u32_unchecked(f.data() + f.size() - 4, crc);
}

class DamagedFile : public PersistTest {
 protected:
  void SetUp() override {
    fill();
    file_ = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});
  }
  LoadReport try_load(std::span<const uint8_t> bytes) {
    Cache fresh(settings_);
    LoadReport r = load(fresh, bytes, clock_.now(), kWall0);
    EXPECT_EQ(fresh.stats().entries, 0u) << "a rejected file must insert nothing";
    EXPECT_EQ(r.loaded, 0u);
    return r;
  }
  std::vector<uint8_t> file_;
};

TEST_F(DamagedFile, TheIntactFileLoads) {
  Cache fresh(settings_);
  EXPECT_EQ(load(fresh, file_, clock_.now(), kWall0).loaded, 4u);
}

TEST_F(DamagedFile, EmptyAndForeignFilesAreRejected) {
  EXPECT_EQ(try_load({}).status, Status::Rejected);
  const std::string text = "nameserver 192.0.2.1\nnameserver 192.0.2.2\n";
  const LoadReport r = try_load({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_NE(r.problem.find("not an hourglass cache file"), std::string::npos) << r.problem;
}

TEST_F(DamagedFile, EveryTruncationIsRejected) {
  for (std::size_t n = 0; n < file_.size(); ++n) {
    const LoadReport r = try_load(std::span<const uint8_t>(file_).first(n));
    ASSERT_EQ(r.status, Status::Rejected) << "cut at " << n;
    if (n >= kHeaderSize) {
      EXPECT_NE(r.problem.find("truncated"), std::string::npos) << r.problem;
    }
  }
}

TEST_F(DamagedFile, EveryFlippedByteIsRejected) {
  for (std::size_t i = 0; i < file_.size(); ++i) {
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> f = file_;
      f[i] ^= bit;
      ASSERT_EQ(try_load(f).status, Status::Rejected) << "byte " << i << " bit " << int{bit};
    }
  }
}

TEST_F(DamagedFile, AFutureVersionIsRejectedAndNamed) {
  wire::store_u32_unchecked(file_.data() + 8, 2);
  reseal(file_);
  const LoadReport r = try_load(file_);
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_NE(r.problem.find("format version 2 is newer"), std::string::npos) << r.problem;
}

TEST_F(DamagedFile, BytesAfterTheChecksumAreRejected) {
  file_.push_back(0);
  EXPECT_EQ(try_load(file_).status, Status::Rejected);
}

TEST_F(DamagedFile, AWellSealedFileWithABadEntryIsRejected) {
  // Damage inside the first entry's message, then fix the checksum: the structure check
  // (wire/'s parser) must still catch it.
  std::vector<uint8_t> f = file_;
  f[kHeaderSize + kEntryHeaderSize + 5] = 7;  // QDCOUNT low byte: 7 questions
  reseal(f);
  EXPECT_EQ(try_load(f).status, Status::Rejected);
  // Unknown key flag bits.
  f = file_;
  f[kHeaderSize + 8] = 0x80;
  reseal(f);
  EXPECT_EQ(try_load(f).status, Status::Rejected);
  // A count larger than the entries present.
  f = file_;
  wire::store_u32_unchecked(f.data() + 12, 5);
  reseal(f);
  EXPECT_EQ(try_load(f).status, Status::Rejected);
  // A count smaller: bytes left after the last entry.
  f = file_;
  wire::store_u32_unchecked(f.data() + 12, 3);
  reseal(f);
  EXPECT_EQ(try_load(f).status, Status::Rejected);
}

TEST_F(DamagedFile, AnAnswerTheCacheWouldRefuseIsSkippedNotLoaded) {
  // A well-formed, well-sealed entry holding a SERVFAIL: the cache never stores one.
  std::vector<uint8_t> f = file_;
  f[kHeaderSize + kEntryHeaderSize + 3] = (f[kHeaderSize + kEntryHeaderSize + 3] & 0xF0) | 2;
  reseal(f);
  Cache fresh(settings_);
  const LoadReport r = load(fresh, f, clock_.now(), kWall0);
  EXPECT_EQ(r.status, Status::Loaded);
  EXPECT_EQ(r.refused, 1u);
  EXPECT_EQ(r.loaded, 3u);
}

// --- files on disk ----------------------------------------------------------------------------

class PersistFileTest : public PersistTest {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hg-persist-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(PersistFileTest, SaveReplacesAtomicallyWithMode0600AndLoadReadsItBack) {
  fill();
  const std::string path = dir_ + "/cache";
  { std::ofstream(path) << "an older file"; }
  const SaveReport s = save_file(cache_, path, clock_.now(), kWall0);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.entries, 4u);
  EXPECT_EQ(s.bytes, std::filesystem::file_size(path));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Nothing but the file itself is left in the directory (no temporary files).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                          std::filesystem::directory_iterator{}),
            1);
  Cache restored(settings_);
  const LoadReport r = load_file(restored, path, clock_.now(), kWall0 + Seconds{1});
  EXPECT_EQ(r.status, Status::Loaded) << r.problem;
  EXPECT_EQ(r.loaded, 4u);
}

TEST_F(PersistFileTest, AMissingFileIsAFirstStartNotAnError) {
  Cache restored(settings_);
  EXPECT_EQ(load_file(restored, dir_ + "/none", clock_.now(), kWall0).status, Status::Missing);
  // A directory where the file should be is an error, said as such.
  const LoadReport r = load_file(restored, dir_, clock_.now(), kWall0);
  EXPECT_EQ(r.status, Status::Rejected);
}

TEST_F(PersistFileTest, SavingIntoAMissingDirectoryFailsWithTheReason) {
  const SaveReport s = save_file(cache_, dir_ + "/no/such/cache", clock_.now(), kWall0);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find("No such file or directory"), std::string::npos) << s.error;
}

}  // namespace
}  // namespace hg::cache::persist
