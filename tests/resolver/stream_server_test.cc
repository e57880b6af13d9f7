// StreamServer against real loopback sockets, driven by run_once on a test clock: a client
// that resets while a long reply (a cache dump) is still being produced must cost the loop
// nothing further.
#include "resolver/net/stream_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "tests/support/ports.h"

namespace hg::resolver {
namespace {

class StreamServerTest : public ::testing::Test {
 protected:
  StreamServerTest() : loop_(EventLoop::Options{.clock = [this] { return now_; }}) {}
  ~StreamServerTest() override {
    server_.reset();
    if (client_ >= 0) ::close(client_);
  }

  // A server whose every request starts an endless reply, produced 16 kB at a time.
  void open() {
    const int fd = test::listen_any_port(addr_, 4, SOCK_NONBLOCK);
    ASSERT_GE(fd, 0);
    server_ =
        StreamServer::start(loop_, fd, {}, [this](std::string_view in, bool, std::string& out) {
          out += "dump\n";
          StreamServer::Reply r;
          r.consumed = in.size();
          r.more = [this](std::string& o) {
            ++chunks_;
            o.append(16 * 1024, 'x');
            return true;
          };
          return r;
        });
    ASSERT_TRUE(server_);
  }
  void connect_client() {
    client_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;  // the client never reads: let the server's sends block soon
    ::setsockopt(client_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ASSERT_EQ(::connect(client_, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_), 0);
    spin();
  }
  void spin(int n = 20) {
    for (int i = 0; i < n; ++i)
      loop_.run_once(Millis{0});
  }

  MonoTime now_{};
  EventLoop loop_;
  std::unique_ptr<StreamServer> server_;
  sockaddr_in addr_{};
  int client_ = -1;
  int chunks_ = 0;
};

TEST_F(StreamServerTest, ResetDuringADumpClosesTheConnectionAtOnce) {
  open();
  connect_client();
  ASSERT_EQ(server_->connections(), 1u);
  ASSERT_EQ(::send(client_, "dump\n", 5, 0), 5);
  spin(200);  // until the kernel's buffers are full and the dump waits for the reader
  ASSERT_GT(chunks_, 0);
  ASSERT_EQ(server_->connections(), 1u);
  linger lg{1, 0};  // close with RST
  ::setsockopt(client_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  ::close(client_);
  client_ = -1;
  const int before = chunks_;
  const std::size_t callbacks = loop_.run_once(Millis{50}) + loop_.run_once(Millis{0});
  EXPECT_LE(callbacks, 1u);
  EXPECT_EQ(server_->connections(), 0u);
  EXPECT_EQ(chunks_, before);  // no more of the dump is produced for nobody
  EXPECT_EQ(loop_.run_once(Millis{0}), 0u);
}

}  // namespace
}  // namespace hg::resolver
