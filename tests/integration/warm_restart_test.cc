// Warm restart: the real hourglassd, stopped and started again with --cache-file. Cached
// answers come back with their TTLs counted down by the downtime, stale ones are served stale
// when the upstream fails, and a damaged file costs one warning line and an empty cache.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/bytes.h"
#include "base/crc32c.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using SteadyClock = std::chrono::steady_clock;

class WarmRestart : public ::testing::Test {
 protected:
  void SetUp() override { path_ = dir_.file("cache"); }

  std::unique_ptr<Daemon> start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--upstream", upstream_.address(), "--cache-file", path_};
    args.insert(args.end(), extra.begin(), extra.end());
    auto d = Daemon::start(args);
    EXPECT_TRUE(d->ready()) << d->output();
    return d;
  }
  /// SIGTERM, then wait for a clean exit (which writes the file).
  void stop(Daemon& d) {
    ASSERT_TRUE(d.signal(SIGTERM));
    EXPECT_EQ(d.wait_exit(Millis{10000}), 0) << d.output();
    // The process may be gone before the output thread has read its last lines.
    EXPECT_TRUE(d.wait_for_output("hourglassd: saved", Millis{5000})) << d.output();
    EXPECT_EQ(d.lines_with("hourglassd: saved").size(), 1u) << d.output();
  }
  std::optional<Answer> ask(const Daemon& d, const std::string& name) {
    return udp_query(d.port(), build_query(Query{.name = name}), Millis{6000});
  }
  std::vector<uint8_t> file_bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  void write_file(const std::vector<uint8_t>& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  /// The downtime on virtual time: the saved file's save time and every entry's insert time
  /// move back by `d` (the format in cache/persist.h), its checksum is computed again, and the
  /// next start sees a daemon that has been down `d` longer than it was. No sleep.
  void age_file(Millis d) const {
    std::vector<uint8_t> f = file_bytes();
    ASSERT_GE(f.size(), 36u);
    auto move_back = [&](std::size_t at) {
      base::store_u64(&f[at], base::load_u64(&f[at]) - static_cast<uint64_t>(d.count()));
    };
    move_back(16);  // saved at
    const uint32_t count = base::load_u32(&f[12]);
    std::size_t at = 32;
    for (uint32_t i = 0; i < count; ++i) {
      ASSERT_LE(at + 11, f.size() - 4);
      move_back(at);  // inserted at
      at += 11 + base::load_u16(&f[at + 9]);
    }
    ASSERT_EQ(at, f.size() - 4);
    base::store_u32(&f[f.size() - 4],
                    base::crc32c(std::span<const uint8_t>(f).subspan(8, f.size() - 12)));
    write_file(f);
  }

  test::FakeUpstream upstream_;
  test::TempDir dir_{"hg-warm"};
  std::string path_;
};

TEST_F(WarmRestart, ACachedNameIsAHitAfterARestartWithItsTtlCountedDown) {
  const std::string name = random_label() + ".warm.example";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 300, "192.0.2.44")}));
  auto first = start();
  const auto a = ask(*first, name);
  const auto answered = SteadyClock::now();
  ASSERT_TRUE(a);
  ASSERT_EQ(a->ttls().size(), 1u);
  const uint32_t ttl_before = a->ttls()[0];
  EXPECT_EQ(upstream_.queries(name), 1u);
  stop(*first);
  first.reset();

  ASSERT_NO_FATAL_FAILURE(age_file(Millis{2200}));  // the downtime
  auto second = start();
  EXPECT_EQ(second->lines_with("loaded 1 of 1 answers").size(), 1u) << second->output();
  const auto b = ask(*second, name);
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now() - answered).count();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->rcode(), wire::RCode::NoError);
  ASSERT_EQ(b->ttls().size(), 1u) << b->text();
  const uint32_t ttl_after = b->ttls()[0];
  // Down at least 2 s; at most the whole time since the first answer plus the 2.2 s the file
  // was aged (3 s, rounded up) and a second of rounding: TTLs count whole seconds.
  EXPECT_LE(ttl_after, ttl_before - 2);
  EXPECT_GE(ttl_after + static_cast<uint32_t>(elapsed) + 3 + 1, ttl_before);
  EXPECT_FALSE(b->ede());
  EXPECT_EQ(upstream_.queries(name), 1u) << "the restarted daemon asked the upstream again";
}

TEST_F(WarmRestart, ARecordThatExpiredDuringTheDowntimeIsServedStaleOnUpstreamFailure) {
  const std::string name = random_label() + ".stale.example";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 1, "192.0.2.45")}));
  auto first = start({"--stale-max", "60"});
  ASSERT_TRUE(ask(*first, name));
  stop(*first);
  first.reset();

  ASSERT_NO_FATAL_FAILURE(age_file(Millis{2000}));  // the 1 s TTL runs out meanwhile
  upstream_.on(name, FakeReply::servfail());
  auto second = start({"--stale-max", "60"});
  EXPECT_EQ(second->lines_with("loaded 1 of 1 answers").size(), 1u) << second->output();
  const auto b = ask(*second, name);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->rcode(), wire::RCode::NoError) << b->text();
  EXPECT_EQ(b->ede(), std::optional<uint16_t>(3)) << b->text();  // Stale Answer
  ASSERT_EQ(b->ttls().size(), 1u);
  EXPECT_EQ(b->ttls()[0], 1u);             // min(stale-ttl 30, the record's own 1 s)
  EXPECT_GE(upstream_.queries(name), 2u);  // asked before the restart, and to refresh
}

