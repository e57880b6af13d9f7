// The readers on files written by programs nobody here wrote: knotd's mod-dnstap (AUTH_*),
// `kdig -E` (TOOL_*), and a pcap captured by tcpdump on loopback while dig and kdig query
// knotd over UDP and TCP. Only 127.0.0.1; ports picked by the kernel. Each test skips itself
// when a program is not installed. Every wait is bounded.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/bytes.h"
#include "tests/support/child.h"
#include "tests/support/ports.h"
#include "tests/support/requires.h"

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/rehearse/trace_test_util.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {
namespace {

using namespace test;
using hg::test::Child;
using hg::test::free_port;
using namespace std::chrono_literals;

bool have(const char* prog) {
  return std::system((std::string("command -v ") + prog + " >/dev/null 2>&1").c_str()) == 0;
}

int run(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str());
}

/// knotd serving `example.` on 127.0.0.1:port with mod-dnstap writing `tap`.
class Knot {
 public:
  Knot(const TempDir& dir, uint16_t port, const std::string& tap) {
    std::ofstream(dir.file("example.zone")) << "$ORIGIN example.\n$TTL 300\n"
                                               "@ SOA ns.example. admin.example. 1 3600 600 "
                                               "86400 60\n@ NS ns\nns A 127.0.0.1\n"
                                               "www 120 A 192.0.2.1\n";
    std::ofstream(dir.file("knot.conf"))
        << "server:\n  rundir: " << dir.path() << "\n  listen: 127.0.0.1@" << port
        << "\ndatabase:\n  storage: " << dir.path()
        << "\nmod-dnstap:\n  - id: tap\n    sink: " << tap
        << "\n    log-queries: on\n    log-responses: on\n"
           "template:\n  - id: default\n    storage: "
        << dir.path()
        << "\n    global-module: mod-dnstap/tap\n"
           "zone:\n  - domain: example\n    file: example.zone\n";
    proc_ = std::make_unique<Child>(std::vector<std::string>{"knotd", "-c", dir.file("knot.conf")},
                                    dir.file("knotd.log"));
    port_ = port;
  }
  /// Polls until knotd answers (at most ~20 s on a loaded machine).
  bool ready() {
    for (int i = 0; i < 100; ++i) {
      if (run("kdig -p " + std::to_string(port_) +
              " @127.0.0.1 ns.example A +retry=0 +timeout=1 +short | grep -q 127.0.0.1") == 0)
        return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }
  void stop() { proc_->stop(SIGTERM); }

 private:
  std::unique_ptr<Child> proc_;
  uint16_t port_ = 0;
};

TEST(TracePrograms, KnotdDnstapFileIsAuthoritativeView) {
  if (!have("knotd") || !have("kdig") || !have("dig")) HG_SKIP_UNLESS_CI("knotd/kdig/dig missing");
  TempDir dir;
  const uint16_t port = free_port();
  const std::string tap = dir.file("knot.tap");
  Knot knot(dir, port, tap);
  ASSERT_TRUE(knot.ready()) << read_file(dir.file("knotd.log")).size();
  const std::string p = std::to_string(port);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run("dig -p " + p + " @127.0.0.1 www.example A +tries=1 +time=5"), 0);
  ASSERT_EQ(run("kdig -p " + p + " @127.0.0.1 www.example AAAA +tcp +retry=0 +timeout=5"), 0);
  knot.stop();  // flushes and writes the STOP frame

  TraceError err;
  auto r = open_trace(tap, {}, err);
  ASSERT_NE(r, nullptr) << err.to_string();
  auto all = read_all(*r);
  ASSERT_EQ(all.last, ReadStatus::End) << r->error().to_string();
  int www_a_q = 0, www_a_r = 0, aaaa_tcp = 0;
  for (std::size_t i = 0; i < all.events.size(); ++i) {
    const auto& e = all.events[i];
    EXPECT_EQ(e.side, Side::Client);
    EXPECT_TRUE(e.dnstap_type == 1 || e.dnstap_type == 2);
    EXPECT_EQ(e.family, 4);
    EXPECT_EQ(e.client_addr[0], 127);
    EXPECT_NE(e.client_port, 0);
    const auto& m = all.messages[i];
    ASSERT_GE(m.size(), 12u);
    // The question's type: after the name "\3www\7example\0" at offset 12.
    if (m.size() >= 12 + 13 + 2 && m[12] == 3 && m[13] == 'w') {
      const int qtype = base::load_u16(&m[25]);
      if (qtype == 1) (e.role == Role::Query ? www_a_q : www_a_r)++;
      if (qtype == 28 && e.tcp) ++aaaa_tcp;
    }
    EXPECT_GT(e.time_ns, int64_t{1'600'000'000} * 1'000'000'000);  // knotd's AUTH_RESPONSE
                                                                   // has no query time
  }
  EXPECT_GE(www_a_q, 3);  // the readiness probes asked for ns.example
  EXPECT_EQ(www_a_q, www_a_r);
  EXPECT_EQ(aaaa_tcp, 2);
  EXPECT_NE(r->describe().find("authoritative view"), std::string::npos) << r->describe();
}

TEST(TracePrograms, KdigDnstapOutputIsToolView) {
  if (!have("knotd") || !have("kdig")) HG_SKIP_UNLESS_CI("knotd/kdig missing");
  TempDir dir;
  const uint16_t port = free_port();
  Knot knot(dir, port, dir.file("unused.tap"));
  ASSERT_TRUE(knot.ready());
  const std::string tap = dir.file("kdig.tap");
  ASSERT_EQ(run("kdig -p " + std::to_string(port) + " @127.0.0.1 www.example A -E " + tap +
                " +retry=0 +timeout=5"),
            0);
  knot.stop();
  TraceError err;
  auto r = open_trace(tap, {}, err);
  ASSERT_NE(r, nullptr) << err.to_string();
  auto all = read_all(*r);
  ASSERT_EQ(all.last, ReadStatus::End) << r->error().to_string();
  ASSERT_EQ(all.events.size(), 2u);
  EXPECT_EQ(all.events[0].role, Role::Query);
  EXPECT_EQ(all.events[0].dnstap_type, 11);
  EXPECT_EQ(all.events[1].role, Role::Response);
  EXPECT_EQ(all.events[1].dnstap_type, 12);
  EXPECT_EQ(all.events[0].side, Side::Client);
  EXPECT_NE(r->describe().find("tool view"), std::string::npos) << r->describe();
}

TEST(TracePrograms, TcpdumpLoopbackCapture) {
  if (!have("knotd") || !have("kdig") || !have("dig") || !have("tcpdump"))
    HG_SKIP_UNLESS_CI("knotd/kdig/dig/tcpdump missing");
  if (geteuid() != 0) HG_SKIP_UNLESS_CI("capturing needs root");
  TempDir dir;
  const uint16_t port = free_port();
  Knot knot(dir, port, dir.file("unused.tap"));
  ASSERT_TRUE(knot.ready());
  const std::string p = std::to_string(port);
  const std::string cap = dir.file("lo.pcap");
  Child tcpdump({"tcpdump", "-i", "lo", "-U", "-Z", "root", "-w", cap, "port", p},
                dir.file("tcpdump.log"));
  // Wait for "listening on lo" before sending anything.
  bool listening = false;
  for (int i = 0; i < 100 && !listening; ++i) {
    const Bytes log = read_file(dir.file("tcpdump.log"));
    listening = std::string(log.begin(), log.end()).find("listening on") != std::string::npos;
    if (!listening) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(listening);
  constexpr int kUdp = 4;
  for (int i = 0; i < kUdp; ++i)
    ASSERT_EQ(run("dig -p " + p + " @127.0.0.1 www.example A +tries=1 +time=5"), 0);
  ASSERT_EQ(run("kdig -p " + p + " @127.0.0.1 www.example TXT +tcp +retry=0 +timeout=5"), 0);
  // Poll the capture until all 10 messages are in (tcpdump writes each packet with -U).
  TraceOptions opt;
  opt.port = port;
  opt.skip_bad = true;  // the file is still being written
  std::size_t seen = 0;
  for (int i = 0; i < 100 && seen < 2 * kUdp + 2; ++i) {
    TraceError err;
    auto r = open_trace(cap, opt, err);
    seen = r ? read_all(*r).events.size() : 0;
    if (seen < 2 * kUdp + 2) std::this_thread::sleep_for(100ms);
  }
  tcpdump.stop(SIGINT);
  knot.stop();

  opt.skip_bad = false;
  TraceError err;
  auto r = open_trace(cap, opt, err);
  ASSERT_NE(r, nullptr) << err.to_string();
  auto all = read_all(*r);
  ASSERT_EQ(all.last, ReadStatus::End) << r->error().to_string();
  int udp_q = 0, udp_r = 0, tcp_q = 0, tcp_r = 0;
  for (const auto& e : all.events) {
    EXPECT_EQ(e.client_addr[0], 127);
    if (e.role == Role::Response) {
      EXPECT_NE(e.query_time_ns, 0) << "matched to its query";
    }
    (e.tcp ? (e.role == Role::Query ? tcp_q : tcp_r) : (e.role == Role::Query ? udp_q : udp_r))++;
  }
  EXPECT_EQ(udp_q, kUdp);
  EXPECT_EQ(udp_r, kUdp);
  EXPECT_EQ(tcp_q, 1);
  EXPECT_EQ(tcp_r, 1);
  EXPECT_EQ(r->skipped(), 0u) << r->describe();
  EXPECT_NE(r->describe().find("EN10MB"), std::string::npos) << r->describe();
}

}  // namespace
}  // namespace hg::rehearse
