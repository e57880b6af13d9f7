// DNS over TLS to the upstream (resolver/upstream/dot.h, docs/dot.md) against a real DoT server:
// Unbound from Debian with tls-service-key/tls-service-pem on loopback, its certificates
// made by the test with the openssl command (a CA, and server certificates for the right
// name, the wrong name, expired, and from a CA the daemon does not know).
//
// What is shown: answers are right; 1,000 queries cost one handshake; a restarted Unbound
// is reconnected to without a lost query (and the session is resumed after an idle close);
// a certificate that does not verify, or a key that matches no --tls-pin, is refused and
// nothing reaches the server at all, in clear or otherwise (Unbound's forward target sees
// no query, and a packet capture sees no UDP and no other port); a server that stalls
// mid-stream (openssl s_server: handshake, then silence) stalls no other server; and a
// capture of the DoT port holds no query name in clear.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "dnstap/codec.h"
#include "tests/dnstap_reference/reference_decoder.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/child.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/ports.h"
#include "tests/support/requires.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using Clock = std::chrono::steady_clock;
using test::Child;
using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::free_port;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool sh(const std::string& cmd) {
  const auto r = run_command(cmd, 30);
  if (r.exit_code != 0) ADD_FAILURE() << cmd << "\n" << r.output;
  return r.exit_code == 0;
}

// `now + offset` as OpenSSL's certificate dates want it: YYYYMMDDHHMMSSZ, UTC.
std::string utc_asn1(std::chrono::seconds offset) {
  const std::time_t t =
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + offset);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d%H%M%SZ", &tm);
  return buf;
}

// The certificates, made once for the whole suite.
struct Pki {
  std::string dir;
  std::string ca;   // the CA the daemon is given with --tls-ca-file
  std::string pin;  // sha256/BASE64 of the server key
  std::string key(const std::string& which) const { return dir + "/" + which + ".key"; }
  std::string pem(const std::string& which) const { return dir + "/" + which + ".pem"; }
};

const Pki* pki();

bool make_pki(Pki& p) {
  char tmpl[] = "/tmp/hg-dot-pki-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return false;
  p.dir = tmpl;
  p.ca = p.dir + "/ca.pem";
  const std::string d = p.dir + "/";
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
  bool ok = sh("openssl req -x509 " + ec + " -keyout " + d + "ca.key -out " + d +
               "ca.pem -days 2 -subj /CN=hourglass-test-CA") &&
            sh("openssl req -x509 " + ec + " -keyout " + d + "other-ca.key -out " + d +
               "other-ca.pem -days 2 -subj /CN=unknown-CA");
  // server: dns.test by the CA; wrong: other.test by the CA; expired: dns.test, valid from two
  // days ago to one day ago; unknown: dns.test by a CA the daemon does not trust.
  struct Cert {
    const char* name;
    const char* cn;
    const char* ca;
  };
  for (const Cert c :
       {Cert{"server", "dns.test", "ca"}, Cert{"wrong", "other.test", "ca"},
        Cert{"expired", "dns.test", "ca"}, Cert{"unknown", "dns.test", "other-ca"}}) {
    const std::string n = d + c.name;
    const std::string ca = d + c.ca;
    write_file(n + ".ext", std::string("subjectAltName=DNS:") + c.cn + "\n");
    ok = ok &&
         sh("openssl req " + ec + " -keyout " + n + ".key -out " + n + ".csr -subj /CN=" + c.cn);
    if (std::string_view(c.name) != "expired") {
      ok = ok && sh("openssl x509 -req -in " + n + ".csr -CA " + ca + ".pem -CAkey " + ca +
                    ".key -CAcreateserial -CAserial " + d + "serial -out " + n +
                    ".pem -days 1 -extfile " + n + ".ext");
      continue;
    }
    // `openssl x509 -days -1` made an expired certificate up to OpenSSL 3.0 (Debian 12); 3.5
    // (Debian 13) refuses an end before the start. `openssl ca` takes both dates in each.
    write_file(d + "ca.cnf", "[ca]\ndefault_ca = test\n[test]\ndatabase = " + d +
                                 "index.txt\nnew_certs_dir = " + d + "\ncertificate = " + ca +
                                 ".pem\nprivate_key = " + ca + ".key\nserial = " + d +
                                 "ca-serial\ndefault_md = sha256\npolicy = any\n"
                                 "[any]\ncommonName = supplied\n");
    write_file(d + "index.txt", "");
    write_file(d + "ca-serial", "1000\n");
    ok = ok && sh("openssl ca -batch -notext -config " + d + "ca.cnf -in " + n + ".csr -out " + n +
                  ".pem -startdate " + utc_asn1(std::chrono::hours{-48}) + " -enddate " +
                  utc_asn1(std::chrono::hours{-24}) + " -extfile " + n + ".ext");
  }
  if (!ok) return false;
  const auto pin = run_command("openssl x509 -in " + p.pem("server") +
                                   " -pubkey -noout | openssl pkey -pubin -outform der | openssl "
                                   "dgst -sha256 -binary | base64",
                               30, test::Stderr::Discard);
  if (pin.exit_code != 0) return false;
  p.pin = "sha256/" + pin.output.substr(0, pin.output.find('\n'));
  return true;
}

