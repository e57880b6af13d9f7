// Connection admission (resolver/net/conn_admission.h): what counts as one source, and the
// StreamServer's side of it (the metrics endpoint's server) against real loopback sockets on
// a test clock: the allow list at accept, a source's share, the oldest idle connection making
// room, the request timeout, and running out of descriptors without spinning.
#include "resolver/net/conn_admission.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "resolver/net/stream_server.h"
#include "tests/support/fd_limit.h"
#include "tests/support/ports.h"

namespace hg::resolver {
namespace {

SourceKey key_of(const char* text) {
  const Endpoint e = parse_endpoint(text, 0).value();
  return source_key(e.sockaddr_ptr());
}

TEST(SourceKey, AnIpv4AddressIsItsOwnSource) {
  EXPECT_EQ(key_of("192.0.2.1"), key_of("192.0.2.1:53"));
  EXPECT_FALSE(key_of("192.0.2.1") == key_of("192.0.2.2"));
}

TEST(SourceKey, AnIpv6SourceIsItsSlash64) {
  EXPECT_EQ(key_of("2001:db8:1:2::1"), key_of("2001:db8:1:2:ffff:ffff:ffff:ffff"));
  EXPECT_FALSE(key_of("2001:db8:1:2::1") == key_of("2001:db8:1:3::1"));
}

TEST(SourceKey, AnIpv4MappedAddressIsTheSameSourceAsItsIpv4Form) {
  EXPECT_EQ(key_of("::ffff:192.0.2.1"), key_of("192.0.2.1"));
  EXPECT_FALSE(key_of("::ffff:192.0.2.1") == key_of("::ffff:192.0.2.2"));
  // ...and not the /64 of every IPv4-mapped address.
  EXPECT_FALSE(key_of("::ffff:192.0.2.1") == key_of("::1"));
}

TEST(SourceCounts, CountsUpAndDownAndForgetsEmptySources) {
  SourceCounts c;
  const SourceKey a = key_of("192.0.2.1"), b = key_of("2001:db8::1");
  c.add(a);
  c.add(a);
  c.add(b);
  EXPECT_EQ(c.count(a), 2u);
  EXPECT_EQ(c.count(b), 1u);
  c.remove(b);
  c.remove(b);  // more removes than adds: stays at zero
  EXPECT_EQ(c.count(b), 0u);
  EXPECT_EQ(c.sources(), 1u);
}

TEST(PeerAllowed, AnEmptyListAllowsEveryoneElseOnlyTheBlocks) {
  const Endpoint v4 = parse_endpoint("192.0.2.1", 0).value();
  const Endpoint mapped = parse_endpoint("::ffff:192.0.2.1", 0).value();
  EXPECT_TRUE(peer_allowed({}, v4.sockaddr_ptr()));
  const std::vector<Cidr> allow = {Cidr::parse("192.0.2.0/24").value()};
  EXPECT_TRUE(peer_allowed(allow, v4.sockaddr_ptr()));
  EXPECT_TRUE(peer_allowed(allow, mapped.sockaddr_ptr()));
  EXPECT_FALSE(peer_allowed(allow, parse_endpoint("192.0.3.1", 0).value().sockaddr_ptr()));
  EXPECT_FALSE(peer_allowed(allow, nullptr));
}

TEST(ConnCounters, StatsLinesAndMetricFamiliesCarryEveryCounter) {
  ConnCounters c;
  c.not_allowed = 1;
  c.no_room = 2;
  c.evicted_idle = 3;
  c.per_source_limit = 4;
  c.fd_limit = 5;
  c.open = 6;
  const std::string lines = conn_stats_lines(c, "tcp.");
  for (const char* l :
       {"tcp.connections 6\n", "tcp.refused_not_allowed 1\n", "tcp.refused_no_room 2\n",
        "tcp.evicted_idle 3\n", "tcp.per_source_limit 4\n", "tcp.fd_limit 5\n"})
    EXPECT_NE(lines.find(l), std::string::npos) << l << " in\n" << lines;
  const NamedConnCounters named[] = {{"tcp", &c}};
  const std::string m = conn_metrics_families(named);
  for (const char* l :
       {"hourglass_connections{listener=\"tcp\"} 6\n",
        "hourglass_connections_refused_total{listener=\"tcp\",reason=\"not-allowed\"} 1\n",
        "hourglass_connections_refused_total{listener=\"tcp\",reason=\"no-room\"} 2\n",
        "hourglass_connections_evicted_total{listener=\"tcp\"} 3\n",
        "hourglass_connections_per_source_limit_total{listener=\"tcp\"} 4\n",
        "hourglass_connections_fd_limit_total{listener=\"tcp\"} 5\n"})
    EXPECT_NE(m.find(l), std::string::npos) << l << " in\n" << m;
}

// --- StreamServer ---------------------------------------------------------------------------

class StreamAdmissionTest : public ::testing::Test {
 protected:
  StreamAdmissionTest() : loop_(EventLoop::Options{.clock = [this] { return now_; }}) {}
  ~StreamAdmissionTest() override {
    server_.reset();
    for (int fd : clients_)
      ::close(fd);
  }

