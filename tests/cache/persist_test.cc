// The cache file: round trips with a ManualClock, the wall-clock ageing arithmetic, and every
// kind of damaged file (each must load nothing and say why).
#include "cache/persist.h"
#include "base/bytes.h"
#include "base/crc32c.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cache/clock.h"
#include "cache_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/wire/answer_cases.h"

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
  // keep_ad: this cache stands for a daemon with --trust-ad, so the signed entry keeps AD.
  CacheSettings settings_{
      .max_bytes = 1 << 20, .shards = 4, .stale_max = Seconds{60}, .keep_ad = true};
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

TEST_F(PersistTest, AFileLoadedWithoutTrustedAdKeepsNoAdBit) {
  // The file says AD for one entry: written by a daemon that trusted its upstream's AD, by an
  // older hourglass that passed any upstream's AD on, or planted. A daemon that trusts no
  // upstream's AD must not serve it as authentic.
  fill();
  ASSERT_TRUE(find(cache_, CacheKey::make(N("dnssec.example.com"), RRType::A, 1, true, true))
                  ->authentic_data());
  const auto file = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});
  CacheSettings untrusting = settings_;
  untrusting.keep_ad = false;
  Cache restored(untrusting);
  const LoadReport r = load(restored, file, clock_.now(), kWall0);
  ASSERT_EQ(r.status, Status::Loaded) << r.problem;
  EXPECT_EQ(r.loaded, 4u);
  for (const auto& e : restored.snapshot())
    EXPECT_FALSE(e->authentic_data()) << e->qname().to_text();
  const auto e = find(restored, CacheKey::make(N("dnssec.example.com"), RRType::A, 1, true, true));
  ASSERT_NE(e, nullptr);
  const auto bytes = wire_of(*e, clock_.now());
  wire::Message m;
  ASSERT_TRUE(m.parse(bytes, wire::ParseMode::Strict));
  EXPECT_FALSE(m.header().ad());
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
    Cache restored(settings_);  // the wall clock went back an hour: the file is refused
    const LoadReport r = load(restored, file, later.now(), kWall0 - Seconds{3600});
    EXPECT_EQ(r.status, Status::Rejected);
    EXPECT_EQ(restored.stats().entries, 0u);
  }
  {
    Cache restored(settings_);  // back by 3 s (within kFutureSkew): inserted now, fresh
    const LoadReport r = load(restored, file, later.now(), kWall0 - Seconds{3});
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
  const uint32_t crc = base::crc32c(std::span<const uint8_t>(f).subspan(8, f.size() - 12));
  base::store_u32(f.data() + f.size() - 4, crc);
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
  base::store_u32(file_.data() + 8, 2);
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
  base::store_u32(f.data() + 12, 5);
  reseal(f);
  EXPECT_EQ(try_load(f).status, Status::Rejected);
  // A count smaller: bytes left after the last entry.
  f = file_;
  base::store_u32(f.data() + 12, 3);
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
  test::TempDir dir_{"hg-persist"};
};

TEST_F(PersistFileTest, SaveReplacesAtomicallyWithMode0600AndLoadReadsItBack) {
  fill();
  const std::string path = dir_.file("cache");
  std::ofstream(path) << "an older file";
  const SaveReport s = save_file(cache_, path, clock_.now(), kWall0);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.entries, 4u);
  EXPECT_EQ(s.bytes, std::filesystem::file_size(path));
  struct stat st = {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Nothing but the file itself is left in the directory (no temporary files).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()),
                          std::filesystem::directory_iterator{}),
            1);
  Cache restored(settings_);
  const LoadReport r = load_file(restored, path, clock_.now(), kWall0 + Seconds{1});
  EXPECT_EQ(r.status, Status::Loaded) << r.problem;
  EXPECT_EQ(r.loaded, 4u);
}

TEST_F(PersistFileTest, AMissingFileIsAFirstStartNotAnError) {
  Cache restored(settings_);
  EXPECT_EQ(load_file(restored, dir_.file("none"), clock_.now(), kWall0).status, Status::Missing);
  // A directory where the file should be is an error, said as such.
  const LoadReport r = load_file(restored, dir_.path(), clock_.now(), kWall0);
  EXPECT_EQ(r.status, Status::Rejected);
}

