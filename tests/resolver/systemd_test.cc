// SystemdNotifier: which environments enable it and its watchdog, datagrams on a socket the
// test owns; and the watchdog's heartbeat check.
#include "resolver/ops/systemd.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace hg::resolver {
namespace {

using std::chrono::microseconds;

TEST(SystemdNotifier, DisabledWithoutAUsableSocket) {
  EXPECT_FALSE(SystemdNotifier::from_values(nullptr, "1000000", nullptr, 42).enabled());
  EXPECT_FALSE(SystemdNotifier::from_values("", nullptr, nullptr, 42).enabled());
  EXPECT_FALSE(SystemdNotifier::from_values("relative/path", nullptr, nullptr, 42).enabled());
  EXPECT_FALSE(SystemdNotifier::from_values("vsock:2:1234", nullptr, nullptr, 42).enabled());
  EXPECT_FALSE(
      SystemdNotifier::from_values(std::string(200, '/').c_str(), nullptr, nullptr, 42).enabled());
  // Disabled, it sends nothing and says so.
  EXPECT_FALSE(SystemdNotifier{}.send("READY=1"));
}

TEST(SystemdNotifier, WatchdogOnlyForTheNamedProcess) {
  const char* sock = "/run/hg-test-notify";
  EXPECT_EQ(SystemdNotifier::from_values(sock, "2000000", nullptr, 42).watchdog(),
            microseconds{2000000});
  EXPECT_EQ(SystemdNotifier::from_values(sock, "2000000", "42", 42).watchdog(),
            microseconds{2000000});
  EXPECT_FALSE(SystemdNotifier::from_values(sock, "2000000", "43", 42).watchdog());
  EXPECT_FALSE(SystemdNotifier::from_values(sock, "2000000", "x42", 42).watchdog());
  EXPECT_FALSE(SystemdNotifier::from_values(sock, "0", nullptr, 42).watchdog());
  EXPECT_FALSE(SystemdNotifier::from_values(sock, "2s", nullptr, 42).watchdog());
  EXPECT_FALSE(SystemdNotifier::from_values(sock, "", nullptr, 42).watchdog());
  EXPECT_FALSE(
      SystemdNotifier::from_values(sock, "99999999999999999999999", nullptr, 42).watchdog());
}

// The receiving end: a datagram socket at `address` (a path, or "@name" for abstract).
int bind_receiver(const std::string& address) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  std::memcpy(sun.sun_path, address.data(), address.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
  if (address[0] == '@') {
    sun.sun_path[0] = '\0';
  } else {
    len = sizeof sun;
  }
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sun), len) != 0) return -1;
  return fd;
}

std::string receive(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 2000) <= 0) return "(nothing)";
  char buf[512];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n < 0 ? "(error)" : std::string(buf, static_cast<std::size_t>(n));
}

TEST(SystemdNotifier, SendsOneDatagramToAPathSocket) {
  const test::TempDir dir("hg-sdtest");
  const std::string path = dir.file("notify");
  const int fd = bind_receiver(path);
  ASSERT_GE(fd, 0);
  const auto n = SystemdNotifier::from_values(path.c_str(), nullptr, nullptr, ::getpid());
  ASSERT_TRUE(n.enabled());
  EXPECT_TRUE(n.send("READY=1\nSTATUS=serving"));
  EXPECT_EQ(receive(fd), "READY=1\nSTATUS=serving");
  ::close(fd);
  ::unlink(path.c_str());
  // The manager went away: the send fails, quietly.
  EXPECT_FALSE(n.send("WATCHDOG=1"));
}

TEST(SystemdNotifier, SendsToAnAbstractSocket) {
  const std::string name = "@hg-sdtest-" + std::to_string(::getpid());
  const int fd = bind_receiver(name);
  ASSERT_GE(fd, 0);
  SystemdNotifier n = SystemdNotifier::from_values(name.c_str(), nullptr, nullptr, ::getpid());
  SystemdNotifier moved = std::move(n);
  EXPECT_FALSE(n.enabled());  // NOLINT(bugprone-use-after-move): moved-from is disabled
  EXPECT_TRUE(moved.send("STOPPING=1"));
  EXPECT_EQ(receive(fd), "STOPPING=1");
  ::close(fd);
}

TEST(StuckLoop, FindsTheFirstLoopSilentForLongerThanTheLimit) {
  const std::vector<int64_t> beats{1000, 900, 400, 100};
  EXPECT_EQ(stuck_loop(beats, 1000, 1000), std::nullopt);
  EXPECT_EQ(stuck_loop(beats, 1000, 600), std::optional<std::size_t>(3));
  EXPECT_EQ(stuck_loop(beats, 1000, 900), std::nullopt);  // exactly the limit is not stuck
  EXPECT_EQ(stuck_loop(beats, 1000, 599), std::optional<std::size_t>(2));
  EXPECT_EQ(stuck_loop({}, 1000, 1), std::nullopt);  // one worker: nothing to check
}

}  // namespace
}  // namespace hg::resolver
