// Upstream health: what hourglassd knows about each upstream server, and how it picks one.
//
// Pure logic with the time passed in, so unit tests drive it with a test clock:
//  - RttEstimator: RFC 6298 smoothed round-trip time and variance, the retransmission
//    timeout derived from them (clamped, backed off on consecutive timeouts);
//  - ServerHealth: the estimator plus the per-server EDNS and 0x20 states and the failure
//    streaks that make a server "suspect";
//  - choose_server(): the server a query (or its retransmission) goes to.
// docs/upstream.md argues the numbers.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>

#include "resolver/event_loop.h"

namespace hg::resolver {

using Micros = std::chrono::microseconds;

struct RttLimits {
  Micros min_rto{50'000};         ///< never retransmit sooner than this
  Micros max_rto{1'000'000};      ///< never wait longer than this before retransmitting
  Micros initial_rto{1'000'000};  ///< before the first sample (RFC 6298 §2.1)
  /// Consecutive timeouts taken as plain loss before the timeout starts doubling.
  int free_timeouts = 2;
};

/// RFC 6298 §2: SRTT and RTTVAR from samples, RTO = SRTT + max(G, 4·RTTVAR), clamped to
/// [min_rto, max_rto]; each consecutive timeout past `free_timeouts` doubles it (§5.5), up to
/// max_rto. Karn's rule is the caller's: feed only samples from queries never retransmitted.
class RttEstimator {
 public:
  explicit RttEstimator(RttLimits limits = {}) : limits_(limits) {}

  /// A round trip measured on a query that was sent once. Ends a timeout streak.
  void sample(Micros rtt) noexcept;
  /// The retransmission timer of a query to this server expired.
  void timeout() noexcept { ++streak_; }
  /// Any answer (including one to a retransmitted query, which gives no sample): the server
  /// is alive, so the timeout streak, and with it the backoff, ends.
  void answered() noexcept { streak_ = 0; }

  /// The timeout for the next query sent to this server.
  Micros rto() const noexcept;
  bool has_sample() const noexcept { return has_sample_; }
  Micros srtt() const noexcept { return srtt_; }
  Micros rttvar() const noexcept { return rttvar_; }
  int timeout_streak() const noexcept { return streak_; }
  const RttLimits& limits() const noexcept { return limits_; }

 private:
  RttLimits limits_;
  Micros srtt_{0};
  Micros rttvar_{0};
  bool has_sample_ = false;
  int streak_ = 0;
};

/// Per server: everything the selection and the query builder need.
struct ServerHealth {
  explicit ServerHealth(RttLimits limits = {}) : rtt(limits) {}

  RttEstimator rtt;
  /// SERVFAIL / REFUSED / NOTIMP / unreachable answers in a row (any answer that is not one
  /// of those ends the streak).
  int failure_streak = 0;
  /// Until then, queries go without EDNS (the server rejected an OPT record).
  MonoTime no_edns_until{};
  /// Until then, queries go without 0x20 (the server did not echo the query name's case).
  MonoTime no_0x20_until{};
  /// Queries with 0x20 whose only replies had the wrong case, in a row.
  int case_streak = 0;
  /// Earliest time a suspect server may be sent a probe.
  MonoTime next_probe{};

  static constexpr int kSuspectAfter = 3;  ///< timeouts or failures in a row
  static constexpr int kCaseFallbackAfter = 2;
  static constexpr Millis kRemember{10 * 60 * 1000};  ///< "no EDNS" / "no 0x20" lasts this
  static constexpr Millis kProbeInterval{2000};

  bool suspect() const noexcept {
    return rtt.timeout_streak() >= kSuspectAfter || failure_streak >= kSuspectAfter;
  }
  bool edns_ok(MonoTime now) const noexcept { return now >= no_edns_until; }
  bool use_0x20(MonoTime now) const noexcept { return now >= no_0x20_until; }

  /// The server answered usefully (any RCODE but SERVFAIL/REFUSED/NOTIMP).
  void on_answer() noexcept {
    rtt.answered();
    failure_streak = 0;
  }
  void on_failure() noexcept {
    rtt.answered();  // it did answer: not a timeout
    ++failure_streak;
  }
  /// Records a query whose 0x20 replies all had the wrong case; true when this switches
  /// 0x20 off for the server (from `now` for kRemember).
  bool on_case_failure(MonoTime now) noexcept;
  /// The server's expected answer time for ranking: SRTT, or the initial RTO before any
  /// sample, doubled for each timeout in the current streak.
  Micros score() const noexcept;
};

/// The server for the next attempt of a query: the best-scoring server not in `excluded`
/// (bit i = servers[i]) that is not suspect; if every such server is suspect, the best
/// suspect one. nullopt when every server is excluded. Ties go to the earlier server.
std::optional<std::size_t> choose_server(std::span<const ServerHealth* const> servers,
                                         uint64_t excluded) noexcept;

}  // namespace hg::resolver
