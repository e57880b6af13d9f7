// Upstream tests: the real Upstream (and c-ares, 1.18 or 1.34, for TCP) talking to FakeUpstream
// over loopback. Timeouts are
// shortened through UpstreamOptions so the failure cases take ~100-200 ms each.
#include "resolver/upstream/upstream.h"
#include "base/bytes.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "resolver/upstream/cares_compat.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/ports.h"

namespace hg::resolver {
namespace {

using namespace std::chrono_literals;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::Transport;

// A query as the daemon builds it: RD=1 and exactly one bare OPT record at the end.
std::vector<uint8_t> make_query(std::string_view name, uint16_t qtype, uint16_t id = 0) {
  std::vector<uint8_t> q = {
      static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1};
  while (!name.empty()) {
    auto dot = name.find('.');
    auto label = name.substr(0, dot);
    q.push_back(static_cast<uint8_t>(label.size()));
    q.insert(q.end(), label.begin(), label.end());
    name = dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
  }
  q.push_back(0);
  q.push_back(static_cast<uint8_t>(qtype >> 8));
  q.push_back(static_cast<uint8_t>(qtype));
  q.push_back(0);
  q.push_back(1);
  // OPT: root owner, type 41, payload 1232, ext-rcode/version/flags 0, no options.
  const uint8_t opt[] = {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
  q.insert(q.end(), std::begin(opt), std::end(opt));
  return q;
}

uint16_t u16(const std::vector<uint8_t>& b, std::size_t at) {
  return base::load_u16(&b[at]);
}

struct Outcome {
  bool done = false;
  int calls = 0;
  UpstreamStatus status = UpstreamStatus::Internal;
  std::vector<uint8_t> answer;
};

Upstream::Callback record(Outcome& o) {
  return [&o](UpstreamStatus s, std::span<const uint8_t> answer) {
    o.done = true;
    ++o.calls;
    o.status = s;
    o.answer.assign(answer.begin(), answer.end());
  };
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// True when the answer's question section is the caller's, byte for byte (its letter case,
// not the 0x20 one the upstream saw): `query` as make_query gives it, with its 11-byte OPT.
bool carries_callers_question(const std::vector<uint8_t>& query,
                              const std::vector<uint8_t>& answer) {
  const std::size_t qlen = query.size() - 12 - 11;
  return answer.size() >= 12 + qlen &&
         std::equal(query.begin() + 12, query.begin() + 12 + static_cast<long>(qlen),
                    answer.begin() + 12);
}

// The records of an answer's answer section: A RDATA as dotted quads, in order.
std::vector<std::string> a_records(const std::vector<uint8_t>& m) {
  std::vector<std::string> out;
  std::size_t at = 12;
  auto skip_name = [&] {
    while (at < m.size()) {
      if ((m[at] & 0xc0) == 0xc0) {
        at += 2;
        return;
      }
      if (m[at] == 0) {
        at += 1;
        return;
      }
      at += 1 + m[at];
    }
  };
  skip_name();
  at += 4;
  for (int i = 0; i < u16(m, 6) && at < m.size(); ++i) {
    skip_name();
    const uint16_t type = u16(m, at);
    const uint16_t len = u16(m, at + 8);
    at += 10;
    if (type == 1 && len == 4)
      out.push_back(std::to_string(m[at]) + "." + std::to_string(m[at + 1]) + "." +
                    std::to_string(m[at + 2]) + "." + std::to_string(m[at + 3]));
    at += len;
  }
  return out;
}

class UpstreamTest : public ::testing::Test {
 protected:
  std::unique_ptr<Upstream> make(UpstreamOptions opts = {}) {
    if (opts.servers.empty()) opts.servers.push_back(*parse_endpoint(fake.address(), 53));
    auto up = Upstream::create(loop, std::move(opts));
    EXPECT_TRUE(up.has_value()) << (up ? "" : up.error());
    // send() reads the loop's time of its current iteration, as the daemon's callers do; a
    // test calls it from outside the loop, so the loop's time is brought up to now first.
    // (Under ASan on a loaded machine, creating the channel took 11 ms, and a query given
    // 100 ms ended 89 ms after it was sent.)
    loop.run_once(0ms);
    return up ? std::move(up.value()) : nullptr;
  }
  static UpstreamOptions quick() { return UpstreamOptions{.lifetime = 100ms}; }

  // Runs the loop until `pred` holds or 5 s pass; returns the time it took.
  template <class Pred>
  std::chrono::steady_clock::duration run_until(Pred pred) {
    auto start = std::chrono::steady_clock::now();
    while (!pred() && std::chrono::steady_clock::now() - start < 5s)
      loop.run_once(50ms);
    return std::chrono::steady_clock::now() - start;
  }

  // Sends `query` and runs the loop until it is answered (or run_until gives up).
  Outcome resolve(Upstream& up, const std::vector<uint8_t>& query) {
    Outcome o;
    (void)up.send(query, record(o));
    run_until([&] { return o.done; });
    return o;
  }

  // Resolves `name` (A, 0x20 on) and returns the name as the upstream received it, having
  // checked that it is the same name, asked once, and that the answer carries the caller's
  // question (its lower case, not the 0x20 one).
  std::string sent_with_0x20(const std::string& name) {
    fake.on(name, FakeReply::records({FakeRecord::a("", 300, "192.0.2.6")}));
    auto up = make();
    const auto query = make_query(name, 1);
    const Outcome o = resolve(*up, query);
    EXPECT_EQ(o.status, UpstreamStatus::Ok);
    EXPECT_TRUE(carries_callers_question(query, o.answer));
    const auto got = fake.received();
    EXPECT_EQ(got.size(), 1u);
    if (got.empty()) return {};
    EXPECT_EQ(lower(got[0].qname_raw), name);
    return got[0].qname_raw;
  }

  // A forger in front of the fake: every UDP query gets, at once, a reply with the question
  // in inverted case and the record 203.0.113.66; the real answer (192.0.2.7) follows after
  // `real_delay`.
  void forge_wrong_case_before(std::chrono::milliseconds real_delay) {
    FakeReply real = FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")});
    real.delay = real_delay;
    fake.set_default(real);
    fake.set_forge_wrong_case(FakeRecord::a("", 300, "203.0.113.66"));
  }

  // Sends `n` queries (<tag>0.example, <tag>1.example...) from one loop task, runs the loop
  // until none is in flight, and checks that each got the real answer, never a forged one.
  void expect_real_answers(Upstream& up, const std::string& tag, int n) {
    std::vector<Outcome> outcomes(static_cast<std::size_t>(n));
    bool ran = false;
    loop.post([&] {
      ran = true;
      for (int i = 0; i < n; ++i)
        (void)up.send(make_query(tag + std::to_string(i) + ".example", 1),
                      record(outcomes[static_cast<std::size_t>(i)]));
    });
    run_until([&] { return ran && up.in_flight() == 0; });
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      ASSERT_EQ(outcomes[i].status, UpstreamStatus::Ok) << tag << i;
      EXPECT_EQ(a_records(outcomes[i].answer), std::vector<std::string>{"192.0.2.7"}) << tag << i;
    }
  }

  FakeUpstream fake;
  EventLoop loop;
};

TEST_F(UpstreamTest, AnswerArrivesWithTheIdSendReturned) {
  fake.on("www.example.com", FakeReply::records({FakeRecord::a("", 300, "192.0.2.1")}));
  auto up = make();
  Outcome o;
  auto query = make_query("www.example.com", 1);
  auto id = up->send(query, record(o));
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(up->in_flight(), 1u);
  run_until([&] { return o.done; });
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  ASSERT_GE(o.answer.size(), 12u);
  EXPECT_EQ(u16(o.answer, 0), *id);
  EXPECT_EQ(u16(o.answer, 6), 1);   // ANCOUNT
  EXPECT_EQ(o.answer[3] & 0xf, 0);  // NOERROR
  EXPECT_EQ(fake.queries("www.example.com", Transport::Udp), 1u);
  EXPECT_EQ(up->in_flight(), 0u);
}

TEST_F(UpstreamTest, SendWritesItsRandomIdIntoItsOwnCopyOnly) {
  auto up = make();
  auto query = make_query("id.example", 1, 0xabcd);
  const auto original = query;
  Outcome o;
  auto id = up->send(query, record(o));
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(query, original);
  run_until([&] { return o.done; });
  auto got = fake.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, *id);  // the ID on the wire is the one send() returned
  EXPECT_TRUE(got[0].has_opt);
}

TEST_F(UpstreamTest, ConcurrentQueriesGetDistinctIds) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.7")}));
  auto up = make();
  // 100, not more: a burst of a few hundred datagrams overflows the fake's default socket
  // receive buffer (net.core.rmem_default), and Upstream would then retransmit after 1.2 s.
  constexpr int kQueries = 100;
  std::vector<Outcome> outcomes(kQueries);
  std::set<uint16_t> ids;
  for (int i = 0; i < kQueries; ++i) {
    auto q = make_query("n" + std::to_string(i) + ".example", 1);
    auto id = up->send(q, record(outcomes[static_cast<std::size_t>(i)]));
    ASSERT_TRUE(id.has_value());
    ids.insert(*id);
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kQueries));
  run_until([&] { return up->in_flight() == 0; });
  for (const auto& o : outcomes)
    EXPECT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(fake.total_queries(), static_cast<std::size_t>(kQueries));
}

