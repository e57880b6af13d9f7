// DNS over TLS pieces (resolver/upstream/dot.h) without a TLS server: the tls:// and pin syntax,
// the configuration keys, the stream framing, the EDNS padding, the pending table (ID matching,
// deadlines, a lost connection), and a DotChannel's timers on an injected clock.
#include "resolver/upstream/dot.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#include "resolver/config.h"
#include "resolver/net/event_loop.h"
#include "resolver/upstream/upstream_board.h"
#include "tests/resolver/parse_args.h"
#include "tests/support/ports.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using Bytes = std::vector<uint8_t>;

// --- syntax ---------------------------------------------------------------------------------

TEST(DotSyntax, TlsUpstreamTakesPort853AndAnAuthName) {
  auto t = parse_tls_upstream("tls://192.0.2.1#dns.example");
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->endpoint.to_string(), "192.0.2.1:853");
  EXPECT_EQ(t->auth_name, "dns.example");
  EXPECT_EQ(to_string(t.value()), "tls://192.0.2.1:853#dns.example");
  t = parse_tls_upstream("tls://[2001:db8::1]:8853");
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->endpoint.to_string(), "[2001:db8::1]:8853");
  EXPECT_EQ(t->auth_name, "");
  t = parse_tls_upstream("tls://127.0.0.1:853#127.0.0.1");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->auth_name, "127.0.0.1");
}

TEST(DotSyntax, MalformedTlsUpstreamsAreRefusedWithTheAllowedForm) {
  for (const char* bad : {"tls://", "tls://dns.example", "tls://192.0.2.1:0", "tls://192.0.2.1#",
                          "tls://192.0.2.1#a b", "tls://192.0.2.1#name/x", "192.0.2.1",
                          "tls://192.0.2.1:99999", "tls://[2001:db8::1"}) {
    auto t = parse_tls_upstream(bad);
    EXPECT_FALSE(t) << bad;
    if (!t) {
      EXPECT_NE(t.error().find("tls://ADDR[:PORT][#AUTH-NAME]"), std::string::npos) << bad;
    }
  }
  EXPECT_FALSE(parse_tls_upstream("tls://192.0.2.1#" + std::string(254, 'a')));
}

TEST(DotSyntax, PinsAreSha256OfFortyFourBase64Characters) {
  auto p = parse_tls_pin("sha256/" + std::string(43, 'A') + "=");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p.value(), SpkiPin{});
  // 0xff... is "/////...8=" in base64.
  p = parse_tls_pin("sha256/" + std::string(42, '/') + "8=");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p.value()[0], 0xff);
  EXPECT_EQ(p.value()[31], 0xff);
  for (const std::string& bad :
       {std::string("sha256/"), "sha1/" + std::string(43, 'A') + "=",
        "sha256/" + std::string(44, 'A'), "sha256/" + std::string(42, 'A') + "==",
        "sha256/" + std::string(42, 'A') + "!=", "sha256/" + std::string(44, 'A') + "="})
    EXPECT_FALSE(parse_tls_pin(bad)) << bad;
}

// --- configuration --------------------------------------------------------------------------

