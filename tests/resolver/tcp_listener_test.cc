// TcpListener against real loopback sockets, driven by run_once on a test clock: the limits
// that keep one client from costing others (a reset with queries outstanding, a reader that
// never reads, a message trickled byte by byte), and admission at accept (an address outside
// the allow list, one source's share, a full table, the process out of descriptors).
#include "resolver/net/tcp_listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <memory>
#include <vector>

#include "tests/support/fd_limit.h"
#include "tests/support/ports.h"

namespace hg::resolver {
namespace {

class TcpListenerTest : public ::testing::Test {
 protected:
  TcpListenerTest() : loop_(EventLoop::Options{.clock = [this] { return now_; }}) {}
  ~TcpListenerTest() override {
    for (int fd : clients_)
      ::close(fd);
  }

  void open(TcpListener::Settings settings, TcpListener::Handler handler) {
    auto l = TcpListener::open(loop_, *parse_endpoint("127.0.0.1:0", std::nullopt), false, settings,
                               std::move(handler));
    ASSERT_TRUE(l) << l.error();
    listener_ = std::move(l.value());
  }
  /// A client from `from` (an address in 127.0.0.0/8), connected and accepted.
  int connect_client(const char* from = "127.0.0.1") {
    const int fd =
        test::connect_tcp(test::ipv4_address("127.0.0.1", listener_->local().port()), from);
    EXPECT_GE(fd, 0);
    clients_.push_back(fd);
    spin();
    return fd;
  }
  /// Whether the server has closed `fd`: end of stream or a reset, not "nothing yet".
  static bool closed_by_server(int fd) { return test::closed_by_peer(fd); }
  void spin(int n = 5) {
    for (int i = 0; i < n; ++i)
      loop_.run_once(Millis{10});
  }
  static std::vector<uint8_t> framed(std::size_t len, uint8_t fill) {
    std::vector<uint8_t> m(2 + len, fill);
    m[0] = static_cast<uint8_t>(len >> 8);
    m[1] = static_cast<uint8_t>(len);
    return m;
  }