TEST_F(PersistFileTest, SavingIntoAMissingDirectoryFailsWithTheReason) {
  const SaveReport s = save_file(cache_, dir_.file("no/such/cache"), clock_.now(), kWall0);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find("No such file or directory"), std::string::npos) << s.error;
}

// --- planted files (the checks of load_file() before it reads) ---------------------------------

class PlantedFile : public PersistFileTest {
 protected:
  void SetUp() override {
    PersistFileTest::SetUp();
    path_ = dir_.file("cache");
    fill();
    ASSERT_TRUE(save_file(cache_, path_, clock_.now(), kWall0).ok);
  }
  // Loads as the file's owner would, with the cache's own size as the limit.
  LoadReport try_load(const FileRules& rules) {
    Cache fresh(settings_);
    const LoadReport r = load_file(fresh, path_, clock_.now(), kWall0, rules);
    EXPECT_EQ(fresh.stats().entries, r.loaded);
    return r;
  }
  LoadReport try_load() { return try_load(rules_for(cache_)); }
  static bool has(const LoadReport& r, std::string_view what) {
    return r.problem.find(what) != std::string::npos;
  }
  std::string path_;
};

TEST_F(PlantedFile, TheSavedFileLoadsUnderTheRules) {
  const LoadReport r = try_load();
  ASSERT_EQ(r.status, Status::Loaded) << r.problem;
  EXPECT_EQ(r.loaded, 4u);
}

TEST_F(PlantedFile, AnotherUsersFileIsRefused) {
  FileRules rules = rules_for(cache_);
  rules.owner += 1;  // the file is ours: to the rules, someone else's
  const LoadReport r = try_load(rules);
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_EQ(r.loaded, 0u);
  EXPECT_TRUE(has(r, "owned by uid " + std::to_string(::geteuid()))) << r.problem;
  EXPECT_TRUE(has(r, "not by uid " + std::to_string(rules.owner))) << r.problem;
}

TEST_F(PlantedFile, AFileOthersCanWriteIsRefused) {
  for (const mode_t mode : {mode_t{0666}, mode_t{0620}, mode_t{0602}}) {
    ASSERT_EQ(::chmod(path_.c_str(), mode), 0);
    const LoadReport r = try_load();
    EXPECT_EQ(r.status, Status::Rejected) << std::oct << mode;
    EXPECT_TRUE(has(r, "writable by")) << r.problem;
  }
  // Readable by others is their business (the daemon writes 0600); writable is not.
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  EXPECT_EQ(try_load().status, Status::Loaded);
}

TEST_F(PlantedFile, ASymbolicLinkIsRefusedWhereverItPoints) {
  const std::string real = dir_.file("real");
  ASSERT_EQ(::rename(path_.c_str(), real.c_str()), 0);
  ASSERT_EQ(::symlink(real.c_str(), path_.c_str()), 0);
  const LoadReport r = try_load();
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_TRUE(has(r, "symbolic link")) << r.problem;
}

TEST_F(PlantedFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
  // Without O_NONBLOCK the open would wait for a writer for ever (the test would time out).
  const LoadReport r = try_load();
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_TRUE(has(r, "not a regular file (a FIFO)")) << r.problem;
}

TEST_F(PlantedFile, AFileLargerThanTheCacheIsNotRead) {
  // 1 TiB, sparse: refused from its size alone (reading it would end in bad_alloc).
  ASSERT_EQ(::truncate(path_.c_str(), off_t{1} << 40), 0);
  LoadReport r = try_load();
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_TRUE(has(r, "is 1099511627776 bytes, larger than the whole cache (1048576 bytes)"))
      << r.problem;
  // One byte over the limit is refused too; a limit of the file's size reads it.
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_TRUE(save_file(cache_, path_, clock_.now(), kWall0).ok);
  const auto size = std::filesystem::file_size(path_);
  FileRules rules = rules_for(cache_);
  rules.max_bytes = size - 1;
  EXPECT_EQ(try_load(rules).status, Status::Rejected);
  rules.max_bytes = size;
  EXPECT_EQ(try_load(rules).status, Status::Loaded);
}