// 100 queries sent from one posted task, answered 50 ms later, close together: each leaves
// from its own socket at once (no longer held for the turn's end, see send_udp) and each
// answer, read from its own socket, is taken whole and once.
TEST_F(UpstreamTest, QueriesOfOneTurnAreEachSentOnceAndAnsweredOnce) {
  FakeReply r = FakeReply::records({FakeRecord::a("", 60, "192.0.2.8")});
  r.delay = 50ms;
  fake.set_default(r);
  auto up = make();  // RTO 1 s before the first sample: no retransmission at 50 ms
  constexpr int kQueries = 100;
  std::vector<Outcome> outcomes(kQueries);
  std::set<uint16_t> ids;
  bool ran = false;
  loop.post([&] {
    ran = true;
    for (int i = 0; i < kQueries; ++i) {
      auto id = up->send(make_query("b" + std::to_string(i) + ".example", 1),
                         record(outcomes[static_cast<std::size_t>(i)]));
      if (id) ids.insert(*id);
    }
  });
  run_until([&] { return ran && up->in_flight() == 0; });
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kQueries));
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].status, UpstreamStatus::Ok) << i;
    EXPECT_EQ(outcomes[i].calls, 1) << i;
    ASSERT_GE(outcomes[i].answer.size(), 12u);
    EXPECT_EQ(u16(outcomes[i].answer, 6), 1) << i;  // ANCOUNT: its own answer, whole
  }
  EXPECT_EQ(fake.total_queries(), static_cast<std::size_t>(kQueries));  // none sent twice
}

TEST_F(UpstreamTest, DroppedQueryTimesOutWithinTheConfiguredTime) {
  fake.on("void.example", FakeReply::dropped());
  auto up = make(quick());
  Outcome o;
  (void)up->send(make_query("void.example", 1), record(o));
  auto took = run_until([&] { return o.done; });
  EXPECT_EQ(o.status, UpstreamStatus::Timeout);
  EXPECT_TRUE(o.answer.empty());
  EXPECT_GE(took, 90ms);
  EXPECT_LT(took, 1s);
  EXPECT_EQ(fake.queries("void.example"), 1u);
}

TEST_F(UpstreamTest, ServFailAnswerIsReportedAsServFailWithoutBytes) {
  fake.on("broken.example", FakeReply::servfail());
  auto up = make(quick());
  Outcome o;
  (void)up->send(make_query("broken.example", 1), record(o));
  run_until([&] { return o.done; });
  EXPECT_EQ(o.status, UpstreamStatus::ServFail);
  EXPECT_TRUE(o.answer.empty());
  EXPECT_EQ(fake.queries("broken.example"), 1u);
}

TEST_F(UpstreamTest, RefusedAnswerIsReportedAsRefused) {
  fake.on("nope.example", FakeReply::refused());
  auto up = make(quick());
  Outcome o;
  (void)up->send(make_query("nope.example", 1), record(o));
  run_until([&] { return o.done; });
  EXPECT_EQ(o.status, UpstreamStatus::Refused);
}

TEST_F(UpstreamTest, NxDomainIsAnOkAnswerWithItsRcode) {
  fake.on("missing.example", FakeReply::nxdomain(FakeRecord::soa("example", 3600, 300)));
  auto up = make(quick());
  Outcome o;
  (void)up->send(make_query("missing.example", 1), record(o));
  run_until([&] { return o.done; });
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(o.answer[3] & 0xf, 3);  // NXDOMAIN
  EXPECT_EQ(u16(o.answer, 8), 1);   // NSCOUNT: the SOA
}

TEST_F(UpstreamTest, TruncatedUdpAnswerIsRetriedOverTcp) {
  fake.on("big.example", [] {
    auto r = FakeReply::records(
        {FakeRecord::a("", 300, "192.0.2.1"), FakeRecord::a("", 300, "192.0.2.2")});
    r.truncate_udp = true;
    return r;
  }());
  auto up = make();
  Outcome o;
  const auto id = up->send(make_query("big.example", 1), record(o));
  ASSERT_TRUE(id);
  run_until([&] { return o.done; });
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(u16(o.answer, 6), 2);    // ANCOUNT from the TCP answer
  EXPECT_EQ(o.answer[2] & 0x02, 0);  // TC clear
  // The ID send() returned, whatever ID c-ares wrote on the TCP connection (1.34 chooses its
  // own).
  EXPECT_EQ(u16(o.answer, 0), *id);
  EXPECT_EQ(fake.queries("big.example", Transport::Udp), 1u);
  EXPECT_EQ(fake.queries("big.example", Transport::Tcp), 1u);
}

