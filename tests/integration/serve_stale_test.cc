// Serve-stale (RFC 8767) and answering on time, seen from outside: a stale answer with EDE 3
// when the upstream drops, SERVFAILs or is slower than --client-timeout (and the late answer
// is cached); EDE 19 for a stale NXDOMAIN; SERVFAIL + EDE 22 within 3 s when nothing is
// cached and the upstream is mute over UDP and over TCP.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/integration/daemon_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "wire/edns.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::Transport;
using wire::RCode;
using Clock = std::chrono::steady_clock;

class ServeStaleTest : public DaemonTest {
 protected:
  /// DaemonTest::start with a control socket, through which the tests see an entry expire.
  void start(std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--control", socket_});
    DaemonTest::start(extra);
  }
  // Caches `name` with a 1-second TTL and waits (polling `dump`, which changes nothing) until
  // it has expired.
  void cache_then_expire(const std::string& name, FakeReply reply) {
    upstream_.on(name, std::move(reply));
    auto a = udp_query(daemon_->port(), build_query({.name = name}));
    ASSERT_TRUE(a);
    ASSERT_EQ(upstream_.queries(name), 1u);
    std::string dump;
    ASSERT_TRUE(eventually(
        [&] {
          dump = ctl(socket_, "dump " + name).output;
          return dump.find(" stale, expired ") != std::string::npos;
        },
        Millis{5000}))
        << dump;
  }

  const std::string socket_ = "/tmp/hg-stale-" + random_label(12) + ".ctl";
};

std::string ip_of(const Answer& a, std::size_t i = 0) {
  const auto& rd = std::get<wire::RdataA>(a.msg.answer.at(i).rdata);
  return std::to_string(rd.address[0]) + "." + std::to_string(rd.address[1]) + "." +
         std::to_string(rd.address[2]) + "." + std::to_string(rd.address[3]);
}

TEST_F(ServeStaleTest, StaleAnswerAtClientTimeoutWhenUpstreamDrops) {
  start();  // default --client-timeout 1800 ms
  cache_then_expire("drop.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.1")}));
  upstream_.on("drop.stale.test", FakeReply::dropped());
  const auto t0 = Clock::now();
  auto a = udp_query(port(), build_query({.name = "drop.stale.test"}));
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NoError);
  EXPECT_EQ(a->ede(), wire::ede::StaleAnswer) << a->text();
  ASSERT_EQ(a->msg.answer.size(), 1u);
  EXPECT_EQ(ip_of(*a), "192.0.2.1");
  EXPECT_LE(a->ttls()[0], 1u) << "stale TTL 30 s, but never above the original TTL";
  EXPECT_GE(took, Millis{1600});
  EXPECT_LT(took, Millis{2600}) << "stale answer at the 1.8 s client-response timer";
  // dig sees it too (from the refresh still running, or the failure cache: at once).
  auto r = dig(port(), "drop.stale.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_TRUE(r.contains("EDE: 3 (Stale Answer)")) << r.output;
}

TEST_F(ServeStaleTest, StaleAnswerAtOnceWhenUpstreamServfails) {
  start();
  cache_then_expire("sf.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.2")}));
  upstream_.on("sf.stale.test", FakeReply::servfail());
  const auto t0 = Clock::now();
  auto r = dig(port(), "sf.stale.test A");
  EXPECT_LT(Clock::now() - t0, Millis{1500});
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_TRUE(r.contains("EDE: 3 (Stale Answer)")) << r.output;
  EXPECT_TRUE(r.contains("192.0.2.2")) << r.output;
}

