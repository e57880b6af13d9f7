// Upstream: forwards our queries to the upstream servers through c-ares, driven by an
// EventLoop, and decides itself which server gets a query, when it is retransmitted, with
// or without EDNS and with which letter case (docs/upstream.md argues the design).
//
// Transport: each attempt of a query has a fresh random ID and its datagram leaves from a
// socket of its own, connected to the server (a fresh kernel-chosen source port, RFC 5452,
// that answers anyone but the server as a closed port does). Only a datagram that
// arrives on the attempt's socket from the server's address and port, with its ID and
// question (0x20 case included), answers it; the rest is counted and dropped. A truncated
// answer (TC, or longer than the query offered) is asked again over TCP through c-ares: one
// TCP-only channel per server (cares_compat.h: c-ares 1.18 to 1.34, through the API each
// documents), so nothing c-ares learns about one server affects another. The first usable
// answer ends the query and later ones are only counted.
//
// Above it, per server (upstream_health.h): an RFC 6298 RTT estimator whose RTO times the
// retransmissions (50 ms .. 1 s, backed off on consecutive timeouts, Karn's rule), a path
// estimator that tells loss from slowness (few, patient copies to a server that shows no
// loss; fast ones on a lossy path), a
// failure streak that makes a server "suspect" (only probed, never waited on while a
// healthy server exists), "no EDNS" and "no 0x20" states remembered for 10 minutes.
//
// What the caller must know:
//  - send() takes a complete DNS query in wire form, at most 512 bytes, with one question
//    whose name is uncompressed, and, if it asks for EDNS, exactly one bare OPT record at the
//    very end (RFC 6891; the 11 bytes 00 0029 xxxx xxxxxxxx 0000). A server that rejects EDNS
//    is asked again with those 11 bytes removed. RD should be set; the ID is ours.
//  - The answer handed to the callback carries the ID send() returned and the question
//    bytes exactly as given to send() (whatever ID and 0x20 case the winning attempt used).
//  - An answer with RCODE SERVFAIL, REFUSED or NOTIMP is not delivered: the query goes on to
//    the other servers; when every server has failed that way the callback gets the status
//    and no bytes. A query that got no usable answer ends with Timeout after `lifetime`.
//
// DNS over TLS: a server listed in UpstreamOptions::dot is reached through a DotChannel
// (resolver/upstream/dot.h) instead of c-ares — one kept TLS connection, queries padded to 128
// octets, no 0x20 (TLS already keeps forgers out) and no retransmission to it while its
// copy is on a live connection; the choice of server, EDNS fallback and failover above are
// the same. A certificate that does not verify fails the attempt with TlsAuthFailed.
//
// Thread: one Upstream per EventLoop, used only on the loop's thread.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <array>
#include <bitset>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"
#include "resolver/upstream/dot.h"
#include "resolver/upstream/upstream_board.h"
#include "resolver/upstream/upstream_health.h"
#include "resolver/upstream/upstream_wire.h"

