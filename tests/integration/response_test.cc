// What every answer carries: the client's ID and question bytes (letter case), RD copied,
// RA=1, AA=0, an OPT record iff the client sent one, AD only for clients that set DO or AD.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/ports.h"
#include "wire/edns.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using wire::RCode;

class ResponseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeReply r = FakeReply::records({FakeRecord::a("", 300, "192.0.2.1")});
    r.aa = true;  // the upstream's AA must not reach our clients
    upstream_.set_default(r);
    daemon_ = Daemon::start({"--upstream", upstream_.address()});
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  }
  FakeUpstream upstream_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(ResponseTest, MixedCaseQuestionIsEchoedOnMissAndHit) {
  for (const char* name : {"WwW.MiXeD.TeSt", "www.MIXED.test", "WWW.mixed.TEST"}) {
    Bytes q = build_query({.name = name});
    auto a = udp_query(daemon_->port(), q);
    ASSERT_TRUE(a);
    EXPECT_EQ(Answer::question_bytes(a->bytes), Answer::question_bytes(q)) << name;
    EXPECT_EQ(a->msg.answer.size(), 1u);
  }
  EXPECT_EQ(upstream_.queries("www.mixed.test"), 1u) << "the cache key is case-insensitive";
}

TEST_F(ResponseTest, DigSeesItsOwnLetterCase) {
  auto miss = dig(daemon_->port(), "DiG.CaSe.TeSt A");
  EXPECT_TRUE(miss.contains(";DiG.CaSe.TeSt.")) << miss.output;
  EXPECT_FALSE(miss.contains("WARNING")) << miss.output;
  auto hit = dig(daemon_->port(), "dig.CASE.test A");
  EXPECT_TRUE(hit.contains(";dig.CASE.test.")) << hit.output;
  EXPECT_FALSE(hit.contains("WARNING")) << hit.output;
  EXPECT_EQ(upstream_.queries("dig.case.test"), 1u);
}

TEST_F(ResponseTest, HeaderFlagsFollowTheClient) {
  for (bool rd : {true, false}) {
    auto a =
        udp_query(daemon_->port(),
                  build_query({.name = "flags.test", .flags = rd ? wire::flag::RD : uint16_t{0}}));
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->msg.header.qr());
    EXPECT_EQ(a->msg.header.rd(), rd);
    EXPECT_TRUE(a->msg.header.ra());
    EXPECT_FALSE(a->msg.header.aa()) << "a forwarder's answers are never authoritative";
  }
}

TEST_F(ResponseTest, OptInAnswerIffClientSentOne) {
  for (int round = 0; round < 2; ++round) {  // miss, then hit
    auto plain = udp_query(daemon_->port(), build_query({.name = "opt.test", .edns = false}));
    ASSERT_TRUE(plain);
    EXPECT_FALSE(plain->msg.edns) << plain->text();
    auto edns = udp_query(daemon_->port(), build_query({.name = "opt.test"}));
    ASSERT_TRUE(edns);
    ASSERT_TRUE(edns->msg.edns) << edns->text();
    EXPECT_EQ(edns->msg.edns->udp_size, 1232);
    EXPECT_EQ(edns->msg.edns->version, 0);
  }
}