TEST_F(WarmRestart, ARecordPastItsStaleWindowIsNotLoaded) {
  const std::string name = random_label() + ".gone.example";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 1, "192.0.2.46")}));
  auto first = start({"--stale-max", "1"});
  ASSERT_TRUE(ask(*first, name));
  stop(*first);
  first.reset();

  ASSERT_NO_FATAL_FAILURE(age_file(Millis{2500}));  // TTL 1 s + stale window 1 s are both over
  upstream_.on(name, FakeReply::servfail());
  auto second = start({"--stale-max", "1"});
  // Nothing is loaded: normally the file holds the entry and the loader drops it; on a very
  // slow machine the stop itself may come after the window closed, and the file holds none.
  EXPECT_EQ(second->lines_with("loaded 0 of ").size(), 1u) << second->output();
  if (!second->lines_with("loaded 0 of 1 answers").empty()) {
    EXPECT_EQ(second->lines_with("1 past their stale window").size(), 1u) << second->output();
  }
  const auto b = ask(*second, name);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->rcode(), wire::RCode::ServFail) << b->text();
  EXPECT_TRUE(b->ttls().empty());
}

TEST_F(WarmRestart, CtlSaveWritesTheFileWhileRunning) {
  const std::string name = random_label() + ".saved.example";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 300, "192.0.2.47")}));
  const std::string ctl = dir_.file("control");
  auto first = start({"--control", ctl});
  ASSERT_TRUE(ask(*first, name));
  const auto saved = integration::ctl(ctl, "save");
  EXPECT_EQ(saved.exit_code, 0);
  EXPECT_TRUE(saved.contains("saved 1 answers to " + path_)) << saved.output;
  // A crash (no graceful save) then loses nothing that `save` wrote.
  ASSERT_TRUE(first->signal(SIGKILL));
  first->wait_exit(Millis{5000});
  first.reset();
  auto second = start();
  EXPECT_EQ(second->lines_with("loaded 1 of 1 answers").size(), 1u) << second->output();
  ASSERT_TRUE(ask(*second, name));
  EXPECT_EQ(upstream_.queries(name), 1u);
}

TEST_F(WarmRestart, TheTomlKeyWorksToo) {
  const std::string name = random_label() + ".toml.example";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 300, "192.0.2.48")}));
  TempFile conf("cache-file = \"" + path_ + "\"\n");
  auto first = Daemon::start({"--upstream", upstream_.address(), "--config", conf.path()});
  ASSERT_TRUE(first->ready()) << first->output();
  ASSERT_TRUE(ask(*first, name));
  stop(*first);
  EXPECT_TRUE(std::filesystem::exists(path_));
}

// Each kind of damage: one warning line on stderr, an empty cache, and normal service.
class DamagedCacheFile : public WarmRestart {
 protected:
  void SetUp() override {
    WarmRestart::SetUp();
    name_ = random_label() + ".damaged.example";
    upstream_.on(name_, FakeReply::records({FakeRecord::a("", 300, "192.0.2.49")}));
    auto d = start();
    ASSERT_TRUE(ask(*d, name_));
    stop(*d);
    good_ = file_bytes();
    ASSERT_GT(good_.size(), 36u);
  }
  void expect_empty_cache_and_service(const std::string& problem) {
    const std::size_t asked = upstream_.queries(name_);
    auto d = start();
    const auto warnings = d->lines_with("warning:");
    ASSERT_EQ(warnings.size(), 1u) << d->output();
    EXPECT_NE(warnings[0].find("cache file " + path_), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(problem), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("starting with an empty cache"), std::string::npos);
    const auto a = ask(*d, name_);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), wire::RCode::NoError);
    EXPECT_EQ(a->ttls(), std::vector<uint32_t>{300});
    EXPECT_EQ(upstream_.queries(name_), asked + 1) << "the name came from the damaged file";
  }
  std::string name_;
  std::vector<uint8_t> good_;
};

TEST_F(DamagedCacheFile, Truncated) {
  write_file(std::vector<uint8_t>(good_.begin(), good_.end() - 9));
  expect_empty_cache_and_service("truncated");
}

TEST_F(DamagedCacheFile, FlippedByte) {
  std::vector<uint8_t> f = good_;
  f[f.size() / 2] ^= 0x10;
  write_file(f);
  expect_empty_cache_and_service("checksum mismatch");
}

TEST_F(DamagedCacheFile, ForeignFile) {
  const std::string text = "# Generated by NetworkManager\nnameserver 192.0.2.1\n";
  write_file(std::vector<uint8_t>(text.begin(), text.end()));
  expect_empty_cache_and_service("not an hourglass cache file");
}

// A newer version's file is not damaged: it is left for the version that wrote it, and this
// one starts from (and saves to) PATH.v1, here still missing. Its own line says so.
TEST_F(DamagedCacheFile, FutureVersion) {
  std::vector<uint8_t> f = good_;
  f[11] = 2;  // format version 2
  write_file(f);
  const std::size_t asked = upstream_.queries(name_);
  auto d = start();
  const auto warnings = d->lines_with("warning:");
  ASSERT_EQ(warnings.size(), 1u) << d->output();
  EXPECT_NE(warnings[0].find("cache file " + path_ + ": format version 2 is newer"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("loads and saves " + path_ + ".v1 instead"), std::string::npos);
  EXPECT_EQ(d->lines_with(path_ + ".v1: none yet; starting with an empty cache").size(), 1u)
      << d->output();
  ASSERT_TRUE(ask(*d, name_));
  EXPECT_EQ(upstream_.queries(name_), asked + 1) << "the name came from the newer file";
}

}  // namespace
}  // namespace hg::integration