TEST_F(ServeStaleTest, StaleAnswerWhenUpstreamRefuses) {
  start();
  cache_then_expire("ref.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.3")}));
  upstream_.on("ref.stale.test", FakeReply::refused());
  auto a = udp_query(port(), build_query({.name = "ref.stale.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NoError);
  EXPECT_EQ(a->ede(), wire::ede::StaleAnswer) << a->text();
}

TEST_F(ServeStaleTest, StaleAnswerWhenUpstreamIsGone) {
  start();
  cache_then_expire("gone.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.4")}));
  upstream_.stop();  // closed port: ICMP unreachable / RST
  const auto t0 = Clock::now();
  auto a = udp_query(port(), build_query({.name = "gone.stale.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NoError);
  EXPECT_EQ(a->ede(), wire::ede::StaleAnswer) << a->text();
  EXPECT_LT(Clock::now() - t0, Millis{2600});
}

TEST_F(ServeStaleTest, StaleNxdomainCarriesEde19) {
  start();
  cache_then_expire("nx.stale.test", FakeReply::nxdomain(FakeRecord::soa("stale.test", 1, 1)));
  upstream_.on("nx.stale.test", FakeReply::servfail());
  auto a = udp_query(port(), build_query({.name = "nx.stale.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NXDomain) << a->text();
  EXPECT_EQ(a->ede(), wire::ede::StaleNxdomainAnswer) << a->text();
  auto r = dig(port(), "nx.stale.test A");
  EXPECT_EQ(r.status(), "NXDOMAIN") << r.output;
  EXPECT_TRUE(r.contains("EDE: 19")) << r.output;
}

// RFC 8767 5: stale at the client-response timer, the refresh goes on, its answer is cached.
TEST_F(ServeStaleTest, SlowUpstreamGetsStaleAtTimerAndLateAnswerIsCached) {
  start({"--client-timeout", "400"});
  cache_then_expire("slow.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.10")}));
  FakeReply late = FakeReply::records({FakeRecord::a("", 60, "192.0.2.20")});
  // Answered after 1 s. The server's measured RTO is short (loopback), so the query is
  // retransmitted meanwhile (docs/upstream.md); the first answer ends it and is cached.
  late.delay = Millis{1000};
  upstream_.on("slow.stale.test", late);
  const auto t0 = Clock::now();
  auto stale = udp_query(port(), build_query({.name = "slow.stale.test"}));
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(stale);
  EXPECT_EQ(ip_of(*stale), "192.0.2.10");
  EXPECT_EQ(stale->ede(), wire::ede::StaleAnswer);
  EXPECT_GE(took, Millis{300});
  EXPECT_LT(took, Millis{900}) << "stale at the 400 ms timer, not when upstream answers";
  // The late answer arrives at ~1 s and is cached: the entry is fresh again (polled through
  // `dump`, which changes nothing).
  ASSERT_TRUE(eventually(
      [&] {
        return ctl(socket_, "dump slow.stale.test").output.find(" fresh, expires in ") !=
               std::string::npos;
      },
      Millis{5000}));
  const std::size_t asked = upstream_.queries("slow.stale.test");
  auto fresh = udp_query(port(), build_query({.name = "slow.stale.test"}));
  ASSERT_TRUE(fresh);
  EXPECT_EQ(ip_of(*fresh), "192.0.2.20") << fresh->text();
  EXPECT_FALSE(fresh->ede()) << fresh->text();
  EXPECT_GE(fresh->ttls()[0], 58u);
  EXPECT_EQ(upstream_.queries("slow.stale.test"), asked) << "the fresh answer came from the cache";
}

// No stale data, upstream silent over UDP: SERVFAIL + EDE 22 within 3 s (defaults).
TEST_F(ServeStaleTest, ServfailWithEde22Within3sWhenUdpIsDropped) {
  upstream_.set_default(FakeReply::dropped());
  start();
  // dig asks another name at the same time: both wait out the same 3 s.
  auto by_dig = std::async(std::launch::async, [&] { return dig(port(), "mute-udp2.test A", 5); });
  const auto t0 = Clock::now();
  auto a = udp_query(port(), build_query({.name = "mute-udp.test"}), Millis{5000});
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(a) << "no answer within 5 s";
  EXPECT_EQ(a->rcode(), RCode::ServFail);
  EXPECT_EQ(a->ede(), wire::ede::NoReachableAuthority) << a->text();
  EXPECT_LE(took, Millis{3200});
  EXPECT_GE(took, Millis{2500}) << "the upstream timeout is 3 s";
  auto r = by_dig.get();
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_TRUE(r.contains("EDE: 22")) << r.output;
}

// The upstream sets TC over UDP and then accepts TCP but never answers.
TEST_F(ServeStaleTest, ServfailWithEde22Within3sWhenTcpIsMute) {
  FakeReply tc = FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")});
  tc.truncate_udp = true;
  upstream_.set_default(tc);
  upstream_.set_tcp_mute(true);
  start();
  const auto t0 = Clock::now();
  auto a = udp_query(port(), build_query({.name = "mute-tcp.test"}), Millis{5000});
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(a) << "no answer within 5 s";
  EXPECT_EQ(a->rcode(), RCode::ServFail);
  EXPECT_EQ(a->ede(), wire::ede::NoReachableAuthority) << a->text();
  EXPECT_LE(took, Millis{3200});
  // TC sends the attempt to TCP; the retransmission timer then waits twice the RTO (1 s
  // before any sample) for it, so at most one more UDP try fits in the 3 s.
  EXPECT_GE(upstream_.queries("mute-tcp.test", Transport::Udp), 1u);
  EXPECT_LE(upstream_.queries("mute-tcp.test", Transport::Udp), 2u);
}

TEST_F(ServeStaleTest, TcpClientAlsoGetsServfailOnTime) {
  upstream_.set_default(FakeReply::dropped());
  start({"--upstream-timeout", "1000", "--client-timeout", "500"});
  const auto t0 = Clock::now();
  auto a = tcp_query(port(), build_query({.name = "mute-tcpclient.test"}), Millis{4000});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::ServFail);
  EXPECT_LT(Clock::now() - t0, Millis{1500});
}

}  // namespace
}  // namespace hg::integration