// A UDP answer longer than the query offered (1232 with EDNS, 512 without), TC or not, is
// not taken: a server that ignores the payload size, or a forger who wants the answer in IP
// fragments. It is asked again over TCP, as after TC.
TEST_F(UpstreamTest, AUdpAnswerLongerThanTheQueryOfferedIsAskedAgainOverTcp) {
  std::vector<FakeRecord> many;
  for (int i = 0; i < 90; ++i)  // 90 A records: 1,440 bytes of them without compression
    many.push_back(FakeRecord::a("", 300, "192.0.2." + std::to_string(i + 1)));
  fake.on("long.example", FakeReply::records(many));
  std::vector<FakeRecord> some;
  for (int i = 0; i < 40; ++i)  // 40: over 512 bytes, under 1232
    some.push_back(FakeRecord::a("", 300, "198.51.100." + std::to_string(i + 1)));
  fake.on("medium.example", FakeReply::records(some));
  auto up = make();
  const Outcome o = resolve(*up, make_query("long.example", 1));
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(u16(o.answer, 6), 90);
  EXPECT_EQ(fake.queries("long.example", Transport::Udp), 1u);
  EXPECT_EQ(fake.queries("long.example", Transport::Tcp), 1u);
  // With EDNS (1232 offered) a 700-byte answer is taken over UDP ...
  const Outcome m = resolve(*up, make_query("medium.example", 1));
  ASSERT_EQ(m.status, UpstreamStatus::Ok);
  EXPECT_EQ(u16(m.answer, 6), 40);
  EXPECT_EQ(fake.queries("medium.example", Transport::Tcp), 0u);
  // ... and without EDNS (512 offered) it goes to TCP.
  auto plain = make_query("medium.example", 1);
  plain.resize(plain.size() - 11);  // the OPT record off
  plain[11] = 0;                    // ARCOUNT 0
  const Outcome p = resolve(*up, plain);
  ASSERT_EQ(p.status, UpstreamStatus::Ok);
  EXPECT_EQ(u16(p.answer, 6), 40);
  EXPECT_EQ(fake.queries("medium.example", Transport::Tcp), 1u);
}

// The TCP answer never passes the datagram hook's exact-question check, so its question is
// compared before the caller's bytes are put back: it must still come back in the caller's
// (lower) case, though the fake echoes the 0x20 case it was sent.
TEST_F(UpstreamTest, ATruncatedThenTcpAnswerCarriesTheCallersQuestion) {
  const std::string name = "abcdefghijklmnopqrstuvwxyz.big.example";
  fake.on(name, [] {
    auto r = FakeReply::records({FakeRecord::a("", 300, "192.0.2.1")});
    r.truncate_udp = true;
    return r;
  }());
  auto up = make();
  const auto query = make_query(name, 1);
  const Outcome o = resolve(*up, query);
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  ASSERT_EQ(fake.queries(name, Transport::Tcp), 1u);
  const auto got = fake.received();
  ASSERT_FALSE(got.empty());
  EXPECT_NE(got.back().qname_raw, name);  // sent scrambled (30 letters: 2^-30)
  EXPECT_TRUE(carries_callers_question(query, o.answer));
}

TEST_F(UpstreamTest, TruncatedAnswerWithMuteTcpTimesOut) {
  FakeReply r = FakeReply::records({FakeRecord::a("", 300, "192.0.2.1")});
  r.truncate_udp = true;
  fake.on("mute.example", r);
  fake.set_tcp_mute(true);
  auto up = make(UpstreamOptions{.lifetime = 150ms});
  Outcome o;
  (void)up->send(make_query("mute.example", 1), record(o));
  auto took = run_until([&] { return o.done; });
  EXPECT_EQ(o.status, UpstreamStatus::Timeout);
  EXPECT_LT(took, 2s);
  EXPECT_EQ(fake.queries("mute.example", Transport::Tcp), 0u);  // never read
}

TEST_F(UpstreamTest, SlowButAliveUpstreamIsNotRetransmittedTo) {
  FakeReply r = FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")});
  r.delay = 300ms;
  fake.on("slow.example", r);
  auto up = make();  // the default lifetime and RTO (1 s before the first sample)
  Outcome o;
  (void)up->send(make_query("slow.example", 1), record(o));
  auto took = run_until([&] { return o.done; });
  EXPECT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_GE(took, 290ms);
  EXPECT_EQ(fake.queries("slow.example"), 1u);
}

TEST_F(UpstreamTest, AnswerToADifferentQuestionIsIgnored) {
  FakeReply r = FakeReply::records({FakeRecord::a("", 300, "192.0.2.66")});
  r.wrong_question = true;
  fake.on("spoof.example", r);
  auto up = make(quick());
  Outcome o;
  (void)up->send(make_query("spoof.example", 1), record(o));
  run_until([&] { return o.done; });
  EXPECT_EQ(o.status, UpstreamStatus::Timeout);
}

TEST_F(UpstreamTest, StoppedUpstreamIsANetworkErrorOrTimeout) {
  fake.stop();
  auto up = make(quick());
  Outcome o;
  (void)up->send(make_query("gone.example", 1), record(o));
  run_until([&] { return o.done; });
  // Loopback delivers the ICMP port-unreachable, which the attempt's socket reports as
  // ECONNREFUSED.
  EXPECT_EQ(o.status, UpstreamStatus::NetworkError);
}

TEST_F(UpstreamTest, CancelAllReportsCancelledBeforeReturning) {
  fake.on("hang.example", FakeReply::dropped());
  auto up = make();
  Outcome a, b;
  (void)up->send(make_query("hang.example", 1), record(a));
  (void)up->send(make_query("hang.example", 28), record(b));
  loop.run_once(0ms);
  up->cancel_all();
  EXPECT_EQ(a.status, UpstreamStatus::Cancelled);
  EXPECT_EQ(b.status, UpstreamStatus::Cancelled);
  EXPECT_EQ(up->in_flight(), 0u);
  loop.run_once(0ms);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 1);
}

TEST_F(UpstreamTest, RejectedQueryIsReportedAtTheNextIterationNotInsideSend) {
  auto up = make();
  Outcome o;
  const std::vector<uint8_t> runt = {1, 2, 3};
  EXPECT_FALSE(up->send(runt, record(o)).has_value());
  EXPECT_FALSE(o.done);
  loop.run_once(0ms);
  EXPECT_EQ(o.status, UpstreamStatus::BadQuery);
  EXPECT_EQ(o.calls, 1);
}

TEST_F(UpstreamTest, EmptyServerListReportsNoServers) {
  auto up = make();
  ASSERT_FALSE(up->reload_servers({}).has_value());
  Outcome o;
  EXPECT_FALSE(up->send(make_query("x.example", 1), record(o)).has_value());
  loop.run_once(0ms);
  EXPECT_EQ(o.status, UpstreamStatus::NoServers);
}

