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

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <tuple>

#include "resolver/net/event_loop.h"

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

/// What the answers show about a server's path: the share of datagrams lost (either way),
/// as an exponentially weighted average over the attempts whose fate is known, and how long
/// the server's slow answers take. Only evidence counts:
///  - an attempt answered: delivered;
///  - an attempt still unanswered when a later copy of the same query to the same server is
///    answered: lost (a server answers copies in the order they came, so a slow name's first
///    copy is answered first);
///  - an attempt judged lost that is answered after all: the judgement is taken back, and
///    the retransmission that followed it was spurious;
///  - an attempt never answered at all (a name the server never resolves) says nothing.
/// docs/upstream.md ("Retransmission that tells slow from lost") argues the numbers.
class PathEstimator {
 public:
  static constexpr double kGain = 1.0 / 16;
  /// A loss rate at or over this makes the path lossy: fast retries (RTO), more copies.
  static constexpr double kLossyAt = 0.01;
  /// A retransmission is planned until this is the chance that every copy is lost.
  static constexpr double kTargetFailure = 0.0001;
  /// Copies of a query (first send included) to a server that has shown no loss.
  static constexpr int kQuietSends = 3;
  /// At least this many on a lossy path: the estimate lags the loss when it starts.
  static constexpr int kLossySends = 4;
  /// The first retransmission to a server that has shown no loss waits at least this:
  /// a recursive upstream resolving a name it has not cached takes tens to hundreds of ms.
  static constexpr Micros kMinPatience{250'000};

  void delivered() noexcept { loss_ -= loss_ * kGain; }
  void lost() noexcept { loss_ += (1 - loss_) * kGain; }
  /// An attempt judged lost was answered: take the judgement back (approximately).
  void unlost() noexcept { loss_ = loss_ > kGain ? loss_ - kGain : 0; }
  /// An answer to an attempt that had been retransmitted, `latency` after it was sent.
  void slow_answer(Micros latency, Micros max) noexcept;

  double loss_rate() const noexcept { return loss_; }
  bool lossy() const noexcept { return loss_ >= kLossyAt; }
  /// Copies of one query this server gets at most (first send included): kQuietSends on a
  /// quiet path; on a lossy one enough that all are lost with at most kTargetFailure, and
  /// at least kLossySends.
  int max_sends(int ceiling) const noexcept;
  /// How long a query waits before its first retransmission to this server: the RTO on a
  /// lossy path; otherwise at least kMinPatience and the slow answers seen (x 1.5).
  Micros patience(Micros rto) const noexcept;
  Micros slow_wait() const noexcept { return slow_; }

 private:
  double loss_ = 0;
  Micros slow_{kMinPatience};
};

/// Per server: everything the selection and the query builder need.
struct ServerHealth {
  explicit ServerHealth(RttLimits limits = {}) : rtt(limits) {}

  RttEstimator rtt;
  PathEstimator path;
  /// SERVFAIL / REFUSED / NOTIMP / unreachable answers in a row (any answer that is not one
  /// of those ends the streak).
  int failure_streak = 0;
  /// Until then, queries go without EDNS (the server rejected an OPT record).
  MonoTime no_edns_until{};
  /// Until then, queries go without 0x20 (the server did not echo the query name's case).
  MonoTime no_0x20_until{};
  /// Confirmed case failures in a row (a TCP answer that did not echo the case either), on
  /// different names: the hashes of the names, the first case_streak of them set.
  int case_streak = 0;
  std::array<uint64_t, 3> case_names{};  // kCaseFallbackAfter entries
  /// Earliest time a suspect server may be sent a probe.
  MonoTime next_probe{};

  static constexpr int kSuspectAfter = 3;  ///< timeouts or failures in a row
  /// Different names whose TCP answers lacked the case before "no 0x20" (case_names' size).
  static constexpr int kCaseFallbackAfter = 3;
  static_assert(kCaseFallbackAfter == static_cast<int>(std::tuple_size_v<decltype(case_names)>));
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
  /// Records a confirmed case failure: the TCP answer to a query for the name whose hash is
  /// `name` did not echo its letter case either. The same name again is no new evidence;
  /// kCaseFallbackAfter different names in a row switch 0x20 off for the server (from `now`
  /// for kRemember), and then it returns true.
  bool on_case_failure(MonoTime now, uint64_t name) noexcept;
  /// An answer came back in the exact case it was asked in: the streak ends.
  void on_case_echo() noexcept { case_streak = 0; }
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
