// systemd notifications without systemd: the test owns the $NOTIFY_SOCKET datagram socket,
// starts the real hourglassd with it (and $WATCHDOG_USEC / $WATCHDOG_PID as systemd sets them
// for WatchdogSec=), and reads what the daemon says: READY=1 only once it answers, WATCHDOG=1
// at half the interval, RELOADING=1/READY=1 around SIGHUP, STOPPING=1 on SIGTERM.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using SteadyClock = std::chrono::steady_clock;

/// The service manager's end: a unix datagram socket in a fresh directory.
class NotifySocket {
 public:
  struct Message {
    SteadyClock::time_point at;  ///< when this test read it (late if the test was descheduled)
    /// When the daemon sent it: the kernel's receive timestamp (SO_TIMESTAMPNS), taken as the
    /// datagram is queued, so a test process that runs late does not bunch two messages up.
    std::chrono::nanoseconds sent{0};
    std::string text;
  };
  NotifySocket() {
    if (dir_.path().empty()) return;
    path_ = dir_.file("notify");
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    std::memcpy(sun.sun_path, path_.c_str(), path_.size() + 1);
    const int one = 1;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0 ||
        ::setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  std::string env() const { return "NOTIFY_SOCKET=" + path_; }

  /// The next datagram within `timeout`.
  std::optional<Message> next(Millis timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    char buf[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    iovec iov{buf, sizeof buf};
    msghdr h{};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_, &h, 0);
    if (n < 0) return std::nullopt;
    Message m{SteadyClock::now(), {}, std::string(buf, static_cast<std::size_t>(n))};
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPNS) continue;
      timespec ts{};
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      m.sent = std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec};
    }
    log_.push_back(m);
    return m;
  }
  /// Reads until a message containing `needle` (bounded); the messages before it are kept.
  std::optional<Message> wait_for(std::string_view needle, Millis timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    while (SteadyClock::now() < deadline) {
      auto m = next(std::chrono::duration_cast<Millis>(deadline - SteadyClock::now()));
      if (!m) return std::nullopt;
      if (m->text.find(needle) != std::string::npos) return m;
    }
    return std::nullopt;
  }
  /// Everything received for `d`.
  std::vector<Message> collect(Millis d) {
    std::vector<Message> out;
    const auto deadline = SteadyClock::now() + d;
    while (SteadyClock::now() < deadline) {
      auto m = next(std::chrono::duration_cast<Millis>(deadline - SteadyClock::now()));
      if (m) out.push_back(*m);
    }
    return out;
  }
  const std::vector<Message>& log() const { return log_; }

 private:
  test::TempDir dir_{"hg-notify"};
  std::string path_;
  int fd_ = -1;
  std::vector<Message> log_;
};

