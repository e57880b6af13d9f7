// tools/ctl/system_resolver.h on scratch files (never /etc/resolv.conf): switch, refuse a
// second switch, undo, and leave a file something else rewrote alone; search, domain and
// options kept; a NetworkManager file without openresolv (a dns=none drop-in, undone exactly).
// The openresolv way runs the real resolvconf in a namespace: tests/integration/hooks_test.cc.
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

TEST_F(SystemResolverTest, KeepsSearchDomainAndOptions) {
  const std::string before =
      "# from DHCP\nnameserver 192.0.2.53\nsearch corp.example lab.example\ndomain "
      "corp.example\n  options ndots:2 timeout:1  \nsortlist 130.155.160.0/255.255.240.0\n";
  std::ofstream(resolv_) << before;
  ASSERT_EQ(run({"--force"}), 0);
  const std::string now = read(resolv_);
  EXPECT_TRUE(now.starts_with(std::string(kResolvConfMark))) << now;
  EXPECT_NE(now.find("\nnameserver 127.0.0.1\n"), std::string::npos) << now;
  EXPECT_EQ(now.find("192.0.2.53"), std::string::npos) << now;
  const auto search = now.find("\nsearch corp.example lab.example\n");
  const auto domain = now.find("\ndomain corp.example\n");
  EXPECT_NE(search, std::string::npos) << now;
  EXPECT_LT(search, domain) << now;  // in their order: glibc takes the last of the two
  EXPECT_NE(now.find("\noptions ndots:2 timeout:1\n"), std::string::npos) << now;
  EXPECT_NE(now.find("\nsortlist 130.155.160.0/255.255.240.0\n"), std::string::npos) << now;
  ASSERT_EQ(run({"--undo"}), 0);
  EXPECT_EQ(read(resolv_), before);
}

TEST(ResolvConfKeptLines, LeavesOutWhatGlibcWouldNotReadOrIsHostile) {
  const std::string long_line = "search " + std::string(2000, 'a') + "\n";
  const auto kept = resolv_conf_kept_lines("nameserver 192.0.2.1\nsearch\nsearch a.example\r\n" +
                                           long_line + "options \x01evil\ndomain\tb.example\n" +
                                           "searchx c.example\n#search d.example\noptions rotate");
  EXPECT_EQ(kept,
            (std::vector<std::string>{"search a.example", "domain\tb.example", "options rotate"}));
  EXPECT_TRUE(resolv_conf_kept_lines("").empty());
  EXPECT_TRUE(resolv_conf_kept_lines(std::string(200000, '\n')).empty());
}

TEST(ResolvConfManager, FromTheHeaderOrTheLinkTarget) {
  EXPECT_EQ(resolv_conf_manager("# Generated by NetworkManager\nnameserver 192.0.2.1\n", ""),
            ResolvManager::kNetworkManager);
  EXPECT_EQ(resolv_conf_manager("nameserver 192.0.2.1\n", "/run/NetworkManager/resolv.conf"),
            ResolvManager::kNetworkManager);
  EXPECT_EQ(resolv_conf_manager("# Generated by resolvconf\nnameserver 192.0.2.1\n", ""),
            ResolvManager::kOpenresolv);
  EXPECT_EQ(resolv_conf_manager("nameserver 192.0.2.1\n# Generated by resolvconf\n", ""),
            ResolvManager::kNone);
  EXPECT_EQ(
      resolv_conf_manager("nameserver 127.0.0.53\n", "../run/systemd/resolve/stub-resolv.conf"),
      ResolvManager::kNone);
}

// NetworkManager's file and no openresolv: a dns=none drop-in, the file written here with its
// search line; --undo removes the drop-in and puts the file back byte for byte.
TEST_F(SystemResolverTest, NetworkManagerWithoutOpenresolvGetsADnsNoneDropIn) {
  const std::string before =
      "# Generated by NetworkManager\nsearch home.example\nnameserver 192.0.2.53\n";
  std::ofstream(resolv_) << before;
  const fs::path nm = dir_ / "conf.d";
  const std::vector<std::string> paths = {"--nm-conf-dir", nm.string(), "--resolvconf",
                                          (dir_ / "no-resolvconf").string()};
  std::vector<std::string> args = paths;
  args.push_back("--force");
  ASSERT_EQ(run(args), 0);
  const std::string drop_in = read(nm / "90-hourglass.conf");
  EXPECT_NE(drop_in.find("\n[main]\ndns=none\n"), std::string::npos) << drop_in;
  const std::string now = read(resolv_);
  EXPECT_TRUE(now.starts_with(std::string(kResolvConfMark))) << now;
  EXPECT_NE(now.find("\nsearch home.example\n"), std::string::npos) << now;
  EXPECT_TRUE(read(backup_).starts_with(std::string(kManagedMark))) << read(backup_);
  args = paths;
  args.push_back("--undo");
  ASSERT_EQ(run(args), 0);
  EXPECT_EQ(read(resolv_), before);
  EXPECT_FALSE(fs::exists(nm / "90-hourglass.conf"));
  EXPECT_FALSE(fs::exists(backup_));
  EXPECT_TRUE(fs::is_empty(dir_ / "conf.d"));
}

// NetworkManager's link (into /run/NetworkManager): the link itself comes back; a drop-in the
// administrator edited since is left alone and --undo says so.
TEST_F(SystemResolverTest, NetworkManagerLinkComesBackAndAnEditedDropInStays) {
  fs::create_directories(dir_ / "run/NetworkManager");
  std::ofstream(dir_ / "run/NetworkManager/resolv.conf") << "nameserver 192.0.2.53\n";
  fs::create_symlink(dir_ / "run/NetworkManager/resolv.conf", resolv_);
  const fs::path nm = dir_ / "conf.d";
  const std::vector<std::string> paths = {"--nm-conf-dir", nm.string(), "--resolvconf",
                                          (dir_ / "no-resolvconf").string()};
  std::vector<std::string> args = paths;
  args.push_back("--force");
  ASSERT_EQ(run(args), 0);
  EXPECT_FALSE(fs::is_symlink(resolv_));
  std::ofstream(nm / "90-hourglass.conf", std::ios::app) << "# edited\n";
  args = paths;
  args.push_back("--undo");
  EXPECT_EQ(run(args), 1);
  EXPECT_TRUE(fs::is_symlink(resolv_));  // what could be undone was
  EXPECT_EQ(fs::read_symlink(resolv_), dir_ / "run/NetworkManager/resolv.conf");
  EXPECT_TRUE(fs::exists(nm / "90-hourglass.conf"));
  EXPECT_TRUE(fs::exists(backup_));  // the record stays
}

TEST_F(SystemResolverTest, RejectsUnknownArguments) {
  EXPECT_EQ(run({"--bogus"}), 2);
  EXPECT_FALSE(fs::exists(backup_));
}

}  // namespace
}  // namespace hg::ctl