// Unbound serving DNS over TLS on ip:tls_port (and plain DNS on ip:plain_port) with the
// certificate `cert` of the Pki. Names under lz.test. all answer 192.0.2.1 (a redirect
// zone); names under fw.test. are forwarded to `forward_to` (a FakeUpstream), if given.
class Unbound {
 public:
  Unbound(const char* ip, std::string cert, uint16_t forward_to = 0)
      : ip_(ip), cert_(std::move(cert)), forward_to_(forward_to) {
    tls_port_ = free_port(ip);
    plain_port_ = free_port(ip);
  }
  ~Unbound() { child_.reset(); }
  // Starts it and waits (bounded) until its plain port answers; false with the log if not.
  // The ports were free when chosen, but another test's program may have bound one since:
  // the first start then moves to two new ports (3 tries at most); a restart keeps its ports.
  bool start(const std::string& extra = "") {
    for (int attempt = 0;; ++attempt) {
      if (launch(extra)) {
        started_ = true;
        return true;
      }
      if (started_ || attempt == 2 || log().find("already in use") == std::string::npos) {
        ADD_FAILURE() << "unbound did not start: " << log();
        return false;
      }
      tls_port_ = free_port(ip_.c_str());
      plain_port_ = free_port(ip_.c_str());
    }
  }
  void stop() { child_.reset(); }
  std::string spec(const std::string& auth = "dns.test") const {
    return "tls://" + ip_ + ":" + std::to_string(tls_port_) + (auth.empty() ? "" : "#" + auth);
  }
  uint16_t tls_port() const { return tls_port_; }
  uint16_t plain_port() const { return plain_port_; }
  std::string log() const { return read_file(log_); }

 private:
  bool launch(const std::string& extra) {
    const std::string conf = dir_.file("unbound.conf");
    std::string c =
        "server:\n  interface: " + ip_ + "@" + std::to_string(tls_port_) + "\n  interface: " + ip_ +
        "@" + std::to_string(plain_port_) + "\n  tls-port: " + std::to_string(tls_port_) +
        "\n  tls-service-key: \"" + pki()->key(cert_) + "\"\n  tls-service-pem: \"" +
        pki()->pem(cert_) +
        "\"\n  do-daemonize: no\n  username: \"\"\n  chroot: \"\"\n  directory: \"" + dir_.path() +
        "\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  verbosity: 1\n"
        "  num-threads: 1\n  do-ip6: no\n  do-not-query-localhost: no\n"
        "  access-control: 127.0.0.0/8 allow\n  module-config: \"iterator\"\n"
        "  so-reuseport: no\n  incoming-num-tcp: 64\n  local-zone: \"test.\" nodefault\n"
        "  local-zone: \"lz.test.\" redirect\n"
        "  local-data: \"lz.test. 300 IN A 192.0.2.1\"\n" +
        extra + "remote-control:\n  control-enable: no\n";
    if (forward_to_ != 0)
      c += "forward-zone:\n  name: \"fw.test.\"\n  forward-addr: 127.0.0.1@" +
           std::to_string(forward_to_) + "\n";
    write_file(conf, c);
    log_ = dir_.file("unbound.log");
    child_ = std::make_unique<Child>(std::vector<std::string>{"unbound", "-d", "-c", conf}, log_);
    const bool up = eventually([&] {
      if (!child_->running()) return true;
      const auto r = run_command("kdig @" + ip_ + " -p " + std::to_string(plain_port_) +
                                     " +timeout=1 +retry=0 ready.lz.test A",
                                 5);
      return r.contains("status: NOERROR");
    });
    if (up && child_->running()) return true;
    child_.reset();
    return false;
  }

  std::string ip_, cert_;
  test::TempDir dir_{"hg-dot-unbound"};
  std::string log_;
  uint16_t forward_to_ = 0, tls_port_ = 0, plain_port_ = 0;
  bool started_ = false;  // once: a restart keeps the ports
  std::unique_ptr<Child> child_;
};

// tcpdump -i lo -w FILE FILTER, for the checks of what went over the wire.
class Capture {
 public:
  explicit Capture(const std::string& filter) {
    file_ = dir_.file("lo.pcap");
    log_ = dir_.file("tcpdump.log");
    child_ = std::make_unique<Child>(
        std::vector<std::string>{"tcpdump", "-i", "lo", "-n", "--immediate-mode", "-U", "-Z",
                                 "root", "-s", "0", "-w", file_, filter},
        log_);
    ready_ = eventually([&] { return read_file(log_).find("listening on") != std::string::npos; },
                        Millis{5000}) &&
             child_->running();
  }
  ~Capture() { child_.reset(); }
  bool ready() const { return ready_; }
  std::string why() const { return read_file(log_); }

