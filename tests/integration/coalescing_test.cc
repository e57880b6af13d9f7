// In-flight coalescing and the failure cache seen from outside: many identical queries
// become one upstream query, each client still gets its own ID and letter case back; a
// burst for a failing name is not a burst upstream.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/bytes.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "wire/edns.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using wire::RCode;
using Clock = std::chrono::steady_clock;

// Each letter upper- or lowercase by the bits of `seed`.
std::string mixed_case(std::string_view name, unsigned seed) {
  std::string s(name);
  unsigned bit = 0;
  for (char& c : s) {
    if (c >= 'a' && c <= 'z' && ((seed >> (bit++ % 31)) & 1u)) c = static_cast<char>(c - 32);
  }
  return s;
}

// Sends `n` identical queries (random IDs, random case) from `n` sockets while the upstream
// holds its answer for 600 ms, plus `tcp` more over TCP; checks every client's answer.
void expect_one_upstream_query(const std::vector<std::string>& extra_args, int n, int tcp) {
  FakeUpstream upstream;
  const std::string name = random_label() + ".coalesce.test";
  FakeReply reply = FakeReply::records({FakeRecord::a("", 60, "192.0.2.7")});
  reply.delay = Millis{600};
  upstream.on(name, reply);
  std::vector<std::string> args{"--upstream", upstream.address()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  auto d = Daemon::start(args);
  ASSERT_TRUE(d->ready()) << d->output();

  struct Client {
    std::unique_ptr<UdpClient> sock;
    Bytes query;
  };
  std::vector<Client> clients;
  for (int i = 0; i < n; ++i) {
    Client c{std::make_unique<UdpClient>(),
             build_query({.name = mixed_case(name, static_cast<unsigned>(i) * 2654435761u),
                          .id = static_cast<uint16_t>(1000 + i)})};
    ASSERT_TRUE(c.sock->send(d->port(), c.query));
    clients.push_back(std::move(c));
  }
  std::vector<std::optional<Answer>> tcp_answers(static_cast<std::size_t>(tcp));
  std::vector<Bytes> tcp_queries;
  for (int i = 0; i < tcp; ++i)
    tcp_queries.push_back(
        build_query({.name = mixed_case(name, 0x5a5a5a5au + static_cast<unsigned>(i)),
                     .id = static_cast<uint16_t>(5000 + i)}));
  std::vector<std::thread> threads;
  for (int i = 0; i < tcp; ++i) {
    threads.emplace_back([&, i] {
      tcp_answers[static_cast<std::size_t>(i)] =
          tcp_query(d->port(), tcp_queries[static_cast<std::size_t>(i)]);
    });
  }
  for (auto& c : clients) {
    auto bytes = c.sock->receive(Millis{3000});
    ASSERT_TRUE(bytes) << "a client got no answer";
    auto a = parse_answer(*bytes);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->id(), base::load_u16(&c.query[0]));
    EXPECT_EQ(Answer::question_bytes(a->bytes), Answer::question_bytes(c.query))
        << "the client's own question (letter case) must be echoed";
    EXPECT_EQ(a->rcode(), RCode::NoError);
    EXPECT_EQ(a->msg.answer.size(), 1u);
  }
  for (auto& t : threads)
    t.join();
  for (int i = 0; i < tcp; ++i) {
    const auto& a = tcp_answers[static_cast<std::size_t>(i)];
    ASSERT_TRUE(a) << "TCP client " << i << " got no answer";
    EXPECT_EQ(a->id(), 5000 + i);
    EXPECT_EQ(Answer::question_bytes(a->bytes),
              Answer::question_bytes(tcp_queries[static_cast<std::size_t>(i)]));
    EXPECT_EQ(a->msg.answer.size(), 1u);
  }
  EXPECT_EQ(upstream.queries(name), 1u);
}

TEST(Coalescing, HundredConcurrentIdenticalQueriesMakeOneUpstreamQuery) {
  expect_one_upstream_query({}, 100, 0);
}

TEST(Coalescing, UdpAndTcpClientsJoinTheSameUpstreamQuery) {
  expect_one_upstream_query({}, 20, 5);
}

TEST(Coalescing, TwoThreadsStillMakeOneUpstreamQuery) {
  expect_one_upstream_query({"--threads", "2"}, 100, 5);
}