TEST(DotConfig, TlsUpstreamsForwardZonesCaFileAndPinsAreParsedAndPrinted) {
  const std::string pin = "sha256/" + std::string(43, 'A') + "=";
  auto r = parse_args({"--upstream", "tls://192.0.2.1#dns.example", "--upstream", "192.0.2.2",
                       "--forward", "corp.example=tls://127.0.0.9:8853#ns.corp,127.0.0.10",
                       "--tls-ca-file", "/etc/ssl/corp.pem", "--tls-pin", pin});
  ASSERT_TRUE(std::holds_alternative<Config>(r)) << std::get<ConfigExit>(r).message;
  const Config& c = std::get<Config>(r);
  ASSERT_EQ(c.upstreams.size(), 2u);
  EXPECT_EQ(c.upstreams[0].to_string(), "192.0.2.1:853");
  ASSERT_EQ(c.tls_upstreams.size(), 1u);
  EXPECT_EQ(c.tls_upstreams[0].auth_name, "dns.example");
  ASSERT_EQ(c.forward_zones.size(), 1u);
  ASSERT_EQ(c.forward_zones[0].servers.size(), 2u);
  ASSERT_EQ(c.forward_zones[0].tls.size(), 1u);
  EXPECT_EQ(to_string(c.forward_zones[0].tls[0]), "tls://127.0.0.9:8853#ns.corp");
  EXPECT_EQ(c.tls_ca_file, "/etc/ssl/corp.pem");
  ASSERT_EQ(c.tls_pins.size(), 1u);
  const std::string toml = to_toml(c);
  EXPECT_NE(toml.find("\"tls://192.0.2.1:853#dns.example\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("tls://127.0.0.9:8853#ns.corp"), std::string::npos) << toml;
  EXPECT_NE(toml.find("tls-ca-file = \"/etc/ssl/corp.pem\""), std::string::npos) << toml;
  EXPECT_NE(toml.find(pin), std::string::npos) << toml;
  // And the file reads back to the same settings.
  char tmpl[] = "/tmp/hg-dot-toml-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, toml.data(), toml.size()), static_cast<ssize_t>(toml.size()));
  close(fd);
  auto back = parse_args({"--config", tmpl});
  unlink(tmpl);
  ASSERT_TRUE(std::holds_alternative<Config>(back)) << std::get<ConfigExit>(back).message;
  const Config& b = std::get<Config>(back);
  EXPECT_EQ(b.upstreams, c.upstreams);
  EXPECT_EQ(b.tls_upstreams, c.tls_upstreams);
  EXPECT_EQ(b.forward_zones, c.forward_zones);
  EXPECT_EQ(b.tls_ca_file, c.tls_ca_file);
  EXPECT_EQ(b.tls_pins, c.tls_pins);
  EXPECT_EQ(to_toml(b), toml);
}

// --trust-ad names the tls:// upstreams whose AD bit is passed on: only one whose certificate
// name is checked will do, of --upstream or of a --forward zone. A plain upstream, one
// authenticated by a pin alone, or an address that is no upstream is one line and exit 2.
TEST(DotConfig, TrustAdNamesOnlyATlsUpstreamWithACertificateName) {
  auto r = parse_args({"--upstream", "tls://192.0.2.1#dns.example", "--forward",
                       "corp.example=tls://127.0.0.9:8853#ns.corp", "--trust-ad", "192.0.2.1",
                       "--trust-ad", "127.0.0.9:8853"});
  ASSERT_TRUE(std::holds_alternative<Config>(r)) << std::get<ConfigExit>(r).message;
  const Config& c = std::get<Config>(r);
  ASSERT_EQ(c.trust_ad.size(), 2u);
  EXPECT_EQ(c.trust_ad[0].to_string(), "192.0.2.1:853");  // DoT's port by default
  const std::string toml = to_toml(c);
  EXPECT_NE(toml.find("trust-ad = [\"192.0.2.1:853\", \"127.0.0.9:8853\"]"), std::string::npos)
      << toml;
  const std::string pin = "sha256/" + std::string(43, 'A') + "=";
  struct Case {
    std::vector<std::string> args;
  } refused[] = {
      {{"--upstream", "192.0.2.2", "--trust-ad", "192.0.2.2:53"}},
      {{"--upstream", "tls://192.0.2.1", "--tls-pin", pin, "--trust-ad", "192.0.2.1"}},
      {{"--upstream", "tls://192.0.2.1#dns.example", "--trust-ad", "192.0.2.3"}},
  };
  for (const Case& k : refused) {
    auto bad = parse_args(k.args);
    ASSERT_TRUE(std::holds_alternative<ConfigExit>(bad)) << k.args.back();
    const ConfigExit& e = std::get<ConfigExit>(bad);
    EXPECT_EQ(e.exit_code, 2);
    EXPECT_NE(e.message.find("--trust-ad " + k.args.back()), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("not a tls:// upstream with a certificate name"), std::string::npos)
        << e.message;
    EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
  }
  auto junk = parse_args({"--upstream", "tls://192.0.2.1#dns.example", "--trust-ad", "dns"});
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(junk));
  EXPECT_NE(std::get<ConfigExit>(junk).message.find("trust-ad"), std::string::npos);
}

TEST(DotConfig, AServerWithNeitherAuthNameNorPinIsRefused) {
  auto r = parse_args({"--upstream", "tls://192.0.2.1"});
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(r));
  EXPECT_NE(std::get<ConfigExit>(r).message.find("no #AUTH-NAME"), std::string::npos);
  r = parse_args({"--upstream", "192.0.2.2", "--forward", "corp.example=tls://127.0.0.9"});
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(r));
  EXPECT_NE(std::get<ConfigExit>(r).message.find("--forward corp.example"), std::string::npos);
  // A pin is enough.
  r = parse_args(
      {"--upstream", "tls://192.0.2.1", "--tls-pin", "sha256/" + std::string(43, 'A') + "="});
  EXPECT_TRUE(std::holds_alternative<Config>(r));
  r = parse_args({"--upstream", "192.0.2.1", "--tls-pin", "sha256/short"});
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(r));
  EXPECT_NE(std::get<ConfigExit>(r).message.find("sha256/BASE64"), std::string::npos);
}

