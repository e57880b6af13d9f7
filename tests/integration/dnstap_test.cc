// --dnstap, proven by readers nobody here wrote: hourglassd records to a Frame Streams file
// (or to fstrm_capture over a unix socket), and `dnstap-ldns -r` and `kdig -G` read it back.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/integration/daemon_fixture.h"
#include "tests/support/child.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::Child;
using test::eventually;
using test::FakeRecord;
using test::FakeReply;

std::string run(const std::string& cmd) {
  return run_command(cmd).output;
}

// One line of `dnstap-ldns -r`: "DATE TIME CQ 127.0.0.1 UDP 56b "name." IN A".
struct TapLine {
  std::string kind;  // CQ, CR, FQ, FR, ...
  std::string address;
  std::string protocol;
  std::string name;
  std::string qtype;
};

std::vector<TapLine> read_with_dnstap_ldns(const std::string& path) {
  std::vector<TapLine> out;
  std::istringstream in(run("dnstap-ldns -r '" + path + "'"));
  static const std::regex re(R"re(^\S+ \S+ (\w\w) (\S+) (\S+) \d+b "([^"]*)" IN (\S+)$)re");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) out.push_back({m[1], m[2], m[3], m[4], m[5]});
  }
  return out;
}

// Counts of "KIND name qtype protocol" over the lines that name one of `names`.
std::map<std::string, int> tally(const std::vector<TapLine>& lines) {
  std::map<std::string, int> t;
  for (const auto& l : lines)
    ++t[l.kind + " " + l.name + " " + l.qtype + " " + l.protocol + " " + l.address];
  return t;
}

uint16_t local_port(int fd) {
  sockaddr_in sin{};
  socklen_t len = sizeof sin;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len);
  return ntohs(sin.sin_port);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Dnstap : public DaemonTest {
 protected:
  void stop_daemon() {
    ASSERT_TRUE(daemon_->signal(SIGTERM));
    const auto code = daemon_->wait_exit(Millis{15000});
    ASSERT_TRUE(code.has_value()) << daemon_->output();
    EXPECT_EQ(*code, 0) << daemon_->output();
  }
  test::TempDir dir_{"hg-dnstap"};
};

TEST_F(Dnstap, FileHoldsEveryClientQueryAndUpstreamTrafficForMissesOnly) {
  const std::string a = random_label() + ".tap.test";
  const std::string b = random_label() + ".tap.test";
  const std::string c = random_label() + ".tap.test";
  upstream_.on(a, FakeReply::records({FakeRecord::a(a, 300, "192.0.2.10")}));
  upstream_.on(b, FakeReply::records({FakeRecord::aaaa(b, 300, "2001:db8::b")}));
  upstream_.on(c, FakeReply::nxdomain(FakeRecord::soa("tap.test", 300, 60)));
  const std::string file = dir_.file("hourglass.dnstap");
  start({"--dnstap", file, "--dnstap-identity", "tap-test-1"});

  // a: from code over UDP, a miss then a hit, from a socket whose port we know.
  UdpClient client;
  const uint16_t client_port = local_port(client.fd());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client.send(port(), build_query({.name = a})));
    auto got = client.receive(Millis{4000});
    ASSERT_TRUE(got.has_value());
  }
  // b: over TCP, a miss then a hit.
  for (int i = 0; i < 2; ++i) {
    auto ans = tcp_query(port(), build_query({.name = b, .type = 28}));
    ASSERT_TRUE(ans.has_value());
    EXPECT_EQ(ans->rcode(), wire::RCode::NoError);
  }
  // c: with dig, NXDOMAIN, a miss then a negative-cache hit.
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(dig(port(), c + " A").status(), "NXDOMAIN");
  EXPECT_EQ(upstream_.queries(a), 1u);
  EXPECT_EQ(upstream_.queries(b), 1u);
  EXPECT_EQ(upstream_.queries(c), 1u);
  stop_daemon();
  EXPECT_FALSE(daemon_->lines_with("dnstap closed").empty()) << daemon_->output();

  const auto lines = read_with_dnstap_ldns(file);
  auto t = tally(lines);
  const std::string up = "127.0.0.1";  // the fake upstream's address
  // Every client query and response, with transport and client address.
  EXPECT_EQ((t["CQ " + a + ". A UDP 127.0.0.1"]), 2);
  EXPECT_EQ((t["CR " + a + ". A UDP 127.0.0.1"]), 2);
  EXPECT_EQ((t["CQ " + b + ". AAAA TCP 127.0.0.1"]), 2);
  EXPECT_EQ((t["CR " + b + ". AAAA TCP 127.0.0.1"]), 2);
  EXPECT_EQ((t["CQ " + c + ". A UDP 127.0.0.1"]), 2);
  EXPECT_EQ((t["CR " + c + ". A UDP 127.0.0.1"]), 2);
  // Upstream traffic for the misses only: one query and one response per name.
  int fq = 0;
  int fr = 0;
  for (const auto& l : lines) {
    if (l.name != a + "." && l.name != b + "." && l.name != c + ".") continue;
    if (l.kind == "FQ") ++fq;
    if (l.kind == "FR") ++fr;
    if (l.kind == "FQ" || l.kind == "FR") {
      EXPECT_EQ(l.address, up) << l.name;
    }
  }
  EXPECT_EQ(fq, 3);
  EXPECT_EQ(fr, 3);
  // Nothing else about these names (no other message types).
  int ours = 0;
  for (const auto& l : lines)
    if (l.name == a + "." || l.name == b + "." || l.name == c + ".") ++ours;
  EXPECT_EQ(ours, 12 + 6);

  // The YAML view: identity, version, and the client's port.
  const std::string yaml = run("dnstap-ldns -y -r '" + file + "'");
  EXPECT_NE(yaml.find("identity: \"tap-test-1\""), std::string::npos);
  EXPECT_NE(yaml.find("version: \"hourglass "), std::string::npos);
  EXPECT_NE(yaml.find("query_port: " + std::to_string(client_port)), std::string::npos);
  EXPECT_NE(yaml.find("type: FORWARDER_RESPONSE"), std::string::npos);
  EXPECT_NE(yaml.find("response_port: " + std::to_string(upstream_.port())), std::string::npos);

  // kdig reads the responses as the clients got them: the address, the NXDOMAIN, the port.
  const std::string kd = run("kdig -G '" + file + "'");
  EXPECT_NE(kd.find("192.0.2.10"), std::string::npos) << kd;
  EXPECT_NE(kd.find("2001:db8::b"), std::string::npos) << kd;
  EXPECT_NE(kd.find("NXDOMAIN"), std::string::npos) << kd;
  EXPECT_NE(kd.find("127.0.0.1@" + std::to_string(client_port) + "(UDP)"), std::string::npos) << kd;
  EXPECT_NE(kd.find("(TCP)"), std::string::npos) << kd;
}