  struct Packet {
    uint8_t proto = 0;  // 6 TCP, 17 UDP
    uint16_t sport = 0, dport = 0;
    std::string payload;
  };
  // Stops tcpdump (SIGINT flushes the file) and reads the IPv4 packets it saw.
  std::vector<Packet> finish() {
    child_->stop(SIGINT);  // -U wrote each packet as it came; SIGINT ends it cleanly
    std::vector<Packet> out;
    const std::string f = read_file(file_);
    if (f.size() < 24) return out;
    auto u32 = [&](std::size_t at) {
      uint32_t v;
      std::memcpy(&v, f.data() + at, 4);
      return v;
    };
    const uint32_t linktype = u32(20);
    std::size_t at = 24;
    while (at + 16 <= f.size()) {
      const uint32_t incl = u32(at + 8);
      at += 16;
      if (at + incl > f.size()) break;
      std::string_view p(f.data() + at, incl);
      at += incl;
      std::size_t l2 = linktype == 1 ? 14 : linktype == 113 ? 16 : 0;  // EN10MB, LINUX_SLL
      if (p.size() < l2 + 20) continue;
      p.remove_prefix(l2);
      if ((static_cast<uint8_t>(p[0]) >> 4) != 4) continue;
      const std::size_t ihl = (static_cast<uint8_t>(p[0]) & 0x0f) * 4u;
      Packet k;
      k.proto = static_cast<uint8_t>(p[9]);
      if (p.size() < ihl + 8) continue;
      auto be16 = [&](std::size_t i) {
        return base::load_u16(reinterpret_cast<const uint8_t*>(p.data() + i));
      };
      k.sport = be16(ihl);
      k.dport = be16(ihl + 2);
      std::size_t hdr = ihl + 8;
      if (k.proto == 6) {
        if (p.size() < ihl + 20) continue;
        hdr = ihl + (static_cast<uint8_t>(p[ihl + 12]) >> 4) * 4u;
      }
      if (hdr <= p.size()) k.payload = std::string(p.substr(hdr));
      out.push_back(std::move(k));
    }
    return out;
  }

 private:
  test::TempDir dir_{"hg-dot-pcap"};
  std::string file_, log_;
  std::unique_ptr<Child> child_;
  bool ready_ = false;
};

// The test certificates, made on first use (so that only the DoT tests pay for the openssl
// runs, not every test process of this binary) and removed when the process exits; nullptr
// if openssl could not make them.
const Pki* pki() {
  struct Holder {
    std::optional<Pki> made;
    Holder() {
      Pki p;
      if (make_pki(p)) made = std::move(p);
    }
    ~Holder() {
      std::error_code ec;
      if (made) std::filesystem::remove_all(made->dir, ec);
    }
  };
  static const Holder holder;
  return holder.made ? &*holder.made : nullptr;
}

// The value of `key=` on the upstreams line of `server` ("127.0.0.1:853").
int64_t upstream_value(const std::string& text, const std::string& server, const std::string& key) {
  const auto fields = upstream_line(text, server);
  const auto it = fields.find(key);
  return it == fields.end() ? -1 : std::stoll(it->second);
}

