// base/small_file.h: a file read whole, and every way it is refused — missing, a directory, a
// FIFO (never blocked on), larger than the bound — with the errno where there is one.
#include "base/small_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace hg::base {
namespace {

class SmallFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hg-small-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string dir_;
};

TEST_F(SmallFileTest, AFileUpToTheBoundIsReadWhole) {
  const std::string text = std::string(100000, 'x') + "\nend";
  const SmallFile f = read_small_file(write("a", text), text.size());
  EXPECT_EQ(f.status, SmallFile::Status::Ok);
  EXPECT_EQ(f.text, text);
  EXPECT_EQ(read_small_file(write("empty", ""), 10).status, SmallFile::Status::Ok);
}

TEST_F(SmallFileTest, MissingDirectoryFifoAndTooLargeAreRefused) {
  const SmallFile missing = read_small_file(dir_ + "/nothing", 10);
  EXPECT_EQ(missing.status, SmallFile::Status::CannotOpen);
  EXPECT_EQ(missing.error, ENOENT);
  EXPECT_EQ(read_small_file(dir_, 10).status, SmallFile::Status::NotRegular);
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_small_file(fifo, 10).status, SmallFile::Status::NotRegular);  // and no hang
  const SmallFile big = read_small_file(write("big", std::string(11, 'x')), 10);
  EXPECT_EQ(big.status, SmallFile::Status::TooLarge);
  EXPECT_TRUE(big.text.empty());
}

}  // namespace
}  // namespace hg::base
