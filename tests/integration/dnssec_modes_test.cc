// Validation's modes and the probe of the upstreams (resolver/query/dnssec_probe.h), with the
// real hourglassd and dig:
//
//  - by default (no --dnssec) hourglassd validates behind an upstream that delivers DNSSEC
//    records: an iterating Unbound over the knotd hierarchy of tests/dnssec/hierarchy.h;
//  - behind an upstream that strips them (a FakeUpstream serving the hierarchy's root DNSKEY
//    RRset without its RRSIGs, and every name with AD set) it says so once in the log and in
//    `hourglass-ctl dnssec`/`upstreams`, then passes answers on without AD, however many
//    names are asked (no flapping, no second probe);
//  - --dnssec require behind the same upstream answers SERVFAIL with EDE 22, asking nothing;
//  - when the upstreams change (the upstream file), they are probed again.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/dnssec/hierarchy.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/requires.h"
#include "tests/support/temp_dir.h"
#include "wire/message.h"

namespace hg::integration {
namespace {

constexpr uint16_t kDnskey = 48;

// The tampering box of the answer-integrity issue: a UDP relay on 127.0.0.1 in front of a
// resolver that rewrites every A record of its answers to 6.6.6.6 and sets AD (as a box on
// the path can: plain UDP carries no proof of where an answer was changed).
class TamperingRelay {
 public:
  explicit TamperingRelay(uint16_t resolver_port) : resolver_port_(resolver_port) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~TamperingRelay() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  TamperingRelay(const TamperingRelay&) = delete;
  TamperingRelay& operator=(const TamperingRelay&) = delete;
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int tampered() const { return tampered_; }

 private:
  void run() {
    // Bounded: it stops when the test ends; each exchange waits at most 2 s for the resolver.
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) != 1) continue;
      uint8_t buf[4096];
      sockaddr_in from{};
      socklen_t from_len = sizeof from;
      const ssize_t n =
          recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n <= 0) continue;
      std::vector<uint8_t> reply = exchange({buf, buf + n});
      if (reply.empty()) continue;
      tamper(reply);
      sendto(fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
    }
  }
  std::vector<uint8_t> exchange(const std::vector<uint8_t>& query) const {
    const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(resolver_port_);
    std::vector<uint8_t> out(4096);
    pollfd p{s, POLLIN, 0};
    if (s < 0 || connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 ||
        send(s, query.data(), query.size(), 0) < 0 || poll(&p, 1, 2000) != 1) {
      out.clear();
    } else {
      const ssize_t n = recv(s, out.data(), out.size(), 0);
      out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    }
    if (s >= 0) close(s);
    return out;
  }
  void tamper(std::vector<uint8_t>& reply) {
    wire::Message m;
    if (!m.parse(reply, wire::ParseMode::Strict).has_value()) return;
    bool changed = false;
    for (const auto& rr : m.records()) {
      if (rr.type != wire::RRType::A || rr.rdlength != 4) continue;
      for (int i = 0; i < 4; ++i)
        reply[rr.rdata_offset + static_cast<std::size_t>(i)] = 6;
      changed = true;
    }
    if (!changed) return;
    reply[3] |= 0x20;  // AD
    ++tampered_;
  }

  uint16_t resolver_port_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> tampered_{0};
  std::thread thread_;
};

class DnssecModes : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    h_ = test::Hierarchy::get(error);
    unbound_ = h_ != nullptr ? h_->unbound(false, error) : nullptr;
    if (unbound_ == nullptr) {
      if (error.find("not installed") != std::string::npos) HG_SKIP_UNLESS_CI(error);
      FAIL() << error;
    }
    anchor_file_ = dir_.write("root.ds", h_->root_ds_file());
    socket_ = dir_.file("ctl");
    // The stripping upstream: the hierarchy's root DNSKEY RRset as the iterator gives it,
    // without its RRSIGs; every other name an address, with AD set (a claim nobody checked).
    auto keys = test::dns_query(unbound_->port(), ".", kDnskey, 0x0110);
    ASSERT_TRUE(keys);
    wire::Message m;
    ASSERT_TRUE(m.parse(*keys, wire::ParseMode::Strict).has_value());
    test::FakeReply root;
    for (const auto& rr : m.records()) {
      if (static_cast<uint16_t>(rr.type) != kDnskey) continue;
      const auto rdata = m.packet().subspan(rr.rdata_offset, rr.rdlength);
      root.answer.push_back(test::FakeRecord{"", kDnskey, 3600, {rdata.begin(), rdata.end()}});
    }
    ASSERT_FALSE(root.answer.empty());
    root.ad = true;
    stripping_.on("", root);
    test::FakeReply any = test::FakeReply::records({test::FakeRecord::a("", 300, "192.0.2.1")});
    any.ad = true;
    stripping_.set_default(any);
  }

  std::unique_ptr<Daemon> start(std::vector<std::string> args) {
    args.insert(args.end(), {"--trust-anchor", anchor_file_, "--control", socket_});
    auto d = Daemon::start_with(args, StartOptions{.dnssec_off = false});
    EXPECT_TRUE(d->ready()) << d->output();
    return d;
  }

  // The probe's verdict on `server` in `hourglass-ctl upstreams`, once it has one.
  std::string capability(const std::string& server) {
    std::string got;
    test::eventually(
        [&] {
          got = upstream_line(ctl(socket_, "upstreams").output, server)["dnssec"];
          return got == "yes" || got == "no";
        },
        Millis{5000});
    return got;
  }

  const test::Hierarchy* h_ = nullptr;
  test::UnboundServer* unbound_ = nullptr;
  test::FakeUpstream stripping_;
  test::TempDir dir_{"hg-dnssec-modes"};
  std::string anchor_file_;
  std::string socket_;
};