bool contains_ci(const std::string& hay, const std::string& needle) {
  auto lower = [](std::string s) {
    for (char& c : s)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  return lower(hay).find(lower(needle)) != std::string::npos;
}

class Dot : public ::testing::Test {
 protected:
  // openssl s_server on `port` with the suite's certificate for dns.test: it completes the
  // handshake, takes the queries and never answers (a server stalled mid-stream). Null if it
  // does not accept connections within the bound.
  std::unique_ptr<Child> start_stalled_server(uint16_t port) {
    auto c = std::make_unique<Child>(
        std::vector<std::string>{"openssl", "s_server", "-quiet", "-accept",
                                 "127.0.0.1:" + std::to_string(port), "-cert", pki()->pem("server"),
                                 "-key", pki()->key("server")},
        dir_.file("s_server.log"), Child::Options{.open_stdin = true});
    const bool up = eventually([&] {
      return run_command("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) + "'", 5)
                 .exit_code == 0;
    });
    return up ? std::move(c) : nullptr;
  }
  void SetUp() override {
    // A failure, not a skip: making the certificates recorded why it failed, and a test that
    // has failed is not skipped, so a skip here would run the body on a null Pki.
    if (pki() == nullptr) FAIL() << "the openssl command could not make the certificates";
    if (run_command("which unbound", 5).exit_code != 0)
      HG_SKIP_UNLESS_CI("unbound is not installed");
    socket_ = dir_.file("control");
  }
  void TearDown() override { daemon_.reset(); }
  void start(std::vector<std::string> args) {
    args.insert(args.end(), {"--control", socket_, "--tls-ca-file", pki()->ca});
    daemon_ = Daemon::start(args);
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  }
  std::string upstreams() const { return ctl(socket_, "upstreams").output; }
  std::optional<Answer> ask(const std::string& name, uint16_t type = 1) {
    return udp_query(daemon_->port(), build_query({.name = name, .type = type}), Millis{6000});
  }
  // Sends every name with up to `window` queries outstanding; returns how many were answered
  // NOERROR with an answer record.
  std::size_t ask_all(const std::vector<std::string>& names, std::size_t window = 50) {
    UdpClient c;
    std::map<uint16_t, std::string> open;
    std::size_t next = 0, good = 0;
    uint16_t id = 1;
    const auto end = Clock::now() + std::chrono::seconds{60};
    while ((next < names.size() || !open.empty()) && Clock::now() < end) {
      while (next < names.size() && open.size() < window) {
        const uint16_t qid = id++;
        c.send(daemon_->port(), build_query({.name = names[next], .id = qid}));
        open[qid] = names[next++];
      }
      auto r = c.receive(Millis{6000});
      if (!r) break;
      auto a = parse_answer(*r);
      if (!a || open.erase(a->id()) == 0) continue;
      if (a->rcode() == wire::RCode::NoError && !a->msg.answer.empty()) ++good;
    }
    return good;
  }

  test::TempDir dir_{"hg-dot"};
  std::string socket_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(Dot, AnswersComeThroughUnboundOverTlsWithTheRightRecords) {
  FakeUpstream fake;
  fake.on("www.fw.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.77")}));
  Unbound ub("127.0.0.1", "server", fake.port());
  ASSERT_TRUE(ub.start());
  start({"--upstream", ub.spec()});
  auto a = ask("host.lz.test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), wire::RCode::NoError) << a->text();
  EXPECT_NE(a->text().find("192.0.2.1"), std::string::npos) << a->text();
  // Through Unbound to its forward target and back.
  const DigResult d = dig(daemon_->port(), "www.fw.test A");
  EXPECT_EQ(d.status(), "NOERROR") << d.output;
  EXPECT_TRUE(d.contains("192.0.2.77")) << d.output;
  EXPECT_EQ(fake.queries("www.fw.test"), 1u);
  // NXDOMAIN comes through as it is.
  fake.on("gone.fw.test", FakeReply::nxdomain(FakeRecord::soa("fw.test", 300, 60)));
  EXPECT_EQ(dig(daemon_->port(), "gone.fw.test A").status(), "NXDOMAIN");
  // Coalescing still sits above the transport: a second ask of a cached name sends nothing.
  EXPECT_TRUE(dig(daemon_->port(), "www.fw.test A").contains("192.0.2.77"));
  EXPECT_EQ(fake.queries("www.fw.test"), 1u);
  const std::string u = upstreams();
  const std::string server = "127.0.0.1:" + std::to_string(ub.tls_port());
  EXPECT_NE(u.find("transport=tls"), std::string::npos) << u;
  EXPECT_NE(u.find("0x20=off"), std::string::npos) << u;
  EXPECT_EQ(upstream_value(u, server, "tls_handshakes"), 1) << u;
  EXPECT_EQ(upstream_value(u, server, "tls_verify_failures"), 0) << u;
}

TEST_F(Dot, CoalescingAndServeStaleWorkOverTls) {
  FakeUpstream fake;
  FakeReply slow = FakeReply::records({FakeRecord::a("", 300, "192.0.2.44")});
  slow.delay = Millis{500};
  fake.on("slow.fw.test", slow);
  fake.on("short.fw.test", FakeReply::records({FakeRecord::a("", 1, "192.0.2.45")}));
  Unbound ub("127.0.0.1", "server", fake.port());
  ASSERT_TRUE(ub.start());
  start({"--upstream", ub.spec()});
  const std::string server = "127.0.0.1:" + std::to_string(ub.tls_port());
  // Twenty clients ask the same slow name at once: one query over the TLS connection.
  UdpClient c;
  for (uint16_t i = 0; i < 20; ++i)
    c.send(daemon_->port(),
           build_query({.name = "slow.fw.test", .id = static_cast<uint16_t>(100 + i)}));
  std::size_t good = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = c.receive(Millis{6000});
    if (!r) break;
    auto a = parse_answer(*r);
    if (a && a->rcode() == wire::RCode::NoError &&
        a->text().find("192.0.2.44") != std::string::npos)
      ++good;
  }
  EXPECT_EQ(good, 20u);
  EXPECT_EQ(upstream_value(upstreams(), server, "queries"), 1) << upstreams();
  // A record with TTL 1 cached, then the DoT server gone: once it has expired, the stale
  // record is served (EDE 3) instead of a SERVFAIL.
  auto first = ask("short.fw.test");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->rcode(), wire::RCode::NoError) << first->text();
  ub.stop();
  std::optional<Answer> stale;
  EXPECT_TRUE(eventually([&] {
    stale = ask("short.fw.test");
    return stale && stale->ede() == std::optional<uint16_t>(wire::ede::StaleAnswer);
  })) << (stale ? stale->text() : "no answer");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->rcode(), wire::RCode::NoError);
  EXPECT_NE(stale->text().find("192.0.2.45"), std::string::npos) << stale->text();
}

