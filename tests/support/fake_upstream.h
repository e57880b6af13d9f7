// FakeUpstream: a scriptable DNS server on 127.0.0.1 for tests, in the spirit of c-ares's
// MockServer. UDP and TCP on one kernel-chosen port, served by its own thread.
//
// A test scripts a Reply per query name (or a default) — records to answer with, an RCODE,
// a delay, a drop, TC=1 over UDP, a wrong question — and afterwards asserts how many queries
// arrived, per name and per transport ("exactly one upstream query").
//
// It parses just enough of a query by hand (the 12-byte header and the question) and builds
// answers by hand, so it depends on nothing but the standard library and POSIX sockets: a
// bug in wire/ cannot hide a bug in the code under test. Not hardened against hostile input
// (it only ever sees our own queries); queries it cannot parse are counted and dropped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace hg::test {

/// One resource record in presentation-ish form; rdata is already in wire form.
struct FakeRecord {
  std::string name;  ///< owner; empty means "the query name" (written as a pointer to it)
  uint16_t type = 1;
  uint32_t ttl = 300;
  std::vector<uint8_t> rdata;

  static FakeRecord a(std::string name, uint32_t ttl, std::string_view ipv4);
  static FakeRecord aaaa(std::string name, uint32_t ttl, std::string_view ipv6);
  static FakeRecord cname(std::string name, uint32_t ttl, std::string_view target);
  /// SOA with the given MINIMUM (RFC 2308 negative TTL = min(ttl, minimum)).
  static FakeRecord soa(std::string zone, uint32_t ttl, uint32_t minimum);
};

/// What the fake does with a query.
struct FakeReply {
  uint8_t rcode = 0;  ///< NOERROR
  std::vector<FakeRecord> answer;
  std::vector<FakeRecord> authority;
  std::chrono::milliseconds delay{0};  ///< wait this long before answering
  bool drop = false;                   ///< never answer
  bool truncate_udp = false;    ///< over UDP answer with TC=1 and no records; TCP gets it all
  bool wrong_question = false;  ///< echo a different question name (answer must be ignored)
  bool question_twice = false;  ///< echo the question twice, QDCOUNT 2 (must be ignored)
  bool aa = false;              ///< set the AA bit
  bool ad = false;              ///< set the AD bit (a claim of validated data, forged or not)
  /// UDP: send the answer (from the server's address and port, as usual) to this port of
  /// 127.0.0.1 instead of the query's source port; 0 = the query's source port. For the
  /// "an answer that comes to the wrong port is dropped" tests.
  uint16_t to_port = 0;
  /// XORed into the answer's ID: nonzero gives a reply with an ID other than the query's.
  uint16_t id_xor = 0;

  static FakeReply records(std::vector<FakeRecord> answer);
  static FakeReply nxdomain(FakeRecord soa);
  static FakeReply nodata(FakeRecord soa);
  static FakeReply servfail();
  static FakeReply refused();
  static FakeReply dropped();
};

enum class Transport : uint8_t { Udp, Tcp };

/// A query as the fake received it.
struct ReceivedQuery {
  Transport transport;
  uint16_t id;
  std::string qname;      ///< lowercase, no trailing dot ("" for the root)
  std::string qname_raw;  ///< as received (0x20 letter case kept)
  uint16_t qtype;
  bool has_opt;  ///< an OPT record was present (ARCOUNT >= 1 and type 41 found)
  std::vector<uint8_t> bytes;
  uint16_t source_port = 0;  ///< the port the query came from (UDP and TCP)
};

class FakeUpstream {
 public:
  /// Binds UDP and TCP on 127.0.0.1 (or another loopback address, e.g. "127.0.0.2") with
  /// the same kernel-chosen port and starts the thread. Aborts the test binary (std::abort
  /// with a message) if the sockets cannot be created.
  explicit FakeUpstream(const char* ip = "127.0.0.1");
  ~FakeUpstream();
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;

  uint16_t port() const noexcept { return port_; }
  /// "IP:PORT", ready for --upstream or parse_endpoint.
  std::string address() const;

  /// The reply for queries whose name has no script of its own (initially: NOERROR, empty).
  void set_default(FakeReply reply);
  /// The reply for `qname` (case-insensitive, trailing dot optional), any qtype.
  void on(std::string_view qname, FakeReply reply);
  /// Accept TCP connections but never read from them or answer.
  void set_tcp_mute(bool mute);

  // Misbehaviours of real servers, for the upstream robustness tests (all off by default).

  /// Answer every query that carries an OPT record with FORMERR and no OPT (a server or
  /// middlebox that does not know EDNS); queries without OPT are answered normally.
  void set_formerr_to_edns(bool on);
  /// Drop UDP queries with probability `p`. Deterministic: whether the n-th UDP query for a
  /// name is dropped depends only on (seed, name, n), never on timing. Dropped queries are
  /// still counted by queries()/received().
  void set_loss(double p, uint64_t seed);
  /// Whether the n-th (0-based) UDP query for `qname` is dropped under set_loss(p, seed).
  static bool loses(double p, uint64_t seed, std::string_view qname, std::size_t n);
  /// Echo the question with every letter's case inverted (a server that does not keep the
  /// query's letter case).
  void set_scramble_case(bool on);
  /// Before each real UDP answer, send a forged one: same ID, the question with every
  /// letter's case inverted, answering with `forged` (an off-by-case spoofing attempt).
  void set_forge_wrong_case(std::optional<FakeRecord> forged);

  /// Closes both sockets and joins the thread; queries then hit a closed port (ICMP
  /// unreachable for UDP, RST for TCP). Idempotent; the destructor calls it.
  void stop();

  /// Number of queries received for `qname` over `transport`, or over both.
  std::size_t queries(std::string_view qname, Transport transport) const;
  std::size_t queries(std::string_view qname) const;
  std::size_t total_queries() const;
  std::vector<ReceivedQuery> received() const;
  /// Forgets the counts and the received log (scripts stay).
  void reset_counts();

 private:
  struct Pending;
  struct Connection;

  void serve();
  void handle(Transport t, std::vector<uint8_t> query, int fd, const void* peer, unsigned peer_len);
  std::vector<uint8_t> build(const std::vector<uint8_t>& query, std::size_t question_end,
                             const FakeReply& reply, Transport t) const;
  FakeReply script_for(const std::string& qname) const;

  int udp_fd_ = -1;
  int tcp_fd_ = -1;
  int wake_fd_ = -1;
  uint16_t port_ = 0;
  std::string ip_;
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
  std::thread thread_;

  mutable std::mutex mu_;
  FakeReply default_;                            // guarded by mu_
  std::map<std::string, FakeReply> script_;      // guarded by mu_
  bool tcp_mute_ = false;                        // guarded by mu_
  bool formerr_to_edns_ = false;                 // guarded by mu_
  double loss_ = 0;                              // guarded by mu_
  uint64_t loss_seed_ = 0;                       // guarded by mu_
  bool scramble_case_ = false;                   // guarded by mu_
  std::optional<FakeRecord> forged_;             // guarded by mu_
  std::map<std::string, std::size_t> udp_seen_;  // guarded by mu_: UDP queries per name
  std::vector<ReceivedQuery> received_;          // guarded by mu_

  // Serving thread only.
  std::vector<Pending> pending_;
  std::vector<Connection> conns_;
  uint64_t next_conn_id_ = 1;
};

}  // namespace hg::test