// RFC 9520: after a SERVFAIL the name is held off; 5 quick queries are 1 upstream query,
// the first answered SERVFAIL + EDE 22, the rest from the failure cache (EDE 13).
TEST(FailureCache, FiveQuickQueriesForServfailingNameMakeOneUpstreamQuery) {
  FakeUpstream upstream;
  const std::string name = random_label() + ".servfail.test";
  upstream.on(name, FakeReply::servfail());
  auto d = Daemon::start({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    auto a = udp_query(d->port(), build_query({.name = name}));
    ASSERT_TRUE(a) << "query " << i;
    EXPECT_EQ(a->rcode(), RCode::ServFail);
    EXPECT_LT(Clock::now() - start, Millis{1000})
        << "a SERVFAIL from upstream is passed on at once";
    if (i == 0) {
      EXPECT_EQ(a->ede(), wire::ede::NoReachableAuthority) << a->text();
    } else {
      EXPECT_EQ(a->ede(), 13) << "Cached Error from the failure cache\n" << a->text();
    }
  }
  std::string seen;
  for (const auto& r : upstream.received())
    seen += (r.transport == test::Transport::Udp ? " udp id=" : " tcp id=") + std::to_string(r.id);
  EXPECT_EQ(upstream.queries(name), 1u)
      << "one resolution, one upstream query: a SERVFAIL from the only upstream must not be "
         "re-sent to it (c-ares 1.18 retries SERVFAIL on the next server, which with one server "
         "is the same one, tries=2); upstream saw:"
      << seen;
}

TEST(FailureCache, FiveQuickQueriesForSilentNameMakeOneResolution) {
  FakeUpstream upstream;
  const std::string name = random_label() + ".silent.test";
  upstream.on(name, FakeReply::dropped());
  const std::string control = "/tmp/hg-coalesce-" + random_label(8) + ".sock";
  auto d = Daemon::start({"--upstream", upstream.address(), "--upstream-timeout", "800",
                          "--client-timeout", "500", "--control", control});
  ASSERT_TRUE(d->ready()) << d->output();
  auto first = udp_query(d->port(), build_query({.name = name}));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->rcode(), RCode::ServFail);
  const std::size_t after_first = upstream.queries(name);
  // Four more at once: they join the resolution still running in c-ares or meet the failure
  // cache; each is answered SERVFAIL by its own deadline at the latest.
  std::vector<std::unique_ptr<UdpClient>> more;
  for (int i = 0; i < 4; ++i) {
    more.push_back(std::make_unique<UdpClient>());
    ASSERT_TRUE(more.back()->send(d->port(), build_query({.name = name})));
  }
  for (auto& c : more) {
    auto got = c->receive(Millis{3000});
    ASSERT_TRUE(got);
    auto a = parse_answer(*got);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), RCode::ServFail);
  }
  // The resolution may still retransmit the first query until it ends; the later four
  // queries join it or meet the failure cache and add nothing of their own. Once nothing is
  // in flight, nothing more can be sent for the name.
  EXPECT_TRUE(eventually([&] { return ctl_stat(control, "inflight.queries") == 0; }));
  EXPECT_EQ(after_first, 1u);
  EXPECT_LE(upstream.queries(name), 2u);
}

// Waiters per in-flight query are bounded (256): beyond that, SERVFAIL at once, and the
// first 256 still get the upstream's answer.
TEST(Coalescing, WaitersBeyondTheBoundGetServfailAtOnce) {
  FakeUpstream upstream;
  const std::string name = random_label() + ".crowd.test";
  FakeReply reply = FakeReply::records({FakeRecord::a("", 60, "192.0.2.7")});
  reply.delay = Millis{800};
  upstream.on(name, reply);
  auto d = Daemon::start({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  constexpr int kClients = 300;
  std::vector<std::unique_ptr<UdpClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<UdpClient>());
    ASSERT_TRUE(clients.back()->send(d->port(), build_query({.name = name})));
  }
  int answered = 0, servfail = 0;
  for (auto& c : clients) {
    auto got = c->receive(Millis{3000});
    if (!got) continue;
    auto a = parse_answer(*got);
    ASSERT_TRUE(a);
    ++answered;
    if (a->rcode() == RCode::ServFail) ++servfail;
  }
  EXPECT_EQ(answered, kClients);
  EXPECT_EQ(servfail, kClients - 256);
  EXPECT_EQ(upstream.queries(name), 1u);
}

}  // namespace
}  // namespace hg::integration