// --- framing --------------------------------------------------------------------------------

Bytes message(uint16_t id, std::size_t len) {
  Bytes m(len, 0xab);
  m[0] = static_cast<uint8_t>(id >> 8);
  m[1] = static_cast<uint8_t>(id);
  return m;
}

Bytes framed(const std::vector<Bytes>& ms) {
  Bytes out;
  for (const Bytes& m : ms) {
    out.push_back(static_cast<uint8_t>(m.size() >> 8));
    out.push_back(static_cast<uint8_t>(m.size()));
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

TEST(DotStreamReader, MessagesComeOutWholeHoweverTheStreamIsCut) {
  const std::vector<Bytes> ms = {message(1, 12), message(2, 300), message(3, 65535),
                                 message(4, 40)};
  const Bytes stream = framed(ms);
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7},
                                  std::size_t{1000}, stream.size()}) {
    dot::StreamReader r;
    std::vector<Bytes> got;
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      r.feed(std::span<const uint8_t>(stream).subspan(at, std::min(chunk, stream.size() - at)));
      while (auto m = r.next())
        got.emplace_back(m->begin(), m->end());
      EXPECT_LE(r.buffered(), 65537u + chunk);
    }
    EXPECT_EQ(got, ms) << "chunk " << chunk;
    EXPECT_FALSE(r.broken());
    EXPECT_EQ(r.buffered(), 0u);
  }
}

TEST(DotStreamReader, ALengthShorterThanAHeaderBreaksTheStream) {
  for (const uint8_t len : {uint8_t{0}, uint8_t{1}, uint8_t{11}}) {
    dot::StreamReader r;
    Bytes s = framed({message(7, 20)});
    s.push_back(0);
    s.push_back(len);
    s.insert(s.end(), len, 0);
    s.insert(s.end(), {0, 12});  // a good message after it is never reached
    s.insert(s.end(), 12, 0);
    r.feed(s);
    ASSERT_TRUE(r.next());
    EXPECT_FALSE(r.next());
    EXPECT_TRUE(r.broken()) << len;
    r.feed(framed({message(8, 12)}));
    EXPECT_FALSE(r.next());
    r.reset();
    r.feed(framed({message(9, 12)}));
    EXPECT_TRUE(r.next());
  }
}

// --- padding --------------------------------------------------------------------------------

