// tools/ctl/system_resolver.h on scratch files (never /etc/resolv.conf): switch, refuse a
// second switch, undo, and leave a file something else rewrote alone.
#include "tools/ctl/system_resolver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hg::ctl {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SystemResolverTest : public ::testing::Test {
 protected:
  SystemResolverTest() {
    char tmpl[] = "/tmp/hg-sysres-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    resolv_ = dir_ / "resolv.conf";
    backup_ = dir_ / "resolv.conf.before";
  }
  ~SystemResolverTest() override { fs::remove_all(dir_); }
  int run(std::vector<std::string> extra) {
    std::vector<std::string> w = {"use-as-system-resolver", "--resolv-conf", resolv_.string(),
                                  "--backup", backup_.string()};
    w.insert(w.end(), extra.begin(), extra.end());
    // No daemon listens on this socket: only --force (or --undo) may proceed.
    return use_as_system_resolver((dir_ / "no-daemon").string(), 1.0, w);
  }
  fs::path dir_, resolv_, backup_;
};

TEST_F(SystemResolverTest, RefusesWhenHourglassdDoesNotAnswer) {
  std::ofstream(resolv_) << "nameserver 192.0.2.53\n";
  EXPECT_EQ(run({}), 1);
  EXPECT_EQ(read(resolv_), "nameserver 192.0.2.53\n");
  EXPECT_FALSE(fs::exists(backup_));
}

TEST_F(SystemResolverTest, SwitchesAndUndoesAFile) {
  std::ofstream(resolv_) << "nameserver 192.0.2.53\nsearch example.com\n";
  ASSERT_EQ(run({"--force"}), 0);
  const std::string now = read(resolv_);
  EXPECT_TRUE(now.starts_with(std::string(kResolvConfMark))) << now;
  EXPECT_NE(now.find("\nnameserver 127.0.0.1\n"), std::string::npos) << now;
  EXPECT_EQ(read(backup_), "nameserver 192.0.2.53\nsearch example.com\n");
  EXPECT_EQ(fs::status(resolv_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  EXPECT_EQ(run({"--force"}), 1);  // already switched: the backup is never overwritten
  EXPECT_EQ(read(backup_), "nameserver 192.0.2.53\nsearch example.com\n");
  ASSERT_EQ(run({"--undo"}), 0);
  EXPECT_EQ(read(resolv_), "nameserver 192.0.2.53\nsearch example.com\n");
  EXPECT_FALSE(fs::exists(backup_));
  EXPECT_EQ(run({"--undo"}), 0);  // nothing to undo
}

TEST_F(SystemResolverTest, KeepsASymbolicLinkAsALink) {
  std::ofstream(dir_ / "stub-resolv.conf") << "nameserver 127.0.0.53\n";
  fs::create_symlink(dir_ / "stub-resolv.conf", resolv_);
  ASSERT_EQ(run({"--force"}), 0);
  EXPECT_TRUE(fs::is_symlink(backup_));
  EXPECT_FALSE(fs::is_symlink(resolv_));
  ASSERT_EQ(run({"--undo"}), 0);
  EXPECT_TRUE(fs::is_symlink(resolv_));
  EXPECT_EQ(fs::read_symlink(resolv_), dir_ / "stub-resolv.conf");
}

TEST_F(SystemResolverTest, UndoLeavesAFileSomethingElseRewroteAlone) {
  std::ofstream(resolv_) << "nameserver 192.0.2.53\n";
  ASSERT_EQ(run({"--force"}), 0);
  std::ofstream(resolv_) << "nameserver 198.51.100.1\n";  // a DHCP client, say
  EXPECT_EQ(run({"--undo"}), 1);
  EXPECT_EQ(read(resolv_), "nameserver 198.51.100.1\n");
  EXPECT_TRUE(fs::exists(backup_));
}

TEST_F(SystemResolverTest, RejectsUnknownArguments) {
  EXPECT_EQ(run({"--bogus"}), 2);
  EXPECT_FALSE(fs::exists(backup_));
}

}  // namespace
}  // namespace hg::ctl