namespace hg::resolver {

/// How an upstream query ended. Every value but Ok goes down the stale-or-SERVFAIL path.
enum class UpstreamStatus : uint8_t {
  Ok,        ///< an answer arrived (any RCODE but SERVFAIL, REFUSED, NOTIMP)
  Timeout,   ///< no usable answer within the query's lifetime
  ServFail,  ///< every server answered SERVFAIL (the last failure decides the status)
  Refused,   ///< every server answered REFUSED (as for ServFail)
  NotImp,    ///< every server answered NOTIMP (as for ServFail)
  /// ICMP unreachable, TCP reset or refused (ARES_ECONNREFUSED), or a SERVFAIL that came
  /// only over TCP, which we cannot see.
  NetworkError,
  BadResponse,    ///< the server's answers could not be used (ARES_EBADRESP, ARES_EFORMERR)
  BadQuery,       ///< our query was not of the shape send() requires
  NoServers,      ///< the server list is empty
  Cancelled,      ///< cancel_all() ran before an answer came
  Internal,       ///< out of memory, out of query IDs, or a c-ares status we do not know
  TlsAuthFailed,  ///< a DNS-over-TLS server's certificate or key pin did not verify
};

/// Stable lowercase identifier ("timeout", "servfail"...), for logs and metrics.
std::string_view to_string(UpstreamStatus s) noexcept;

struct UpstreamOptions {
  std::vector<Endpoint> servers{};
  /// How long a query is retransmitted (within it, as often as the servers' RTOs say)
  /// before it ends with Timeout. The daemon uses 1.2 x --upstream-timeout, so a late answer
  /// still lands in the cache after the client had its SERVFAIL.
  Millis lifetime{3600};
  /// RTO clamps and backoff (upstream_health.h).
  RttLimits rtt{};
  /// Random letter case in query names, checked in answers (draft-vixie-dnsext-dns0x20).
  bool use_0x20 = true;
  /// Advertised EDNS UDP payload size, and the longest UDP answer taken (a longer one is asked
  /// again over TCP); 1232 avoids IP fragmentation
  /// (DNS flag day 2020).
  uint16_t edns_payload = 1232;
  /// Where per-server statistics are published (nullptr: nowhere), as worker `worker`.
  UpstreamBoard* board = nullptr;
  int worker = 0;
  /// Attempt sockets (one per UDP query in flight, see docs/upstream.md) the process may have
  /// open at once before the oldest gives its socket up for a new one; 0: half the soft
  /// RLIMIT_NOFILE (at least 64), shared by every Upstream of the process. Tests set it.
  int max_sockets = 0;
  /// Reads the clock for RTT samples (tests). Default: the loop's time of the current
  /// iteration in microseconds (EventLoop::now_us) — a sample is then the time from the start
  /// of the iteration that sent the attempt to the start of the one that read the answer: at
  /// most an iteration's work more than the path's round trip, against an RTO of >= 50 ms,
  /// and no clock read per query.
  std::function<Micros()> clock_us{};
  /// Servers reached over TLS and how (resolver/upstream/dot.h); nullptr or no target: none.
  std::shared_ptr<const DotSettings> dot{};
};

class Upstream {
 public:
  /// Gets the outcome; `answer` is the upstream's response (ID = the one send() returned)
  /// and is valid only during the call: copy what you keep. Empty unless status is Ok.
  using Callback = std::function<void(UpstreamStatus status, std::span<const uint8_t> answer)>;

  /// Creates the c-ares channels on `loop`. Fails (with a message naming the server) on an
  /// IPv6 server with a %scope, which c-ares 1.18 cannot address, if c-ares fails to
  /// initialise, or if the c-ares found at run time is older than 1.18.
  static Checked<std::unique_ptr<Upstream>> create(EventLoop& loop, UpstreamOptions options);
  /// Destroys the channels. Pending callbacks are dropped, not called: call cancel_all()
  /// first to have them called with Cancelled. Must not be called from inside a callback.
  ~Upstream();
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  /// Sends `query` (see the file comment for its required shape) and arranges for `done` to
  /// be called exactly once, on the loop thread, never from inside send() itself. Returns
  /// the random query ID written into our copy of the query (the caller's bytes are not
  /// changed), or nullopt if the query was refused without being sent — in that case
  /// `done` reports why (BadQuery, NoServers, Internal) at the next loop iteration.
  std::optional<uint16_t> send(std::span<const uint8_t> query, Callback done);

  /// Replaces the server list (SIGHUP). Queries in flight finish on the old servers; new
  /// queries use the new ones. Returns an error message if a server cannot be used (the
  /// old list then stays in force).
  std::optional<std::string> reload_servers(std::span<const Endpoint> servers);

  /// Ends every query in flight now: each callback runs, with Cancelled, before this
  /// returns. For shutdown.
  void cancel_all();