// A worker hands its frames to the I/O thread at the end of each loop iteration, and the I/O
// thread writes at least every second: a query shows up in the file while the daemon runs,
// not only when it stops.
TEST_F(Dnstap, FramesReachTheFileWhileTheDaemonRuns) {
  const std::string label = random_label();
  const std::string name = label + ".tap.test";
  upstream_.on(name, FakeReply::records({FakeRecord::a(name, 300, "192.0.2.11")}));
  const std::string file = dir_.file("live.dnstap");
  start({"--dnstap", file});
  EXPECT_EQ(dig(port(), name + " A").status(), "NOERROR");
  // The name as it is on the wire: its first label, preceded by the label's length.
  std::string wire(1, static_cast<char>(label.size()));
  wire += label;
  auto count = [&] {
    const std::string bytes = slurp(file);
    int n = 0;
    for (auto p = bytes.find(wire); p != std::string::npos; p = bytes.find(wire, p + 1))
      ++n;
    return n;
  };
  // CLIENT_QUERY, FORWARDER_QUERY, FORWARDER_RESPONSE, CLIENT_RESPONSE: each holds the name
  // (an answer twice: question and record, unless compressed).
  EXPECT_TRUE(eventually([&] { return count() >= 4; })) << count();
  EXPECT_TRUE(daemon_->running());
  stop_daemon();
}

