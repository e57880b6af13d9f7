// Upstream over DNS over TLS against a scripted TLS server in the test (OpenSSL, its own
// thread, a certificate for dns.test made here with libcrypto): what a server with a valid
// certificate may still send — answers out of order, an answer to an ID never asked, the
// same answer twice, the right ID with another question, a frame too short to be DNS — and
// the padding of what we send.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <csignal>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "resolver/upstream/upstream.h"
#include "tests/support/ports.h"
#include "wire/header.h"

namespace hg::resolver {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes make_query(const std::string& label, uint16_t id = 0) {
  Bytes q = {static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  q.push_back(static_cast<uint8_t>(label.size()));
  q.insert(q.end(), label.begin(), label.end());
  q.insert(q.end(), {4, 't', 'e', 's', 't', 0, 0, 1, 0, 1});
  q.insert(q.end(), {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0});
  return q;
}

// An answer to `query`: its header and question, QR and RA set, one A record 192.0.2.`last`.
Bytes answer_to(const Bytes& query, uint8_t last) {
  Bytes a(query.begin(), query.begin() + static_cast<long>(wire::question_end(query)));
  a[2] |= 0x80;
  a[3] = 0x80;
  a[6] = 0, a[7] = 1, a[8] = 0, a[9] = 0, a[10] = 0, a[11] = 0;
  a.insert(a.end(), {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, last});
  return a;
}

Bytes frame(const Bytes& m) {
  Bytes f(m.size() + 2);
  f[0] = static_cast<uint8_t>(m.size() >> 8);
  f[1] = static_cast<uint8_t>(m.size());
  std::copy(m.begin(), m.end(), f.begin() + 2);
  return f;
}

// A self-signed certificate for dns.test, and its key.
struct Identity {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  std::string pem_path;
  Identity() {
    key = EVP_EC_gen("P-256");
    cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 7);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* n = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("dns.test"), -1, -1, 0);
    X509_set_issuer_name(cert, n);
    X509_EXTENSION* san =
        X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, "DNS:dns.test");
    X509_add_ext(cert, san, -1);
    X509_EXTENSION_free(san);
    X509_sign(cert, key, EVP_sha256());
    char tmpl[] = "/tmp/hg-dot-cert-XXXXXX";
    const int fd = mkstemp(tmpl);
    pem_path = tmpl;
    FILE* f = fdopen(fd, "w");
    PEM_write_X509(f, cert);
    fclose(f);
  }
  ~Identity() {
    std::filesystem::remove(pem_path);
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

// A TLS server on 127.0.0.1: for each query read (in order, per connection) `script` says
// what bytes to write back (framed already, any number of messages or none).
class TlsServer {
 public:
  using Script = std::function<std::vector<Bytes>(int connection, const Bytes& query)>;
  TlsServer(const Identity& id, Script script) : script_(std::move(script)) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx_, id.cert);
    SSL_CTX_use_PrivateKey(ctx_, id.key);
    sockaddr_in sin{};
    fd_ = test::listen_any_port(sin, 8);
    endpoint_ = *Endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&sin), sizeof sin);
    thread_ = std::thread([this] { serve(); });
  }
  ~TlsServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
    SSL_CTX_free(ctx_);
  }
  const Endpoint& endpoint() const { return endpoint_; }
  std::vector<Bytes> queries() const {
    std::lock_guard lock(mu_);
    return queries_;
  }
  int connections() const { return connections_; }
  /// The byte count of every SSL_read, in order: one TLS record each (no read-ahead, and a
  /// record larger than the 4096-byte chunk never comes from the channel's queries).
  std::vector<std::size_t> reads() const {
    std::lock_guard lock(mu_);
    return reads_;
  }
  /// Connections that have ended (the client closed, or the script did).
  int closed() const { return closed_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      const int conn = connections_++;
      timeval tv{0, 50'000};
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      bool open = false;
      for (int i = 0; i < 100 && !stop_ && !open; ++i)
        open = SSL_accept(ssl) == 1;
      Bytes buf;
      bool closed = !open;
      while (!stop_ && !closed) {
        uint8_t chunk[4096];
        const int n = SSL_read(ssl, chunk, sizeof chunk);
        if (n <= 0) {
          const int err = SSL_get_error(ssl, n);
          if (err == SSL_ERROR_WANT_READ || (err == SSL_ERROR_SYSCALL && errno == EAGAIN)) continue;
          break;
        }
        {
          std::lock_guard lock(mu_);
          reads_.push_back(static_cast<std::size_t>(n));
        }
        buf.insert(buf.end(), chunk, chunk + n);
        while (buf.size() >= 2 && buf.size() >= 2u + (base::load_u16(&buf[0]))) {
          const std::size_t len = static_cast<std::size_t>(base::load_u16(&buf[0]));
          Bytes q(buf.begin() + 2, buf.begin() + 2 + static_cast<long>(len));
          buf.erase(buf.begin(), buf.begin() + 2 + static_cast<long>(len));
          {
            std::lock_guard lock(mu_);
            queries_.push_back(q);
          }
          for (const Bytes& out : script_(conn, q)) {
            if (out.empty()) {  // the script's way to say "close the connection now"
              closed = true;
              break;
            }
            SSL_write(ssl, out.data(), static_cast<int>(out.size()));
          }
          if (closed) break;
        }
      }
      SSL_free(ssl);
      close(c);
      ++closed_;
    }
  }

  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  Endpoint endpoint_;
  Script script_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> closed_{0};
  mutable std::mutex mu_;
  std::vector<Bytes> queries_;
  std::vector<std::size_t> reads_;
};