TEST_F(Dot, OneHandshakeCarriesAThousandQueries) {
  Unbound ub("127.0.0.1", "server");
  ASSERT_TRUE(ub.start());
  start({"--upstream", ub.spec()});
  std::vector<std::string> names;
  const std::string tag = random_label(6);
  for (int i = 0; i < 1000; ++i)
    names.push_back("n" + std::to_string(i) + "-" + tag + ".lz.test");
  EXPECT_EQ(ask_all(names), 1000u);
  const std::string u = upstreams();
  const std::string server = "127.0.0.1:" + std::to_string(ub.tls_port());
  EXPECT_EQ(upstream_value(u, server, "tls_handshakes"), 1) << u;
  EXPECT_EQ(upstream_value(u, server, "answers"), 1000) << u;
  EXPECT_EQ(upstream_value(u, server, "tls_reused_queries"), 999) << u;
  EXPECT_EQ(upstream_value(u, server, "tls_connection_failures"), 0) << u;
}

TEST_F(Dot, ARestartedUnboundIsReconnectedToWithoutALostQuery) {
  Unbound ub("127.0.0.1", "server");
  ASSERT_TRUE(ub.start());
  start({"--upstream", ub.spec()});
  const std::string tag = random_label(6);
  std::vector<std::string> before, after;
  for (int i = 0; i < 100; ++i) {
    before.push_back("b" + std::to_string(i) + "-" + tag + ".lz.test");
    after.push_back("a" + std::to_string(i) + "-" + tag + ".lz.test");
  }
  EXPECT_EQ(ask_all(before), 100u);
  // Unbound goes away with the connection open and comes back on the same port.
  ub.stop();
  ASSERT_TRUE(ub.start());
  // Every query after the restart is answered: the dead connection is noticed and replaced,
  // the queries written to it (if any) are written again on the new one.
  EXPECT_EQ(ask_all(after), 100u);
  const std::string u = upstreams();
  const std::string server = "127.0.0.1:" + std::to_string(ub.tls_port());
  EXPECT_EQ(upstream_value(u, server, "tls_handshakes"), 2) << u;
  EXPECT_EQ(upstream_value(u, server, "failures"), 0) << u;
  EXPECT_EQ(upstream_value(u, server, "answers"), 200) << u;
}

TEST_F(Dot, AServerThatClosesIdleConnectionsIsReconnectedWithSessionResumption) {
  // Unbound closes a TLS connection after 200 ms without queries; the next query opens a
  // new one that resumes the TLS 1.3 session (a ticket from the first connection).
  Unbound ub("127.0.0.1", "server");
  ASSERT_TRUE(ub.start("  tcp-idle-timeout: 200\n"));
  start({"--upstream", ub.spec()});
  const std::string server = "127.0.0.1:" + std::to_string(ub.tls_port());
  ASSERT_TRUE(ask("first-" + random_label(6) + ".lz.test"));
  // Wait (bounded) until Unbound has closed it: /proc/net/tcp lists no established
  // connection to its TLS port (hourglassd's side is then in CLOSE_WAIT or gone). Nothing is
  // asked meanwhile, which would keep the connection busy.
  const std::string port_hex = fmt::format(":{:04X} ", ub.tls_port());
  auto established = [&] {
    std::size_t n = 0;
    std::istringstream in(read_file("/proc/net/tcp"));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state;
      f >> slot >> local >> remote >> state;
      if ((remote + " ").ends_with(port_hex) && state == "01") ++n;  // 01: ESTABLISHED
    }
    return n;
  };
  ASSERT_TRUE(eventually([&] { return established() == 0; })) << read_file("/proc/net/tcp");
  auto a = ask("again-" + random_label(6) + ".lz.test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), wire::RCode::NoError) << a->text();
  const std::string u = upstreams();
  EXPECT_GE(upstream_value(u, server, "tls_handshakes"), 2) << u;
  EXPECT_GE(upstream_value(u, server, "tls_resumptions"), 1) << u;
  EXPECT_EQ(upstream_value(u, server, "failures"), 0) << u;
}

// A certificate that does not verify is refused: SERVFAIL with EDE 22, counted, logged once,
// and nothing reaches the server — Unbound's forward target sees no query, and a capture of
// every packet to the server's address shows only the TCP handshake traffic of its TLS port.
class DotRefused : public Dot, public ::testing::WithParamInterface<const char*> {};