TEST_F(ResponseTest, DigWithoutEdnsGetsNoOpt) {
  auto r = dig(daemon_->port(), "+noedns noopt.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_FALSE(r.contains("OPT PSEUDOSECTION")) << r.output;
  auto e = dig(daemon_->port(), "noopt.test A");
  EXPECT_TRUE(e.contains("OPT PSEUDOSECTION")) << e.output;
}

// A one-thread UDP upstream that sets AD=1 on every answer (FakeUpstream cannot), and
// answers every question with one A record, echoing an OPT record (and DO) when asked.
class AdUpstream {
 public:
  AdUpstream() {
    sockaddr_in sin{};
    fd_ = test::bind_any_port(SOCK_DGRAM, sin);
    if (fd_ < 0) std::abort();
    port_ = ntohs(sin.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~AdUpstream() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int queries() const { return queries_.load(); }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      uint8_t q[512];
      sockaddr_storage from{};
      socklen_t flen = sizeof from;
      ssize_t n = recvfrom(fd_, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &flen);
      if (n < 17) continue;
      std::size_t at = 12;
      while (at < static_cast<std::size_t>(n) && q[at] != 0)
        at += q[at] + 1u;
      const std::size_t qend = at + 5;
      if (qend > static_cast<std::size_t>(n)) continue;
      ++queries_;
      const bool opt = q[11] >= 1 && qend + 11 <= static_cast<std::size_t>(n);
      const bool do_bit = opt && (q[qend + 7] & 0x80) != 0;
      Bytes out(q, q + qend);
      out[2] = static_cast<uint8_t>(0x80 | (q[2] & 0x01));  // QR, RD copied
      out[3] = 0x80 | 0x20;                                 // RA, AD
      out[7] = 1;                                           // ANCOUNT
      out[9] = 0;
      out[11] = opt ? 1 : 0;
      const uint8_t rr[] = {0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 53};
      out.insert(out.end(), rr, rr + sizeof rr);
      if (opt) {
        const uint8_t o[] = {0, 0, 41, 0x04, 0xD0, 0, 0, static_cast<uint8_t>(do_bit ? 0x80 : 0),
                             0, 0, 0};
        out.insert(out.end(), o, o + sizeof o);
      }
      sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), flen);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> queries_{0};
  std::thread thread_;
};

// AD from a plain-UDP upstream (a box on the path, or a forgery that won, may have set it)
// reaches no client: not one that sets DO, not one that sets AD, not from the cache either.
// (With a trusted DoT upstream, --trust-ad, it passes, and then only to clients that set DO
// or AD: RFC 6840 §5.8, wire::answer_flags and DotUpstream.AdPasses... hold those.)
TEST(ResponseAd, AdFromAPlainUpstreamReachesNoClientNorTheCache) {
  AdUpstream upstream;
  auto d = Daemon::start({"--upstream", upstream.address()});
  ASSERT_TRUE(d->ready()) << d->output();
  for (int round = 0; round < 2; ++round) {  // miss (first of each key), then hit
    auto plain = udp_query(d->port(), build_query({.name = "ad.test"}));
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->rcode(), RCode::NoError);
    EXPECT_FALSE(plain->ad()) << "round " << round << "\n" << plain->text();
    auto no_edns = udp_query(d->port(), build_query({.name = "ad.test", .edns = false}));
    ASSERT_TRUE(no_edns);
    EXPECT_FALSE(no_edns->ad()) << "round " << round;
    auto with_ad = udp_query(
        d->port(), build_query({.name = "ad.test", .flags = wire::flag::RD | wire::flag::AD}));
    ASSERT_TRUE(with_ad);
    EXPECT_FALSE(with_ad->ad()) << "round " << round << "\n" << with_ad->text();
    auto with_do = udp_query(d->port(), build_query({.name = "ad.test", .dnssec_ok = true}));
    ASSERT_TRUE(with_do);
    EXPECT_FALSE(with_do->ad()) << "round " << round << "\n" << with_do->text();
    ASSERT_TRUE(with_do->msg.edns);
    EXPECT_TRUE(with_do->msg.edns->dnssec_ok()) << "DO echoed (RFC 3225)";
  }
  // Keys differ by DO: one upstream query without DO, one with; the rest were hits.
  EXPECT_EQ(upstream.queries(), 2);
  // dig, as a real client asking with +dnssec and +adflag, sees no "ad" flag either.
  const DigResult dr = dig(d->port(), "ad.test A +dnssec +adflag");
  EXPECT_EQ(dr.status(), "NOERROR") << dr.output;
  const auto at = dr.output.find(";; flags:");
  ASSERT_NE(at, std::string::npos) << dr.output;
  const std::string flags = dr.output.substr(at, dr.output.find(';', at + 3) - at);
  EXPECT_NE(flags.find(" qr"), std::string::npos) << flags;  // the line is the header's flags
  EXPECT_EQ(flags.find(" ad"), std::string::npos) << dr.output;
}

}  // namespace
}  // namespace hg::integration