TEST_F(UpstreamTest, ReloadSendsNewQueriesToTheNewServersWhileOldOnesFinish) {
  FakeUpstream second;
  FakeReply slow = FakeReply::records({FakeRecord::a("", 300, "192.0.2.1")});
  slow.delay = 150ms;
  fake.set_default(slow);
  second.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.2")}));
  auto up = make();
  Outcome before, after;
  (void)up->send(make_query("before.example", 1), record(before));
  loop.run_once(0ms);
  std::vector<Endpoint> servers = {*parse_endpoint(second.address(), 53)};
  ASSERT_FALSE(up->reload_servers(servers).has_value());
  (void)up->send(make_query("after.example", 1), record(after));
  run_until([&] { return before.done && after.done; });
  EXPECT_EQ(before.status, UpstreamStatus::Ok);
  EXPECT_EQ(after.status, UpstreamStatus::Ok);
  EXPECT_EQ(fake.queries("before.example"), 1u);
  EXPECT_EQ(fake.queries("after.example"), 0u);
  EXPECT_EQ(second.queries("after.example"), 1u);
  EXPECT_EQ(up->servers(), servers);
}

TEST_F(UpstreamTest, CallbackMaySendAnotherQuery) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.1")}));
  auto up = make();
  Outcome first, second;
  (void)up->send(make_query("one.example", 1), [&](UpstreamStatus s, std::span<const uint8_t>) {
    first.done = true;
    first.status = s;
    (void)up->send(make_query("two.example", 1), record(second));
  });
  run_until([&] { return second.done; });
  EXPECT_EQ(first.status, UpstreamStatus::Ok);
  EXPECT_EQ(second.status, UpstreamStatus::Ok);
}

TEST_F(UpstreamTest, DestroyingWithQueriesInFlightDropsTheirCallbacks) {
  fake.on("hang.example", FakeReply::dropped());
  auto up = make();
  Outcome o;
  (void)up->send(make_query("hang.example", 1), record(o));
  Outcome rejected;
  (void)up->send(std::vector<uint8_t>{1}, record(rejected));
  up.reset();
  loop.run_once(0ms);  // the deferred BadQuery report must not run after destruction
  EXPECT_FALSE(o.done);
  EXPECT_FALSE(rejected.done);
}

// --- EDNS fallback, 0x20, retransmission (docs/upstream.md) -----------------------------

const UpstreamServerStats& stats_of(const UpstreamBoard& board, std::size_t i = 0) {
  return *board.snapshot().at(0)->servers.at(i);
}

TEST_F(UpstreamTest, FormerrToEdnsIsRetriedWithoutOptAndRememberedForTheServer) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.5")}));
  fake.set_formerr_to_edns(true);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  for (int i = 0; i < 3; ++i) {
    Outcome o;
    const std::string name = "n" + std::to_string(i) + ".example";
    (void)up->send(make_query(name, 1), record(o));
    run_until([&] { return o.done; });
    ASSERT_EQ(o.status, UpstreamStatus::Ok) << name;
    EXPECT_EQ(a_records(o.answer), std::vector<std::string>{"192.0.2.5"});
  }
  const auto got = fake.received();
  // The first name: with OPT (FORMERR), then the same query without. Later names: without.
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(got[0].has_opt);
  EXPECT_FALSE(got[1].has_opt);
  EXPECT_EQ(got[1].qname, "n0.example");
  EXPECT_FALSE(got[2].has_opt);
  EXPECT_FALSE(got[3].has_opt);
  EXPECT_EQ(stats_of(board).edns_rejections.load(), 1u);
  EXPECT_EQ(stats_of(board).edns_fallbacks.load(), 1u);
  EXPECT_FALSE(stats_of(board).edns.load());
}

TEST_F(UpstreamTest, ServFailWithOptIsAFailureNotAnEdnsRejection) {
  fake.on("sf.example", FakeReply::servfail());  // the fake echoes OPT in its SERVFAIL
  auto up = make(quick());
  Outcome o;
  (void)up->send(make_query("sf.example", 1), record(o));
  run_until([&] { return o.done; });
  EXPECT_EQ(o.status, UpstreamStatus::ServFail);
  EXPECT_EQ(fake.queries("sf.example"), 1u);
}

TEST_F(UpstreamTest, QueryNameGoesWithRandomCaseAndTheAnswerCarriesTheCallersQuestion) {
  const std::string name = "abcdefghijklmnopqrstuvwxyz.abcdefghijklmnopqrstuvwxyz.example";
  EXPECT_NE(sent_with_0x20(name), name);  // 59 letters all lower case: 2^-59
}

// The case bits come in 64-bit words, one per 64 bytes of name, and only the words a name
// covers are drawn: a long name must be scrambled beyond its first 64 bytes too.
TEST_F(UpstreamTest, A0x20NameLongerThanOneWordOfCaseBitsIsScrambledToItsEnd) {
  const std::string alpha = "abcdefghijklmnopqrstuvwxyz";
  const std::string name = alpha + alpha + "." + alpha + alpha + "." + alpha + alpha + "." + alpha +
                           alpha + ".example";  // 221 bytes on the wire
  const std::string sent = sent_with_0x20(name);
  ASSERT_EQ(sent.size(), name.size());
  // Each 52-letter label is its own stretch of bits; all lower case in one: 2^-52.
  for (std::size_t label = 0; label < 4; ++label)
    EXPECT_NE(sent.substr(label * 53, 52), alpha + alpha) << "label " << label << " in lower case";
}

TEST_F(UpstreamTest, No0x20SendsTheNameAsGiven) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.6")}));
  auto up = make(UpstreamOptions{.use_0x20 = false});
  Outcome o;
  (void)up->send(make_query("lower.case.example", 1), record(o));
  run_until([&] { return o.done; });
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(fake.received().at(0).qname_raw, "lower.case.example");
}

TEST_F(UpstreamTest, ForgedReplyWithTheWrongCaseIsDroppedAndTheRealOneWins) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")}));
  fake.set_forge_wrong_case(FakeRecord::a("", 300, "203.0.113.66"));
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  for (int i = 0; i < 5; ++i) {
    Outcome o;
    (void)up->send(make_query("forged" + std::to_string(i) + ".example", 1), record(o));
    run_until([&] { return o.done; });
    ASSERT_EQ(o.status, UpstreamStatus::Ok);
    EXPECT_EQ(a_records(o.answer), std::vector<std::string>{"192.0.2.7"});
  }
  EXPECT_GE(stats_of(board).case_mismatches.load(), 5u);
  EXPECT_EQ(stats_of(board).case_forgeries.load(), 5u);  // each shown forged over TCP
  EXPECT_EQ(stats_of(board).case_fallbacks.load(), 0u);  // real answers kept the case
  EXPECT_TRUE(stats_of(board).use_0x20.load());
}