// A query for `name` (labels of the given lengths) with a bare OPT at the end.
Bytes query_with_opt(const std::vector<std::size_t>& labels, bool opt = true) {
  Bytes q = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, static_cast<uint8_t>(opt ? 1 : 0)};
  for (std::size_t l : labels) {
    q.push_back(static_cast<uint8_t>(l));
    q.insert(q.end(), l, 'a');
  }
  q.insert(q.end(), {0, 0, 1, 0, 1});
  if (opt) q.insert(q.end(), {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0});
  return q;
}

TEST(DotPadding, QueriesArePaddedToMultiplesOf128WithAParsablePaddingOption) {
  for (const auto& labels : std::vector<std::vector<std::size_t>>{
           {1}, {3, 4}, {63}, {63, 63}, {63, 63, 63, 61}, {50, 49}, {71 - 28}}) {
    Bytes q = query_with_opt(labels);
    const std::size_t len = q.size();
    q.resize(len + 4 + 127);
    const std::size_t out = dot::pad_query(q, len);
    EXPECT_EQ(out % 128, 0u) << len;
    EXPECT_GE(out, len + 4);
    EXPECT_LT(out, len + 4 + 128);
    q.resize(out);
    // The option: code 12, its length, zeros; RDLENGTH covers it; still one additional record.
    EXPECT_EQ(q[len - 2] * 256 + q[len - 1], static_cast<int>(out - len));
    EXPECT_EQ(q[len] * 256 + q[len + 1], 12);
    EXPECT_EQ(q[len + 2] * 256 + q[len + 3], static_cast<int>(out - len - 4));
    EXPECT_EQ(q[11], 1);
    wire::Message m;
    EXPECT_TRUE(m.parse(q, wire::ParseMode::Strict)) << len;
  }
}

TEST(DotPadding, WithoutABareOptAtTheEndOrRoomNothingChanges) {
  Bytes q = query_with_opt({5}, false);
  std::size_t len = q.size();
  q.resize(len + 200);
  EXPECT_EQ(dot::pad_query(q, len), len);
  q = query_with_opt({5});
  len = q.size();
  q[len - 1] = 4;  // the OPT already carries an option
  q.resize(len + 200);
  EXPECT_EQ(dot::pad_query(q, len), len);
  q = query_with_opt({5});
  len = q.size();
  EXPECT_EQ(dot::pad_query(q, len), len);  // no room
  EXPECT_EQ(dot::pad_query(q, 5), 5u);     // shorter than a header and an OPT
  q.resize(len + 200);
  EXPECT_EQ(dot::pad_query(q, len, 0), len);
}

// --- the pending table ----------------------------------------------------------------------

MonoTime at(int ms) {
  return MonoTime{Millis{ms}};
}

TEST(DotPending, AnswersAreMatchedByIdInAnyOrder) {
  dot::Pending p;
  EXPECT_TRUE(p.add(10, message(10, 20), at(100)));
  EXPECT_TRUE(p.add(11, message(11, 20), at(100)));
  EXPECT_TRUE(p.add(12, message(12, 20), at(100)));
  EXPECT_FALSE(p.add(11, message(11, 20), at(100)));  // an ID pending already
  EXPECT_EQ(p.size(), 3u);
  auto e = p.take(12);
  ASSERT_TRUE(e);
  ASSERT_EQ(e->framed.size(), 22u);
  EXPECT_EQ(e->framed[0] * 256 + e->framed[1], 20);
  EXPECT_FALSE(p.take(12));  // a second answer with the same ID finds nothing
  EXPECT_FALSE(p.take(99));  // an ID never asked
  EXPECT_TRUE(p.take(10));
  EXPECT_TRUE(p.take(11));
  EXPECT_EQ(p.size(), 0u);
  EXPECT_FALSE(p.next_deadline());
}

