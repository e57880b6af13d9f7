// Metrics: the Prometheus endpoint over a real TCP socket on 127.0.0.1 (kernel port), with the
// event loop run from the test; the exposition text is parsed line by line.
#include "resolver/ops/metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "cache/key.h"
#include "tests/resolver/cached_answers.h"
#include "tests/support/ports.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using wire::test::Bytes;
using wire::test::PacketBuilder;

struct HttpReply {
  std::string status_line;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  bool complete = false;  // the server closed the connection
};

HttpReply parse_http(const std::string& raw, bool closed) {
  HttpReply r;
  r.complete = closed;
  const auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return r;
  const std::string head = raw.substr(0, head_end);
  r.body = raw.substr(head_end + 4);
  std::size_t pos = head.find("\r\n");
  r.status_line = head.substr(0, pos);
  while (pos != std::string::npos && pos < head.size()) {
    const std::size_t start = pos + 2;
    const std::size_t next = head.find("\r\n", start);
    const std::string line = head.substr(start, next == std::string::npos ? next : next - start);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    pos = next;
  }
  return r;
}

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest() : loop_(EventLoop::Options{.clock = [this] { return now_; }}), shared_(Config{}) {
    loop_.run_once(Millis{0});
    auto m = Metrics::open(loop_, shared_, parse_endpoint("127.0.0.1:0", std::nullopt).value());
    EXPECT_TRUE(m) << m.error();
    if (m) metrics_ = std::move(m.value());
  }

  /// Sends `request` raw on a fresh connection and reads until the server closes (bounded).
  HttpReply fetch_raw(const std::string& request) {
    const int fd = test::connect_tcp(address(), "127.0.0.1", SOCK_NONBLOCK);
    EXPECT_GE(fd, 0);
    std::string out = request, raw;
    bool closed = false;
    for (int i = 0; i < 400 && !closed; ++i) {
      loop_.run_once(Millis{5});
      if (!out.empty()) {
        const ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
        if (n > 0) out.erase(0, static_cast<std::size_t>(n));
      }
      if (test::read_available(fd, raw)) closed = true;
    }
    ::close(fd);
    return parse_http(raw, closed);
  }
  sockaddr_in address() const { return test::ipv4_address("127.0.0.1", metrics_->local().port()); }
  HttpReply get(const std::string& path) {
    return fetch_raw("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n");
  }

  void insert_a(std::string_view name, uint32_t ttl) {
    cache_answer(shared_.cache, name, a_response(name, {ttl}), now_);
  }

  MonoTime now_{Millis{50'000'000}};
  EventLoop loop_;
  Shared shared_;
  std::unique_ptr<Metrics> metrics_;
};

/// The exposition parsed: sample "name{labels}" → value, and each family's HELP and TYPE.
struct Exposition {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  std::vector<std::string> errors;
};

Exposition parse_exposition(const std::string& text) {
  // Text format 0.0.4: "# HELP name text", "# TYPE name type", "name[{labels}] value".
  static const std::regex help(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*$)");
  static const std::regex type(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$)");
  static const std::regex sample(
      R"re(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? ([0-9]+(\.[0-9]+)?)$)re");
  Exposition e;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      e.errors.push_back("last line has no newline");
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      e.helped.insert(m[1]);
    } else if (std::regex_match(line, m, type)) {
      if (e.types.contains(m[1])) e.errors.push_back("second TYPE for " + m[1].str());
      if (!e.helped.contains(m[1])) e.errors.push_back("TYPE before HELP for " + m[1].str());
      e.types[m[1]] = m[2];
    } else if (std::regex_match(line, m, sample)) {
      if (!e.types.contains(m[1])) e.errors.push_back("sample before its TYPE: " + line);
      e.samples[m[1].str() + m[2].str()] = std::stod(m[4]);
    } else {
      e.errors.push_back("unparseable line: " + line);
    }
  }
  return e;
}

TEST_F(MetricsTest, ListensOnAKernelChosenPort) {
  ASSERT_TRUE(metrics_);
  EXPECT_NE(metrics_->local().port(), 0);
  EXPECT_EQ(metrics_->local().ip_string(), "127.0.0.1");
}