// The other side of going to TCP after a wrong-case reply: the server the forger imitates
// takes the TCP connection but never answers on it. The query is not stuck with it: the
// retransmission timer moves it to the other server, over TCP too (it takes no UDP answer
// any more), and that server's answer is the one served.
TEST_F(UpstreamTest, AfterAWrongCaseReplyAServerSilentOverTcpIsLeftForTheOther) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")}));
  fake.set_forge_wrong_case(FakeRecord::a("", 300, "203.0.113.66"));
  fake.set_tcp_mute(true);
  FakeUpstream other;
  other.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.8")}));
  auto up = make(UpstreamOptions{
      .servers = {*parse_endpoint(fake.address(), 53), *parse_endpoint(other.address(), 53)},
      .lifetime = 5000ms});
  const Outcome o = resolve(*up, make_query("muted.example", 1));
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(a_records(o.answer), std::vector<std::string>{"192.0.2.8"});
  // One UDP copy to the first server (its forgery ends UDP for the query), none to the other;
  // the muted server's TCP query is never read, so it is not counted.
  EXPECT_EQ(fake.queries("muted.example", test::Transport::Udp), 1u);
  EXPECT_EQ(other.queries("muted.example", test::Transport::Udp), 0u);
  EXPECT_EQ(other.queries("muted.example", test::Transport::Tcp), 1u);
}

// The same in a burst: 40 queries leave in one turn; their 40 forgeries come back at once, each
// wave more than one recvmmsg batch (32). Every forgery is dropped where it falls in a batch,
// every query goes on over TCP (40 queries on c-ares's connection) and gets its real answer.
TEST_F(UpstreamTest, ForgedRepliesInABurstAreDroppedAcrossBatches) {
  forge_wrong_case_before(10ms);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  expect_real_answers(*up, "burst", 40);
  EXPECT_GE(stats_of(board).case_mismatches.load(), 40u);
  EXPECT_EQ(stats_of(board).case_forgeries.load(), 40u);
  EXPECT_EQ(stats_of(board).case_fallbacks.load(), 0u);
  EXPECT_TRUE(stats_of(board).use_0x20.load());
}

// A forger answering at once with the wrong case, in front of a server 120 ms away, before
// the first RTT sample and after. Before 2026-12-07 the attempt waited a grace of 3 x SRTT
// for the real answer and counted a case failure when it did not come in time (two switched
// 0x20 off); now nothing waits on a timer: the query goes to TCP at the first wrong-case reply.
TEST_F(UpstreamTest, WrongCaseFloodDoesNotSwitchOffCaseForADistantServer) {
  forge_wrong_case_before(120ms);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  expect_real_answers(*up, "cold", 4);
  EXPECT_GT(stats_of(board).srtt_us.load(), 100'000u);
  expect_real_answers(*up, "warm", 4);
  EXPECT_GE(stats_of(board).case_mismatches.load(), 8u);
  EXPECT_EQ(stats_of(board).case_fallbacks.load(), 0u);
  EXPECT_TRUE(stats_of(board).use_0x20.load());
}

// The attack that used to win: a server whose SRTT is under a millisecond (its names come
// back at once), and names under the forger's own zone that take 120 ms and 300 ms. A
// grace of 3 x SRTT (then 50 ms) ran out before each real answer, so two wrong-case replies
// switched 0x20 off and the third query's forgery was taken. Now 0x20 stays on and each
// query is answered by its real (TCP) answer.
TEST_F(UpstreamTest, WrongCaseRepliesBeforeSlowNamesOfAFastServerDecideNothing) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")}));
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  for (int i = 0; i < 10; ++i)
    (void)resolve(*up, make_query("fast" + std::to_string(i) + ".example", 1));
  ASSERT_LT(stats_of(board).srtt_us.load(), 20'000u);  // ~0.1 ms; 20 on a loaded machine
  fake.set_forge_wrong_case(FakeRecord::a("", 300, "203.0.113.66"));
  for (int i = 0; i < 6; ++i) {
    const std::string name = "slow" + std::to_string(i) + ".attacker.example";
    FakeReply slow = FakeReply::records({FakeRecord::a("", 300, "192.0.2.7")});
    slow.delay = i % 2 == 0 ? 120ms : 300ms;
    fake.on(name, slow);
    const Outcome o = resolve(*up, make_query(name, 1));
    ASSERT_EQ(o.status, UpstreamStatus::Ok) << name;
    EXPECT_EQ(a_records(o.answer), std::vector<std::string>{"192.0.2.7"}) << name;
    EXPECT_TRUE(stats_of(board).use_0x20.load()) << name;
  }
  EXPECT_EQ(stats_of(board).case_forgeries.load(), 6u);
  EXPECT_EQ(stats_of(board).case_fallbacks.load(), 0u);
}

// A server that does not echo case, over UDP or TCP: each wrong-case UDP reply sends its query
// to TCP, whose answer (not forgeable off-path) is taken and, lacking the case too, is a
// confirmed failure for that name. Three different names switch 0x20 off; a name asked again
// adds nothing. Later names go in lower case over UDP and are answered at once.
TEST_F(UpstreamTest, ServerThatDoesNotEchoCaseGetsQueriesWithout0x20) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.8")}));
  fake.set_scramble_case(true);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  for (const char* name :
       {"scrambled1.example", "scrambled1.example", "scrambled2.example", "scrambled3.example"}) {
    EXPECT_TRUE(stats_of(board).use_0x20.load()) << name;
    const Outcome o = resolve(*up, make_query(name, 1));
    ASSERT_EQ(o.status, UpstreamStatus::Ok) << name;
    EXPECT_EQ(a_records(o.answer), std::vector<std::string>{"192.0.2.8"}) << name;
  }
  EXPECT_EQ(fake.queries("scrambled1.example", test::Transport::Tcp), 2u);
  EXPECT_EQ(stats_of(board).case_mismatches.load(), 4u);
  EXPECT_EQ(stats_of(board).case_forgeries.load(), 0u);  // the server's own doing
  EXPECT_EQ(stats_of(board).case_fallbacks.load(), 1u);
  EXPECT_FALSE(stats_of(board).use_0x20.load());
  fake.reset_counts();
  Outcome o2;
  (void)up->send(make_query("next.example", 1), record(o2));
  run_until([&] { return o2.done; });
  ASSERT_EQ(o2.status, UpstreamStatus::Ok);
  const auto got = fake.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].qname_raw, "next.example");
  EXPECT_EQ(got[0].transport, test::Transport::Udp);
}

// After a wrong-case reply the query takes no UDP answer at all: its UDP attempts are over
// (their ports closed), so the real answer arriving over UDP afterwards is not taken either,
// and the answer comes over TCP. 0x20 stays on: the TCP answer echoed the case.
TEST_F(UpstreamTest, AfterAWrongCaseReplyOnlyTcpAnswersTheQuery) {
  forge_wrong_case_before(30ms);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  const Outcome o = resolve(*up, make_query("switched.example", 1));
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(a_records(o.answer), std::vector<std::string>{"192.0.2.7"});
  EXPECT_EQ(fake.queries("switched.example", test::Transport::Udp), 1u);
  EXPECT_EQ(fake.queries("switched.example", test::Transport::Tcp), 1u);
  EXPECT_EQ(stats_of(board).case_mismatches.load(), 1u);
  EXPECT_EQ(stats_of(board).case_forgeries.load(), 1u);
  EXPECT_EQ(stats_of(board).case_fallbacks.load(), 0u);
  EXPECT_TRUE(stats_of(board).use_0x20.load());
}

