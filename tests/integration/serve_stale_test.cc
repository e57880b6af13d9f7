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
  // Waits (polling `dump`, which changes nothing) until `name`'s cached answer has expired.
  void wait_expired(const std::string& name) {
    std::string dump;
    ASSERT_TRUE(eventually(
        [&] {
          dump = ctl(socket_, "dump " + name).output;
          return dump.find(" stale, expired ") != std::string::npos;
        },
        Millis{5000}))
        << dump;
  }
  // Caches `name` with a 1-second TTL and waits until it has expired.
  void cache_then_expire(const std::string& name, FakeReply reply) {
    upstream_.on(name, std::move(reply));
    auto a = udp_query(daemon_->port(), build_query({.name = name}));
    ASSERT_TRUE(a);
    ASSERT_EQ(upstream_.queries(name), 1u);
    wait_expired(name);
  }

  const std::string socket_ = "/tmp/hg-stale-" + random_label(12) + ".ctl";
};

std::string ip_of(const Answer& a, std::size_t i = 0) {
  const auto& rd = std::get<wire::RdataA>(a.msg.answer.at(i).rdata);
  return std::to_string(rd.address[0]) + "." + std::to_string(rd.address[1]) + "." +
         std::to_string(rd.address[2]) + "." + std::to_string(rd.address[3]);
}

// One daemon, five names cached with a 1-second TTL and expired together; then each meets
// another upstream failure. Each case also runs on virtual time in QueryEngineTest
// (StaleAnswerWithEde3WhenUpstreamFails, StaleAnswerAtTheClientTimeoutAndTheLateAnswerIsCached,
// StaleNxdomainCarriesEde19); this is the smoke test that the daemon wires them up.
TEST_F(ServeStaleTest, StaleAnswersWhenTheUpstreamDropsServfailsRefusesOrIsGone) {
  start();  // default --client-timeout 1800 ms
  const std::vector<std::pair<std::string, FakeReply>> cached{
      {"drop.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.1")})},
      {"sf.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.2")})},
      {"ref.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.3")})},
      {"gone.stale.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.4")})},
      {"nx.stale.test", FakeReply::nxdomain(FakeRecord::soa("stale.test", 1, 1))},
  };
  for (const auto& [name, reply] : cached)
    upstream_.on(name, reply);
  for (const auto& [name, reply] : cached)
    ASSERT_TRUE(udp_query(port(), build_query({.name = name}))) << name;
  for (const auto& [name, reply] : cached)
    wait_expired(name);

  // Dropped: the stale answer comes at the 1.8 s client-response timer. The other cases run
  // meanwhile.
  upstream_.on("drop.stale.test", FakeReply::dropped());
  upstream_.on("sf.stale.test", FakeReply::servfail());
  upstream_.on("ref.stale.test", FakeReply::refused());
  upstream_.on("nx.stale.test", FakeReply::servfail());
  auto dropped = std::async(std::launch::async, [&] {
    const auto t0 = Clock::now();
    auto a = udp_query(port(), build_query({.name = "drop.stale.test"}));
    return std::pair{a, Clock::now() - t0};
  });

  {
    SCOPED_TRACE("the upstream answers SERVFAIL: stale at once");
    const auto t0 = Clock::now();
    auto r = dig(port(), "sf.stale.test A");
    EXPECT_LT(Clock::now() - t0, Millis{1500});
    EXPECT_EQ(r.status(), "NOERROR") << r.output;
    EXPECT_TRUE(r.contains("EDE: 3 (Stale Answer)")) << r.output;
    EXPECT_TRUE(r.contains("192.0.2.2")) << r.output;
  }
  {
    SCOPED_TRACE("the upstream answers REFUSED");
    auto a = udp_query(port(), build_query({.name = "ref.stale.test"}));
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), RCode::NoError);
    EXPECT_EQ(a->ede(), wire::ede::StaleAnswer) << a->text();
  }
  {
    SCOPED_TRACE("a stale NXDOMAIN carries EDE 19");
    auto a = udp_query(port(), build_query({.name = "nx.stale.test"}));
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), RCode::NXDomain) << a->text();
    EXPECT_EQ(a->ede(), wire::ede::StaleNxdomainAnswer) << a->text();
    auto r = dig(port(), "nx.stale.test A");
    EXPECT_EQ(r.status(), "NXDOMAIN") << r.output;
    EXPECT_TRUE(r.contains("EDE: 19")) << r.output;
  }
  {
    SCOPED_TRACE("the upstream drops the query: stale at the client-response timer");
    auto [a, took] = dropped.get();
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
  {
    SCOPED_TRACE("the upstream is gone: closed port, ICMP unreachable");
    upstream_.stop();
    const auto t0 = Clock::now();
    auto a = udp_query(port(), build_query({.name = "gone.stale.test"}));
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), RCode::NoError);
    EXPECT_EQ(a->ede(), wire::ede::StaleAnswer) << a->text();
    EXPECT_LT(Clock::now() - t0, Millis{2600});
  }
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

// No stale data and a mute upstream: SERVFAIL + EDE 22 within 3 s (defaults), whether the
// upstream is silent over UDP or sets TC over UDP and then accepts TCP but never answers.
// The three queries run at the same time and wait out the same 3 s. QueryEngineTest's
// MuteUpstreamGetsServfailWithEde22AtTheDeadline holds the deadline on virtual time.
TEST_F(ServeStaleTest, ServfailWithEde22Within3sWhenUdpIsDroppedOrTcpIsMute) {
  upstream_.set_default(FakeReply::dropped());
  FakeReply tc = FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")});
  tc.truncate_udp = true;
  upstream_.on("mute-tcp.test", tc);
  upstream_.set_tcp_mute(true);
  start();
  const auto timed = [&](const std::string& name) {
    return std::async(std::launch::async, [this, name] {
      const auto t0 = Clock::now();
      auto a = udp_query(port(), build_query({.name = name}), Millis{5000});
      return std::pair{a, Clock::now() - t0};
    });
  };
  auto over_udp = timed("mute-udp.test");
  auto over_tcp = timed("mute-tcp.test");
  auto r = dig(port(), "mute-udp2.test A", 5);
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_TRUE(r.contains("EDE: 22")) << r.output;
  for (const auto& [what, answer] : {std::pair{"silent over UDP", &over_udp},
                                     std::pair{"TC over UDP, mute over TCP", &over_tcp}}) {
    SCOPED_TRACE(what);
    auto [a, took] = answer->get();
    ASSERT_TRUE(a) << "no answer within 5 s";
    EXPECT_EQ(a->rcode(), RCode::ServFail);
    EXPECT_EQ(a->ede(), wire::ede::NoReachableAuthority) << a->text();
    EXPECT_LE(took, Millis{3200});
    EXPECT_GE(took, Millis{2500}) << "the upstream timeout is 3 s";
  }
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