TEST_F(PlantedFile, AHeaderThatDoesNotMatchTheSizeStopsTheRead) {
  // Zeros: no magic. A valid header claiming a longer payload: truncated. Both decided from
  // the first 32 bytes (check_header), before the rest is read.
  ASSERT_EQ(::truncate(path_.c_str(), 0), 0);
  ASSERT_EQ(::truncate(path_.c_str(), 512 << 10), 0);
  EXPECT_TRUE(has(try_load(), "no magic number"));
  std::vector<uint8_t> head(kHeaderSize);
  ASSERT_TRUE(save_file(cache_, path_, clock_.now(), kWall0).ok);
  const auto size = std::filesystem::file_size(path_);
  {
    std::ifstream in(path_, std::ios::binary);
    in.read(reinterpret_cast<char*>(head.data()), kHeaderSize);
  }
  EXPECT_FALSE(check_header(head, size).has_value());
  const auto longer = check_header(head, size - 1);
  ASSERT_TRUE(longer.has_value());
  EXPECT_NE(longer->problem.find("truncated"), std::string::npos) << longer->problem;
  // A payload length near 2^64 is reported without overflowing.
  for (std::size_t i = 24; i < 32; ++i)
    head[i] = 0xFF;
  const auto huge = check_header(head, size);
  ASSERT_TRUE(huge.has_value());
  EXPECT_NE(huge->problem.find("the header says 18446744073709551615"), std::string::npos)
      << huge->problem;
}

TEST_F(PlantedFile, ANewerVersionIsLeftInPlaceAndTheSaveGoesToTheFallback) {
  std::vector<uint8_t> newer = encode(cache_.snapshot(), clock_.now(), kWall0, Seconds{60});
  base::store_u32(newer.data() + 8, kFormatVersion + 1);
  reseal(newer);
  {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(newer.data()),
              static_cast<std::streamsize>(newer.size()));
  }
  const LoadReport r = try_load();
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_TRUE(r.newer);
  EXPECT_TRUE(has(r, "format version 2 is newer")) << r.problem;

  const SaveReport s = save_file(cache_, path_, clock_.now(), kWall0);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.path, path_ + ".v1");
  EXPECT_EQ(fallback_path(path_), path_ + ".v1");
  EXPECT_NE(s.diverted.find("newer format version"), std::string::npos) << s.diverted;
  std::ifstream in(path_, std::ios::binary);
  const std::vector<uint8_t> after{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(after, newer) << "the newer file was touched";
  Cache restored(settings_);
  EXPECT_EQ(load_file(restored, s.path, clock_.now(), kWall0).loaded, 4u);
  // An older or damaged file at the path is simply replaced.
  ASSERT_EQ(::truncate(path_.c_str(), 10), 0);
  const SaveReport again = save_file(cache_, path_, clock_.now(), kWall0);
  EXPECT_EQ(again.path, path_);
  EXPECT_TRUE(again.diverted.empty());
}