TEST_F(UpstreamTest, LostQueryIsRetransmittedAfterTheRtoNotAfterASecond) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")}));
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  // Warm the estimator: a sub-millisecond server ends at the 50 ms minimum RTO.
  for (int i = 0; i < 10; ++i) {
    Outcome o;
    (void)up->send(make_query("warm" + std::to_string(i) + ".example", 1), record(o));
    run_until([&] { return o.done; });
  }
  // (50 ms on an idle machine; a loaded one measures longer round trips.)
  EXPECT_LT(stats_of(board).rto_us.load(), 1'000'000) << stats_of(board).srtt_us.load();
  const uint64_t timeouts_before = stats_of(board).timeouts.load();
  // A name whose first query is lost and second is not (the fake's loss is deterministic).
  constexpr uint64_t kSeed = 7;
  std::string name;
  for (int i = 0; name.empty(); ++i) {
    const std::string n = "lost" + std::to_string(i) + ".example";
    if (FakeUpstream::loses(0.5, kSeed, n, 0) && !FakeUpstream::loses(0.5, kSeed, n, 1)) name = n;
  }
  fake.set_loss(0.5, kSeed);
  Outcome o;
  (void)up->send(make_query(name, 1), record(o));
  const auto took = run_until([&] { return o.done; });
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_GE(fake.queries(name), 2u);
  EXPECT_LT(took, 1000ms);  // the old fixed timer waited 1.2 s; the RTO here is ~50 ms
  EXPECT_GE(stats_of(board).timeouts.load(), timeouts_before + 1);
}

TEST_F(UpstreamTest, DeadFirstServerIsLeftForTheLiveOne) {
  FakeUpstream live;
  live.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.10")}));
  fake.set_default(FakeReply::dropped());
  UpstreamBoard board;
  auto up = make(UpstreamOptions{
      .servers = {*parse_endpoint(fake.address(), 53), *parse_endpoint(live.address(), 53)},
      .board = &board});
  for (int i = 0; i < 10; ++i) {
    Outcome o;
    (void)up->send(make_query("d" + std::to_string(i) + ".example", 1), record(o));
    run_until([&] { return o.done; });
    ASSERT_EQ(o.status, UpstreamStatus::Ok) << i;
  }
  // Only the first query waited for the dead server (its initial 1 s RTO).
  EXPECT_EQ(fake.total_queries(), 1u);
  EXPECT_EQ(live.total_queries(), 10u);
}

TEST_F(UpstreamTest, EveryQueryAndEveryRetransmissionLeavesFromItsOwnPort) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.11")}));
  fake.on("hangs.example", FakeReply::dropped());
  auto up = make(UpstreamOptions{.lifetime = 1500ms});
  Outcome hanging;
  (void)up->send(make_query("hangs.example", 1), record(hanging));
  // While it hangs (and is retransmitted), 20 names at once and 20 one after another.
  std::vector<Outcome> at_once(20);
  for (int i = 0; i < 20; ++i)
    (void)up->send(make_query("c" + std::to_string(i) + ".example", 1), record(at_once[i]));
  run_until(
      [&] { return std::all_of(at_once.begin(), at_once.end(), [](auto& o) { return o.done; }); });
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(resolve(*up, make_query("s" + std::to_string(i) + ".example", 1)).status,
              UpstreamStatus::Ok);
  run_until([&] { return hanging.done; });
  std::set<uint16_t> ports;
  std::size_t udp = 0;
  for (const auto& q : fake.received()) {
    if (q.transport != Transport::Udp) continue;
    ++udp;
    ports.insert(q.source_port);
  }
  EXPECT_GE(fake.queries("hangs.example"), 2u);  // retransmitted: each copy its own port too
  EXPECT_GE(udp, 42u);
  // Kernel-chosen random ports over ~28,000: a repeat among ~43 is rare, two are rarer.
  EXPECT_GE(ports.size() + 2, udp);
}

// Descriptors this process has open.
std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

// The other side of a socket per attempt: the cost. A socket whose attempt is over is
// disconnected (which gives its port up) and kept for the next attempt, so a stream of
// answered queries costs no socket(), close() or epoll registration each, and still gets a
// new random port per query.
TEST_F(UpstreamTest, AnsweredQueriesReuseOneSocketEachWithANewPort) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.16")}));
  auto up = make(UpstreamOptions{.lifetime = 1000ms});
  ASSERT_EQ(resolve(*up, make_query("warm.example", 1)).status, UpstreamStatus::Ok);
  const std::size_t fds_before = open_fds();
  EXPECT_EQ(up->sockets_opened(), 1u);
  constexpr int kNames = 100;
  for (int i = 0; i < kNames; ++i)
    ASSERT_EQ(resolve(*up, make_query("r" + std::to_string(i) + ".example", 1)).status,
              UpstreamStatus::Ok);
  EXPECT_EQ(up->sockets_opened(), 1u);  // the one socket, reused
  EXPECT_EQ(open_fds(), fds_before);
  std::set<uint16_t> ports;
  for (const auto& q : fake.received())
    ports.insert(q.source_port);
  ASSERT_EQ(fake.received().size(), static_cast<std::size_t>(kNames + 1));
  // Kernel-chosen random ports over ~28,000: a repeat among 101 is rare, three are rarer.
  EXPECT_GE(ports.size() + 2, fake.received().size());
}

// Kept sockets are bounded: after a burst of 300 queries in flight at once (300 sockets),
// at most 256 stay open idle; the rest are closed, not hoarded.
TEST_F(UpstreamTest, ABurstLeavesAtMost256IdleSocketsOpen) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.18")}));
  auto up = make(UpstreamOptions{.lifetime = 3000ms});
  // One query first: one kept socket stays idle.
  ASSERT_EQ(resolve(*up, make_query("warm.example", 1)).status, UpstreamStatus::Ok);
  const std::size_t fds_before = open_fds();
  constexpr int kBurst = 300;
  std::vector<Outcome> burst(kBurst);
  for (int i = 0; i < kBurst; ++i)
    (void)up->send(make_query("b" + std::to_string(i) + ".example", 1), record(burst[i]));
  run_until(
      [&] { return std::all_of(burst.begin(), burst.end(), [](auto& o) { return o.done; }); });
  for (const Outcome& o : burst)
    ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(up->sockets_opened(), static_cast<uint64_t>(kBurst));  // one each while in flight
  // On a loaded machine a query may have been retransmitted (on an idle socket) before its
  // answer came: the other copy keeps its port until answered or expired. Once every attempt
  // has ended, 256 sockets stay, idle.
  run_until([&] { return up->sockets_in_use() == 0; });
  ASSERT_EQ(up->sockets_in_use(), 0u);
  EXPECT_EQ(open_fds(), fds_before - 1 + 256);
}