TEST_P(DotRefused, CertificateIsRefusedAndNothingGoesOutInClear) {
  FakeUpstream fake;
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.9")}));
  // An address of its own per certificate (the three may run at once under ctest -j).
  const std::string param = GetParam();
  const std::string ip_text = param == "wrong"     ? "127.0.0.87"
                              : param == "expired" ? "127.0.0.97"
                                                   : "127.0.0.107";
  const char* ip = ip_text.c_str();
  Unbound ub(ip, GetParam(), fake.port());
  ASSERT_TRUE(ub.start());
  std::unique_ptr<Capture> cap = std::make_unique<Capture>("host " + ip_text);
  const bool capturing = cap->ready();
  if (!capturing) cap.reset();
  start({"--upstream", ub.spec()});
  const std::string secret = "secret" + random_label(8) + ".fw.test";
  for (int i = 0; i < 3; ++i) {
    auto a = ask(i == 0 ? secret : "s" + std::to_string(i) + "-" + secret);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), wire::RCode::ServFail) << a->text();
    EXPECT_EQ(a->ede(), std::optional<uint16_t>(22)) << a->text();
    EXPECT_NE(a->text().find("tls-auth-failed"), std::string::npos) << a->text();
  }
  EXPECT_EQ(fake.total_queries(), 0u);
  const std::string u = upstreams();
  const std::string server = std::string(ip) + ":" + std::to_string(ub.tls_port());
  EXPECT_GE(upstream_value(u, server, "tls_verify_failures"), 1) << u;
  EXPECT_EQ(upstream_value(u, server, "tls_handshakes"), 0) << u;
  EXPECT_EQ(upstream_value(u, server, "answers"), 0) << u;
  // Logged once, however many queries failed.
  EXPECT_TRUE(daemon_->wait_for_output("certificate not accepted", Millis{5000}));
  EXPECT_EQ(daemon_->lines_with("certificate not accepted").size(), 1u) << daemon_->output();
  if (!capturing) {
    GTEST_SKIP() << "tcpdump could not capture on lo here; the forward target saw no query";
  }
  const auto packets = cap->finish();
  EXPECT_FALSE(packets.empty()) << "the capture saw not even the TLS attempt";
  for (const auto& p : packets) {
    EXPECT_EQ(p.proto, 6) << "a non-TCP packet to the refused server";
    EXPECT_TRUE(p.sport == ub.tls_port() || p.dport == ub.tls_port())
        << "a packet to port " << p.dport << " of the refused server";
    EXPECT_FALSE(contains_ci(p.payload, "secret")) << "a query name went to the refused server";
  }
}

INSTANTIATE_TEST_SUITE_P(Certificates, DotRefused, ::testing::Values("wrong", "expired", "unknown"),
                         [](const auto& p) { return std::string(p.param); });

TEST_F(Dot, QueriesToAServerWhoseCertificateIsRefusedGoToTheNextServer) {
  Unbound bad("127.0.0.89", "wrong");
  Unbound good("127.0.0.1", "server");
  ASSERT_TRUE(bad.start());
  ASSERT_TRUE(good.start());
  start({"--upstream", bad.spec(), "--upstream", good.spec()});
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i)
    names.push_back("f" + std::to_string(i) + "-" + random_label(5) + ".lz.test");
  EXPECT_EQ(ask_all(names, 10), 50u);
  const std::string u = upstreams();
  const std::string bad_server = "127.0.0.89:" + std::to_string(bad.tls_port());
  const std::string good_server = "127.0.0.1:" + std::to_string(good.tls_port());
  EXPECT_GE(upstream_value(u, bad_server, "tls_verify_failures"), 1) << u;
  EXPECT_EQ(upstream_value(u, bad_server, "answers"), 0) << u;
  EXPECT_EQ(upstream_value(u, good_server, "answers"), 50) << u;
  EXPECT_EQ(upstream_value(u, good_server, "tls_handshakes"), 1) << u;
  EXPECT_TRUE(daemon_->wait_for_output("certificate not accepted", Millis{5000}));
  EXPECT_EQ(daemon_->lines_with("certificate not accepted").size(), 1u) << daemon_->output();
}

TEST_F(Dot, DnstapRecordsTheForwarderMessagesAsDot) {
  // Neither dnstap-ldns nor this dnstap-read knows socket protocol 3 (DOT): the frames are
  // read with protobuf-c's unpacker generated from dnstap.proto
  // (tests/dnstap_reference/reference_decoder.h).
  Unbound ub("127.0.0.1", "server");
  ASSERT_TRUE(ub.start());
  const std::string tap = dir_.file("tap.fstrm");
  start({"--upstream", ub.spec(), "--dnstap", tap});
  ASSERT_TRUE(ask("tapped-" + random_label(6) + ".lz.test"));
  ASSERT_TRUE(daemon_->signal(SIGTERM));
  ASSERT_TRUE(daemon_->wait_exit(Millis{15000}).has_value());
  // Frame Streams: each frame is a 4-byte big-endian length and the frame; 0 escapes a
  // control frame (its own length follows).
  const std::string f = read_file(tap);
  std::size_t at = 0, forwarder = 0, dot = 0, client = 0;
  auto be32 = [&](std::size_t i) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(f[i])) << 24) |
           (static_cast<uint32_t>(static_cast<uint8_t>(f[i + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(f[i + 2])) << 8) |
           static_cast<uint32_t>(static_cast<uint8_t>(f[i + 3]));
  };
  dnstap::ReferenceDecoder dec;
  while (at + 4 <= f.size()) {
    uint32_t len = be32(at);
    at += 4;
    if (len == 0) {  // control frame
      if (at + 4 > f.size()) break;
      at += 4 + be32(at);
      continue;
    }
    if (at + len > f.size()) break;
    dnstap::Message m;
    const auto frame =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(f.data()) + at, len);
    at += len;
    if (dec.decode(frame, m) != dnstap::DecodeStatus::Ok) continue;
    if (m.type == dnstap::MessageType::ForwarderQuery ||
        m.type == dnstap::MessageType::ForwarderResponse) {
      ++forwarder;
      if (m.protocol == dnstap::Protocol::Dot) ++dot;
    } else if (m.protocol == dnstap::Protocol::Udp) {
      ++client;
    }
  }
  EXPECT_EQ(forwarder, 2u);
  EXPECT_EQ(dot, 2u);
  EXPECT_GE(client, 2u);  // the client side stays UDP (the readiness probe is there too)
}