  MonoTime now_{Millis{1'000'000}};
  EventLoop loop_;
  // Declared before listener_, so it outlives it: ~TcpListener closes the connections left
  // and counts them out of it (a counter local to a test died before the fixture's listener).
  ConnCounters counters_;
  std::unique_ptr<TcpListener> listener_;
  std::vector<int> clients_;
};

TEST_F(TcpListenerTest, ResetWithAQueryOutstandingClosesTheConnectionAtOnce) {
  std::vector<std::shared_ptr<TcpConnection>> held;  // the query "goes upstream": no answer
  open({}, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    held.push_back(c);
  });
  int fd = connect_client();
  auto q = framed(20, 1);
  ASSERT_EQ(::send(fd, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
  spin();
  ASSERT_EQ(held.size(), 1u);
  linger lg{1, 0};  // close with RST
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  ::close(fd);
  clients_.pop_back();
  // Before the fix the loop saw EPOLLERR|EPOLLHUP on every iteration until the answer came.
  const std::size_t callbacks = loop_.run_once(Millis{50}) + loop_.run_once(Millis{0});
  EXPECT_LE(callbacks, 2u);
  EXPECT_EQ(listener_->connections(), 0u);
  EXPECT_TRUE(held[0]->closed());
  held[0]->answer(framed(10, 2));  // a late answer finds it closed: nothing happens
  EXPECT_EQ(loop_.run_once(Millis{0}), 0u);
}

TEST_F(TcpListenerTest, AHalfClosedClientStillGetsItsLateAnswer) {
  // RFC 7766 allows a client to send its queries and shut down its sending side; the reset
  // rule above must not take the answer away from it.
  std::vector<std::shared_ptr<TcpConnection>> held;
  open({}, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    held.push_back(c);
  });
  int fd = connect_client();
  auto q = framed(20, 1);
  ASSERT_EQ(::send(fd, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
  ::shutdown(fd, SHUT_WR);
  spin();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_FALSE(held[0]->closed());
  held[0]->answer(std::vector<uint8_t>(10, 2));
  spin();
  uint8_t buf[64];
  const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_EQ(n, 12);  // 2-byte length + 10 bytes
  EXPECT_EQ(buf[1], 10);
  EXPECT_EQ(listener_->connections(), 0u);  // closed once nothing is left to send
}

TEST_F(TcpListenerTest, AClientThatNeverReadsCannotQueueMoreThanTheLimit) {
  TcpListener::Settings s;
  s.max_queued_bytes = 64 * 1024;
  int handled = 0;
  const std::vector<uint8_t> big(30'000, 7);  // each answer is 30 kB
  open(s, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    ++handled;
    c->answer(big);
  });
  int fd = connect_client();
  int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::vector<uint8_t> burst;
  for (int i = 0; i < 200; ++i) {
    auto q = framed(12, 3);
    burst.insert(burst.end(), q.begin(), q.end());
  }
  ASSERT_EQ(::send(fd, burst.data(), burst.size(), 0), static_cast<ssize_t>(burst.size()));
  spin(20);
  // The kernel's socket buffers take some answers; past that at most the 64 kB queue plus the
  // answer that crossed it. 200 queries would be 6 MB.
  EXPECT_LT(handled, 200);
  EXPECT_LE(handled, 2 + (64 * 1024 + 4 * 1024 * 1024) / 30'000);
}

TEST_F(TcpListenerTest, AMessageTrickledByteByByteIsCutOffAfterThePartialTimeout) {
  TcpListener::Settings s;
  s.idle_timeout = Millis{10'000};
  s.partial_timeout = Millis{3'000};
  open(s,
       [](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) { c->no_answer(); });
  int fd = connect_client();
  const uint8_t first = 0;
  for (int i = 0; i < 3; ++i) {  // one byte every 4 s keeps it "active", never complete
    ASSERT_EQ(::send(fd, &first, 1, 0), 1);
    spin();
    now_ += Millis{4'000};
    spin();
  }
  now_ += Millis{10'000};
  spin();
  EXPECT_EQ(listener_->connections(), 0u);
}

TEST_F(TcpListenerTest, AnIdleConnectionWithNothingPendingIsClosed) {
  open({},
       [](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) { c->no_answer(); });
  connect_client();
  EXPECT_EQ(listener_->connections(), 1u);
  now_ += Millis{9'000};
  spin();
  EXPECT_EQ(listener_->connections(), 1u);
  now_ += Millis{1'000};
  spin();
  EXPECT_EQ(listener_->connections(), 0u);
}

// --- admission at accept (resolver/net/conn_admission.h) --------------------------------------

TEST_F(TcpListenerTest, AnAddressOutsideTheAllowListIsResetAtAcceptAndHoldsNoSlot) {
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.allow = {Cidr::parse("127.0.0.1/32").value()};
  s.counters = &counters;
  int handled = 0;
  open(s, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    ++handled;
    c->no_answer();
  });
  const int outsider = connect_client("127.0.0.2");
  auto q = framed(20, 1);
  ::send(outsider, q.data(), q.size(), MSG_NOSIGNAL);  // may already fail: it was reset
  spin();
  EXPECT_TRUE(closed_by_server(outsider));
  EXPECT_EQ(listener_->connections(), 0u);
  EXPECT_EQ(handled, 0) << "nothing from a refused peer is read";
  EXPECT_EQ(counters.not_allowed.load(), 1u);
  const int insider = connect_client("127.0.0.1");
  EXPECT_FALSE(closed_by_server(insider));
  EXPECT_EQ(listener_->connections(), 1u);
  EXPECT_EQ(counters.open.load(), 1);
}

TEST_F(TcpListenerTest, ASourceAtItsLimitHasItsOwnOldestIdleConnectionClosed) {
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.max_per_source = 3;
  s.counters = &counters;
  open(s,
       [](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) { c->no_answer(); });
  const int other = connect_client("127.0.0.3");  // the oldest of all, another source
  now_ += Millis{100};
  std::vector<int> mine;
  for (int i = 0; i < 3; ++i) {
    mine.push_back(connect_client("127.0.0.1"));
    now_ += Millis{100};
  }
  EXPECT_EQ(listener_->connections(), 4u);
  const int newest = connect_client("127.0.0.1");
  EXPECT_TRUE(closed_by_server(mine[0])) << "the source's oldest idle connection makes room";
  EXPECT_FALSE(closed_by_server(mine[1]));
  EXPECT_FALSE(closed_by_server(newest));
  EXPECT_FALSE(closed_by_server(other)) << "another source's connection is not touched";
  EXPECT_EQ(listener_->connections(), 4u);
  EXPECT_EQ(counters.per_source_limit.load(), 1u);
  EXPECT_EQ(counters.evicted_idle.load(), 1u);
  EXPECT_EQ(counters.open.load(), 4);
}

TEST_F(TcpListenerTest, AFloodFromOneSourceCannotPushOutAnotherSourcesConnection) {
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.max_connections = 8;
  s.max_per_source = 4;
  s.counters = &counters;
  open(s,
       [](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) { c->no_answer(); });
  const int other = connect_client("127.0.0.3");
  for (int i = 0; i < 40; ++i) {
    now_ += Millis{10};
    connect_client("127.0.0.1");
  }
  EXPECT_FALSE(closed_by_server(other));
  EXPECT_EQ(listener_->connections(), 5u);
  EXPECT_EQ(counters.per_source_limit.load(), 36u);
  EXPECT_EQ(counters.evicted_idle.load(), 36u);
  EXPECT_EQ(counters.no_room.load(), 0u);
}

TEST_F(TcpListenerTest, AHalfSentMessageDoesNotMakeAConnectionBusy) {
  // A client that sends part of a message and stops holds nothing of ours: it is idle, and
  // the first to go when its source needs room.
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.max_per_source = 2;
  s.counters = &counters;
  open(s,
       [](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) { c->no_answer(); });
  const int trickler = connect_client();
  const uint8_t partial[3] = {0, 20, 1};
  ASSERT_EQ(::send(trickler, partial, sizeof partial, 0), 3);
  spin();
  now_ += Millis{100};
  const int other = connect_client();
  now_ += Millis{100};
  const int fresh = connect_client();
  EXPECT_TRUE(closed_by_server(trickler));
  EXPECT_FALSE(closed_by_server(other));
  EXPECT_FALSE(closed_by_server(fresh));
  EXPECT_EQ(counters.evicted_idle.load(), 1u);
}

TEST_F(TcpListenerTest, AQueryThatCameWithTheHandshakeIsReadAtAccept) {
  // Two connections accepted in one wakeup: the first has its query waiting already. Read at
  // accept, it is busy, so the second (over the source's limit) cannot push it out.
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.max_per_source = 1;
  s.counters = &counters;
  std::vector<std::shared_ptr<TcpConnection>> held;
  open(s, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    held.push_back(c);
  });
  const auto& to = listener_->local();
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int flood = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  clients_.push_back(client);
  clients_.push_back(flood);
  ASSERT_EQ(::connect(client, to.sockaddr_ptr(), to.sockaddr_len()), 0);
  auto q = framed(20, 1);
  ASSERT_EQ(::send(client, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
  ASSERT_EQ(::connect(flood, to.sockaddr_ptr(), to.sockaddr_len()), 0);
  spin();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_FALSE(held[0]->closed());
  EXPECT_FALSE(closed_by_server(client));
  EXPECT_TRUE(closed_by_server(flood));
  EXPECT_EQ(counters.evicted_idle.load(), 0u);
  EXPECT_EQ(counters.no_room.load(), 1u);
}

TEST_F(TcpListenerTest, AFullTableClosesTheOldestIdleConnectionAndSparesBusyOnes) {
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.max_connections = 3;
  s.max_per_source = 0;  // only the table's limit
  s.counters = &counters;
  std::vector<std::shared_ptr<TcpConnection>> held;  // queries "upstream": not idle
  open(s, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    held.push_back(c);
  });
  const int busy = connect_client();  // the oldest, but with a query being resolved
  auto q = framed(20, 1);
  ASSERT_EQ(::send(busy, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
  spin();
  ASSERT_EQ(held.size(), 1u);
  now_ += Millis{100};
  const int idle_old = connect_client();
  now_ += Millis{100};
  const int idle_new = connect_client();
  now_ += Millis{100};
  const int fresh = connect_client();
  EXPECT_FALSE(closed_by_server(busy)) << "a connection with a query pending is never evicted";
  EXPECT_TRUE(closed_by_server(idle_old));
  EXPECT_FALSE(closed_by_server(idle_new));
  EXPECT_FALSE(closed_by_server(fresh));
  EXPECT_EQ(counters.evicted_idle.load(), 1u);
  // The busy connection is answered as usual.
  held[0]->answer(framed(10, 2));
  spin();
  std::vector<uint8_t> got(64);
  EXPECT_EQ(::recv(busy, got.data(), got.size(), MSG_DONTWAIT), 2 + 12);
}

TEST_F(TcpListenerTest, WhenEveryConnectionIsBusyTheNewOneIsRefused) {
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.max_connections = 2;
  s.counters = &counters;
  std::vector<std::shared_ptr<TcpConnection>> held;
  open(s, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    held.push_back(c);
  });
  auto q = framed(20, 1);
  for (int i = 0; i < 2; ++i) {
    const int fd = connect_client();
    ASSERT_EQ(::send(fd, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
    spin();
  }
  ASSERT_EQ(held.size(), 2u);
  const int late = connect_client();
  EXPECT_TRUE(closed_by_server(late));
  EXPECT_EQ(counters.no_room.load(), 1u);
  EXPECT_EQ(counters.evicted_idle.load(), 0u);
  EXPECT_EQ(listener_->connections(), 2u);
}

TEST_F(TcpListenerTest, OutOfDescriptorsAnIdleConnectionMakesRoomAndNothingSpins) {
  ConnCounters& counters = counters_;
  TcpListener::Settings s;
  s.counters = &counters;
  std::vector<std::shared_ptr<TcpConnection>> held;
  open(s, [&](std::span<const uint8_t>, const std::shared_ptr<TcpConnection>& c) {
    held.push_back(c);
  });
  const int idle = connect_client();
  // Sockets made before the limit drops; they connect after.
  const int second = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int third = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  clients_.push_back(second);
  clients_.push_back(third);
  const auto& to = listener_->local();
  {
    test::NoMoreDescriptors limit;
    ASSERT_TRUE(limit.ok());
    ASSERT_EQ(::connect(second, to.sockaddr_ptr(), to.sockaddr_len()), 0);
    spin();
    // accept() failed with EMFILE; closing the idle connection gave its descriptor to the new.
    // (accept() also says EMFILE with nothing waiting: that must not close another one.)
    EXPECT_EQ(counters.fd_limit.load(), 1u);
    EXPECT_EQ(counters.evicted_idle.load(), 1u);
    EXPECT_TRUE(closed_by_server(idle));
    EXPECT_EQ(listener_->connections(), 1u);
    auto q = framed(20, 1);  // the new connection is busy now: nothing idle is left
    ASSERT_EQ(::send(second, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
    spin();
    ASSERT_EQ(held.size(), 1u);
    ASSERT_EQ(::connect(third, to.sockaddr_ptr(), to.sockaddr_len()), 0);
    loop_.run_once(Millis{10});  // EMFILE, nothing idle: accepting pauses
    // The pending connection would make the level-triggered listener ready on every
    // iteration; paused, the loop has nothing to do.
    std::size_t callbacks = 0;
    for (int i = 0; i < 20; ++i)
      callbacks += loop_.run_once(Millis{0});
    EXPECT_EQ(callbacks, 0u);
    EXPECT_EQ(listener_->connections(), 1u);
    EXPECT_EQ(counters.fd_limit.load(), 2u);
    EXPECT_EQ(counters.evicted_idle.load(), 1u);
  }
  now_ += Millis{100};  // the pause ends; descriptors are back
  spin();
  EXPECT_EQ(listener_->connections(), 2u);
  EXPECT_FALSE(closed_by_server(third));
}

}  // namespace
}  // namespace hg::resolver