TEST_F(UpstreamTest, APortGivenUpAfterItsAnswerRefusesLaterDatagrams) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.17")}));
  auto up = make(UpstreamOptions{.lifetime = 1000ms});
  ASSERT_EQ(resolve(*up, make_query("given-up.example", 1)).status, UpstreamStatus::Ok);
  ASSERT_EQ(fake.received().size(), 1u);
  const uint16_t port = fake.received()[0].source_port;
  // A late (or forged) datagram to that port now meets no socket: the kernel refuses it
  // with ICMP port unreachable, which a connected sender reads as ECONNREFUSED.
  const int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(probe, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(probe, reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
  const uint8_t junk[12] = {};
  ASSERT_EQ(send(probe, junk, sizeof junk, 0), static_cast<ssize_t>(sizeof junk));
  pollfd pfd{probe, POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);  // bounded; the ICMP error comes back at once
  uint8_t buf[16];
  EXPECT_LT(recv(probe, buf, sizeof buf, MSG_DONTWAIT), 0);
  EXPECT_EQ(errno, ECONNREFUSED);
  close(probe);
}

// The attempt's socket is not connected (a sendto per attempt binds its port), so the
// source check is ours: a reply with the right ID and question, at the right port, but from
// another address or another port than the server's, is not an answer.
// The port a query waits on looks closed to everyone but the server: a reply from another
// port of the server's address, or from the server's port at another address, is refused by
// the kernel with ICMP port unreachable, exactly as a port nobody holds (the attempt's socket
// is connected to the server), so an unspoofed prober cannot find the open port (the first
// half of SAD DNS). Nothing reaches hourglass's own source check, and no forgery is taken.
TEST_F(UpstreamTest, TheOpenPortOfAWaitingQueryRefusesStrangersLikeAClosedPort) {
  fake.on("forged.example", FakeReply::dropped());
  UpstreamBoard board;
  // The attempt outlives both probes (at most 1 s each, sent at once).
  auto up = make(UpstreamOptions{.lifetime = 2500ms, .board = &board});
  Outcome forged;
  (void)up->send(make_query("forged.example", 1), record(forged));
  run_until([&] { return fake.queries("forged.example") == 1; });
  ASSERT_EQ(fake.queries("forged.example"), 1u);
  const auto sent = fake.received()[0];
  std::string reply(sent.bytes.begin(), sent.bytes.end());  // its ID, its letter case
  reply[2] = static_cast<char>(reply[2] | 0x80);            // QR: a response, no records
  // A port that nobody holds: free_port() bound it and let it go.
  ASSERT_EQ(test::udp_probe("127.0.0.1", 0, test::free_port(), reply), ECONNREFUSED);
  // Run the loop meanwhile, as the daemon would: the probes must meet the attempt's socket.
  std::atomic<int> from_other_port{-1};
  std::atomic<int> from_other_address{-1};
  std::thread port_prober(
      [&] { from_other_port = test::udp_probe("127.0.0.1", 0, sent.source_port, reply); });
  std::thread address_prober([&] {
    from_other_address = test::udp_probe("127.0.0.2", fake.port(), sent.source_port, reply);
  });
  run_until([&] { return from_other_port.load() != -1 && from_other_address.load() != -1; });
  port_prober.join();
  address_prober.join();
  EXPECT_EQ(from_other_port.load(), ECONNREFUSED);
  EXPECT_EQ(from_other_address.load(), ECONNREFUSED);
  run_until([&] { return forged.done; });
  EXPECT_EQ(forged.status, UpstreamStatus::Timeout);  // neither forgery was taken
  EXPECT_EQ(stats_of(board).dropped_wrong_source.load(), 0u);
}

TEST_F(UpstreamTest, AnAnswerThatComesToAnotherQuerysPortIsDroppedAndCounted) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.12")}));
  fake.on("open.example", FakeReply::dropped());
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.lifetime = 400ms, .board = &board});
  Outcome open;
  (void)up->send(make_query("open.example", 1), record(open));
  run_until([&] { return fake.queries("open.example") == 1; });
  ASSERT_EQ(fake.queries("open.example"), 1u);
  FakeReply misdirected = FakeReply::records({FakeRecord::a("", 300, "203.0.113.12")});
  misdirected.to_port = fake.received()[0].source_port;
  fake.on("victim.example", misdirected);
  const Outcome victim = resolve(*up, make_query("victim.example", 1));
  EXPECT_EQ(victim.status, UpstreamStatus::Timeout);  // the answer went to open's port
  EXPECT_GE(stats_of(board).dropped_wrong_port.load(), 1u);
  run_until([&] { return open.done; });
  EXPECT_EQ(open.status, UpstreamStatus::Timeout);  // and did not answer open either
}

TEST_F(UpstreamTest, RepliesWithAnotherIdOrQuestionOnTheAttemptsPortAreDroppedAndCounted) {
  FakeReply other_id = FakeReply::records({FakeRecord::a("", 300, "203.0.113.13")});
  other_id.id_xor = 0x5a5a;
  FakeReply other_question = FakeReply::records({FakeRecord::a("", 300, "203.0.113.14")});
  other_question.wrong_question = true;
  fake.on("id.example", other_id);
  fake.on("question.example", other_question);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.lifetime = 300ms, .board = &board});
  EXPECT_EQ(resolve(*up, make_query("id.example", 1)).status, UpstreamStatus::Timeout);
  EXPECT_EQ(resolve(*up, make_query("question.example", 1)).status, UpstreamStatus::Timeout);
  EXPECT_GE(stats_of(board).dropped_wrong_id.load(), 1u);
  EXPECT_GE(stats_of(board).dropped_wrong_question.load(), 1u);
  EXPECT_EQ(stats_of(board).answers.load(), 0u);
}

TEST_F(UpstreamTest, AtTheSocketBudgetTheOldestAttemptGivesItsSocketUp) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.15")}));
  for (int i = 0; i < 6; ++i)
    fake.on("hang" + std::to_string(i) + ".example", FakeReply::dropped());
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.lifetime = 2000ms, .board = &board, .max_sockets = 4});
  // Six names that hang hold six sockets' worth of attempts: past four, the oldest give up.
  std::vector<Outcome> hanging(6);
  for (int i = 0; i < 6; ++i)
    (void)up->send(make_query("hang" + std::to_string(i) + ".example", 1), record(hanging[i]));
  run_until([&] { return fake.total_queries() >= 6; });
  EXPECT_EQ(stats_of(board).sockets_reclaimed.load(), 2u);
  // A name the server answers still gets its own socket (a hanging one gives it up) and
  // its answer.
  const Outcome o = resolve(*up, make_query("fine.example", 1));
  EXPECT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(stats_of(board).sockets_reclaimed.load(), 3u);
  EXPECT_EQ(stats_of(board).socket_errors.load(), 0u);
  up->cancel_all();
}

