// QueryEngine: the life of a query with a scripted upstream and a test clock — no sockets, no
// sleeping. The daemon-level tests in tests/integration cover the same paths over the network.
#include <gtest/gtest.h>

#include <deque>
#include <string>

#include "base/bytes.h"
#include "resolver/query/query_engine.h"
#include "tests/resolver/engine_harness.h"
#include "tests/wire/answer_cases.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using wire::test::Bytes;
using wire::test::PacketBuilder;

constexpr uint16_t kRd = 0x0100;

Bytes a_rdata(uint8_t last) {
  return {192, 0, 2, last};
}

Bytes soa_rdata(uint32_t minimum) {
  Bytes b =
      wire::test::cat({wire::test::wire_name("ns.example"), wire::test::wire_name("host.example")});
  for (uint32_t v : {1u, 3600u, 600u, 86400u, minimum})
    for (int s = 24; s >= 0; s -= 8)
      b.push_back(static_cast<uint8_t>(v >> s));
  return b;
}

struct Answer {
  Bytes bytes;
  wire::Message msg;
  std::optional<uint16_t> ede;
};

Answer parse_answer(std::span<const uint8_t> bytes) {
  Answer a;
  a.bytes.assign(bytes.begin(), bytes.end());
  EXPECT_TRUE(a.msg.parse(a.bytes, wire::ParseMode::Strict).has_value());
  if (a.msg.edns()) {
    a.msg.edns()->for_each_option([&](const wire::EdnsOption& o) {
      if (o.code == wire::edns_option::ExtendedError)
        a.ede = wire::parse_extended_error(o.data)->info_code;
    });
  }
  return a;
}

class QueryEngineTest : public EngineHarness {
 protected:
  explicit QueryEngineTest(const Config& c = make_config()) : EngineHarness(c) {
    sink_ = [this](std::span<const uint8_t> b) { deferred_.push_back(parse_answer(b)); };
  }

  static Config make_config() {
    Config c;
    c.client_timeout = Millis{1800};
    c.upstream_timeout = Millis{3000};
    return c;
  }

  /// Advances the test clock and runs whatever timers became due.
  void advance(Millis d) {
    now_ += d;
    tick();
  }

  /// Sends a query; returns the immediate answer, if any.
  std::optional<Answer> ask(const Bytes& query, bool tcp = false) {
    Bytes out(tcp ? 65535 : 1232);
    Route r = route_;
    r.is_tcp = tcp;
    auto res = engine_.on_query(query, nullptr, r, out);
    if (res.size == 0) return std::nullopt;
    return parse_answer(std::span<const uint8_t>(out.data(), res.size));
  }

  static Bytes query(std::string_view name, uint16_t type = 1, uint16_t id = 1, bool edns = true,
                     uint32_t opt_ttl = 0) {
    PacketBuilder b;
    b.id(id).flags(kRd).question(name, type);
    if (edns) b.opt(1232, opt_ttl);
    return b.build();
  }

  /// Answers the oldest upstream query with `reply`, given the question it asked.
  void upstream_answers(const std::function<Bytes(const Bytes& q)>& reply) {
    ASSERT_FALSE(sent_.empty());
    Sent s = take_sent();
    Bytes r = reply(s.query);
    s.done(UpstreamStatus::Ok, r);
  }
  void upstream_fails(UpstreamStatus st) {
    ASSERT_FALSE(sent_.empty());
    take_sent().done(st, {});
  }

  /// A response to our upstream query `q` (same ID and question) with A records.
  static Bytes a_answer(const Bytes& q, std::string_view name, uint32_t ttl, int count = 1,
                        uint16_t flags = 0x8180) {
    PacketBuilder b;
    b.id(base::load_u16(&q[0])).flags(flags).question(name, 1);
    for (int i = 0; i < count; ++i)
      b.rr(0, name, 1, ttl, a_rdata(static_cast<uint8_t>(i + 1)));
    return b.build();
  }

  std::vector<Answer> deferred_;
};