struct Outcome {
  bool done = false;
  UpstreamStatus status = UpstreamStatus::Internal;
  Bytes answer;
};

class DotUpstream : public ::testing::Test {
 protected:
  // hourglassd ignores SIGPIPE before it opens a connection (server.cc): a TLS write to a peer
  // that has just closed is an error to handle, not a signal that ends the process. The test
  // process holds both ends, so it does the same.
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }
  std::unique_ptr<Upstream> make(const TlsServer& server,
                                 const std::function<void(DotSettings&)>& tune = {},
                                 Millis lifetime = Millis{3000}) {
    auto settings = std::make_shared<DotSettings>();
    if (tune) tune(*settings);
    settings->targets.push_back(TlsTarget{server.endpoint(), "dns.test"});
    settings->ca_file = id_.pem_path;
    UpstreamOptions o;
    o.servers = {server.endpoint()};
    o.lifetime = lifetime;
    o.dot = settings;
    o.board = &board_;
    auto up = Upstream::create(loop_, o);
    EXPECT_TRUE(up) << up.error();
    return up ? std::move(up.value()) : nullptr;
  }
  Upstream::Callback record(Outcome& o) {
    return [&o](UpstreamStatus s, std::span<const uint8_t> a) {
      o.done = true;
      o.status = s;
      o.answer.assign(a.begin(), a.end());
    };
  }
  // Runs the loop until `pred` holds, for at most 10 s of real time. A bound in turns of the
  // loop (it was 200) ran out early on a loaded machine under ASan: a turn returns at once
  // when anything is ready, so the server thread's view of a close could come too late.
  void run_until(const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (!pred() && std::chrono::steady_clock::now() < deadline)
      loop_.run_once(Millis{20});
  }
  const UpstreamServerStats* stats() const {
    const auto tables = board_.snapshot();
    return tables.empty() || tables[0]->servers.empty() ? nullptr : tables[0]->servers[0].get();
  }
  uint64_t dropped_wrong_id() const {
    const auto tables = board_.snapshot();
    return tables.empty() || tables[0]->servers.empty()
               ? 0
               : tables[0]->servers[0]->dropped_wrong_id.load();
  }
  Identity id_;
  EventLoop loop_;
  UpstreamBoard board_;
};