  /// Queries sent and not yet reported.
  std::size_t in_flight() const noexcept { return in_flight_; }
  /// UDP sockets this Upstream has opened for attempts so far (each is reused, with a new
  /// port, once its attempt is over).
  uint64_t sockets_opened() const noexcept { return sockets_opened_; }
  /// Attempt sockets an attempt still holds: a query that was answered may leave an earlier
  /// or later copy outstanding (a retransmission), which keeps its port until it is answered
  /// or expires. The other sockets are idle, kept for the next attempt.
  std::size_t sockets_in_use() const noexcept {
    return ports_.size() - idle_ports_[0].size() - idle_ports_[1].size();
  }
  const std::vector<Endpoint>& servers() const noexcept { return options_.servers; }
  /// Whether there are servers and every one is reached over TLS (for dnstap's protocol).
  bool all_servers_tls() const noexcept;

 private:
  struct Server;
  struct Attempt;
  struct PortSocket;
  struct Query;

  Upstream(EventLoop& loop, UpstreamOptions options);
  Checked<std::unique_ptr<Server>> open_server(const Endpoint& endpoint,
                                               std::shared_ptr<UpstreamServerStats> stats);
  void publish_table();
  void process(Server& s, int read_fd, int write_fd);
  void rearm_timer(Server& s);
  void rearm_timer_if_needed(Server& s);
  void retire_if_idle(Server& s);
  void destroy_server(Server* s);
  std::optional<uint16_t> next_id();
  void random_case(upstream_wire::CaseBits& bits, std::size_t name_len);
  void report_later(Callback done, UpstreamStatus status, std::vector<uint8_t> answer);

  std::optional<std::size_t> choose(const Query& q) const;
  /// Sends one attempt of `q` to `s`; false if it could not be sent at all.
  bool launch(Query& q, Server& s, bool edns_retry, bool probe, bool retransmit = false);
  /// The attempt's copy of its query (ID, letter case, OPT or not), in scratch_.
  std::span<const uint8_t> attempt_bytes(const Attempt& a);
  /// Gives the attempt a socket of its own with no port, connects it to the server (the
  /// kernel binds a fresh random port) and sends `bytes`.
  void send_udp(Attempt& a, std::span<const uint8_t> bytes);
  /// Asks the attempt's query again over TCP, through the server's c-ares channel.
  void send_tcp(Attempt& a);
  /// A UDP attempt ends with ARES_ETIMEOUT `lifetime` after it was sent (expiries_).
  void expire_attempts();
  void arm_expiry();
  /// Ends every outstanding UDP attempt (of `only`, or of every server) with `status`.
  void end_udp_attempts(const Server* only, int status);
  /// The attempt's socket is readable: reads it, hands c-ares the answer that fits.
  void read_attempt(Attempt& a);
  /// Whether a datagram read on the attempt's socket answers it (ID, question, case);
  /// what does not is counted and dropped. Also notes truncation and EDNS rejections.
  bool accept_datagram(Attempt& a, std::span<uint8_t> datagram);
  void close_attempt_socket(Attempt& a);
  /// Answers show delivery, loss or a spurious retransmission (PathEstimator).
  void learn_from_reply(Attempt& a);
  void classify_retransmissions(Query& q, const Server& s);
  /// The server just turned lossy: queries waiting on it retransmit at its RTO.
  void hurry_waiting_queries(const Server& s);
  void send_probes(Query& q, const Server* primary);
  void set_retry_timer(Query& q, MonoTime at);
  void on_retry(Query& q);
  /// A UDP reply of `q` came in the wrong 0x20 case (from `s`'s address): ends the query's
  /// UDP attempts and asks `s` again over TCP; from now on `q` takes only TCP answers.
  void switch_to_tcp(Query& q, Server& s);
  /// What a usable answer to a 0x20 attempt says about the server's case: echoed, or (over
  /// TCP) not echoed by the server itself.
  void judge_case(const Attempt& a, std::span<const uint8_t> answer, MonoTime now);
  /// How long the attempt just sent to `s` is given before the query is retransmitted.
  Millis retry_interval(const Query& q, const Server& s) const;
  /// The next attempt after a timeout or a failure; finishes `q` when nothing is left.
  void next_attempt(Query& q, UpstreamStatus why);
  void handle_result(Attempt& a, int status, std::span<uint8_t> answer);
  void finish(Query& q, UpstreamStatus status, std::span<uint8_t> answer);
  void release_if_done(Query* q);
  /// A Query from the spares (or the heap), default-initialised; and its return.
  Query* make_query();
  void drop_query(Query* q);
  void update_stats(Server& s);

