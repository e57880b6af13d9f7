// Upstream: the c-ares channel that forwards our queries, driven by an EventLoop.
//
// c-ares does the transport work — UDP, retransmission, the next server on failure, TCP
// when an answer is truncated, matching answers to queries by ID and question. This class
// adapts it to the loop (ARES_OPT_SOCK_STATE_CB registers c-ares's sockets as fd watches,
// readiness calls ares_process_fd, one loop timer follows ares_timeout), picks the query IDs,
// and turns c-ares's int statuses into UpstreamStatus.
//
// What the caller must know (c-ares 1.18.1):
//  - send() takes a complete DNS query in wire form that ends with exactly one bare OPT
//    record (RFC 6891; the 11 bytes 00 0029 xxxx 00000000 0000 or with the DO bit). The
//    channel runs with ARES_FLAG_EDNS, and when a server answers FORMERR without an OPT,
//    c-ares cuts the last 11 bytes off our query and retries it without EDNS; any other
//    layout would be corrupted. RD should be set; the ID field is overwritten.
//  - The query ID is ours, not c-ares's: 1.18.1 sends the ID found in the buffer. send()
//    writes a fresh random ID (getrandom) that no other in-flight query uses. This (with
//    c-ares's question check) is all the spoofing resistance a UDP forwarder has.
//  - An answer with RCODE SERVFAIL, REFUSED or NOTIMP is not delivered: c-ares tries the
//    other servers (each once per query: a server that said SERVFAIL is not asked again),
//    and if all fail the callback gets ServFail/Refused/NotImp and no bytes.
//    NOERROR, NXDOMAIN, FORMERR answers arrive as Ok with the answer bytes.
//  - A late retransmission is not a new query: per-try timeout and tries are chosen so a
//    slow but alive server (300 ms) is not asked twice. c-ares doubles the per-try timeout
//    on every round through the server list.
//
// Thread: one Upstream per EventLoop, used only on the loop's thread.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/config.h"
#include "resolver/event_loop.h"

namespace hg::resolver {

/// How an upstream query ended. Every value but Ok goes down the stale-or-SERVFAIL path.
enum class UpstreamStatus : uint8_t {
  Ok,       ///< an answer arrived (any RCODE but SERVFAIL, REFUSED, NOTIMP)
  Timeout,  ///< no server answered within its tries (ARES_ETIMEOUT)
  /// Every server answered SERVFAIL. c-ares 1.18.1 itself says ARES_ECONNREFUSED here;
  /// we tell the two apart by the RCODE of the UDP answers it discarded (upstream.cc).
  ServFail,
  Refused,  ///< every server answered REFUSED (as for ServFail)
  NotImp,   ///< every server answered NOTIMP (as for ServFail)
  /// ICMP unreachable, TCP reset or refused (ARES_ECONNREFUSED), or a SERVFAIL that came
  /// only over TCP, which we cannot see.
  NetworkError,
  BadResponse,  ///< the server's answers could not be used (ARES_EBADRESP, ARES_EFORMERR)
  BadQuery,     ///< our query was shorter than a header or longer than 65535 bytes
  NoServers,    ///< the server list is empty
  Cancelled,    ///< cancel_all() ran before an answer came
  Internal,     ///< out of memory, out of query IDs, or a c-ares status we do not know
};

/// Stable lowercase identifier ("timeout", "servfail"...), for logs and metrics.
std::string_view to_string(UpstreamStatus s) noexcept;

struct UpstreamOptions {
  std::vector<Endpoint> servers{};
  /// Per-try timeout of the first round (c-ares doubles it each round through the server
  /// list). 1200 ms is 4x a slow-but-alive 300 ms server, so it is not retransmitted to.
  Millis try_timeout{1200};
  /// Rounds through the server list. With one server: tries at 0 and 1.2 s, giving up at
  /// 3.6 s; the daemon's own 3 s deadline answers the client before that anyway.
  int tries = 2;
  /// Advertised EDNS UDP payload size (ARES_OPT_EDNSPSZ); 1232 avoids IP fragmentation
  /// (DNS flag day 2020).
  uint16_t edns_payload = 1232;
  /// Spread queries over the servers instead of always starting with the first.
  bool rotate = false;
};

class Upstream {
 public:
  /// Gets the outcome; `answer` is the upstream's response (ID = the one send() returned)
  /// and is valid only during the call: copy what you keep. Empty unless status is Ok.
  using Callback = std::function<void(UpstreamStatus status, std::span<const uint8_t> answer)>;

  /// Creates the c-ares channel on `loop`. Fails (with a message naming the server) on an
  /// IPv6 server with a %scope, which c-ares 1.18 cannot address, or if c-ares fails to
  /// initialise.
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
  const std::vector<Endpoint>& servers() const noexcept { return options_.servers; }

 private:
  struct Channel;
  struct Query;

  Upstream(EventLoop& loop, UpstreamOptions options);
  Checked<Channel*> open_channel(std::span<const Endpoint> servers);
  void process(Channel& ch, int read_fd, int write_fd);
  void rearm_timer(Channel& ch);
  void rearm_timer_if_needed(Channel& ch);
  void retire_if_idle(Channel& ch);
  void destroy_channel(Channel* ch);
  std::optional<uint16_t> next_id();
  void report_later(Callback done, UpstreamStatus status, std::vector<uint8_t> answer);

  static void on_sock_state(void* data, int fd, int readable, int writable);
  static void on_answer(void* arg, int status, int timeouts, unsigned char* abuf, int alen);

  EventLoop& loop_;
  UpstreamOptions options_;
  std::vector<std::unique_ptr<Channel>> channels_;  // back() takes new queries
  std::bitset<65536> ids_in_use_;
  // Per query ID, the RCODE (SERVFAIL/NOTIMP/REFUSED) of a UDP answer c-ares discarded;
  // 0 if none. See upstream.cc, "Socket functions".
  std::unique_ptr<std::array<uint8_t, 65536>> failed_rcodes_;
  std::vector<uint16_t> random_ids_;  // a batch from getrandom, consumed from the back
  std::vector<uint8_t> scratch_;      // our copy of the query being sent
  std::vector<TimerId> deferred_;     // report_later timers, cancelled by ~Upstream
  std::size_t in_flight_ = 0;
  bool in_send_ = false;
};

}  // namespace hg::resolver