TEST_F(DotUpstream, AnswersInReverseOrderReachTheirOwnQueries) {
  std::vector<Bytes> held;
  std::mutex mu;
  TlsServer server(id_, [&](int, const Bytes& q) {
    std::lock_guard lock(mu);
    held.push_back(q);
    std::vector<Bytes> out;
    if (held.size() == 3) {
      for (int i = 2; i >= 0; --i)
        out.push_back(frame(answer_to(held[static_cast<std::size_t>(i)], static_cast<uint8_t>(i))));
    }
    return out;
  });
  auto up = make(server);
  ASSERT_TRUE(up);
  Outcome o[3];
  const char* labels[3] = {"first", "second", "third"};
  uint16_t ids[3];
  for (int i = 0; i < 3; ++i) {
    auto id = up->send(make_query(labels[i]), record(o[i]));
    ASSERT_TRUE(id);
    ids[i] = *id;
  }
  run_until([&] { return o[0].done && o[1].done && o[2].done; });
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(o[i].done) << i;
    EXPECT_EQ(o[i].status, UpstreamStatus::Ok) << i;
    ASSERT_GE(o[i].answer.size(), 16u);
    EXPECT_EQ(base::load_u16(&o[i].answer[0]), ids[i]);
    EXPECT_EQ(o[i].answer.back(), i) << "query " << i << " got another query's answer";
  }
  EXPECT_EQ(server.connections(), 1);
  // Every query was padded to a multiple of 128 octets with the Padding option (code 12).
  for (const Bytes& q : server.queries()) {
    EXPECT_EQ(q.size() % 128, 0u);
    const std::size_t opt = wire::question_end(q);
    ASSERT_GE(q.size(), opt + 15);
    EXPECT_EQ(base::load_u16(&q[opt + 11]), 12);
  }
}

// dnsdist 1.7 reads only the first DNS message of a TLS record until more bytes arrive: the
// queries of one loop iteration (sent here before the loop runs) must each have a record of
// their own, or all but the first wait for the next record (and time out when none comes).
TEST_F(DotUpstream, QueriesOfOneIterationAreWrittenOneTlsRecordEach) {
  TlsServer server(id_,
                   [&](int, const Bytes& q) { return std::vector<Bytes>{frame(answer_to(q, 1))}; });
  auto up = make(server);
  ASSERT_TRUE(up);
  Outcome warm;
  ASSERT_TRUE(up->send(make_query("warm"), record(warm)));
  run_until([&] { return warm.done; });  // the connection is open: the next writes are a batch
  ASSERT_TRUE(warm.done);
  Outcome o[5];
  const char* labels[5] = {"a", "b", "c", "d", "e"};
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(up->send(make_query(labels[i]), record(o[i])));
  run_until([&] {
    return std::all_of(std::begin(o), std::end(o), [](const Outcome& x) { return x.done; });
  });
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(o[i].done) << i;
    EXPECT_EQ(o[i].status, UpstreamStatus::Ok) << i;
  }
  const std::vector<Bytes> queries = server.queries();
  const std::vector<std::size_t> reads = server.reads();
  ASSERT_EQ(queries.size(), 6u);
  ASSERT_EQ(reads.size(), queries.size()) << "some queries shared a TLS record";
  for (std::size_t i = 0; i < reads.size(); ++i)
    EXPECT_EQ(reads[i], 2 + queries[i].size()) << "record " << i;
  EXPECT_EQ(server.connections(), 1);
}

TEST_F(DotUpstream, AForgedIdAndAReplayedAnswerAreDroppedAndCounted) {
  TlsServer server(id_, [&](int, const Bytes& q) {
    Bytes forged = answer_to(q, 66);
    forged[0] ^= 0x5a;  // an ID nobody asked
    const Bytes real = answer_to(q, 1);
    return std::vector<Bytes>{frame(forged), frame(real), frame(real)};  // and a replay
  });
  auto up = make(server);
  ASSERT_TRUE(up);
  Outcome o;
  ASSERT_TRUE(up->send(make_query("forged"), record(o)));
  run_until([&] { return o.done; });
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(o.answer.back(), 1);
  // Let the replay arrive too, then read the counters.
  Outcome o2;
  ASSERT_TRUE(up->send(make_query("second"), record(o2)));
  run_until([&] { return o2.done; });
  EXPECT_EQ(o2.status, UpstreamStatus::Ok);
  EXPECT_EQ(o2.answer.back(), 1);
  EXPECT_EQ(up->in_flight(), 0u);
  EXPECT_EQ(server.connections(), 1);
  // Two forged IDs and at least the first replay were dropped (the last replay may still be
  // on its way): none of them answered anything.
  run_until([&] { return dropped_wrong_id() >= 4; });
  EXPECT_GE(dropped_wrong_id(), 3u);
}