  // Answers each complete line "ok\n" and keeps the connection; a line "hold" is answered
  // with a reply too big for the client's receive buffer, so the connection stays busy.
  void open(StreamServerSettings s) {
    s.counters = &counters_;
    const int fd = test::listen_any_port(addr_, 64, SOCK_NONBLOCK);
    ASSERT_GE(fd, 0);
    server_ = StreamServer::start(loop_, fd, s, [](std::string_view in, bool, std::string& out) {
      StreamServer::Reply r;
      const auto nl = in.find('\n');
      if (nl == std::string_view::npos) return r;
      r.consumed = nl + 1;
      if (in.substr(0, nl) == "hold") {
        r.more = [](std::string& o) {
          o.append(16 * 1024, 'x');
          return true;  // endless: stays busy while the client does not read
        };
      } else {
        out += "ok\n";
      }
      return r;
    });
    ASSERT_TRUE(server_);
  }
  int connect_client(const char* from = "127.0.0.1", bool small_buffer = false) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (small_buffer) {
      int small = 4096;
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    }
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, from, &src.sin_addr);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src), 0);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_), 0);
    clients_.push_back(fd);
    spin();
    return fd;
  }
  void spin(int n = 10) {
    for (int i = 0; i < n; ++i)
      loop_.run_once(Millis{0});
  }
  static bool closed_by_server(int fd) { return test::closed_by_peer(fd); }
  /// Sends "ping\n" and whether "ok\n" comes back.
  bool answered(int fd) {
    if (::send(fd, "ping\n", 5, MSG_NOSIGNAL) != 5) return false;
    spin();
    char b[8] = {};
    return ::recv(fd, b, sizeof b, MSG_DONTWAIT) == 3 && std::string(b, 3) == "ok\n";
  }

  MonoTime now_{Millis{1'000'000}};
  EventLoop loop_;
  ConnCounters counters_;
  sockaddr_in addr_{};
  std::unique_ptr<StreamServer> server_;
  std::vector<int> clients_;
};

TEST_F(StreamAdmissionTest, AnAddressOutsideTheAllowListIsResetBeforeAnythingIsRead) {
  open({.allow = {Cidr::parse("127.0.0.1/32").value()}});
  const int outsider = connect_client("127.0.0.2");
  ::send(outsider, "ping\n", 5, MSG_NOSIGNAL);
  spin();
  EXPECT_TRUE(closed_by_server(outsider));
  EXPECT_EQ(server_->connections(), 0u);
  EXPECT_EQ(counters_.not_allowed.load(), 1u);
  EXPECT_TRUE(answered(connect_client("127.0.0.1")));
  EXPECT_EQ(counters_.open.load(), 1);
}

TEST_F(StreamAdmissionTest, IdleConnectionsFillingTheTableCannotKeepANewClientOut) {
  open({.max_connections = 16, .max_per_source = 8, .evict_idle = true});
  std::vector<int> idle;
  for (int i = 0; i < 16; ++i) {
    idle.push_back(connect_client(i < 8 ? "127.0.0.1" : "127.0.0.3"));
    now_ += Millis{10};
  }
  EXPECT_EQ(server_->connections(), 16u);
  const int scraper = connect_client("127.0.0.4");
  EXPECT_TRUE(answered(scraper));
  EXPECT_TRUE(closed_by_server(idle[0])) << "the oldest idle connection made room";
  EXPECT_FALSE(closed_by_server(idle[1]));
  EXPECT_EQ(counters_.evicted_idle.load(), 1u);
  // From a source at its share, a new connection replaces that source's own oldest.
  const int again = connect_client("127.0.0.3");
  EXPECT_TRUE(answered(again));
  EXPECT_TRUE(closed_by_server(idle[8]));
  EXPECT_FALSE(closed_by_server(idle[1])) << "another source's connection stays";
  EXPECT_EQ(counters_.per_source_limit.load(), 1u);
  EXPECT_EQ(counters_.evicted_idle.load(), 2u);
}

TEST_F(StreamAdmissionTest, ARequestThatCameWithTheHandshakeIsAnsweredAtAccept) {
  // Two connections accepted in one wakeup, one source, a share of 1: the first has sent its
  // request already and is answered before the second can push it out.
  open({.max_per_source = 1, .evict_idle = true});
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int flood = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  clients_.push_back(client);
  clients_.push_back(flood);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_), 0);
  ASSERT_EQ(::send(client, "ping\n", 5, MSG_NOSIGNAL), 5);
  ASSERT_EQ(::connect(flood, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_), 0);
  spin();
  char b[8] = {};
  EXPECT_EQ(::recv(client, b, sizeof b, MSG_DONTWAIT), 3);
  EXPECT_EQ(std::string(b, 3), "ok\n");
  EXPECT_EQ(counters_.evicted_idle.load(), 1u) << "answered, then idle: room for the next";
}

