// Running unprivileged (resolver/ops/privileges.h, base/checked_open.h, docs/security.md):
// started as root with --user, the daemon's uid, gid, groups and capabilities are the user's
// and none; it still answers and reloads. Started as root without --user or --allow-root it
// refuses, in one line. And the file attacks of a daemon started by hand as root: a dnstap
// path another user made, a hosts file that is a symbolic link to a root-only secret, an
// upstream file others may write, a TOML config that is a symbolic link — each refused in
// one line that names the path, and the secret never in the output. The tests run as root
// (CI does); as another user they skip.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "tests/integration/daemon.h"
#include "tests/support/command.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;

constexpr const char* kSecret = "hunter2-root-only-x7q";

// Writes `text` to `path` with exactly `mode` (whatever the umask).
void write_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_EQ(::fchmod(fd, mode), 0);
  ::close(fd);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The fields of one /proc/PID/status line ("Uid:\t0\t0\t0\t0" -> {"0","0","0","0"}).
std::vector<std::string> status_field(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream words(line.substr(key.size() + 1));
    std::vector<std::string> out;
    for (std::string w; words >> w;)
      out.push_back(w);
    return out;
  }
  return {{"(missing)"}};
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

class Privilege : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root): starts hourglassd as root";
    // Readable by the user the daemon switches to (mkdtemp made it 0700).
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
    upstream_.on("www.example.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.10")}));
  }
  std::optional<Answer> ask(const Daemon& d, const std::string& name) {
    return udp_query(d.port(), build_query(Query{.name = name}), Millis{4000});
  }
  std::string a_of(const Daemon& d, const std::string& name) {
    const auto a = ask(d, name);
    return a ? a->text() : std::string("(no answer)");
  }

  test::FakeUpstream upstream_;
  test::TempDir dir_{"hg-privilege"};
};

TEST_F(Privilege, WithUserItRunsAsTheUserWithoutCapabilitiesAndStillAnswersAndReloads) {
  const passwd* pw = ::getpwnam("nobody");
  ASSERT_NE(pw, nullptr) << "no user nobody on this machine";
  const std::string uid = std::to_string(pw->pw_uid), gid = std::to_string(pw->pw_gid);
  const std::string up = dir_.file("upstream.conf");
  write_file(up, "nameserver " + upstream_.address() + "\n", 0644);
  const std::string hosts = dir_.file("hosts");
  write_file(hosts, "192.0.2.55 before.test\n", 0644);
  auto d = Daemon::start({"--user", "nobody", "--upstream-file", up, "--hosts-file", hosts});
  ASSERT_TRUE(d->ready()) << d->output();
  EXPECT_EQ(d->lines_with("running as user nobody").size(), 1u) << d->output();
  EXPECT_TRUE(d->lines_with("warning").empty()) << d->output();

  const pid_t pid = d->pid();
  EXPECT_EQ(status_field(pid, "Uid"), (std::vector<std::string>{uid, uid, uid, uid}));
  EXPECT_EQ(status_field(pid, "Gid"), (std::vector<std::string>{gid, gid, gid, gid}));
  EXPECT_TRUE(status_field(pid, "Groups").empty()) << "supplementary groups left";
  for (const char* set : {"CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"})
    EXPECT_EQ(status_field(pid, set), std::vector<std::string>{"0000000000000000"}) << set;
  EXPECT_EQ(status_field(pid, "NoNewPrivs"), std::vector<std::string>{"1"});

  // Answers from the upstream and from the hosts file, as the user.
  EXPECT_NE(a_of(*d, "www.example.test").find("192.0.2.10"), std::string::npos);
  EXPECT_NE(a_of(*d, "before.test").find("192.0.2.55"), std::string::npos);
  // SIGHUP re-reads the hosts file as the user.
  write_file(hosts, "192.0.2.56 after.test\n", 0644);
  ASSERT_TRUE(d->signal(SIGHUP));
  EXPECT_TRUE(test::eventually(
      [&] { return a_of(*d, "after.test").find("192.0.2.56") != std::string::npos; }, Millis{3000}))
      << d->output();
  EXPECT_TRUE(d->lines_with("warning").empty()) << d->output();
  ASSERT_TRUE(d->signal(SIGTERM));
  EXPECT_EQ(d->wait_exit(Millis{10000}), 0) << d->output();
}