TEST_F(Dnstap, ErrorAnswersAreRecordedAsSent) {
  const std::string fail = random_label() + ".tap.test";
  upstream_.on(fail, FakeReply::servfail());
  const std::string file = dir_.file("errors.dnstap");
  start({"--dnstap", file, "--upstream-timeout", "1000", "--client-timeout", "800"});
  EXPECT_EQ(dig(port(), fail + " A").status(), "SERVFAIL");
  stop_daemon();
  auto t = tally(read_with_dnstap_ldns(file));
  EXPECT_EQ((t["CQ " + fail + ". A UDP 127.0.0.1"]), 1);
  EXPECT_EQ((t["CR " + fail + ". A UDP 127.0.0.1"]), 1);
  EXPECT_NE(run("kdig -G '" + file + "'").find("SERVFAIL"), std::string::npos);
}

TEST_F(Dnstap, UnixSocketToFstrmCapture) {
  const std::string name = random_label() + ".tap.test";
  upstream_.on(name, FakeReply::records({FakeRecord::a(name, 300, "192.0.2.20")}));
  const std::string sock = dir_.file("tap.sock");
  const std::string out = dir_.file("captured.dnstap");
  const std::string log = dir_.file("capture.log");
  Child capture({"fstrm_capture", "-t", "protobuf:dnstap.Dnstap", "-u", sock, "-w", out, "-ddd"},
                log);
  struct stat st = {};
  ASSERT_TRUE(eventually([&] { return ::stat(sock.c_str(), &st) == 0; })) << slurp(log);
  start({"--dnstap", "unix:" + sock});
  ASSERT_TRUE(eventually([&] { return slurp(log).find("accepted") != std::string::npos; }))
      << slurp(log);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(dig(port(), name + " A").status(), "NOERROR");
  stop_daemon();
  ASSERT_TRUE(capture.stop(SIGTERM, Millis{10000})) << slurp(log);
  auto t = tally(read_with_dnstap_ldns(out));
  EXPECT_EQ((t["CQ " + name + ". A UDP 127.0.0.1"]), 3) << slurp(log);
  EXPECT_EQ((t["CR " + name + ". A UDP 127.0.0.1"]), 3);
  EXPECT_EQ((t["FQ " + name + ". A ? 127.0.0.1"]), 1);
  EXPECT_EQ((t["FR " + name + ". A ? 127.0.0.1"]), 1);
}

// A reader that stops reading: the socket buffer and then the queue fill, and from then on
// dnstap messages are dropped and counted while every query is still answered.
TEST_F(Dnstap, StalledReaderDropsMessagesNotAnswers) {
  const std::string name = random_label() + ".tap.test";
  upstream_.on(name, FakeReply::records({FakeRecord::a(name, 300, "192.0.2.30")}));
  const std::string sock = dir_.file("stall.sock");
  const std::string log = dir_.file("stall.log");
  const std::string metrics_file = dir_.file("metrics.txt");
  Child capture({"fstrm_capture", "-t", "protobuf:dnstap.Dnstap", "-u", sock, "-w",
                 dir_.file("stall.dnstap"), "-ddd"},
                log);
  struct stat st = {};
  ASSERT_TRUE(eventually([&] { return ::stat(sock.c_str(), &st) == 0; })) << slurp(log);
  const std::string ctl_sock = dir_.file("ctl.sock");
  start({"--dnstap", "unix:" + sock, "--control", ctl_sock});
  ASSERT_TRUE(eventually([&] { return slurp(log).find("accepted") != std::string::npos; }));
  capture.signal(SIGSTOP);

  auto dropped = [&] {
    const std::string s = ctl(ctl_sock, "stats").output;
    const auto p = s.find("dnstap.dropped ");
    return p == std::string::npos ? -1L : std::stol(s.substr(p + 15));
  };
  UdpClient client;
  const Bytes q = build_query({.name = name});
  int answered = 0;
  int sent = 0;
  long drops = 0;
  // Each hit is two messages; the queue holds 2048 batches and the socket some more. Bounded: at
  // most 60000 queries, checking the counter every 2000.
  while (sent < 60000 && drops <= 0) {
    ASSERT_TRUE(client.send(port(), q));
    ++sent;
    if (client.receive(Millis{4000})) ++answered;
    if (sent % 2000 == 0) drops = dropped();
  }
  EXPECT_GT(drops, 0) << "after " << sent << " queries";
  std::printf("stalled reader: %d queries, %d answered, %ld dnstap messages dropped\n", sent,
              answered, drops);
  EXPECT_EQ(answered, sent);
  capture.signal(SIGCONT);
  stop_daemon();
  EXPECT_FALSE(daemon_->lines_with("dropped").empty());
}

