// TCP (RFC 7766) seen from outside: several queries on one connection answered as they
// complete (a fast one overtakes a slow one), and a client stalled mid-message blocks nobody.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "base/bytes.h"
#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/ports.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using wire::RCode;
using Clock = std::chrono::steady_clock;

bool send_framed(int fd, const Bytes& q) {
  Bytes f{static_cast<uint8_t>(q.size() >> 8), static_cast<uint8_t>(q.size())};
  f.insert(f.end(), q.begin(), q.end());
  return send(fd, f.data(), f.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(f.size());
}

std::optional<Answer> read_framed(int fd, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  Bytes buf;
  std::size_t want = 2;
  bool have_len = false;
  while (buf.size() < want) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return std::nullopt;
    uint8_t tmp[4096];
    ssize_t n = recv(fd, tmp, std::min(sizeof tmp, want - buf.size()), 0);
    if (n <= 0) return std::nullopt;
    buf.insert(buf.end(), tmp, tmp + n);
    if (!have_len && buf.size() == 2) {
      want = 2 + static_cast<std::size_t>(base::load_u16(&buf[0]));
      have_len = true;
    }
  }
  return parse_answer(Bytes(buf.begin() + 2, buf.end()));
}

TEST(Tcp, PipelinedQueriesAreAnsweredAsTheyComplete) {
  FakeUpstream upstream;
  FakeReply slow = FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")});
  slow.delay = Millis{600};
  upstream.on("slow.tcp.test", slow);
  upstream.on("fast.tcp.test", FakeReply::records({FakeRecord::a("", 60, "192.0.2.2")}));
  auto d = Daemon::start({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  ASSERT_TRUE(udp_query(d->port(), build_query({.name = "fast.tcp.test"})));  // cache it

  int fd = test::connect_tcp(test::ipv4_address("127.0.0.1", d->port()));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_framed(fd, build_query({.name = "slow.tcp.test", .id = 1})));
  ASSERT_TRUE(send_framed(fd, build_query({.name = "fast.tcp.test", .id = 2})));
  auto first = read_framed(fd, Millis{3000});
  auto second = read_framed(fd, Millis{3000});
  close(fd);
  ASSERT_TRUE(first);
  ASSERT_TRUE(second);
  EXPECT_EQ(first->id(), 2) << "the cached answer must not wait behind the slow one";
  EXPECT_EQ(second->id(), 1);
  EXPECT_EQ(second->rcode(), RCode::NoError);
}

TEST(Tcp, ClientStalledMidMessageBlocksNobody) {
  FakeUpstream upstream;
  upstream.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
  auto d = Daemon::start({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  int stalled = test::connect_tcp(test::ipv4_address("127.0.0.1", d->port()));
  ASSERT_GE(stalled, 0);
  Bytes q = build_query({.name = "stall.tcp.test"});
  Bytes partial{0, static_cast<uint8_t>(q.size()), q[0], q[1], q[2]};  // length + 3 bytes
  ASSERT_EQ(send(stalled, partial.data(), partial.size(), MSG_NOSIGNAL), 5);
  const auto t0 = Clock::now();
  auto tcp = tcp_query(d->port(), build_query({.name = "other.tcp.test"}), Millis{2000});
  auto udp = udp_query(d->port(), build_query({.name = "other2.tcp.test"}), Millis{2000});
  close(stalled);
  ASSERT_TRUE(tcp);
  ASSERT_TRUE(udp);
  EXPECT_EQ(tcp->rcode(), RCode::NoError);
  EXPECT_LT(Clock::now() - t0, Millis{1000});
}

}  // namespace
}  // namespace hg::integration