  /// What a server's DotChannel reports for one of its attempts.
  void dot_event(Server& s, uint16_t id, DotChannel::Event event, std::span<uint8_t> message);
  static void on_sock_state(void* data, int fd, int readable, int writable);
  /// An attempt ended (ARES_* status; the answer when ARES_SUCCESS): UDP, TCP or DoT.
  static void on_answer(Attempt* a, int status, std::span<uint8_t> answer);
  /// c-ares's report for a TCP attempt (cares::AnswerFn).
  static void on_tcp_answer(void* arg, int status, std::span<uint8_t> answer);

  EventLoop& loop_;
  UpstreamOptions options_;
  std::vector<std::unique_ptr<Server>> servers_;  // in configuration order; take new queries
  std::vector<std::unique_ptr<Server>> retired_;  // finishing their queries after a reload
  std::shared_ptr<UpstreamTable> table_;
  std::bitset<65536> ids_in_use_;
  std::vector<Attempt*> by_id_;        // 65536 entries: the attempt using each ID
  std::vector<uint16_t> random_ids_;   // a batch from getrandom, consumed from the back
  std::vector<uint64_t> random_bits_;  // a batch from getrandom for 0x20, from the back
  std::vector<uint8_t> scratch_;       // the attempt being sent
  std::vector<TimerId> deferred_;      // report_later timers, cancelled by ~Upstream
  Query* live_ = nullptr;              // intrusive list of queries not yet freed
  std::vector<Query*> spare_queries_;  // destroyed Query objects whose memory is reused
  std::vector<uint8_t> rxbuf_;         // the datagram read_attempt() is looking at
  // Attempts in the order their sockets were opened, for giving the oldest up when the
  // socket budget is reached; entries whose attempt has closed its socket are skipped.
  struct OpenSocket {
    Attempt* attempt;
    const PortSocket* port;
    uint16_t id;
  };
  std::deque<OpenSocket> open_sockets_;
  // UDP attempts in the order they were sent, each to end `lifetime` later if still open.
  struct Expiry {
    MonoTime at;
    Attempt* attempt;
    uint64_t serial;
    uint16_t id;
  };
  std::deque<Expiry> expiries_;
  TimerId expiry_timer_{};
  uint64_t next_serial_ = 0;
  bool socket_live(const OpenSocket& o) const noexcept;
  /// Makes room under the socket budget for a socket of `family`: an idle one of that family,
  /// or a new one; false if none could be made.
  bool make_socket_room(Server& s, int family);
  // The attempts' UDP sockets (send_udp): each is watched by the loop once, sends one
  // attempt's datagram (connected: the kernel binds a fresh random port) and is disconnected after
  // it (which gives the port up), then kept idle for a later attempt.
  std::vector<std::unique_ptr<PortSocket>> ports_;
  std::vector<PortSocket*> idle_ports_[2];  // per family: [0] IPv4, [1] IPv6
  std::vector<PortSocket*>& idle_ports(int family) { return idle_ports_[family == AF_INET6]; }
  uint64_t sockets_opened_ = 0;
  PortSocket* take_port(int family);
  void close_port(PortSocket* p);
  void on_port_readable(PortSocket& p);
  std::size_t in_flight_ = 0;
  bool in_send_ = false;
  std::shared_ptr<void> tls_ctx_;  // SSL_CTX of the DoT servers (made with the first one)
};

}  // namespace hg::resolver
