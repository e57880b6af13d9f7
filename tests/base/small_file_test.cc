// base/small_file.h: a file read whole, and every way it is refused — missing, a directory, a
// FIFO (never blocked on), larger than the bound — with the errno where there is one; and the
// checked open under it (base/checked_open.h): links, foreign owners, writable and
// hard-linked private files.
#include "base/small_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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
  // The checked open (base/checked_open.h) refuses them, saying what they are.
  const SmallFile dir = read_small_file(dir_, 10);
  EXPECT_EQ(dir.status, SmallFile::Status::Refused);
  EXPECT_EQ(dir.refused, "is not a regular file (a directory)");
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const SmallFile f = read_small_file(fifo, 10);  // and no hang
  EXPECT_EQ(f.status, SmallFile::Status::Refused);
  EXPECT_EQ(f.refused, "is not a regular file (a FIFO)");
  // Unchecked (a tool reading the system's files), a FIFO is still not read.
  EXPECT_EQ(read_small_file(fifo, 10, FileCheck::Any).status, SmallFile::Status::NotRegular);
  const SmallFile big = read_small_file(write("big", std::string(11, 'x')), 10);
  EXPECT_EQ(big.status, SmallFile::Status::TooLarge);
  EXPECT_TRUE(big.text.empty());
}

// The rules every file taken by path is read under: no symbolic link (unless unchecked), no
// file others or the group may write, no private file with a second hard link; a private
// file is read but flagged, so that its lines are not quoted.
TEST_F(SmallFileTest, TheCheckedOpenRefusesLinksWritableAndHardLinkedPrivateFiles) {
  const std::string real = write("real", "secret line\n");
  ASSERT_EQ(::chmod(real.c_str(), 0644), 0);
  const std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  const SmallFile l = read_small_file(link, 100);
  EXPECT_EQ(l.status, SmallFile::Status::Refused);
  EXPECT_EQ(l.refused.rfind("is a symbolic link to '" + real + "'", 0), 0u) << l.refused;
  EXPECT_TRUE(l.text.empty());
  EXPECT_EQ(read_small_file(link, 100, FileCheck::Any).text, "secret line\n");

  for (const mode_t mode : {mode_t{0664}, mode_t{0646}, mode_t{0666}}) {
    ASSERT_EQ(::chmod(real.c_str(), mode), 0);
    const SmallFile w = read_small_file(real, 100);
    EXPECT_EQ(w.status, SmallFile::Status::Refused) << std::oct << mode;
    EXPECT_NE(w.refused.find("is writable by"), std::string::npos) << w.refused;
    EXPECT_NE(w.refused.find("chmod go-w '" + real + "'"), std::string::npos) << w.refused;
  }

  ASSERT_EQ(::chmod(real.c_str(), 0644), 0);
  EXPECT_FALSE(read_small_file(real, 100).private_text);
  ASSERT_EQ(::chmod(real.c_str(), 0600), 0);
  const SmallFile p = read_small_file(real, 100);
  EXPECT_EQ(p.status, SmallFile::Status::Ok);
  EXPECT_TRUE(p.private_text);
  const std::string hard = dir_ + "/hard";
  ASSERT_EQ(::link(real.c_str(), hard.c_str()), 0);
  const SmallFile h = read_small_file(hard, 100);
  EXPECT_EQ(h.status, SmallFile::Status::Refused);
  EXPECT_NE(h.refused.find("has 2 hard links"), std::string::npos) << h.refused;
  // Readable by everyone, a second link hides nothing.
  ASSERT_EQ(::chmod(real.c_str(), 0644), 0);
  EXPECT_EQ(read_small_file(hard, 100).status, SmallFile::Status::Ok);
}

TEST_F(SmallFileTest, AnotherUsersFileIsRefusedAndTheDaemonsUserIsTrusted) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root (CI runs as root)";
  const std::string theirs = write("theirs", "x\n");
  ASSERT_EQ(::chmod(theirs.c_str(), 0644), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  const SmallFile t = read_small_file(theirs, 100);
  EXPECT_EQ(t.status, SmallFile::Status::Refused);
  EXPECT_EQ(t.refused.rfind("is owned by uid 65534", 0), 0u) << t.refused;
  trust_daemon_uid(65534);  // --user nobody: its files are the daemon's own
  EXPECT_EQ(read_small_file(theirs, 100).status, SmallFile::Status::Ok);
  detail::daemon_uid.store(-1);
}

}  // namespace
}  // namespace hg::base