TEST_F(QueryEngineTest, IdenticalQueriesShareOneUpstreamQueryAndEachGetsItsOwnIdAndCase) {
  EXPECT_FALSE(ask(query("www.example.com", 1, 11)));
  EXPECT_FALSE(ask(query("WWW.example.com", 1, 22)));
  EXPECT_FALSE(ask(query("www.EXAMPLE.com", 1, 33, /*edns=*/false)));
  ASSERT_EQ(sent_.size(), 1u);
  upstream_answers([](const Bytes& q) { return a_answer(q, "www.example.com", 300); });
  ASSERT_EQ(deferred_.size(), 3u);
  EXPECT_EQ(deferred_[0].msg.header().id, 11);
  EXPECT_EQ(deferred_[1].msg.header().id, 22);
  EXPECT_EQ(deferred_[1].msg.questions()[0].name.to_text(), "WWW.example.com.");
  EXPECT_EQ(deferred_[2].msg.questions()[0].name.to_text(), "www.EXAMPLE.com.");
  EXPECT_TRUE(deferred_[0].msg.edns().has_value());
  EXPECT_FALSE(deferred_[2].msg.edns().has_value());  // OPT iff the client sent one
  for (const auto& a : deferred_) {
    EXPECT_EQ(a.msg.rcode(), wire::RCode::NoError);
    EXPECT_EQ(a.msg.header().ancount, 1);
    EXPECT_TRUE(a.msg.header().ra());
    EXPECT_FALSE(a.msg.header().aa());
  }
  EXPECT_EQ(shared_.stats.coalesced.load(), 2u);
}

TEST_F(QueryEngineTest, UpstreamQueryIsLowercaseWithRdAndOneBareOpt) {
  ASSERT_FALSE(ask(query("WwW.Example.com", 28, 5, true, 0x8000)));
  ASSERT_EQ(sent_.size(), 1u);
  wire::Message m;
  ASSERT_TRUE(m.parse(sent_[0].query, wire::ParseMode::Strict).has_value());
  EXPECT_TRUE(m.header().rd());
  EXPECT_TRUE(m.header().ad());  // RFC 6840 §5.7: ask for AD even without DO
  EXPECT_EQ(m.questions()[0].name.to_text(), "www.example.com.");
  EXPECT_EQ(m.questions()[0].type, wire::RRType::AAAA);
  ASSERT_TRUE(m.edns().has_value());
  EXPECT_TRUE(m.edns()->dnssec_ok());
  EXPECT_TRUE(m.edns()->options_wire.empty());
  // The OPT record is the last 11 bytes (c-ares strips exactly those on a FORMERR retry).
  EXPECT_EQ(m.edns()->record_offset, sent_[0].query.size() - 11);
}

TEST_F(QueryEngineTest, HitCountsTtlDownWithTheClock) {
  ask(query("www.example.com"));
  upstream_answers([](const Bytes& q) { return a_answer(q, "www.example.com", 300); });
  advance(Millis{2500});
  auto hit = ask(query("www.example.com"));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->msg.records()[0].ttl, 298u);
  EXPECT_TRUE(sent_.empty());
}

TEST_F(QueryEngineTest, MuteUpstreamGetsServfailWithEde22AtTheDeadline) {
  ASSERT_FALSE(ask(query("slow.example")));
  advance(Millis{2999});
  EXPECT_TRUE(deferred_.empty());
  advance(Millis{1});
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_EQ(deferred_[0].msg.rcode(), wire::RCode::ServFail);
  EXPECT_EQ(deferred_[0].ede, wire::ede::NoReachableAuthority);
  // The late answer is still cached.
  upstream_answers([](const Bytes& q) { return a_answer(q, "slow.example", 60); });
  auto hit = ask(query("slow.example"));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->msg.rcode(), wire::RCode::NoError);
}