TEST(DotPending, DeadlinesExpireInOrderAndAReusedIdKeepsItsOwn) {
  dot::Pending p;
  ASSERT_TRUE(p.add(1, message(1, 12), at(100)));
  ASSERT_TRUE(p.add(2, message(2, 12), at(200)));
  ASSERT_TRUE(p.take(1));
  ASSERT_TRUE(p.add(1, message(1, 12), at(300)));  // ID 1 again, later deadline
  EXPECT_EQ(p.next_deadline(), at(200));
  EXPECT_TRUE(p.expire(at(199)).empty());
  EXPECT_EQ(p.expire(at(250)), std::vector<uint16_t>{2});
  EXPECT_EQ(p.next_deadline(), at(300));
  EXPECT_EQ(p.expire(at(300)), std::vector<uint16_t>{1});
  EXPECT_EQ(p.size(), 0u);
}

TEST(DotPending, ALostConnectionsQueriesAreWrittenOnceMoreThenFail) {
  dot::Pending p;
  for (uint16_t id = 1; id <= 4; ++id)
    ASSERT_TRUE(p.add(id, message(id, 12), at(1000)));
  // Three written on the first connection; 4 waits (the in-flight bound).
  for (int i = 0; i < 3; ++i) {
    auto id = p.next_unwritten();
    ASSERT_TRUE(id);
    EXPECT_EQ(*id, i + 1);
    p.mark_written(*id);
  }
  EXPECT_EQ(p.written(), 3u);
  ASSERT_TRUE(p.take(2));  // answered
  EXPECT_TRUE(p.connection_lost(2).empty());
  EXPECT_EQ(p.written(), 0u);
  // Written again first, in their order, ahead of the one never written.
  std::vector<uint16_t> order;
  while (auto id = p.next_unwritten()) {
    order.push_back(*id);
    p.mark_written(*id);
  }
  EXPECT_EQ(order, (std::vector<uint16_t>{1, 3, 4}));
  // The second connection dies too: 1 and 3 have had two, 4 gets another.
  EXPECT_EQ(p.connection_lost(2), (std::vector<uint16_t>{1, 3}));
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.next_unwritten(), std::optional<uint16_t>(4));
  EXPECT_EQ(p.take_all(), std::vector<uint16_t>{4});
}

// --- DotChannel on an injected clock ------------------------------------------------------

struct Events {
  std::vector<std::pair<uint16_t, DotChannel::Event>> got;
};

class DotChannelTest : public ::testing::Test {
 protected:
  DotChannelTest() : loop_(EventLoop::Options{.clock = [this] { return now_; }}) {
    loop_.update_now();
    settings_.targets.push_back(TlsTarget{});
    auto ctx = DotChannel::make_context(settings_);
    EXPECT_TRUE(ctx) << ctx.error();
    if (ctx) ctx_ = ctx.value();
  }
  ~DotChannelTest() override {
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  // A TCP port on 127.0.0.1 that accepts connections (the kernel does) but never speaks.
  Endpoint silent_server() {
    sockaddr_in sin{};
    listen_fd_ = test::listen_any_port(sin, 8, SOCK_NONBLOCK);
    EXPECT_GE(listen_fd_, 0);
    return *Endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&sin), sizeof sin);
  }
  // A port nothing listens on.
  Endpoint closed_port() {
    sockaddr_in sin{};
    close(test::bind_any_port(SOCK_STREAM, sin));
    return *Endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&sin), sizeof sin);
  }
  std::unique_ptr<DotChannel> channel(Endpoint e) {
    return std::make_unique<DotChannel>(
        loop_, ctx_, settings_, TlsTarget{e, "dns.test"}, stats_, Millis{1000},
        [this](uint16_t id, DotChannel::Event ev, std::span<uint8_t>) {
          events_.got.emplace_back(id, ev);
        });
  }
  // Runs loop iterations (each waits at most 50 ms for sockets) until `pred` or `n` ran out.
  template <class F>
  void spin(F pred, int n = 100) {
    for (int i = 0; i < n && !pred(); ++i)
      loop_.run_once(Millis{50});
  }

  MonoTime now_{Millis{1'000'000}};
  EventLoop loop_;
  DotSettings settings_;
  std::shared_ptr<void> ctx_;
  std::shared_ptr<UpstreamServerStats> stats_ = std::make_shared<UpstreamServerStats>(Endpoint{});
  Events events_;
  int listen_fd_ = -1;
};