// Two workers, each with its own queue: every query from many client sockets is recorded.
TEST_F(Dnstap, EveryWorkerRecords) {
  const std::string name = random_label() + ".tap.test";
  upstream_.on(name, FakeReply::records({FakeRecord::a(name, 300, "192.0.2.50")}));
  const std::string file = dir_.file("threads.dnstap");
  start({"--dnstap", file, "--threads", "2"});
  constexpr int kQueries = 40;
  int answered = 0;
  for (int i = 0; i < kQueries; ++i) {
    UdpClient client;  // a new source port each time, so SO_REUSEPORT spreads them
    ASSERT_TRUE(client.send(port(), build_query({.name = name})));
    if (client.receive(Millis{4000})) ++answered;
  }
  EXPECT_EQ(answered, kQueries);
  stop_daemon();
  auto t = tally(read_with_dnstap_ldns(file));
  EXPECT_EQ((t["CQ " + name + ". A UDP 127.0.0.1"]), kQueries);
  EXPECT_EQ((t["CR " + name + ". A UDP 127.0.0.1"]), kQueries);
  EXPECT_EQ((t["FQ " + name + ". A ? 127.0.0.1"]), 1);
}

// The times of one message as `dnstap-ldns -y` prints them ("" when absent), and whether
// its text names `name`.
struct TapTimes {
  std::string type, query_time, response_time;
  bool names = false;
};

std::vector<TapTimes> read_times(const std::string& path, const std::string& name) {
  std::vector<TapTimes> out;
  std::istringstream in(run("dnstap-ldns -y -r '" + path + "'"));
  std::string line;
  TapTimes cur;
  auto value = [](const std::string& l) { return l.substr(l.find(": ") + 2); };
  while (std::getline(in, line)) {
    if (line == "---") {
      out.push_back(cur);
      cur = TapTimes{};
    } else if (line.starts_with("  type: ")) {
      cur.type = value(line);
    } else if (line.starts_with("  query_time: ")) {
      cur.query_time = value(line);
    } else if (line.starts_with("  response_time: ")) {
      cur.response_time = value(line);
    } else if (line.find(name) != std::string::npos) {
      cur.names = true;
    }
  }
  return out;
}

// A hit is answered while its query is handled: its CLIENT_RESPONSE carries the query's
// clock reading as the response time too. A miss's answer comes later, with its own.
TEST_F(Dnstap, HitResponseTimeIsItsQueryTimeAMissHasItsOwn) {
  const std::string name = random_label() + ".tap.test";
  FakeReply reply = FakeReply::records({FakeRecord::a(name, 300, "192.0.2.60")});
  reply.delay = Millis{30};  // the miss's answer comes measurably later
  upstream_.on(name, reply);
  const std::string file = dir_.file("times.dnstap");
  start({"--dnstap", file});
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(dig(port(), name + " A").status(), "NOERROR");
  stop_daemon();
  std::vector<TapTimes> responses;
  for (const auto& t : read_times(file, name))
    if (t.names && t.type == "CLIENT_RESPONSE") responses.push_back(t);
  ASSERT_EQ(responses.size(), 2u);
  // The miss: the query's time, then a later response time.
  EXPECT_FALSE(responses[0].query_time.empty());
  EXPECT_LT(responses[0].query_time, responses[0].response_time);  // same format: text order
  // The hit: one reading for both.
  EXPECT_FALSE(responses[1].query_time.empty());
  EXPECT_EQ(responses[1].query_time, responses[1].response_time);
}

