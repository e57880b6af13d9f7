// UdpListener::send_later: answers produced during a loop iteration (after upstream queries)
// leave together at the iteration's end; outside of an iteration they leave at once.
#include "resolver/udp_listener.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
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

// A socket connected to `to`: send_later takes it with an address length of 0 (an upstream's
// socket) and the datagram goes to the connected peer, in an iteration and outside one.
TEST(UdpSendLater, AConnectedSocketSendsToItsPeerWithoutAnAddress) {
  EventLoop loop;
  Socket from, to;
  ASSERT_EQ(::connect(from.fd, reinterpret_cast<const sockaddr*>(&to.addr), sizeof to.addr), 0);
  UdpPeer connected;
  connected.fd = from.fd;  // addr_len 0
  loop.add_timer(0ms, [&] { EXPECT_TRUE(UdpListener::send_later(connected, bytes("held"))); });
  loop.run_once(0ms);
  EXPECT_TRUE(UdpListener::send_later(connected, bytes("now")));
  EXPECT_EQ(to.drain(), (std::vector<std::string>{"held", "now"}));
}

// Waits (at most 2 s) for an ICMP error to be pending on `fd`, and takes it: ECONNREFUSED
// once a datagram sent on it reached a closed port.
int pending_error(int fd) {
  pollfd p{fd, 0, 0};  // POLLERR is always reported
  if (::poll(&p, 1, 2000) != 1) return 0;
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err;
}

// On a connected socket, a send reports the refusal an earlier datagram drew (ICMP port
// unreachable) instead of sending. The datagram is tried again, so it still leaves: it draws
// a refusal of its own, which the reader of the socket (c-ares) then sees.
TEST(UdpSendLater, ARefusalReportedBySendingDoesNotLoseTheDatagram) {
  sockaddr_in closed{};
  {
    Socket gone;  // a port that was just free, now closed
    closed = gone.addr;
  }
  Socket from;
  ASSERT_EQ(::connect(from.fd, reinterpret_cast<const sockaddr*>(&closed), sizeof closed), 0);
  UdpPeer connected;
  connected.fd = from.fd;
  EventLoop loop;
  const auto refuse_first = [&] {
    ASSERT_EQ(::send(from.fd, "first", 5, 0), 5);
    pollfd p{from.fd, 0, 0};
    ASSERT_EQ(::poll(&p, 1, 2000), 1);  // the refusal is pending, not taken
  };
  // At the end of an iteration (sendmmsg).
  refuse_first();
  loop.add_timer(0ms, [&] { EXPECT_TRUE(UdpListener::send_later(connected, bytes("held"))); });
  loop.run_once(0ms);
  EXPECT_EQ(pending_error(from.fd), ECONNREFUSED);  // drawn by "held": it was sent
  // Outside of one (sendto).
  refuse_first();
  EXPECT_TRUE(UdpListener::send_later(connected, bytes("now")));
  EXPECT_EQ(pending_error(from.fd), ECONNREFUSED);
}

}  // namespace
}  // namespace hg::resolver