TEST_F(Dot, AKeyThatMatchesNoPinIsRefusedAndTheRightPinIsAccepted) {
  Unbound ub("127.0.0.1", "server");
  ASSERT_TRUE(ub.start());
  // The certificate verifies, but the pin is another key's.
  start({"--upstream", ub.spec(), "--tls-pin",
         "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="});
  auto a = ask("pin1.lz.test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), wire::RCode::ServFail) << a->text();
  EXPECT_EQ(a->ede(), std::optional<uint16_t>(22)) << a->text();
  const std::string server = "127.0.0.1:" + std::to_string(ub.tls_port());
  EXPECT_GE(upstream_value(upstreams(), server, "tls_verify_failures"), 1);
  EXPECT_EQ(upstream_value(upstreams(), server, "answers"), 0);
  // Every handshake refused: the server is not shown "up".
  EXPECT_EQ(upstream_line(upstreams(), server)["state"], "auth-failed") << upstreams();
  EXPECT_TRUE(daemon_->wait_for_output("matches no --tls-pin", Millis{5000}));
  EXPECT_EQ(daemon_->lines_with("matches no --tls-pin").size(), 1u) << daemon_->output();
  daemon_.reset();
  // The server's own pin, with and without an authentication name.
  start({"--upstream", ub.spec(), "--tls-pin", pki()->pin});
  a = ask("pin2.lz.test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), wire::RCode::NoError) << a->text();
  daemon_.reset();
  start({"--upstream", ub.spec(""), "--tls-pin", pki()->pin});
  a = ask("pin3.lz.test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), wire::RCode::NoError) << a->text();
  EXPECT_EQ(upstream_line(upstreams(), server)["state"], "up") << upstreams();
}

TEST_F(Dot, AnAddressWithoutAuthNameOrPinIsAConfigurationError) {
  auto d = Daemon::start({"--upstream", "tls://127.0.0.1:853", "--control", socket_});
  EXPECT_FALSE(d->ready());
  EXPECT_TRUE(d->wait_exit(Millis{5000}).has_value());
  EXPECT_NE(d->output().find("no #AUTH-NAME"), std::string::npos) << d->output();
}

TEST_F(Dot, AServerThatStallsMidStreamDoesNotStallAnotherServer) {
  // openssl s_server completes the TLS handshake with a valid certificate for dns.test, then
  // reads the queries and never answers: a server stalled mid-stream.
  const uint16_t stall_port = free_port("127.0.0.1");
  auto stalled = start_stalled_server(stall_port);
  ASSERT_TRUE(stalled) << read_file(dir_.file("s_server.log"));
  Unbound ub("127.0.0.1", "server");
  ASSERT_TRUE(ub.start());
  start({"--upstream", ub.spec(), "--forward",
         "stall.test=tls://127.0.0.1:" + std::to_string(stall_port) + "#dns.test",
         "--upstream-timeout", "2000"});
  // Queries to the stalled server wait on its connection...
  UdpClient c;
  for (int i = 0; i < 20; ++i)
    c.send(daemon_->port(), build_query({.name = "q" + std::to_string(i) + ".stall.test"}));
  // ...while every query to Unbound is answered meanwhile.
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i)
    names.push_back("ok" + std::to_string(i) + "-" + random_label(5) + ".lz.test");
  EXPECT_EQ(ask_all(names), 200u);
  // The stalled ones end with SERVFAIL at the upstream timeout, never an answer.
  std::size_t servfail = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = c.receive(Millis{6000});
    if (!r) break;
    auto a = parse_answer(*r);
    if (a && a->rcode() == wire::RCode::ServFail) ++servfail;
  }
  EXPECT_EQ(servfail, 20u);
  // The stalled server got the queries (over TLS, on one connection).
  const std::string u = upstreams();
  const std::string stalled_server = "127.0.0.1:" + std::to_string(stall_port);
  EXPECT_EQ(upstream_value(u, stalled_server, "tls_handshakes"), 1) << u;
  EXPECT_EQ(upstream_value(u, stalled_server, "answers"), 0) << u;
  // Each query was written once: no UDP-style retransmission on a live connection; the
  // retransmission timer fired and was withheld instead.
  EXPECT_EQ(upstream_value(u, stalled_server, "queries"), 20) << u;
  EXPECT_GT(upstream_value(u, stalled_server, "retransmissions_withheld"), 0) << u;
}

TEST_F(Dot, AStalledFirstServerOfTheListLosesItsQueriesToTheNextOne) {
  // The stalled server first in the list: its queries are not re-sent on its live
  // connection, but its timeouts make it suspect and the queries go to Unbound; none fails.
  const uint16_t stall_port = free_port("127.0.0.1");
  auto stalled = start_stalled_server(stall_port);
  ASSERT_TRUE(stalled) << read_file(dir_.file("s_server.log"));
  Unbound ub("127.0.0.1", "server");
  ASSERT_TRUE(ub.start());
  start({"--upstream", "tls://127.0.0.1:" + std::to_string(stall_port) + "#dns.test", "--upstream",
         ub.spec()});
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i)
    names.push_back("s" + std::to_string(i) + "-" + random_label(5) + ".lz.test");
  EXPECT_EQ(ask_all(names, 10), 40u);
  const std::string u = upstreams();
  const std::string stalled_server = "127.0.0.1:" + std::to_string(stall_port);
  const std::string good = "127.0.0.1:" + std::to_string(ub.tls_port());
  EXPECT_EQ(upstream_value(u, stalled_server, "answers"), 0) << u;
  EXPECT_EQ(upstream_value(u, stalled_server, "tls_handshakes"), 1) << u;
  EXPECT_NE(u.find(stalled_server + " state=suspect"), std::string::npos) << u;
  EXPECT_EQ(upstream_value(u, good, "answers"), 40) << u;
}

