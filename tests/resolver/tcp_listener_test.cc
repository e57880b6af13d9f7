// TcpListener against real loopback sockets, driven by run_once on a test clock: the limits
// that keep one client from costing others (a reset with queries outstanding, a reader that
// never reads, a message trickled byte by byte).
#include "resolver/tcp_listener.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <vector>

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
  int connect_client() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(fd, listener_->local().sockaddr_ptr(), listener_->local().sockaddr_len()),
              0);
    clients_.push_back(fd);
    spin();
    return fd;
  }
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

}  // namespace
}  // namespace hg::resolver
