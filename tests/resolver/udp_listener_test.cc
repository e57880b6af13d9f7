// UdpListener::send_later: answers produced during a loop iteration (after upstream queries)
// leave together at the iteration's end; outside of an iteration they leave at once.
#include "resolver/udp_listener.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "resolver/event_loop.h"

namespace hg::resolver {
namespace {

using namespace std::chrono_literals;

// A UDP socket bound to 127.0.0.1 on a port the kernel picks.
struct Socket {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  Socket() {
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  }
  ~Socket() { ::close(fd); }
  // The datagrams waiting on this socket, as strings.
  std::vector<std::string> drain() const {
    std::vector<std::string> got;
    char buf[2048];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0) break;
      got.emplace_back(buf, static_cast<std::size_t>(n));
    }
    return got;
  }
};

UdpPeer peer_of(const Socket& from, const Socket& to) {
  UdpPeer p;
  p.fd = from.fd;
  std::memcpy(&p.addr, &to.addr, sizeof to.addr);
  p.addr_len = sizeof to.addr;
  return p;
}

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(UdpSendLater, AnswersOfOneIterationLeaveTogetherAtItsEnd) {
  EventLoop loop;
  Socket server, client_a, client_b;
  const std::vector<std::string> answers = {"one", "two", "three"};
  std::size_t waiting_inside = 99;
  loop.add_timer(0ms, [&] {
    EXPECT_TRUE(UdpListener::send_later(peer_of(server, client_a), bytes(answers[0])));
    EXPECT_TRUE(UdpListener::send_later(peer_of(server, client_b), bytes(answers[1])));
    EXPECT_TRUE(UdpListener::send_later(peer_of(server, client_a), bytes(answers[2])));
    // Still in the iteration: nothing has left yet.
    waiting_inside = client_a.drain().size() + client_b.drain().size();
  });
  loop.run_once(0ms);
  EXPECT_EQ(waiting_inside, 0u);
  EXPECT_EQ(client_a.drain(), (std::vector<std::string>{"one", "three"}));
  EXPECT_EQ(client_b.drain(), (std::vector<std::string>{"two"}));
}

TEST(UdpSendLater, MoreAnswersThanOneBatchAllArriveInOrder) {
  EventLoop loop;
  Socket server, client;
  loop.add_timer(0ms, [&] {
    for (int i = 0; i < 150; ++i)
      UdpListener::send_later(peer_of(server, client), bytes(std::to_string(i)));
  });
  loop.run_once(0ms);
  const auto got = client.drain();
  ASSERT_EQ(got.size(), 150u);
  for (int i = 0; i < 150; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)], std::to_string(i));
}

TEST(UdpSendLater, OutsideOfALoopIterationTheAnswerLeavesAtOnce) {
  Socket server, client;
  EXPECT_TRUE(UdpListener::send_later(peer_of(server, client), bytes("now")));
  EXPECT_EQ(client.drain(), (std::vector<std::string>{"now"}));
}

}  // namespace
}  // namespace hg::resolver