TEST(DnstapFlags, BadValueIsOneLineAndExit2) {
  auto d = Daemon::start({"--upstream", "127.0.0.1:9", "--dnstap", "/nonexistent-hg/x.dnstap"});
  EXPECT_FALSE(d->ready());
  EXPECT_EQ(d->wait_exit(Millis{10000}), std::optional<int>(2));
  EXPECT_NE(d->output().find("--dnstap \"/nonexistent-hg/x.dnstap\": the directory "
                             "\"/nonexistent-hg\" does not exist"),
            std::string::npos)
      << d->output();
  auto e = Daemon::start({"--upstream", "127.0.0.1:9", "--dnstap-identity", ""});
  EXPECT_EQ(e->wait_exit(Millis{10000}), std::optional<int>(2));
  EXPECT_NE(e->output().find("--dnstap-identity \"\": expected a name of 1 to 255 bytes"),
            std::string::npos)
      << e->output();
}

TEST_F(Dnstap, SighupReopensARotatedFileAndNeverTruncates) {
  const std::string before = random_label() + ".tap.test";
  const std::string mid = random_label() + ".tap.test";
  const std::string after = random_label() + ".tap.test";
  upstream_.on(mid, FakeReply::records({FakeRecord::a(mid, 300, "192.0.2.43")}));
  upstream_.on(before, FakeReply::records({FakeRecord::a(before, 300, "192.0.2.41")}));
  upstream_.on(after, FakeReply::records({FakeRecord::a(after, 300, "192.0.2.42")}));
  const std::string file = dir_.file("rotating.dnstap");
  const std::string cfg = dir_.file("hg.toml");
  std::ofstream(cfg) << "dnstap = \"" << file << "\"\n";
  start({"--config", cfg});
  EXPECT_EQ(dig(port(), before + " A").status(), "NOERROR");

  // A SIGHUP with nothing rotated keeps writing the same file (no truncation).
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  ASSERT_TRUE(daemon_->wait_for_output("SIGHUP: upstreams", Millis{10000}));
  EXPECT_TRUE(daemon_->lines_with("dnstap to").size() == 1) << daemon_->output();
  EXPECT_EQ(dig(port(), mid + " A").status(), "NOERROR");

  // Rotate: rename the file away, SIGHUP, and the daemon starts a new one.
  const std::string old = dir_.file("rotating.dnstap.1");
  ASSERT_EQ(std::rename(file.c_str(), old.c_str()), 0);
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  ASSERT_TRUE(daemon_->wait_for_output("(reopened)", Millis{10000})) << daemon_->output();
  EXPECT_EQ(dig(port(), after + " A").status(), "NOERROR");
  stop_daemon();

  auto t_old = tally(read_with_dnstap_ldns(old));
  auto t_new = tally(read_with_dnstap_ldns(file));
  EXPECT_EQ(t_old.count("CQ " + before + ". A UDP 127.0.0.1"), 1u);
  EXPECT_EQ(t_old.count("CQ " + mid + ". A UDP 127.0.0.1"), 1u);  // not truncated
  EXPECT_EQ(t_old.count("CQ " + after + ". A UDP 127.0.0.1"), 0u);
  EXPECT_EQ(t_new.count("CQ " + after + ". A UDP 127.0.0.1"), 1u);
  EXPECT_EQ(t_new.count("CQ " + before + ". A UDP 127.0.0.1"), 0u);
}

}  // namespace
}  // namespace hg::integration