TEST_F(Privilege, AnUnknownUserStopsTheStartInOneLine) {
  auto d = Daemon::start_with({"--upstream", upstream_.address(), "--user", "no-such-user-x7q"},
                              StartOptions{.wait_ready = false});
  EXPECT_EQ(d->wait_exit(Millis{5000}), 2) << d->output();
  EXPECT_EQ(d->lines_with("no such user").size(), 1u) << d->output();
  EXPECT_EQ(count(d->output(), "\n"), 1u) << d->output();
}

TEST_F(Privilege, AsRootWithoutUserOrAllowRootItRefusesInOneLine) {
  auto d = Daemon::start_with({"--upstream", upstream_.address()},
                              StartOptions{.allow_root = false, .wait_ready = false});
  EXPECT_EQ(d->wait_exit(Millis{5000}), 2) << d->output();
  EXPECT_EQ(count(d->output(), "\n"), 1u) << d->output();
  const auto line = d->lines_with("refusing to run as root");
  ASSERT_EQ(line.size(), 1u) << d->output();
  EXPECT_NE(line[0].find("--user hourglass"), std::string::npos) << line[0];
  EXPECT_NE(line[0].find("--allow-root"), std::string::npos) << line[0];
}

// Under the packaged unit (DynamicUser=yes) the process is not root: neither the refusal nor
// the switch applies, and it starts without --user or --allow-root. Started here as nobody
// with setpriv (util-linux), polled until it answers (at most 5 s), then stopped.
TEST_F(Privilege, StartedUnprivilegedItNeedsNeitherUserNorAllowRoot) {
  const auto has = test::run_command("setpriv --version", 10);
  if (has.exit_code != 0) GTEST_SKIP() << "setpriv (util-linux) not installed";
  const std::string log = dir_.file("daemon.log");
  const std::string script = "setpriv --reuid=65534 --regid=65534 --clear-groups " +
                             std::string(HOURGLASSD) + " --listen 127.0.0.1:0 --upstream " +
                             upstream_.address() + " --dnssec off 2>" + log +
                             " & pid=$!\n"
                             "i=0; until grep -q 'listening on' " +
                             log +
                             "; do i=$((i+1)); [ $i -gt 100 ] && break; "
                             "kill -0 $pid 2>/dev/null || break; sleep 0.05; done\n"
                             "grep -E '^(Uid|NoNewPrivs):' /proc/$pid/status\n"
                             "kill $pid; wait $pid; echo \"exit=$?\"; cat " +
                             log + "\n";
  // In a shell of its own: run_command() puts `timeout` before the first word.
  const auto r = test::run_command("sh -c " + test::shell_quote(script), 20);
  EXPECT_TRUE(r.contains("listening on")) << r.output;
  EXPECT_FALSE(r.contains("refusing")) << r.output;
  EXPECT_FALSE(r.contains("running as user")) << r.output;
  EXPECT_TRUE(r.contains("Uid:\t65534\t65534\t65534\t65534")) << r.output;
  EXPECT_TRUE(r.contains("NoNewPrivs:\t1")) << r.output;
  EXPECT_TRUE(r.contains("exit=0")) << r.output;
}