TEST_F(DotUpstream, TheRightIdWithAnotherQuestionIsNotAnAnswer) {
  TlsServer server(id_, [&](int, const Bytes& q) {
    Bytes other = answer_to(q, 9);
    other[13] = 'X';  // another name, same length and ID
    return std::vector<Bytes>{frame(other)};
  });
  auto up = make(server);
  ASSERT_TRUE(up);
  Outcome o;
  ASSERT_TRUE(up->send(make_query("asked"), record(o)));
  run_until([&] { return o.done; });
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.status, UpstreamStatus::BadResponse);
  EXPECT_TRUE(o.answer.empty());
}

TEST_F(DotUpstream, AFrameTooShortForDnsDropsTheConnectionAndTheQueryIsWrittenOnANewOne) {
  TlsServer server(id_, [&](int conn, const Bytes& q) {
    if (conn == 0) return std::vector<Bytes>{Bytes{0, 3, 1, 2, 3}};  // 3 bytes: not DNS
    return std::vector<Bytes>{frame(answer_to(q, 2))};
  });
  auto up = make(server);
  ASSERT_TRUE(up);
  Outcome o;
  ASSERT_TRUE(up->send(make_query("again"), record(o)));
  run_until([&] { return o.done; });
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.status, UpstreamStatus::Ok);
  EXPECT_EQ(o.answer.back(), 2);
  EXPECT_EQ(server.connections(), 2);
  const auto qs = server.queries();
  ASSERT_EQ(qs.size(), 2u);
  EXPECT_EQ(qs[0], qs[1]) << "the same query, ID and all, written on the second connection";
}

TEST_F(DotUpstream, AServerThatClosesUnderEveryQueryFailsItAfterTwoConnections) {
  TlsServer server(id_, [&](int, const Bytes&) { return std::vector<Bytes>{Bytes{}}; });
  auto up = make(server);
  ASSERT_TRUE(up);
  Outcome o;
  ASSERT_TRUE(up->send(make_query("doomed"), record(o)));
  run_until([&] { return o.done; });
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.status, UpstreamStatus::NetworkError);
  EXPECT_EQ(server.connections(), 2);
}

TEST_F(DotUpstream, NoMoreThanTheBoundAreWrittenUnansweredOnAConnection) {
  std::mutex mu;
  std::vector<Bytes> held;
  int received = 0, answered = 0, most_unanswered = 0;
  TlsServer server(id_, [&](int, const Bytes& q) {
    std::lock_guard lock(mu);
    ++received;
    held.push_back(q);
    most_unanswered = std::max(most_unanswered, received - answered);
    std::vector<Bytes> out;
    if (held.size() == 4 || received == 10) {  // answer a batch only once the bound is full
      for (const Bytes& h : held)
        out.push_back(frame(answer_to(h, 3)));
      answered += static_cast<int>(held.size());
      held.clear();
    }
    return out;
  });
  auto up = make(server, [](DotSettings& s) { s.max_in_flight = 4; });
  ASSERT_TRUE(up);
  Outcome o[10];
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(up->send(make_query("bound" + std::to_string(i)), record(o[i])));
  run_until([&] {
    for (const Outcome& x : o)
      if (!x.done) return false;
    return true;
  });
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(o[i].status, UpstreamStatus::Ok) << i;
  std::lock_guard lock(mu);
  EXPECT_EQ(received, 10);
  EXPECT_EQ(most_unanswered, 4);
  EXPECT_EQ(server.connections(), 1);
}

