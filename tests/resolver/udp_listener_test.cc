// outbox::send_later: answers produced during a loop iteration (after upstream queries)
// leave together at the iteration's end; outside of an iteration they leave at once.
#include "resolver/net/udp_listener.h"
#include "base/bytes.h"
#include "resolver/net/outbox.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"
#include "tests/support/bytes_of.h"
#include "tests/support/ports.h"

namespace hg::resolver {
namespace {

using namespace std::chrono_literals;

// A UDP socket bound to 127.0.0.1 on a port the kernel picks.
struct Socket {
  sockaddr_in addr{};
  int fd = test::bind_any_port(SOCK_DGRAM | SOCK_NONBLOCK, addr);
  Socket() { EXPECT_GE(fd, 0); }
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

TEST(UdpSendLater, AnswersOfOneIterationLeaveTogetherAtItsEnd) {
  EventLoop loop;
  Socket server, client_a, client_b;
  const std::vector<std::string> answers = {"one", "two", "three"};
  std::size_t waiting_inside = 99;
  loop.add_timer(0ms, [&] {
    EXPECT_TRUE(outbox::send_later(peer_of(server, client_a), test::bytes_of(answers[0])));
    EXPECT_TRUE(outbox::send_later(peer_of(server, client_b), test::bytes_of(answers[1])));
    EXPECT_TRUE(outbox::send_later(peer_of(server, client_a), test::bytes_of(answers[2])));
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
      outbox::send_later(peer_of(server, client), test::bytes_of(std::to_string(i)));
  });
  loop.run_once(0ms);
  const auto got = client.drain();
  ASSERT_EQ(got.size(), 150u);
  for (int i = 0; i < 150; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)], std::to_string(i));
}

TEST(UdpSendLater, OutsideOfALoopIterationTheAnswerLeavesAtOnce) {
  Socket server, client;
  EXPECT_TRUE(outbox::send_later(peer_of(server, client), test::bytes_of("now")));
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
  loop.add_timer(0ms, [&] { EXPECT_TRUE(outbox::send_later(connected, test::bytes_of("held"))); });
  loop.run_once(0ms);
  EXPECT_TRUE(outbox::send_later(connected, test::bytes_of("now")));
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
  loop.add_timer(0ms, [&] { EXPECT_TRUE(outbox::send_later(connected, test::bytes_of("held"))); });
  loop.run_once(0ms);
  EXPECT_EQ(pending_error(from.fd), ECONNREFUSED);  // drawn by "held": it was sent
  // Outside of one (sendto).
  refuse_first();
  EXPECT_TRUE(outbox::send_later(connected, test::bytes_of("now")));
  EXPECT_EQ(pending_error(from.fd), ECONNREFUSED);
}

// --- the reply socket ---------------------------------------------------------------------

// A query: a 2-byte DNS ID, then a tag. The listeners' handler answers with the query itself.
std::string query_with_id(uint16_t id) {
  std::string q;
  q.push_back(static_cast<char>(id >> 8));
  q.push_back(static_cast<char>(id & 0xff));
  q += "q" + std::to_string(id);
  return q;
}

uint16_t id_of(const std::string& d) {
  return static_cast<uint16_t>((static_cast<uint8_t>(d[0]) << 8) | static_cast<uint8_t>(d[1]));
}

// Listeners sharing one loopback port, as the workers do, each recording what it got and
// answering with the query itself.
struct Listeners {
  EventLoop loop;
  std::vector<std::unique_ptr<UdpListener>> all;
  std::vector<std::vector<uint16_t>> got;  // IDs, per listener
  std::vector<int> too_short;              // datagrams shorter than an ID, per listener
  explicit Listeners(std::size_t n) : got(n), too_short(n, 0) {
    Endpoint addr = parse_endpoint("127.0.0.1:0", std::nullopt).value();
    for (std::size_t i = 0; i < n; ++i) {
      auto l = UdpListener::open(loop, addr, i == 0,
                                 [this, i](std::span<const uint8_t> q, const UdpPeer&,
                                           std::span<uint8_t> out) -> std::size_t {
                                   if (q.size() < 2)
                                     ++too_short[i];
                                   else
                                     got[i].push_back(base::load_u16(&q[0]));
                                   std::memcpy(out.data(), q.data(), q.size());
                                   return q.size();
                                 });
      if (!l) {
        ADD_FAILURE() << l.error();
        return;
      }
      addr = l.value()->local();
      all.push_back(std::move(l.value()));
    }
  }
  std::vector<int> fds() const {
    std::vector<int> out;
    for (const auto& l : all)
      out.push_back(l->fd());
    return out;
  }
  const Endpoint& local() const { return all[0]->local(); }
};

sockaddr_in to_sin(const Endpoint& e) {
  sockaddr_in sin{};
  std::memcpy(&sin, e.sockaddr_ptr(), sizeof sin);
  return sin;
}

// Reads every answer waiting on `client`, with the port each came from.
void drain_from(const Socket& client, std::vector<std::pair<std::string, uint16_t>>& answers) {
  char buf[2048];
  for (;;) {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t k = ::recvfrom(client.fd, buf, sizeof buf, MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &len);
    if (k < 0) return;
    answers.emplace_back(std::string(buf, static_cast<std::size_t>(k)), ntohs(from.sin_port));
  }
}

// Sends `n` queries (IDs 0..n-1) from `client` to the listeners, running their loop and
// reading the answers every 32 (no socket buffer fills), then until `expect` answers are back
// (bounded; n when 0); returns the answers with the port each came from.
std::vector<std::pair<std::string, uint16_t>> exchange(Listeners& ls, const Socket& client, int n,
                                                       std::size_t expect = 0) {
  if (expect == 0) expect = static_cast<std::size_t>(n);
  const sockaddr_in to = to_sin(ls.local());
  std::vector<std::pair<std::string, uint16_t>> answers;
  for (int id = 0; id < n; ++id) {
    const std::string q = query_with_id(static_cast<uint16_t>(id));
    EXPECT_EQ(::sendto(client.fd, q.data(), q.size(), 0, reinterpret_cast<const sockaddr*>(&to),
                       sizeof to),
              static_cast<ssize_t>(q.size()));
    if (id % 32 == 31) {
      ls.loop.run_once(0ms);
      drain_from(client, answers);
    }
  }
  for (int round = 0; round < 200 && answers.size() < expect; ++round) {
    ls.loop.run_once(10ms);
    drain_from(client, answers);
  }
  return answers;
}

// The reply sockets join the listeners' port; the steering program keeps every query on the
// listeners, the one whose index is the ID modulo their number, and the answers still come
// from the port the client asked.
TEST(UdpReplySocket, QueriesStayOnTheListenersByIdAndAnswersComeFromTheirPort) {
  constexpr std::size_t kListeners = 3;
  Listeners ls(kListeners);
  const std::vector<int> fds = ls.fds();
  auto reply = UdpListener::open_reply_sockets(ls.local(), fds);
  ASSERT_TRUE(reply) << reply.error();
  ASSERT_EQ(reply.value().size(), kListeners);
  for (std::size_t i = 0; i < kListeners; ++i)
    ls.all[i]->set_reply_socket(reply.value()[i]);
  Socket client;
  const auto answers = exchange(ls, client, 300);
  ASSERT_EQ(answers.size(), 300u);
  for (const auto& [bytes, port] : answers)
    EXPECT_EQ(port, ls.local().port()) << "answer " << id_of(bytes) << " from another port";
  for (std::size_t i = 0; i < kListeners; ++i) {
    EXPECT_EQ(ls.got[i].size(), 100u) << "listener " << i;
    for (const uint16_t id : ls.got[i])
      EXPECT_EQ(id % kListeners, i) << "query " << id << " reached listener " << i;
  }
  char buf[64];
  for (const int fd : reply.value()) {
    EXPECT_LT(::recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "a query reached a reply socket";
    ::close(fd);
  }
}

// A datagram too short to hold an ID ends the program with 0: it goes to the first listener,
// never to a reply socket, with one listener or several.
TEST(UdpReplySocket, ADatagramTooShortForAnIdGoesToTheFirstListener) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{3}}) {
    Listeners ls(n);
    ASSERT_EQ(ls.all.size(), n);
    auto reply = UdpListener::open_reply_sockets(ls.local(), ls.fds());
    ASSERT_TRUE(reply) << reply.error();
    ASSERT_EQ(reply.value().size(), n);
    for (std::size_t i = 0; i < n; ++i)
      ls.all[i]->set_reply_socket(reply.value()[i]);
    Socket client;
    const sockaddr_in to = to_sin(ls.local());
    for (int i = 0; i < 50; ++i)
      ASSERT_EQ(::sendto(client.fd, "x", 1, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
                1);
    const auto answers = exchange(ls, client, 30, 80);  // the handler echoes both kinds
    EXPECT_EQ(answers.size(), 80u) << n << " listeners";
    EXPECT_EQ(ls.too_short[0], 50) << n << " listeners";
    for (std::size_t i = 1; i < n; ++i)
      EXPECT_EQ(ls.too_short[i], 0) << "listener " << i << " of " << n;
    char buf[64];
    for (const int fd : reply.value()) {
      EXPECT_LT(::recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0)
          << "a datagram reached a reply socket";
      ::close(fd);
    }
  }
}