std::size_t count_with(const std::vector<NotifySocket::Message>& ms, std::string_view needle) {
  std::size_t n = 0;
  for (const auto& m : ms)
    n += m.text.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

class SystemdNotify : public ::testing::Test {
 protected:
  std::unique_ptr<Daemon> spawn(std::vector<std::string> extra, std::vector<std::string> env,
                                bool watchdog_pid = false) {
    std::vector<std::string> args{"--upstream", upstream_.address()};
    args.insert(args.end(), extra.begin(), extra.end());
    env.push_back(notify_.env());
    return Daemon::start_with(
        args, StartOptions{.env = env, .watchdog_pid = watchdog_pid, .wait_ready = false});
  }
  test::FakeUpstream upstream_;
  NotifySocket notify_;
};

TEST_F(SystemdNotify, ReadyOnlyOnceTheListenersAnswer) {
  ASSERT_TRUE(notify_.ok());
  const std::string name = random_label() + ".ready.example";
  upstream_.on(name, FakeReply::records({FakeRecord::a("", 300, "192.0.2.50")}));
  auto d = spawn({"--threads", "2"}, {});
  const auto ready = notify_.wait_for("READY=1", Millis{15000});
  ASSERT_TRUE(ready) << d->output();
  // Nothing but READY=1 came first, and it says how the daemon is doing.
  EXPECT_EQ(notify_.log().size(), 1u);
  EXPECT_NE(ready->text.find("STATUS="), std::string::npos) << ready->text;
  // The "listening on" line was written before READY=1 (the pipe may deliver it a moment
  // later), and the very first query after READY=1 is answered: one try, no polling.
  ASSERT_TRUE(d->wait_listening(Millis{2000})) << d->output();
  const auto a = udp_query(d->port(), build_query(Query{.name = name}), Millis{3000});
  ASSERT_TRUE(a) << "READY=1 came before hourglassd answered\n" << d->output();
  EXPECT_EQ(a->ttls(), std::vector<uint32_t>{300});
  // The TCP listener too.
  EXPECT_TRUE(tcp_query(d->port(), build_query(Query{.name = name}), Millis{3000}));
}

TEST_F(SystemdNotify, WatchdogPingsAtHalfTheIntervalWhileTheLoopsRun) {
  ASSERT_TRUE(notify_.ok());
  auto d = spawn({"--threads", "2"}, {"WATCHDOG_USEC=300000"}, /*watchdog_pid=*/true);
  ASSERT_TRUE(notify_.wait_for("READY=1", Millis{15000})) << d->output();
  const auto ms = notify_.collect(Millis{1200});
  // Gaps by send time: the test reading two pings late must not make them look close.
  std::vector<std::chrono::nanoseconds> pings;
  for (const auto& m : ms)
    if (m.text == "WATCHDOG=1") pings.push_back(m.sent);
  // Every 150 ms: 8 in 1.2 s. A loaded machine may delay ticks, never add them.
  EXPECT_GE(pings.size(), 4u) << d->output();
  EXPECT_LE(pings.size(), 10u);
  for (std::size_t i = 0; i < pings.size(); ++i)
    EXPECT_GT(pings[i].count(), 0) << "no send timestamp on ping " << i;
  for (std::size_t i = 1; i < pings.size(); ++i) {
    const auto gap = std::chrono::duration_cast<Millis>(pings[i] - pings[i - 1]);
    EXPECT_GE(gap, Millis{90}) << "ping " << i;  // not faster than half the interval
  }
  // SIGSTOP freezes every loop: the pings stop (systemd would restart the service).
  ASSERT_TRUE(d->signal(SIGSTOP));
  notify_.collect(Millis{100});  // a ping already in flight
  EXPECT_EQ(count_with(notify_.collect(Millis{600}), "WATCHDOG=1"), 0u);  // 4 half-intervals
  ASSERT_TRUE(d->signal(SIGCONT));
  EXPECT_TRUE(notify_.wait_for("WATCHDOG=1", Millis{3000}));
}

TEST_F(SystemdNotify, NoWatchdogPingsWhenTheIntervalIsForAnotherProcess) {
  ASSERT_TRUE(notify_.ok());
  // WATCHDOG_PID names some other process (our own, the test binary): not for hourglassd.
  auto d = spawn({}, {"WATCHDOG_USEC=400000", "WATCHDOG_PID=" + std::to_string(::getpid())});
  ASSERT_TRUE(notify_.wait_for("READY=1", Millis{15000})) << d->output();
  EXPECT_EQ(count_with(notify_.collect(Millis{800}), "WATCHDOG=1"), 0u);  // 4 half-intervals
}

TEST_F(SystemdNotify, ReloadingThenReadyAroundSighupAndStoppingOnSigterm) {
  ASSERT_TRUE(notify_.ok());
  TempFile resolv("nameserver " + upstream_.address() + "\n");
  std::vector<std::string> args{"--upstream-file", resolv.path()};
  auto d = Daemon::start_with(args, StartOptions{.env = {notify_.env()}, .wait_ready = false});
  ASSERT_TRUE(notify_.wait_for("READY=1", Millis{15000})) << d->output();
  ASSERT_TRUE(d->wait_listening(Millis{2000}));
  ASSERT_TRUE(udp_query(d->port(), build_query(Query{.name = "status.example"}), Millis{3000}));

  ASSERT_TRUE(d->signal(SIGHUP));
  const auto reloading = notify_.wait_for("RELOADING=1", Millis{5000});
  ASSERT_TRUE(reloading) << d->output();
  EXPECT_NE(reloading->text.find("MONOTONIC_USEC="), std::string::npos);
  const auto ready = notify_.wait_for("READY=1", Millis{5000});
  ASSERT_TRUE(ready) << d->output();
  EXPECT_TRUE(d->wait_for_output("SIGHUP: upstreams now", Millis{2000})) << d->output();

  // STATUS= is refreshed every few seconds with the counts so far.
  const auto status = notify_.wait_for("STATUS=1 queries", Millis{8000});
  EXPECT_TRUE(status) << d->output();

  ASSERT_TRUE(d->signal(SIGTERM));
  EXPECT_TRUE(notify_.wait_for("STOPPING=1", Millis{5000}));
  EXPECT_EQ(d->wait_exit(Millis{10000}), 0);
}

}  // namespace
}  // namespace hg::integration