TEST_F(DotChannelTest, AServerThatNeverHandshakesTimesTheQueriesOutAtTheirDeadline) {
  auto ch = channel(silent_server());
  const Bytes q = query_with_opt({4});
  ASSERT_TRUE(ch->send(1, q));
  ASSERT_TRUE(ch->send(2, q));
  EXPECT_TRUE(events_.got.empty());  // never from inside send()
  loop_.run_once(Millis{0});         // connects; the ClientHello waits unanswered
  spin([] { return false; }, 5);
  EXPECT_TRUE(events_.got.empty());
  now_ += Millis{999};
  loop_.run_once(Millis{0});
  EXPECT_TRUE(events_.got.empty());
  now_ += Millis{1};
  loop_.run_once(Millis{0});
  ASSERT_EQ(events_.got.size(), 2u);
  EXPECT_EQ(events_.got[0], std::make_pair(uint16_t{1}, DotChannel::Event::Timeout));
  EXPECT_EQ(events_.got[1], std::make_pair(uint16_t{2}, DotChannel::Event::Timeout));
  EXPECT_EQ(ch->pending(), 0u);
  EXPECT_EQ(stats_->tls_handshakes.load(), 0u);
  // The handshake that never came is given up with them: the next query starts over on a
  // new connection instead of waiting behind the stuck one.
  EXPECT_EQ(stats_->tls_connection_failures.load(), 1u);
  ASSERT_TRUE(ch->send(3, q));
  loop_.run_once(Millis{0});
  int accepted = 0;
  spin(
      [&] {
        const int c = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
        if (c >= 0) {
          ++accepted;
          close(c);
        }
        return accepted == 2;
      },
      20);
  EXPECT_EQ(accepted, 2) << "two connections reached the server";
}

TEST_F(DotChannelTest, ARefusedConnectionFailsEveryPendingQueryWithNetworkError) {
  auto ch = channel(closed_port());
  const Bytes q = query_with_opt({4});
  for (uint16_t id = 1; id <= 3; ++id)
    ASSERT_TRUE(ch->send(id, q));
  EXPECT_TRUE(events_.got.empty());
  spin([&] { return events_.got.size() == 3; });
  ASSERT_EQ(events_.got.size(), 3u);
  for (const auto& [id, ev] : events_.got)
    EXPECT_EQ(ev, DotChannel::Event::NetworkError) << id;
  EXPECT_EQ(stats_->tls_connection_failures.load(), 1u);
  EXPECT_EQ(ch->pending(), 0u);
}

TEST_F(DotChannelTest, CancelAllReportsEveryQueryAndAbandonReportsNone) {
  auto ch = channel(silent_server());
  const Bytes q = query_with_opt({4});
  ASSERT_TRUE(ch->send(5, q));
  ASSERT_TRUE(ch->send(6, q));
  ch->cancel_all();
  ASSERT_EQ(events_.got.size(), 2u);
  EXPECT_EQ(events_.got[0].second, DotChannel::Event::Cancelled);
  ASSERT_TRUE(ch->send(7, q));
  EXPECT_EQ(ch->abandon(), std::vector<uint16_t>{7});
  EXPECT_EQ(events_.got.size(), 2u);
}

TEST_F(DotChannelTest, ACaFileThatCannotBeLoadedIsAClearError) {
  DotSettings s;
  s.ca_file = "/nonexistent/ca.pem";
  auto ctx = DotChannel::make_context(s);
  ASSERT_FALSE(ctx);
  EXPECT_NE(ctx.error().find("--tls-ca-file /nonexistent/ca.pem"), std::string::npos);
}

}  // namespace
}  // namespace hg::resolver