TEST_F(QueryEngineTest, HitsNearExpiryTriggerOneBackgroundRefresh) {
  ask(query("hot.example"));
  upstream_answers([](const Bytes& q) { return a_answer(q, "hot.example", 100); });
  advance(Millis{90'000});  // the prefetch window is the last 10 % of the TTL
  // Hits through the window: each draws a chance that grows to 1 at expiry; the entry grants
  // at most one refresh. 100 draws from 90 s to 99.9 s miss it with probability < 1e-30.
  for (int i = 0; i < 100; ++i) {
    auto hit = ask(query("hot.example", 1, static_cast<uint16_t>(i)));
    ASSERT_TRUE(hit);  // every client is answered from the cache at once
    EXPECT_FALSE(hit->ede.has_value());
    advance(Millis{99});
  }
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(shared_.stats.prefetches.load(), 1u);
  const std::size_t answered = deferred_.size();  // the first miss's answer
  upstream_answers([](const Bytes& q) { return a_answer(q, "hot.example", 100); });
  EXPECT_EQ(deferred_.size(), answered);  // nobody waited for the refresh
  advance(Millis{5'000});                 // past the old expiry: the refreshed entry is fresh
  auto after = ask(query("hot.example"));
  ASSERT_TRUE(after);
  EXPECT_GT(after->msg.records()[0].ttl, 90u);
  EXPECT_TRUE(sent_.empty());
}

TEST_F(QueryEngineTest, TheDeadlineRecordsTheFailureSoLaterClientsDoNotWaitAgain) {
  ask(query("mute.example"));
  advance(Millis{3000});
  ASSERT_EQ(deferred_.size(), 1u);
  // c-ares is still retrying; a new client gets SERVFAIL now instead of waiting 3 s more.
  auto again = ask(query("mute.example"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->msg.rcode(), wire::RCode::ServFail);
  EXPECT_EQ(again->ede, 13);
  // When c-ares gives up too, that is the same failure, not a second one: the holdoff is
  // still the first 5 s (counted from the deadline), not 10 s.
  advance(Millis{600});
  upstream_fails(UpstreamStatus::Timeout);
  advance(Millis{4400});
  EXPECT_FALSE(ask(query("mute.example")));
  EXPECT_EQ(sent_.size(), 1u);
}

TEST_F(QueryEngineTest, AnsweredWaitersLeaveNoDeadlineTimerBehind) {
  for (uint16_t i = 0; i < 3; ++i)
    ask(query("quick.example", 1, i));
  EXPECT_EQ(loop_.pending_timers(), 3u);
  upstream_answers([](const Bytes& q) { return a_answer(q, "quick.example", 60); });
  EXPECT_EQ(deferred_.size(), 3u);
  EXPECT_EQ(loop_.pending_timers(), 0u);
}

TEST_F(QueryEngineTest, FailureIsCachedSoABurstIsOneUpstreamQuery) {
  ask(query("bad.example"));
  upstream_fails(UpstreamStatus::ServFail);
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_EQ(deferred_[0].msg.rcode(), wire::RCode::ServFail);
  EXPECT_EQ(deferred_[0].ede, wire::ede::NoReachableAuthority);
  for (int i = 0; i < 4; ++i) {
    auto a = ask(query("bad.example"));
    ASSERT_TRUE(a);  // answered at once from the failure cache
    EXPECT_EQ(a->msg.rcode(), wire::RCode::ServFail);
    EXPECT_EQ(a->ede, 13);  // Cached Error
  }
  EXPECT_TRUE(sent_.empty());
  advance(Millis{5000});  // the first holdoff is 5 s
  EXPECT_FALSE(ask(query("bad.example")));
  EXPECT_EQ(sent_.size(), 1u);
}

// Every way the refresh can fail gives the stale answer (RFC 8767 4): silence, SERVFAIL,
// REFUSED, NOTIMP, ICMP unreachable or a reset, an unusable answer.
TEST_F(QueryEngineTest, StaleAnswerWithEde3WhenUpstreamFails) {
  const UpstreamStatus failures[] = {UpstreamStatus::Timeout,      UpstreamStatus::ServFail,
                                     UpstreamStatus::Refused,      UpstreamStatus::NotImp,
                                     UpstreamStatus::NetworkError, UpstreamStatus::BadResponse};
  uint16_t id = 7;
  for (const UpstreamStatus failure : failures) {
    SCOPED_TRACE(static_cast<int>(failure));
    const std::string name = fmt::format("s{}.example.com", id);
    sent_.clear();
    deferred_.clear();
    ask(query(name));
    upstream_answers([&](const Bytes& q) { return a_answer(q, name, 60); });
    advance(Millis{61'000});
    EXPECT_FALSE(ask(query(name, 1, id)));  // stale: refresh first
    ASSERT_EQ(sent_.size(), 1u);
    upstream_fails(failure);
    ASSERT_EQ(deferred_.size(), 2u);
    const auto& a = deferred_[1];
    EXPECT_EQ(a.msg.header().id, id);
    EXPECT_EQ(a.msg.rcode(), wire::RCode::NoError);
    EXPECT_EQ(a.ede, wire::ede::StaleAnswer);
    EXPECT_EQ(a.msg.records()[0].ttl, 30u);  // stale-ttl, not above the original 60
    ++id;
  }
}

TEST_F(QueryEngineTest, StaleAnswerAtTheClientTimeoutAndTheLateAnswerIsCached) {
  ask(query("www.example.com"));
  upstream_answers([](const Bytes& q) { return a_answer(q, "www.example.com", 10); });
  advance(Millis{11'000});
  EXPECT_FALSE(ask(query("www.example.com")));
  advance(Millis{1799});
  EXPECT_EQ(deferred_.size(), 1u);
  advance(Millis{1});
  ASSERT_EQ(deferred_.size(), 2u);
  EXPECT_EQ(deferred_[1].ede, wire::ede::StaleAnswer);
  ASSERT_FALSE(deferred_[1].msg.records().empty());
  EXPECT_EQ(deferred_[1].msg.records()[0].ttl, 10u);  // min(30, original 10)
  // While the refresh is still running, another client gets stale at once.
  auto again = ask(query("www.example.com"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->ede, wire::ede::StaleAnswer);
  EXPECT_EQ(sent_.size(), 1u);
  upstream_answers([](const Bytes& q) { return a_answer(q, "www.example.com", 120); });
  auto fresh = ask(query("www.example.com"));
  ASSERT_TRUE(fresh);
  EXPECT_FALSE(fresh->ede.has_value());
  EXPECT_EQ(fresh->msg.records()[0].ttl, 120u);
}

TEST_F(QueryEngineTest, StaleNxdomainCarriesEde19) {
  ask(query("gone.example"));
  upstream_answers([](const Bytes& q) {
    return PacketBuilder()
        .id(base::load_u16(&q[0]))
        .flags(0x8183)
        .question("gone.example", 1)
        .rr(1, "example", 6, 60, soa_rdata(30))
        .build();
  });
  ASSERT_EQ(deferred_[0].msg.rcode(), wire::RCode::NXDomain);
  advance(Millis{31'000});  // negative TTL = min(60, 30)
  ask(query("gone.example"));
  upstream_fails(UpstreamStatus::Refused);
  ASSERT_EQ(deferred_.size(), 2u);
  EXPECT_EQ(deferred_[1].msg.rcode(), wire::RCode::NXDomain);
  EXPECT_EQ(deferred_[1].ede, wire::ede::StaleNxdomainAnswer);
}

TEST_F(QueryEngineTest, ZeroTtlAnswerIsPassedThroughAndNotCached) {
  ask(query("zero.example"));
  upstream_answers([](const Bytes& q) { return a_answer(q, "zero.example", 0); });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_EQ(deferred_[0].msg.header().ancount, 1);
  EXPECT_EQ(deferred_[0].msg.records()[0].ttl, 0u);
  EXPECT_FALSE(ask(query("zero.example")));
  EXPECT_EQ(sent_.size(), 1u);  // asked again
}

// RFC 2308 §5: a negative answer is cached for min(SOA TTL, SOA MINIMUM), here MINIMUM = 2 s.
TEST_F(QueryEngineTest, NegativeAnswerExpiresAtTheSoaMinimumWhenLower) {
  ask(query("nodata.example"));
  upstream_answers([](const Bytes& q) {
    return PacketBuilder()
        .id(base::load_u16(&q[0]))
        .flags(0x8180)
        .question("nodata.example", 1)
        .rr(1, "example", 6, 300, soa_rdata(2))
        .build();
  });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_EQ(deferred_[0].msg.header().ancount, 0);
  advance(Millis{1000});  // half way: a hit, well before the prefetch window
  auto hit = ask(query("nodata.example"));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->msg.rcode(), wire::RCode::NoError);
  EXPECT_EQ(hit->msg.records()[0].ttl, 1u) << "counted down from MINIMUM, not from 300";
  EXPECT_TRUE(sent_.empty());
  advance(Millis{1000});  // 2 s: expired, asked upstream again
  ask(query("nodata.example"));
  EXPECT_EQ(sent_.size(), 1u);
}

// A lesson from other resolvers' bug trackers: a TTL-0 answer to the refresh of an expired
// entry evicts the cached copy; it must not come back as a stale answer when the next refresh
// fails.
TEST_F(QueryEngineTest, ZeroTtlAnswerEvictsTheStaleCopy) {
  ask(query("evict.example"));
  upstream_answers([](const Bytes& q) { return a_answer(q, "evict.example", 1); });
  advance(Millis{1000});
  EXPECT_FALSE(ask(query("evict.example")));  // expired: refreshed first
  upstream_answers([](const Bytes& q) { return a_answer(q, "evict.example", 0); });
  ASSERT_EQ(deferred_.size(), 2u);
  ASSERT_EQ(deferred_[1].msg.records().size(), 1u);
  EXPECT_EQ(deferred_[1].msg.records()[0].ttl, 0u);
  EXPECT_FALSE(ask(query("evict.example")));
  upstream_fails(UpstreamStatus::ServFail);
  ASSERT_EQ(deferred_.size(), 3u);
  EXPECT_EQ(deferred_[2].msg.rcode(), wire::RCode::ServFail);
  EXPECT_FALSE(deferred_[2].ede == wire::ede::StaleAnswer) << "the old copy came back as stale";
}

TEST_F(QueryEngineTest, PassedThroughAnswerDropsOptionalAuthorityWithoutTc) {
  // A TTL-0 answer (not cached, passed through) whose NS authority does not fit in 512 bytes:
  // the A record is what the client needs, so no TC (RFC 2181 §9).
  ask(query("ns.example", 1, 1, /*edns=*/false));
  upstream_answers([](const Bytes& q) {
    PacketBuilder b;
    b.id(base::load_u16(&q[0])).flags(0x8180).question("ns.example", 1);
    b.rr(0, "ns.example", 1, 0, a_rdata(1));
    for (int i = 0; i < 20; ++i)
      b.rr(1, "example", 2, 0,
           wire::test::wire_name("a-rather-long-name-server-" + std::to_string(i) + ".example"));
    return b.build();
  });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_FALSE(deferred_[0].msg.header().tc());
  EXPECT_EQ(deferred_[0].msg.header().ancount, 1);
  EXPECT_LT(deferred_[0].msg.header().nscount, 20);
  EXPECT_LE(deferred_[0].bytes.size(), 512u);
}

TEST_F(QueryEngineTest, AnswerForAnotherQuestionIsDiscarded) {
  ask(query("right.example"));
  upstream_answers([](const Bytes& q) { return a_answer(q, "wrong.example", 300); });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_EQ(deferred_[0].msg.rcode(), wire::RCode::ServFail);
  // Nothing was cached from it: the next query is answered from the failure cache.
  auto again = ask(query("right.example"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->msg.rcode(), wire::RCode::ServFail);
  EXPECT_EQ(again->msg.header().ancount, 0);
}

TEST_F(QueryEngineTest, AnswerWithPointerIntoTheHeaderIsDiscarded) {
  // Found by handler_fuzz: an owner name pointing at offset 0 decodes from the upstream's ID
  // and flags; rendered for a client (another ID) it became garbage. Such answers are now
  // malformed (wire::ParseError::PointerIntoHeader) and count as a failed resolution.
  ask(query("ptr.example"));
  upstream_answers([](const Bytes& q) {
    auto r = a_answer(q, "ptr.example", 300);
    const std::size_t owner = 12 + wire::test::wire_name("ptr.example").size() + 4;
    r[owner] = 0xC0;
    r[owner + 1] = 0x00;
    r.erase(r.begin() + static_cast<std::ptrdiff_t>(owner) + 2,
            r.begin() + static_cast<std::ptrdiff_t>(owner) + 2 + 11);  // drop the rest of the name
    return r;
  });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_EQ(deferred_[0].msg.rcode(), wire::RCode::ServFail);
  wire::Message m;
  auto bad = wire::test::PacketBuilder().flags(0x8180).question("ptr.example", 1).build();
  bad.insert(bad.end(), {0xC0, 0x05, 0, 1, 0, 1, 0, 0, 1, 0, 0, 4, 192, 0, 2, 1});
  bad[7] = 1;  // ANCOUNT
  auto st = m.parse(bad);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code, wire::ParseError::PointerIntoHeader);
  EXPECT_EQ(st.error().offset, 29u);  // header 12 + question 13 + 4
}

TEST_F(QueryEngineTest, UpstreamAnswersGetTheNormalizersVerdictAndBytes) {
  // The daemon puts an upstream answer into the cache through wire::AnswerNormalizer, as the
  // cache file and the replay do: one it takes is cached as exactly the normaliser's bytes;
  // one it refuses (malformed, too large) is a failed resolution and nothing is cached.
  int i = 0;
  for (const auto& c : wire::test::answer_cases()) {
    SCOPED_TRACE(c.name);
    const std::size_t cached_before = shared_.cache.snapshot().size();
    wire::Message m;
    const bool parses = m.parse(c.bytes, wire::ParseMode::Lenient).has_value();
    // A name of its own for each case: a failed one is held off (the failure cache).
    const std::string qname =
        parses ? m.questions().front().name.to_text() : "bad" + std::to_string(++i) + ".example";
    const uint16_t qtype = parses ? static_cast<uint16_t>(m.questions().front().type) : 1;
    ask(query(qname, qtype));
    Bytes sent_bytes;
    upstream_answers([&](const Bytes& q) {
      Bytes r = c.bytes;
      if (parses) {
        // Our query's ID and its 0x20 letter case: the answer is for this question.
        std::copy(q.begin(), q.begin() + 2, r.begin());
        std::copy(q.begin() + 12, q.begin() + m.questions().front().end, r.begin() + 12);
      }
      sent_bytes = r;
      return r;
    });
    ASSERT_EQ(deferred_.size(), 1u);
    const auto entries = shared_.cache.snapshot();
    if (c.status == wire::NormalizeStatus::Ok) {
      EXPECT_EQ(deferred_[0].msg.rcode(), wire::RCode::NoError);
      ASSERT_EQ(cached_before, 0u);  // the first case
      ASSERT_EQ(entries.size(), 1u);
      wire::AnswerNormalizer n;
      ASSERT_EQ(n.normalize(sent_bytes), wire::NormalizeStatus::Ok);
      EXPECT_TRUE(std::ranges::equal(entries[0]->sections(),
                                     n.bytes().subspan(n.message().questions().front().end)));
    } else {
      EXPECT_EQ(deferred_[0].msg.rcode(), wire::RCode::ServFail);
      EXPECT_EQ(entries.size(), cached_before);
    }
    deferred_.clear();
  }
}

/// A daemon with --trust-ad: Upstream passes AD on from the trusted server only (tested in
/// upstream_test.cc and dot_upstream_test.cc), and the cache keeps it.
class QueryEngineTrustAdTest : public QueryEngineTest {
 protected:
  QueryEngineTrustAdTest() : QueryEngineTest(trusting()) {}
  static Config trusting() {
    Config c = make_config();
    c.trust_ad.push_back(*parse_endpoint("127.0.0.1", 853));
    return c;
  }
};

TEST_F(QueryEngineTrustAdTest, AdBitOnlyForClientsThatSetDoOrAd) {
  ask(query("signed.example", 1, 1, true, 0x8000));  // DO
  upstream_answers([](const Bytes& q) { return a_answer(q, "signed.example", 300, 1, 0x81a0); });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_TRUE(deferred_[0].msg.header().ad());
  ask(query("signed.example", 1, 2, true, 0));  // neither DO nor AD: another key (DO differs)
  upstream_answers([](const Bytes& q) { return a_answer(q, "signed.example", 300, 1, 0x81a0); });
  ASSERT_EQ(deferred_.size(), 2u);
  EXPECT_FALSE(deferred_[1].msg.header().ad());
  auto with_ad = ask(PacketBuilder().flags(kRd | 0x0020).question("signed.example", 1).build());
  ASSERT_TRUE(with_ad);
  EXPECT_TRUE(with_ad->msg.header().ad());
}

TEST_F(QueryEngineTest, WithoutTrustAdACachedAnswerNeverSaysAd) {
  // Upstream clears an untrusted server's AD before the engine sees it; if an AD reached the
  // engine anyway (a path that forgot, a fleet peer, a cache file), the cache drops it.
  ask(query("signed.example", 1, 1, true, 0x8000));  // DO
  upstream_answers([](const Bytes& q) { return a_answer(q, "signed.example", 300, 1, 0x81a0); });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_FALSE(deferred_[0].msg.header().ad()) << "the miss's answer";
  auto hit = ask(query("signed.example", 1, 2, true, 0x8000));
  ASSERT_TRUE(hit);
  EXPECT_FALSE(hit->msg.header().ad()) << "a hit for a DO client";
}

TEST_F(QueryEngineTest, LargeAnswerIsTruncatedOverUdpAndWholeOverTcp) {
  ask(query("big.example", 1, 1, /*edns=*/false));
  upstream_answers([](const Bytes& q) { return a_answer(q, "big.example", 300, 40); });
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_TRUE(deferred_[0].msg.header().tc());
  EXPECT_LE(deferred_[0].bytes.size(), 512u);
  auto tcp = ask(query("big.example", 1, 2, false), /*tcp=*/true);
  ASSERT_TRUE(tcp);
  EXPECT_FALSE(tcp->msg.header().tc());
  EXPECT_EQ(tcp->msg.header().ancount, 40);
  EXPECT_EQ(sent_.size(), 0u);  // the TCP retry hit the same entry
}

TEST_F(QueryEngineTest, TooManyWaitersGetServfailAtOnce) {
  for (int i = 0; i < 256; ++i)
    EXPECT_FALSE(ask(query("hot.example", 1, static_cast<uint16_t>(i))));
  auto over = ask(query("hot.example"));
  ASSERT_TRUE(over);
  EXPECT_EQ(over->msg.rcode(), wire::RCode::ServFail);
  EXPECT_EQ(shared_.stats.overload.load(), 1u);
  EXPECT_EQ(sent_.size(), 1u);
}

TEST_F(QueryEngineTest, CancelledQueryAnswersServfailWithoutCachingTheFailure) {
  ask(query("bye.example"));
  upstream_fails(UpstreamStatus::Cancelled);
  ASSERT_EQ(deferred_.size(), 1u);
  EXPECT_EQ(deferred_[0].msg.rcode(), wire::RCode::ServFail);
  EXPECT_FALSE(ask(query("bye.example")));  // not held off: asked again
}

}  // namespace
}  // namespace hg::resolver