TEST_F(DotUpstream, AnIdleConnectionIsClosedAndTheNextOneResumesTheSession) {
  TlsServer server(id_,
                   [&](int, const Bytes& q) { return std::vector<Bytes>{frame(answer_to(q, 4))}; });
  auto up = make(server, [](DotSettings& s) { s.idle_timeout = Millis{100}; });
  ASSERT_TRUE(up);
  Outcome a;
  ASSERT_TRUE(up->send(make_query("before"), record(a)));
  run_until([&] { return a.done; });
  ASSERT_EQ(a.status, UpstreamStatus::Ok);
  // Idle for 100 ms: the loop's timer closes it, and the server sees the end.
  run_until([&] { return server.closed() == 1; });
  ASSERT_EQ(server.closed(), 1);
  Outcome b;
  ASSERT_TRUE(up->send(make_query("after"), record(b)));
  run_until([&] { return b.done; });
  EXPECT_EQ(b.status, UpstreamStatus::Ok);
  EXPECT_EQ(server.connections(), 2);
  ASSERT_NE(stats(), nullptr);
  EXPECT_EQ(stats()->tls_handshakes.load(), 2u);
  EXPECT_EQ(stats()->tls_resumptions.load(), 1u);
  EXPECT_EQ(stats()->tls_connection_failures.load(), 0u);
}

TEST_F(DotUpstream, AConnectionSilentForAQueryLifetimeIsReplaced) {
  // The server completes the handshake, reads the queries and never answers.
  TlsServer server(id_, [&](int, const Bytes&) { return std::vector<Bytes>{}; });
  auto up = make(server, {}, Millis{300});
  ASSERT_TRUE(up);
  Outcome a;
  ASSERT_TRUE(up->send(make_query("silent"), record(a)));
  run_until([&] { return a.done; });
  EXPECT_EQ(a.status, UpstreamStatus::Timeout);
  // The connection that carried nothing back for a whole lifetime is closed...
  run_until([&] { return server.closed() == 1; });
  EXPECT_EQ(server.closed(), 1);
  // ...and the next query gets a new one rather than the stalled one.
  Outcome b;
  ASSERT_TRUE(up->send(make_query("fresh"), record(b)));
  run_until([&] { return server.connections() == 2; });
  EXPECT_EQ(server.connections(), 2);
  run_until([&] { return b.done; });
}

// AD is passed on only from a DoT server whose certificate name is checked and that
// --trust-ad names (DotSettings::trust_ad). The same server not named, or named but trusted
// by its key pin alone, has its AD cleared like any plain upstream.
TEST_F(DotUpstream, AdPassesOnlyFromAnAuthenticatedServerNamedByTrustAd) {
  TlsServer server(id_, [](int, const Bytes& q) {
    Bytes a = answer_to(q, 9);
    a[3] |= 0x20;  // AD: the server says it validated the answer
    return std::vector<Bytes>{frame(a)};
  });
  struct Case {
    bool named;
    bool ad;
  } cases[] = {{true, true}, {false, false}};
  for (const Case& c : cases) {
    auto up = make(server, [&](DotSettings& s) {
      if (c.named) s.trust_ad.push_back(server.endpoint());
    });
    ASSERT_TRUE(up);
    Outcome o;
    ASSERT_TRUE(up->send(make_query("signed"), record(o)));
    run_until([&] { return o.done; });
    ASSERT_EQ(o.status, UpstreamStatus::Ok);
    ASSERT_GE(o.answer.size(), 12u);
    EXPECT_EQ((o.answer[3] & 0x20) != 0, c.ad) << "named by --trust-ad: " << c.named;
  }
  // Named, but with no name to check the certificate against: not authenticated enough.
  DotSettings pinned;
  pinned.targets.push_back(TlsTarget{server.endpoint(), ""});
  pinned.trust_ad.push_back(server.endpoint());
  EXPECT_FALSE(pinned.trusts_ad(server.endpoint()));
  pinned.targets[0].auth_name = "dns.test";
  EXPECT_TRUE(pinned.trusts_ad(server.endpoint()));
}

}  // namespace
}  // namespace hg::resolver
