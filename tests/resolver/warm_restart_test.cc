// PeriodicSaver (--cache-save-interval): what one tick of its thread does. The thread itself
// runs with an hour's interval here, so only the test calls save_if_changed(): a save only
// when something was inserted or removed since the last one, the file 0600 and complete,
// and a failure that writes nothing and is retried at the next tick.
#include "resolver/ops/warm_restart.h"
#include "base/bytes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cache/key.h"
#include "tests/resolver/cached_answers.h"
#include "tests/support/temp_dir.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"
#include "wire/reader.h"

namespace hg::resolver {
namespace {

using wire::test::Bytes;
using wire::test::PacketBuilder;

class PeriodicSaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.cache_file = dir_.file("cache");
    shared_ = std::make_unique<Shared>(config_);
  }
  void TearDown() override { shared_.reset(); }
  void insert_a(std::string_view name) {
    // The saver stamps files with the real clocks: insert at the real monotonic now.
    cache_answer(shared_->cache, name, a_response(name),
                 std::chrono::time_point_cast<Millis>(std::chrono::steady_clock::now()));
  }
  // The answer count in the file's header; -1 when there is no complete file.
  int64_t answers_in_file() const {
    std::ifstream in(config_.cache_file, std::ios::binary);
    const std::vector<uint8_t> f{std::istreambuf_iterator<char>(in), {}};
    if (f.size() < cache::persist::kHeaderSize + cache::persist::kTrailerSize) return -1;
    return base::load_u32(f.data() + 12);
  }

  test::TempDir dir_{"hg-saver"};
  Config config_;
  std::unique_ptr<Shared> shared_;
};

TEST_F(PeriodicSaverTest, SavesOnlyWhatChangedSinceTheLastSave) {
  insert_a("loaded.example.com");  // as if loaded from the file before the saver started
  PeriodicSaver saver(*shared_, std::chrono::hours{1});
  EXPECT_FALSE(saver.save_if_changed()) << "the cache is what was loaded";
  EXPECT_FALSE(std::filesystem::exists(config_.cache_file));

  insert_a("www.example.com");
  EXPECT_TRUE(saver.save_if_changed());
  EXPECT_EQ(saver.saves(), 1u);
  EXPECT_EQ(answers_in_file(), 2);
  struct stat st = {};
  ASSERT_EQ(::stat(config_.cache_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // Unchanged: nothing is written (the file, removed here, does not come back).
  std::filesystem::remove(config_.cache_file);
  EXPECT_FALSE(saver.save_if_changed());
  EXPECT_FALSE(std::filesystem::exists(config_.cache_file));
  EXPECT_EQ(saver.saves(), 1u);

  // A removal alone is a change: a flushed answer must not come back after a crash.
  EXPECT_EQ(shared_->cache.flush_name(wire::Name::from_text("www.example.com").value()), 1u);
  EXPECT_TRUE(saver.save_if_changed());
  EXPECT_EQ(answers_in_file(), 1);
  EXPECT_EQ(saver.saves(), 2u);
}

TEST_F(PeriodicSaverTest, AFailedSaveWritesNothingAndIsTriedAgain) {
  PeriodicSaver saver(*shared_, std::chrono::hours{1});
  const std::string real = config_.cache_file;
  shared_->config.cache_file = dir_.file("missing/cache");
  insert_a("www.example.com");
  EXPECT_FALSE(saver.save_if_changed());
  EXPECT_EQ(saver.saves(), 0u);
  // The directory appears: the next tick saves the change it could not save before.
  std::filesystem::create_directory(dir_.file("missing"));
  EXPECT_TRUE(saver.save_if_changed());
  EXPECT_EQ(saver.saves(), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir_.file("missing/cache")));
}

}  // namespace
}  // namespace hg::resolver