TEST_F(StreamAdmissionTest, WithoutEvictionAFullTableRefusesTheNewConnection) {
  open({.max_connections = 2});  // the control socket's behaviour
  const int a = connect_client();
  const int b = connect_client();
  const int c = connect_client();
  EXPECT_TRUE(closed_by_server(c));
  EXPECT_TRUE(answered(a));
  EXPECT_TRUE(answered(b));
  EXPECT_EQ(counters_.no_room.load(), 1u);
}

TEST_F(StreamAdmissionTest, AConnectionBeingAnsweredIsNeverEvicted) {
  open({.max_connections = 2, .evict_idle = true});
  const int busy = connect_client("127.0.0.1", /*small_buffer=*/true);
  ASSERT_EQ(::send(busy, "hold\n", 5, MSG_NOSIGNAL), 5);
  spin();
  now_ += Millis{10};
  const int idle = connect_client();
  now_ += Millis{10};
  const int fresh = connect_client();
  EXPECT_TRUE(closed_by_server(idle));
  EXPECT_TRUE(answered(fresh));
  EXPECT_EQ(server_->connections(), 2u);
  // Both remaining are... the busy one is still busy: a third new one evicts `fresh` (idle).
  now_ += Millis{10};
  connect_client();
  EXPECT_TRUE(closed_by_server(fresh));
  EXPECT_EQ(server_->connections(), 2u);
  EXPECT_EQ(counters_.evicted_idle.load(), 2u);
  EXPECT_EQ(counters_.no_room.load(), 0u);
}

TEST_F(StreamAdmissionTest, ARequestMustBeCompleteWithinTheRequestTimeout) {
  open({.idle_timeout = Millis{10'000}, .request_timeout = Millis{3'000}});
  const int trickler = connect_client();
  for (int i = 0; i < 3; ++i) {  // a byte a second keeps it active, never complete
    ASSERT_EQ(::send(trickler, "p", 1, MSG_NOSIGNAL), 1);
    spin();
    now_ += Millis{900};
    spin();
  }
  EXPECT_FALSE(closed_by_server(trickler));
  now_ += Millis{400};  // 3.1 s after the accept
  spin();
  EXPECT_TRUE(closed_by_server(trickler));
  EXPECT_EQ(server_->connections(), 0u);
}

TEST_F(StreamAdmissionTest, TheRequestTimeoutStartsAgainAfterEachReply) {
  open({.idle_timeout = Millis{10'000}, .request_timeout = Millis{3'000}});
  const int fd = connect_client();
  now_ += Millis{2'500};
  spin();
  EXPECT_TRUE(answered(fd));
  now_ += Millis{2'500};  // 5 s after the accept, 2.5 s after the reply
  spin();
  EXPECT_FALSE(closed_by_server(fd));
  now_ += Millis{600};
  spin();
  EXPECT_TRUE(closed_by_server(fd));
}

TEST_F(StreamAdmissionTest, OutOfDescriptorsTheListenerPausesInsteadOfSpinning) {
  open({});  // no eviction (the control socket): nothing can make room
  const int pending = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  clients_.push_back(pending);
  {
    test::NoMoreDescriptors limit;
    ASSERT_TRUE(limit.ok());
    ASSERT_EQ(::connect(pending, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_), 0);
    loop_.run_once(Millis{10});  // accept fails with EMFILE
    EXPECT_EQ(counters_.fd_limit.load(), 1u);
    // Before, the pending connection woke the level-triggered loop on every iteration.
    std::size_t callbacks = 0;
    for (int i = 0; i < 20; ++i)
      callbacks += loop_.run_once(Millis{0});
    EXPECT_EQ(callbacks, 0u);
  }
  now_ += Millis{100};
  spin();
  EXPECT_EQ(server_->connections(), 1u);
  EXPECT_TRUE(answered(pending));
}

TEST_F(StreamAdmissionTest, OutOfDescriptorsAnIdleConnectionMakesRoom) {
  open({.evict_idle = true});
  const int idle = connect_client();
  const int fresh = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  clients_.push_back(fresh);
  {
    test::NoMoreDescriptors limit;
    ASSERT_TRUE(limit.ok());
    ASSERT_EQ(::connect(fresh, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_), 0);
    spin();
    EXPECT_EQ(counters_.fd_limit.load(), 1u);
    EXPECT_TRUE(closed_by_server(idle));
    EXPECT_TRUE(answered(fresh));
  }
  EXPECT_EQ(counters_.evicted_idle.load(), 1u);
}

}  // namespace
}  // namespace hg::resolver