// A socket outside any SO_REUSEPORT group cannot take the program: open_reply_sockets says
// so (the server then answers from the listening sockets) and opens nothing.
TEST(UdpReplySocket, WithoutAReuseportGroupTheProgramIsRefused) {
  Socket plain;  // bound without SO_REUSEPORT
  const Endpoint local =
      Endpoint::from_sockaddr(reinterpret_cast<const sockaddr*>(&plain.addr), sizeof plain.addr)
          .value();
  const int fds[] = {plain.fd};
  auto reply = UdpListener::open_reply_sockets(local, fds);
  ASSERT_FALSE(reply);
  EXPECT_NE(reply.error().find("SO_ATTACH_REUSEPORT_CBPF"), std::string::npos) << reply.error();
  EXPECT_FALSE(UdpListener::open_reply_sockets(local, {}));
}

// Answers leave through the socket set_reply_socket names: with a socket on another port the
// client sees that port (what tells the reply socket is really the one used).
TEST(UdpReplySocket, AnswersLeaveThroughTheReplySocket) {
  Listeners ls(1);
  Socket elsewhere;
  ls.all[0]->set_reply_socket(elsewhere.fd);
  Socket client;
  const auto answers = exchange(ls, client, 10);
  ASSERT_EQ(answers.size(), 10u);
  for (const auto& [bytes, port] : answers)
    EXPECT_EQ(port, ntohs(elsewhere.addr.sin_port));
}

// A port held by another program fails the first listener with the usual EADDRINUSE, even
// though the listeners set SO_REUSEPORT (which the other program's socket may set too).
TEST(UdpReplySocket, APortHeldElsewhereIsRefusedAsInUse) {
  int one = 1;
  const int other = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::setsockopt(other, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(other, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(other, reinterpret_cast<sockaddr*>(&a), &len), 0);
  EventLoop loop;
  const Endpoint addr = Endpoint::from_sockaddr(reinterpret_cast<const sockaddr*>(&a), len).value();
  auto handler = [](std::span<const uint8_t>, const UdpPeer&, std::span<uint8_t>) {
    return std::size_t{0};
  };
  auto first = UdpListener::open(loop, addr, /*first_of_port=*/true, handler);
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().find("Address already in use"), std::string::npos) << first.error();
  EXPECT_NE(first.error().find("pick another --listen"), std::string::npos) << first.error();
  ::close(other);
}

}  // namespace
}  // namespace hg::resolver
