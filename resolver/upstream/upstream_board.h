// UpstreamBoard: per-server upstream statistics that every worker's Upstream publishes and
// the control socket (`hourglass-ctl upstreams`) and the metrics endpoint read.
//
// Each worker's Upstream owns the stats of its own servers and is the only writer (relaxed
// atomics, written on its loop thread); readers on any thread take a snapshot of the tables
// under the board's mutex and read the atomics. A table replaced on SIGHUP stays alive while
// a reader still holds it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/counter_slots.h"
#include "resolver/net/endpoint.h"

namespace hg::resolver {

/// Adds one to a counter of UpstreamServerStats, from its only writer (the owning worker).
inline void bump(std::atomic<uint64_t>& counter) noexcept {
  base::add_as_sole_writer(counter, 1);
}

struct UpstreamServerStats {
  explicit UpstreamServerStats(Endpoint e) : server(e) {}
  const Endpoint server;
  std::atomic<uint64_t> queries{0};          ///< datagrams sent (every attempt)
  std::atomic<uint64_t> answers{0};          ///< usable answers (any RCODE but the failures)
  std::atomic<uint64_t> late_answers{0};     ///< usable answers after the query had ended
  std::atomic<uint64_t> timeouts{0};         ///< attempts whose retransmission timer expired
  std::atomic<uint64_t> failures{0};         ///< SERVFAIL/REFUSED/NOTIMP/unreachable
  std::atomic<uint64_t> edns_rejections{0};  ///< FORMERR/NOTIMP/SERVFAIL without OPT, BADVERS
  std::atomic<uint64_t> edns_fallbacks{0};   ///< times "no EDNS" was switched on
  std::atomic<uint64_t> case_mismatches{0};  ///< replies dropped for the wrong 0x20 case
  std::atomic<uint64_t> case_fallbacks{0};   ///< times "no 0x20" was switched on
  /// Queries whose wrong-case UDP reply the TCP answer proved forged (it echoed the case).
  std::atomic<uint64_t> case_forgeries{0};
  std::atomic<uint64_t> truncated{0};  ///< UDP answers with TC (c-ares retries over TCP)
  std::atomic<uint64_t> probes{0};     ///< hedged queries sent to a suspect server
  /// Retransmissions an earlier copy's answer showed needless (the server was slow).
  std::atomic<uint64_t> spurious_retransmissions{0};
  /// Retransmissions that got the answer while every earlier copy went unanswered (loss).
  std::atomic<uint64_t> needed_retransmissions{0};
  /// Retransmissions not sent: the query had as many copies as the path's loss warrants.
  std::atomic<uint64_t> retransmissions_withheld{0};
  /// Datagrams dropped on an attempt's socket: the ID of another attempt to this server
  /// (an answer that came to the wrong port), an ID of none, a question that is not the
  /// one asked (or not a response at all).
  std::atomic<uint64_t> dropped_wrong_port{0};
  std::atomic<uint64_t> dropped_wrong_id{0};
  std::atomic<uint64_t> dropped_wrong_question{0};
  /// Datagrams dropped on an attempt's socket because they came from another address or
  /// port than the server's. The socket is connected to the server, so the kernel refuses
  /// those first (with ICMP port unreachable); this counts what would get past it.
  std::atomic<uint64_t> dropped_wrong_source{0};
  /// Attempts for which no socket could be had (descriptors or memory ran out).
  std::atomic<uint64_t> socket_errors{0};
  /// Attempt sockets closed early to stay within the socket budget (UpstreamOptions).
  std::atomic<uint64_t> sockets_reclaimed{0};
  /// Answers whose AD bit was cleared: the server is not one we authenticate and trust
  /// (--trust-ad), so its claim to have validated them is not passed on.
  std::atomic<uint64_t> ad_cleared{0};
  /// DNS over TLS (resolver/upstream/dot.h); zero for a plain server.
  std::atomic<uint64_t> tls_handshakes{0};           ///< TLS connections opened
  std::atomic<uint64_t> tls_resumptions{0};          ///< of which resumed a session
  std::atomic<uint64_t> tls_reused{0};               ///< queries on an already used connection
  std::atomic<uint64_t> tls_verify_failures{0};      ///< certificate or pin refused
  std::atomic<uint64_t> tls_connection_failures{0};  ///< connect/handshake failed, or lost
  std::atomic<bool> tls{false};                      ///< the server is reached over TLS
  /// How the last TLS connection attempt ended (TlsOutcome), for `upstreams`' state: a
  /// server whose every handshake is refused must not be shown "up".
  std::atomic<uint8_t> tls_last{0};
  std::atomic<int64_t> loss_ppm{0};     ///< estimated loss rate, parts per million
  std::atomic<int64_t> patience_us{0};  ///< wait before the first retransmission now
  std::atomic<int64_t> srtt_us{-1};     ///< -1 before the first sample
  std::atomic<int64_t> rttvar_us{0};
  std::atomic<int64_t> rto_us{0};
  std::atomic<bool> edns{true};
  std::atomic<bool> use_0x20{true};
  std::atomic<bool> suspect{false};
};

/// UpstreamServerStats::tls_last.
enum class TlsOutcome : uint8_t {
  None = 0,          ///< no attempt yet
  Verified = 1,      ///< handshake done, certificate (and pin) accepted
  AuthFailed = 2,    ///< certificate or pin refused
  ConnectFailed = 3  ///< no connection, or the handshake failed
};

struct UpstreamTable {
  int worker = 0;
  std::vector<std::shared_ptr<UpstreamServerStats>> servers;
};

class UpstreamBoard {
 public:
  /// Sets worker `table->worker`'s current table (replacing its previous one).
  void publish(std::shared_ptr<const UpstreamTable> table);
  std::vector<std::shared_ptr<const UpstreamTable>> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const UpstreamTable>> tables_;  // guarded by mu_
};

/// `hourglass-ctl upstreams`: one line per server (counters summed over workers; RTT,
/// RTO and states from the worker that answered most through it).
/// `extra`: fields another part adds to a server's line ("dnssec=yes"), by server address.
std::string upstreams_text(const UpstreamBoard& board,
                           const std::map<std::string, std::string>& extra = {});
/// Prometheus families hourglass_upstream_server_*{server="ADDR:PORT"}.
std::string upstreams_metrics(const UpstreamBoard& board);

}  // namespace hg::resolver