TEST_F(PlantedFile, TheSavedFileIs0600WhateverTheUmask) {
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  const mode_t old = ::umask(0);
  const SaveReport open_umask = save_file(cache_, path_, clock_.now(), kWall0);
  ::umask(0277);  // would leave the owner read-only
  const std::string other = dir_.file("other");
  const SaveReport tight_umask = save_file(cache_, other, clock_.now(), kWall0);
  ::umask(old);
  ASSERT_TRUE(open_umask.ok && tight_umask.ok) << open_umask.error << tight_umask.error;
  for (const std::string& p : {path_, other}) {
    struct stat st = {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << p;
  }
}

// --- insert times from the future ---------------------------------------------------------------

TEST_F(DamagedFile, AFileSavedInTheFutureIsRejected) {
  // Saved at kWall0; loaded with the clock an hour behind that.
  Cache fresh(settings_);
  LoadReport r = load(fresh, file_, clock_.now(), kWall0 - Seconds{3600});
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_NE(r.problem.find("saved 3600 s in the future"), std::string::npos) << r.problem;
  EXPECT_EQ(fresh.stats().entries, 0u);
  // Within the skew allowed for clock adjustments it loads, the entries as inserted now.
  r = load(fresh, file_, clock_.now(), kWall0 - kFutureSkew);
  EXPECT_EQ(r.status, Status::Loaded) << r.problem;
  EXPECT_EQ(r.loaded, 4u);
}

TEST_F(DamagedFile, AnEntryInsertedAfterTheSaveIsRejected) {
  // The first entry's insert time moved to 2100, the file resealed: the TTL would never
  // count down. The save time is honest, so only the entry gives it away.
  std::vector<uint8_t> f = file_;
  const int64_t y2100 = 4'102'444'800'000;
  for (int i = 0; i < 8; ++i)
    f[kHeaderSize + static_cast<std::size_t>(i)] = static_cast<uint8_t>(y2100 >> (56 - 8 * i));
  reseal(f);
  const LoadReport r = try_load(f);
  EXPECT_EQ(r.status, Status::Rejected);
  EXPECT_NE(r.problem.find("entry 1 of 4 was inserted after the file was saved"), std::string::npos)
      << r.problem;
  // Both moved to 2100: the save time gives it away.
  for (int i = 0; i < 8; ++i)
    f[16 + static_cast<std::size_t>(i)] = static_cast<uint8_t>(y2100 >> (56 - 8 * i));
  reseal(f);
  const LoadReport both = try_load(f);
  EXPECT_EQ(both.status, Status::Rejected);
  EXPECT_NE(both.problem.find("in the future"), std::string::npos) << both.problem;
}

// --- untrusted entries: the one normaliser (wire::AnswerNormalizer) ------------------------------

// A sealed file of one entry holding `message`, saved and inserted at kWall0.
std::vector<uint8_t> file_holding(std::span<const uint8_t> message) {
  std::vector<uint8_t> f = encode({}, Time{}, kWall0, Seconds{60});
  f.resize(f.size() - 4);  // the checksum, written again below
  base::append_u64(f, static_cast<uint64_t>(kWall0.time_since_epoch().count()));
  f.push_back(0);  // key flags: DO and CD clear
  base::append_u16(f, static_cast<uint16_t>(message.size()));
  f.insert(f.end(), message.begin(), message.end());
  base::store_u32(f.data() + 12, 1);
  base::store_u64(f.data() + 24, f.size() - kHeaderSize);
  f.resize(f.size() + 4);
  reseal(f);
  return f;
}

TEST_F(PersistTest, AFileEntryIsStoredAsTheNormalizerWritesIt) {
  const auto message = wire::test::odd_but_valid_answer(/*opt_and_junk=*/false);
  Cache fresh(settings_);
  const LoadReport r = load(fresh, file_holding(message), clock_.now(), kWall0);
  ASSERT_EQ(r.status, Status::Loaded) << r.problem;
  ASSERT_EQ(r.loaded, 1u);
  wire::AnswerNormalizer n;
  ASSERT_EQ(n.normalize(message), wire::NormalizeStatus::Ok);
  ASSERT_FALSE(std::ranges::equal(n.bytes().subspan(12), std::span(message).subspan(12)))
      << "the case must need rewriting, or this test shows nothing";
  // Saved again, the entry is the normaliser's bytes after the header (the file writes a
  // header of its own: ID 0, RA).
  const auto again = encode(fresh.snapshot(), clock_.now(), kWall0, Seconds{60});
  ASSERT_EQ(again.size(), kHeaderSize + kEntryHeaderSize + n.bytes().size() + 4);
  const std::span<const uint8_t> saved(again.data() + kHeaderSize + kEntryHeaderSize + 12,
                                       n.bytes().size() - 12);
  EXPECT_TRUE(std::ranges::equal(saved, n.bytes().subspan(12)));
}

TEST_F(PersistTest, HostileEntriesGetTheNormalizersVerdict) {
  for (const auto& c : wire::test::answer_cases()) {
    if (c.bytes.size() > 0xFFFF) continue;  // an entry's length field has 16 bits
    if (c.status == wire::NormalizeStatus::Ok) continue;
    SCOPED_TRACE(c.name);
    Cache fresh(settings_);
    const LoadReport r = load(fresh, file_holding(c.bytes), clock_.now(), kWall0);
    EXPECT_EQ(fresh.stats().entries, 0u);
    EXPECT_EQ(r.loaded, 0u);
    if (c.status == wire::NormalizeStatus::Malformed) {
      // The file's own check parses every entry first: the whole file is refused, naming
      // the parser's error.
      EXPECT_EQ(r.status, Status::Rejected);
      EXPECT_NE(r.problem.find(wire::to_string(*c.parse_error)), std::string::npos) << r.problem;
    } else {
      // Well formed, but too large once written again: refused, the rest of the file loads.
      EXPECT_EQ(r.status, Status::Loaded) << r.problem;
      EXPECT_EQ(r.refused, 1u);
    }
  }
}

}  // namespace
}  // namespace hg::cache::persist