// The attack: a dnstap path another user created beforehand would have been
// truncated and filled with the query log for that user to read.
TEST_F(Privilege, ADnstapFileAnotherUserMadeIsRefusedAndLeftAsItWas) {
  const std::string tap = dir_.file("dnstap.fstrm");
  write_file(tap, "the other user's file\n", 0644);
  ASSERT_EQ(::chown(tap.c_str(), 65534, 65534), 0);
  auto d = Daemon::start_with({"--upstream", upstream_.address(), "--dnstap", tap},
                              StartOptions{.wait_ready = false});
  EXPECT_EQ(d->wait_exit(Millis{5000}), 1) << d->output();
  const auto line = d->lines_with(tap);
  ASSERT_EQ(line.size(), 1u) << d->output();
  EXPECT_NE(line[0].find("is owned by uid 65534"), std::string::npos) << line[0];
  EXPECT_EQ(read_file(tap), "the other user's file\n") << "truncated or written";
  struct stat st = {};
  ASSERT_EQ(::stat(tap.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u) << "its mode was changed";
}

// The other attack: a hosts-file path in a directory someone else can write, made a
// symbolic link to a root-only file; it must be neither served over DNS nor quoted.
TEST_F(Privilege, AHostsFileThatIsASymbolicLinkToARootOnlyFileIsRefusedUnread) {
  const std::string secret = dir_.file("root-only");
  write_file(secret, "192.0.2.99 leak.test\n" + std::string(kSecret) + "\n", 0600);
  const std::string hosts = dir_.file("hosts");
  ASSERT_EQ(::symlink(secret.c_str(), hosts.c_str()), 0);
  auto d = Daemon::start({"--upstream", upstream_.address(), "--hosts-file", hosts});
  ASSERT_TRUE(d->ready()) << d->output();
  const auto line = d->lines_with(hosts);
  ASSERT_EQ(line.size(), 1u) << d->output();
  EXPECT_NE(line[0].find("is a symbolic link to '" + secret + "'"), std::string::npos) << line[0];
  EXPECT_EQ(d->output().find(kSecret), std::string::npos) << d->output();
  EXPECT_EQ(d->output().find("leak.test"), std::string::npos) << d->output();
  EXPECT_EQ(a_of(*d, "leak.test").find("192.0.2.99"), std::string::npos) << "served over DNS";
  // A reload reads it no more than the start did (the query after it is answered by the same
  // loop, which handles the signal).
  ASSERT_TRUE(d->signal(SIGHUP));
  EXPECT_EQ(a_of(*d, "leak.test").find("192.0.2.99"), std::string::npos) << "served over DNS";
  EXPECT_EQ(d->output().find(kSecret), std::string::npos) << d->output();
}

// A hosts file only root may read (not a link: given on purpose) is read, but its bad lines
// are not quoted: the log may be readable by more users than the file.
TEST_F(Privilege, ARootOnlyHostsFilesBadLinesAreNotQuoted) {
  const std::string hosts = dir_.file("hosts");
  write_file(hosts, "192.0.2.57 fine.test\n" + std::string(kSecret) + " x\n", 0600);
  auto d = Daemon::start({"--upstream", upstream_.address(), "--hosts-file", hosts});
  ASSERT_TRUE(d->ready()) << d->output();
  EXPECT_EQ(d->lines_with("2: not understood (the line is not quoted").size(), 1u) << d->output();
  EXPECT_EQ(d->output().find(kSecret), std::string::npos) << d->output();
  EXPECT_NE(a_of(*d, "fine.test").find("192.0.2.57"), std::string::npos);
}

TEST_F(Privilege, AnUpstreamFileOthersMayWriteIsRefusedUnread) {
  const std::string up = dir_.file("upstream.conf");
  write_file(up, "nameserver " + upstream_.address() + "\n# " + kSecret + "\n", 0666);
  auto d = Daemon::start_with({"--upstream-file", up}, StartOptions{.wait_ready = false});
  EXPECT_EQ(d->wait_exit(Millis{5000}), 2) << d->output();
  EXPECT_EQ(count(d->output(), "\n"), 1u) << d->output();
  const auto line = d->lines_with(up);
  ASSERT_EQ(line.size(), 1u) << d->output();
  EXPECT_NE(line[0].find("is writable by every user (mode 0666)"), std::string::npos) << line[0];
  EXPECT_NE(line[0].find("chmod go-w"), std::string::npos) << line[0];
  EXPECT_EQ(d->output().find(kSecret), std::string::npos) << d->output();
}

TEST_F(Privilege, ATomlConfigThatIsASymbolicLinkIsRefused) {
  const std::string real = dir_.file("real.toml");
  write_file(real, "upstream = [\"" + upstream_.address() + "\"]\n", 0644);
  const std::string link = dir_.file("hourglass.toml");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto d = Daemon::start_with({"--config", link}, StartOptions{.wait_ready = false});
  EXPECT_EQ(d->wait_exit(Millis{5000}), 2) << d->output();
  EXPECT_EQ(count(d->output(), "\n"), 1u) << d->output();
  const auto line = d->lines_with(link);
  ASSERT_EQ(line.size(), 1u) << d->output();
  EXPECT_NE(line[0].find("is a symbolic link"), std::string::npos) << line[0];
  // The control: the file itself is accepted.
  auto ok = Daemon::start({"--config", real});
  EXPECT_TRUE(ok->ready()) << ok->output();
}

}  // namespace
}  // namespace hg::integration
