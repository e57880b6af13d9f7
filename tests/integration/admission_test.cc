// Query admission seen from outside: FORMERR, NOTIMP, BADVERS, REFUSED (zone transfers,
// other classes, clients outside --allow), junk dropped — each answered at once, without
// asking the upstream.
#include <gtest/gtest.h>

#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"
#include "wire/edns.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using wire::RCode;

class AdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    upstream_.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
    daemon_ = Daemon::start({"--upstream", upstream_.address()});
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  }
  std::optional<Answer> ask(const Bytes& q) { return udp_query(daemon_->port(), q); }

  FakeUpstream upstream_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(AdmissionTest, QuestionCountZeroGetsFormerr) {
  Bytes q = build_query({.name = "example.test", .id = 0x1234, .edns = false});
  q.resize(12);
  q[5] = 0;  // QDCOUNT = 0
  auto a = ask(q);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::FormErr);
  EXPECT_EQ(a->id(), 0x1234);
}

TEST_F(AdmissionTest, QuestionCountTwoGetsFormerr) {
  Bytes q = build_query({.name = "example.test", .edns = false});
  Bytes second(q.begin() + 12, q.end());
  q.insert(q.end(), second.begin(), second.end());
  q[5] = 2;
  auto a = ask(q);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::FormErr);
  EXPECT_EQ(upstream_.total_queries(), 0u);
}

TEST_F(AdmissionTest, TruncatedQuestionGetsFormerr) {
  Bytes q = build_query({.name = "example.test", .id = 0x4242, .edns = false});
  q.resize(q.size() - 3);  // cut into QTYPE/QCLASS
  auto a = ask(q);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::FormErr);
  EXPECT_EQ(a->id(), 0x4242);
}

TEST_F(AdmissionTest, TrailingBytesAfterQueryGetFormerr) {
  Bytes q = build_query({.name = "example.test", .edns = false});
  q.push_back(0xAB);
  auto a = ask(q);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::FormErr);
}

TEST_F(AdmissionTest, JunkShorterThanHeaderIsDroppedAndDaemonKeepsServing) {
  UdpClient c;
  ASSERT_TRUE(c.send(daemon_->port(), Bytes{0x12, 0x34, 0x01}));
  EXPECT_FALSE(c.receive(Millis{300}));
  auto a = ask(build_query({.name = "after-junk.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NoError);
}

TEST_F(AdmissionTest, NotifyOpcodeGetsNotimp) {
  auto a = ask(build_query({.name = "example.test", .id = 7, .opcode = 4}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NotImp);
  EXPECT_EQ(a->id(), 7);
  EXPECT_EQ(static_cast<int>(a->msg.header.opcode()), 4);
  EXPECT_EQ(upstream_.total_queries(), 0u);
}

TEST_F(AdmissionTest, EdnsVersionOneGetsBadversWithOpt) {
  auto a = ask(build_query({.name = "example.test", .edns_version = 1}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::BadVers) << a->text();
  ASSERT_TRUE(a->msg.edns) << "RFC 6891 6.1.3: BADVERS needs an OPT record";
  EXPECT_EQ(a->msg.edns->version, 0);
  EXPECT_EQ(upstream_.total_queries(), 0u);
}

TEST_F(AdmissionTest, EdnsVersionOneGetsBadversInDig) {
  auto r = dig(daemon_->port(), "+edns=1 +noednsneg example.test A");
  EXPECT_EQ(r.status(), "BADVERS") << r.output;
}

TEST_F(AdmissionTest, ZoneTransferIsRefused) {
  auto axfr = ask(build_query({.name = "example.test", .type = 252}));
  ASSERT_TRUE(axfr);
  EXPECT_EQ(axfr->rcode(), RCode::Refused);
  auto ixfr = ask(build_query({.name = "example.test", .type = 251}));
  ASSERT_TRUE(ixfr);
  EXPECT_EQ(ixfr->rcode(), RCode::Refused);
  EXPECT_EQ(upstream_.total_queries(), 0u);
}

TEST_F(AdmissionTest, ChaosClassIsRefused) {
  auto r = dig(daemon_->port(), "version.bind CH TXT");
  EXPECT_EQ(r.status(), "REFUSED") << r.output;
  EXPECT_EQ(upstream_.total_queries(), 0u);
}

TEST_F(AdmissionTest, ResponseSentToUsIsDropped) {
  UdpClient c;
  Bytes q = build_query({.name = "example.test", .flags = wire::flag::QR | wire::flag::RD});
  ASSERT_TRUE(c.send(daemon_->port(), q));
  EXPECT_FALSE(c.receive(Millis{300}));
}

// --allow: a client outside the list gets REFUSED with EDE 18 (Prohibited), from code and dig.
class AllowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    upstream_.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.1")}));
    daemon_ = Daemon::start({"--upstream", upstream_.address(), "--allow", "127.0.0.1/32"});
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  }
  FakeUpstream upstream_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(AllowTest, ClientOutsideAllowListGetsRefusedWithEde18) {
  auto a = udp_query(daemon_->port(), build_query({.name = "allowed.test", .id = 99}), Millis{3000},
                     "127.0.0.2");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::Refused);
  EXPECT_EQ(a->id(), 99);
  EXPECT_EQ(a->ede(), wire::ede::Prohibited);
  EXPECT_EQ(upstream_.total_queries(), 0u);
  // The allowed address still gets its answer.
  auto ok = udp_query(daemon_->port(), build_query({.name = "allowed.test"}));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->rcode(), RCode::NoError);
}

TEST_F(AllowTest, DigFromOutsideAllowListSeesRefused) {
  auto r = dig(daemon_->port(), "-b 127.0.0.2 allowed.test A");
  EXPECT_EQ(r.status(), "REFUSED") << r.output;
  EXPECT_TRUE(r.contains("EDE: 18")) << r.output;
  auto ok = dig(daemon_->port(), "-b 127.0.0.1 allowed.test A");
  EXPECT_EQ(ok.status(), "NOERROR") << ok.output;
}

}  // namespace
}  // namespace hg::integration