TEST_F(Dot, QueriesOnAConnectionThatDiesAreWrittenOnANewOneThenFail) {
  // openssl s_server takes the queries and prints them (decrypted) without answering; when its
  // stdin ends it closes the connection, and every later one right after the handshake.
  const uint16_t port = free_port("127.0.0.1");
  const std::string log = dir_.file("s_server.log");
  Child server({"openssl", "s_server", "-quiet", "-accept", "127.0.0.1:" + std::to_string(port),
                "-cert", pki()->pem("server"), "-key", pki()->key("server")},
               log, {.open_stdin = true});
  ASSERT_TRUE(eventually([&] {
    return run_command("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) + "'", 5)
               .exit_code == 0;
  })) << read_file(log);
  start({"--upstream", "tls://127.0.0.1:" + std::to_string(port) + "#dns.test",
         "--upstream-timeout", "5000"});
  UdpClient c;
  const std::string tag = random_label(8);
  for (int i = 0; i < 5; ++i)
    c.send(daemon_->port(), build_query({.name = "d" + std::to_string(i) + tag + ".lz.test"}));
  // All five reached the server on the first connection...
  ASSERT_TRUE(eventually([&] {
    const std::string l = read_file(log);
    for (int i = 0; i < 5; ++i)
      if (l.find("d" + std::to_string(i) + tag) == std::string::npos) return false;
    return true;
  })) << read_file(log);
  // ...which now dies under them.
  server.close_stdin();
  std::size_t failed = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = c.receive(Millis{8000});
    if (!r) break;
    auto a = parse_answer(*r);
    if (a && a->rcode() == wire::RCode::ServFail &&
        a->text().find("network-error") != std::string::npos)
      ++failed;
  }
  // They ended as a network error (EDE 23), not by the 5 s timeout, after a second
  // connection was opened for them: a connection is opened only for pending queries.
  EXPECT_EQ(failed, 5u);
  const std::string u = upstreams();
  const std::string server_name = "127.0.0.1:" + std::to_string(port);
  EXPECT_GE(upstream_value(u, server_name, "tls_handshakes"), 2) << u;
  EXPECT_GE(upstream_value(u, server_name, "tls_connection_failures"), 1) << u;
  EXPECT_EQ(upstream_value(u, server_name, "answers"), 0) << u;
}

TEST_F(Dot, ACaptureOfTheDotPortHoldsNoQueryNameInClear) {
  FakeUpstream fake;
  fake.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.5")}));
  Unbound ub("127.0.0.88", "server", fake.port());
  ASSERT_TRUE(ub.start());
  // The DoT port, and (as the control that the capture and the search work) the plain DNS
  // Unbound sends to its forward target, where the names must be seen.
  Capture cap("tcp port " + std::to_string(ub.tls_port()) + " or udp port " +
              std::to_string(fake.port()));
  if (!cap.ready()) GTEST_SKIP() << "tcpdump cannot capture on lo here: " << cap.why();
  start({"--upstream", ub.spec()});
  const std::string label = "plaintextcheck" + random_label(8);
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i)
    names.push_back("w" + std::to_string(i) + "." + label + ".fw.test");
  EXPECT_EQ(ask_all(names), 20u);
  EXPECT_EQ(fake.total_queries(), 20u);
  const auto packets = cap.finish();
  std::size_t to_server = 0, tls_bytes = 0, seen_in_clear = 0;
  for (const auto& p : packets) {
    if (p.proto == 17) {
      if (contains_ci(p.payload, label)) ++seen_in_clear;
      continue;
    }
    if (p.dport == ub.tls_port()) ++to_server;
    tls_bytes += p.payload.size();
    EXPECT_FALSE(contains_ci(p.payload, label)) << "a query name in clear on the DoT port";
  }
  EXPECT_GT(to_server, 0u) << "the capture saw nothing on the DoT port";
  EXPECT_GT(tls_bytes, 0u) << "the capture saw no TLS bytes";
  EXPECT_GT(seen_in_clear, 0u) << "the control failed: the plain queries to the forward target "
                                  "were not found in the capture";
}

}  // namespace
}  // namespace hg::integration