TEST_F(UpstreamTest, ALateAnswerToTheFirstCopyIsASpuriousRetransmissionAndLengthensThePatience) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.13")}));
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(resolve(*up, make_query("w" + std::to_string(i) + ".example", 1)).status,
              UpstreamStatus::Ok);
  FakeReply slow = FakeReply::records({FakeRecord::a("", 300, "192.0.2.13")});
  slow.delay = 400ms;
  fake.on("slow1.example", slow);
  fake.on("slow2.example", slow);
  // First slow name: retransmitted after the 250 ms patience, answered (first copy) at 400.
  ASSERT_EQ(resolve(*up, make_query("slow1.example", 1)).status, UpstreamStatus::Ok);
  EXPECT_EQ(fake.queries("slow1.example"), 2u);
  EXPECT_EQ(stats_of(board).spurious_retransmissions.load(), 1u);
  EXPECT_EQ(stats_of(board).loss_ppm.load(), 0);
  EXPECT_GE(stats_of(board).patience_us.load(), 600'000);
  // The next slow name is waited for: one copy.
  ASSERT_EQ(resolve(*up, make_query("slow2.example", 1)).status, UpstreamStatus::Ok);
  EXPECT_EQ(fake.queries("slow2.example"), 1u);
  EXPECT_EQ(stats_of(board).needed_retransmissions.load(), 0u);
}

TEST_F(UpstreamTest, ACopyAnsweredWhileTheFirstIsNotCountsAsLossAndANeededRetransmission) {
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.14")}));
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.lifetime = 600ms, .board = &board});
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(resolve(*up, make_query("w" + std::to_string(i) + ".example", 1)).status,
              UpstreamStatus::Ok);
  constexpr uint64_t kSeed = 11;
  std::string name;
  for (int i = 0; name.empty(); ++i) {
    const std::string n = "lost" + std::to_string(i) + ".example";
    if (FakeUpstream::loses(0.5, kSeed, n, 0) && !FakeUpstream::loses(0.5, kSeed, n, 1)) name = n;
  }
  fake.set_loss(0.5, kSeed);
  Outcome o;
  (void)up->send(make_query(name, 1), record(o));
  run_until([&] { return o.done; });
  ASSERT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_GT(stats_of(board).loss_ppm.load(), 0);  // at once, when the second copy answered
  // The retransmission is counted needed once the first copy's life has ended unanswered.
  run_until([&] { return stats_of(board).needed_retransmissions.load() == 1; });
  EXPECT_EQ(stats_of(board).needed_retransmissions.load(), 1u);
  EXPECT_EQ(stats_of(board).spurious_retransmissions.load(), 0u);
}

TEST(UpstreamCreate, RejectsLinkLocalServerWithScope) {
  EventLoop loop;
  auto ep = parse_endpoint("[fe80::1%1]:53", 53);
  ASSERT_TRUE(ep.has_value());
  auto up = Upstream::create(loop, UpstreamOptions{.servers = {*ep}});
  ASSERT_FALSE(up.has_value());
  EXPECT_NE(up.error().find("fe80::1"), std::string::npos);
}

TEST(UpstreamCreate, AcceptsIpv6Servers) {
  EventLoop loop;
  auto up = Upstream::create(loop, UpstreamOptions{.servers = {*parse_endpoint("[::1]:5353", 53),
                                                               *parse_endpoint("192.0.2.1", 53)}});
  ASSERT_TRUE(up.has_value());
}

TEST(UpstreamStatusName, EveryStatusHasADistinctName) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(UpstreamStatus::Internal); ++i) {
    names.insert(to_string(static_cast<UpstreamStatus>(i)));
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(UpstreamStatus::Internal) + 1);
  EXPECT_EQ(names.count("unknown"), 0u);
}

// A reply must carry exactly one question, the one asked: the same question twice (QDCOUNT
// 2) is not an answer, and is counted with the wrong questions.
TEST_F(UpstreamTest, AReplyWithTwoQuestionsIsDroppedAndCounted) {
  FakeReply r = FakeReply::records({FakeRecord::a("", 300, "192.0.2.44")});
  r.question_twice = true;
  fake.on("twice.example", r);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.lifetime = 400ms, .board = &board});
  const Outcome o = resolve(*up, make_query("twice.example", 1));
  EXPECT_EQ(o.status, UpstreamStatus::Timeout);
  EXPECT_GE(stats_of(board).dropped_wrong_question.load(), 1u);
}

// The c-ares found at run time: 1.18 to 1.34 run silently; older stops the start with one
// line that says what to install; newer is one warning line. Both CI legs (Debian 12's 1.18,
// Debian 13's 1.34) are in the range.
TEST(CaresVersion, OlderThan118StopsNewerThan134WarnsBetweenIsSilent) {
  for (const int v : {0x011200, 0x011201, 0x011b00, 0x012200, 0x012209}) {
    EXPECT_FALSE(cares::version_problem(v)) << std::hex << v;
  }
  const auto old = cares::version_problem(0x011101);
  ASSERT_TRUE(old);
  EXPECT_TRUE(old->fatal);
  EXPECT_EQ(old->message,
            "c-ares 1.17.1 is older than hourglass supports (1.18 to 1.34); install libc-ares2 "
            "1.18 or newer");
  const auto newer = cares::version_problem(0x012300);
  ASSERT_TRUE(newer);
  EXPECT_FALSE(newer->fatal);
  EXPECT_EQ(newer->message.rfind("warning: c-ares 1.35.0 is newer than", 0), 0u) << newer->message;
  EXPECT_FALSE(cares::library_problem()) << cares::library_version();
}

// AD from a server reached over plain UDP (or TCP) is anyone's claim: a box on the path, or a
// forgery that won, can set it. It is cleared before the caller (the cache, the clients) sees
// the answer, and counted.
TEST_F(UpstreamTest, TheAdBitOfAPlainUpstreamIsClearedAndCounted) {
  FakeReply r = FakeReply::records({FakeRecord::a("", 300, "192.0.2.45")});
  r.ad = true;
  fake.on("signed.example", r);
  FakeReply big = r;
  big.truncate_udp = true;  // and over TCP after a truncated answer
  fake.on("big.signed.example", big);
  UpstreamBoard board;
  auto up = make(UpstreamOptions{.board = &board});
  for (const char* name : {"signed.example", "big.signed.example"}) {
    const Outcome o = resolve(*up, make_query(name, 1));
    ASSERT_EQ(o.status, UpstreamStatus::Ok) << name;
    ASSERT_GE(o.answer.size(), 12u);
    EXPECT_EQ(o.answer[3] & 0x20, 0) << name << ": AD passed on";
    EXPECT_EQ(u16(o.answer, 6), 1) << name;  // the answer itself is kept
  }
  EXPECT_EQ(stats_of(board).ad_cleared.load(), 2u);
}

}  // namespace
}  // namespace hg::resolver