TEST_F(DnssecModes, ByDefaultAnUpstreamThatDeliversIsValidated) {
  const std::string up = "127.0.0.1:" + std::to_string(unbound_->port());
  auto d = start({"--upstream", up});
  EXPECT_EQ(capability(up), "yes");
  const DigResult r = dig(d->port(), "+dnssec www.signed.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_EQ(dig(d->port(), "+dnssec x.wrongds.test A").status(), "SERVFAIL");
  const std::string text = ctl(socket_, "dnssec").output;
  EXPECT_NE(text.find("dnssec mode=validate default_upstreams=validated"), std::string::npos)
      << text;
  EXPECT_NE(text.find("upstream " + up + " dnssec=yes (. DNSKEY validated)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("anchored_zones=. insecure_domains=-"), std::string::npos) << text;
  EXPECT_EQ(d->lines_with("delivers DNSSEC records").size(), 1u) << d->output();
}

TEST_F(DnssecModes, AnUpstreamThatStripsSignaturesIsSaidOnceAndNothingGetsAd) {
  auto d = start({"--upstream", stripping_.address()});
  EXPECT_EQ(capability(stripping_.address()), "no");
  ASSERT_TRUE(d->wait_for_output("does not deliver DNSSEC records", Millis{5000}));
  // Twenty names, with and without DO: answered as the upstream says, never with AD.
  for (int i = 0; i < 20; ++i) {
    const DigResult r = dig(d->port(), (i % 2 ? "+dnssec " : "+adflag ") + std::string("n") +
                                           std::to_string(i) + ".signed.test A");
    EXPECT_EQ(r.status(), "NOERROR") << r.output;
    EXPECT_TRUE(r.contains("192.0.2.1")) << r.output;
    EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  }
  // Said once; the root's DNSKEY asked by the probe alone (it and its one fetch), not again.
  const auto lines = d->lines_with("does not deliver DNSSEC records");
  ASSERT_EQ(lines.size(), 1u) << d->output();
  EXPECT_NE(lines[0].find("RRSIGs missing"), std::string::npos) << lines[0];
  EXPECT_LE(stripping_.queries(""), 2u);
  // The names went to it without CD: its own validation, if any, still counts.
  for (const auto& q : stripping_.received()) {
    if (q.qname.empty()) continue;
    EXPECT_EQ(q.bytes[3] & 0x10, 0) << q.qname;
  }
  const std::string text = ctl(socket_, "dnssec").output;
  EXPECT_NE(text.find("default_upstreams=insecure"), std::string::npos) << text;
  EXPECT_NE(text.find("dnssec=no (its answer to . DNSKEY with DO set is bogus"), std::string::npos)
      << text;
  EXPECT_EQ(ctl_stat(socket_, "dnssec.secure"), 0);
}

TEST_F(DnssecModes, RequireRefusesWhatAStrippingUpstreamWouldAnswer) {
  auto d = start({"--upstream", stripping_.address(), "--dnssec", "require"});
  EXPECT_EQ(capability(stripping_.address()), "no");
  stripping_.reset_counts();
  const DigResult r = dig(d->port(), "+dnssec www.signed.test A");
  EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
  EXPECT_TRUE(r.contains("EDE: 22")) << r.output;
  EXPECT_TRUE(r.contains("DNSSEC required")) << r.output;
  EXPECT_EQ(stripping_.queries("www.signed.test"), 0u);
  // CD=1: the client validates itself, so the data is its to have (RFC 4035 §3.2.2).
  EXPECT_EQ(dig(d->port(), "+cd www.signed.test A").status(), "NOERROR");
  const std::string text = ctl(socket_, "dnssec").output;
  EXPECT_NE(text.find("dnssec mode=require default_upstreams=refused"), std::string::npos) << text;
}

TEST_F(DnssecModes, NewUpstreamsAreProbedAgain) {
  const std::string good = "127.0.0.1:" + std::to_string(unbound_->port());
  const std::string file = dir_.write("resolv.conf", "nameserver " + stripping_.address() + "\n");
  auto d = start({"--upstream-file", file});
  EXPECT_EQ(capability(stripping_.address()), "no");
  EXPECT_EQ(dig(d->port(), "+dnssec www.signed.test A").flags().find("ad"), std::string::npos);
  // The network changed: a new upstream, which delivers.
  std::ofstream(file + ".new") << "nameserver " << good << "\n";  // closed at the ;
  ASSERT_EQ(std::rename((file + ".new").c_str(), file.c_str()), 0);
  EXPECT_EQ(capability(good), "yes") << d->output();
  const std::string text = ctl(socket_, "dnssec").output;
  EXPECT_NE(text.find("default_upstreams=validated"), std::string::npos) << text;
  EXPECT_EQ(text.find(stripping_.address()), std::string::npos) << text;
  const DigResult r = dig(d->port(), "+dnssec a.deep.signed.test A");
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
}

TEST_F(DnssecModes, AnInsecureDomainIsAnsweredWithoutAdAndNeverBogus) {
  const std::string up = "127.0.0.1:" + std::to_string(unbound_->port());
  auto d = start(
      {"--upstream", up, "--insecure-domain", "wrongds.test", "--insecure-domain", "signed.test"});
  EXPECT_EQ(capability(up), "yes");
  DigResult r = dig(d->port(), "+dnssec x.wrongds.test A");  // bogus without the NTA
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  r = dig(d->port(), "+dnssec www.signed.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  // Outside them, validation as ever.
  r = dig(d->port(), "+dnssec host.ent.test A");
  EXPECT_NE(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_NE(ctl(socket_, "dnssec").output.find("insecure_domains=signed.test.,wrongds.test."),
            std::string::npos);
}

// The answer-integrity issue's tampering path: without validation hourglassd had no way to
// tell (it served 6.6.6.6, with AD when the upstream's AD was trusted); validating, the
// changed record does not match its signature: SERVFAIL with EDE 6, the address never served.
TEST_F(DnssecModes, ATamperedAnswerOnThePathIsServfailWithEde6) {
  TamperingRelay relay(unbound_->port());
  auto d = start({"--upstream", relay.address()});
  EXPECT_EQ(capability(relay.address()), "yes") << "DNSKEY answers pass the relay unchanged";
  for (int round = 0; round < 2; ++round) {  // the miss, then the failure cache (EDE 13)
    const DigResult r = dig(d->port(), "+dnssec www.signed.test A");
    EXPECT_EQ(r.status(), "SERVFAIL") << r.output;
    EXPECT_TRUE(r.contains(round == 0 ? "EDE: 6 (DNSSEC Bogus)" : "EDE: 13")) << r.output;
    EXPECT_FALSE(r.contains("6.6.6.6")) << r.output;
  }
  EXPECT_GE(relay.tampered(), 1);
  EXPECT_EQ(ctl_stat(socket_, "dnssec.bogus"), 1);
  // Without validation, the same path delivers the forgery (AD cleared: not --trust-ad).
  auto off = Daemon::start({"--upstream", relay.address(), "--dnssec", "off"});
  ASSERT_TRUE(off->ready()) << off->output();
  const DigResult r = dig(off->port(), "+dnssec www.signed.test A");
  EXPECT_TRUE(r.contains("6.6.6.6")) << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
}

TEST(DnssecModesDefault, WithoutATrustAnchorFileTheDefaultSaysSoAndDoesNotValidate) {
  test::FakeUpstream up;
  test::FakeReply any = test::FakeReply::records({test::FakeRecord::a("", 300, "192.0.2.1")});
  any.ad = true;
  up.set_default(any);
  auto d =
      Daemon::start_with({"--upstream", up.address(), "--trust-anchor", "/nonexistent/root.key"},
                         StartOptions{.dnssec_off = false});
  ASSERT_TRUE(d->ready()) << d->output();
  EXPECT_EQ(d->lines_with("dnssec: not validating: cannot open the trust anchor file "
                          "/nonexistent/root.key")
                .size(),
            1u)
      << d->output();
  const DigResult r = dig(d->port(), "+dnssec www.example.test A");
  EXPECT_EQ(r.status(), "NOERROR") << r.output;
  EXPECT_EQ(r.flags().find("ad"), std::string::npos) << r.output;
  EXPECT_EQ(up.queries(""), 0u) << "no probe without validation";
}

}  // namespace
}  // namespace hg::integration