TEST_F(MetricsTest, GetMetricsReturnsTheExpositionWithEveryFamilyDescribed) {
  insert_a("www.example.com", 300);
  insert_a("mail.example.com", 300);
  shared_.stats.queries_udp = 7;
  shared_.stats.queries_tcp = 2;
  shared_.stats.hits = 4;
  shared_.stats.servfail = 1;
  const HttpReply r = get("/metrics");
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.headers.at("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.headers.at("content-length"), std::to_string(r.body.size()));
  EXPECT_EQ(r.headers.at("connection"), "close");

  const Exposition e = parse_exposition(r.body);
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << "\n" << r.body;
  EXPECT_EQ(e.samples.at("hourglass_queries_total{transport=\"udp\"}"), 7);
  EXPECT_EQ(e.samples.at("hourglass_queries_total{transport=\"tcp\"}"), 2);
  EXPECT_EQ(e.samples.at("hourglass_cache_hits_total"), 4);
  EXPECT_EQ(e.samples.at("hourglass_servfail_total"), 1);
  EXPECT_EQ(e.samples.at("hourglass_cache_entries"), 2);
  EXPECT_EQ(e.samples.at("hourglass_cache_capacity_bytes"),
            static_cast<double>(Config{}.cache_size));
  EXPECT_GT(e.samples.at("hourglass_cache_bytes"), 0);
  EXPECT_EQ(e.samples.at("hourglass_inflight"), 0);
  for (const char* name :
       {"hourglass_cache_stale_answers_total", "hourglass_cache_misses_total",
        "hourglass_coalesced_total", "hourglass_upstream_queries_total",
        "hourglass_upstream_failures_total", "hourglass_cache_evictions_total"}) {
    EXPECT_TRUE(e.samples.contains(name)) << name;
  }
  for (const auto& [family, type] : e.types) {
    EXPECT_TRUE(e.helped.contains(family)) << family;
    // Counters end in _total (Prometheus naming), gauges do not.
    EXPECT_EQ(type == "counter", family.ends_with("_total")) << family;
  }
}

TEST_F(MetricsTest, HeadGivesTheHeadersWithoutABody) {
  const HttpReply r = fetch_raw("HEAD /metrics HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_NE(r.headers.at("content-length"), "0");
  EXPECT_TRUE(r.body.empty());
}

TEST_F(MetricsTest, QueryStringIsIgnoredAndBareLfLineEndsAreAccepted) {
  const HttpReply r = fetch_raw("GET /metrics?x=1 HTTP/1.0\n\n");
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
}

TEST_F(MetricsTest, OtherPathsGet404) {
  const HttpReply r = get("/");
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status_line, "HTTP/1.1 404 Not Found");
  EXPECT_EQ(get("/metrics/x").status_line, "HTTP/1.1 404 Not Found");
}

TEST_F(MetricsTest, OtherMethodsGet405AndGarbageGets400) {
  const HttpReply post = fetch_raw("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.status_line, "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(post.headers.at("allow"), "GET, HEAD");
  EXPECT_EQ(fetch_raw("hello\r\n\r\n").status_line, "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(fetch_raw("GET /metrics SPDY/3\r\n\r\n").status_line, "HTTP/1.1 400 Bad Request");
}

TEST_F(MetricsTest, OversizedRequestHeadGets431AndIsClosed) {
  const HttpReply r =
      fetch_raw("GET /metrics HTTP/1.1\r\nX-Junk: " + std::string(9000, 'a') + "\r\n\r\n");
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status_line, "HTTP/1.1 431 Request Header Fields Too Large");
}

TEST_F(MetricsTest, SilentClientIsClosedAfterTheIdleTimeout) {
  const int fd = test::connect_tcp(address());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, "GET /met", 8, MSG_NOSIGNAL), 8);
  for (int i = 0; i < 5; ++i)
    loop_.run_once(Millis{5});
  char buf[64];
  EXPECT_LT(::recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "no reply to half a request";
  now_ += Millis{10'001};
  loop_.run_once(Millis{0});
  loop_.run_once(Millis{0});
  EXPECT_EQ(::recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "closed by the idle timeout";
  ::close(fd);
}

TEST_F(MetricsTest, ARequestHeadIsDueWithinThreeSecondsOfTheAccept) {
  // Trickled a byte at a time, a request keeps the connection active but never completes:
  // the request timeout (shorter than the idle timeout) ends it.
  const int fd = test::connect_tcp(address());
  ASSERT_GE(fd, 0);
  char buf[64];
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(::send(fd, "G", 1, MSG_NOSIGNAL), 1);
    loop_.run_once(Millis{5});
    loop_.run_once(Millis{0});
    now_ += Millis{500};
  }
  loop_.run_once(Millis{0});
  EXPECT_LT(::recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "2.5 s: still open";
  now_ += Millis{600};
  loop_.run_once(Millis{0});
  loop_.run_once(Millis{0});
  EXPECT_EQ(::recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "3.1 s: closed";
  EXPECT_EQ(shared_.metrics_conns.open.load(), 0);
  ::close(fd);
}

TEST_F(MetricsTest, RenderedTextHasOneTypePerFamily) {
  const Exposition e = parse_exposition(render_metrics(shared_));
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors);
  EXPECT_GE(e.types.size(), 20u);
}

TEST_F(MetricsTest, AddressInUseIsAClearStartError) {
  auto second = Metrics::open(loop_, shared_, metrics_->local());
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().find("--metrics 127.0.0.1:"), std::string::npos) << second.error();
  EXPECT_NE(second.error().find("in use"), std::string::npos) << second.error();
}

}  // namespace
}  // namespace hg::resolver
