#include "resolver/upstream/upstream_health.h"

#include <algorithm>
#include <cmath>

namespace hg::resolver {

namespace {
// RFC 6298's clock granularity G: our clock reads microseconds, so 1 ms is generous.
constexpr Micros kGranularity{1000};
}  // namespace

void RttEstimator::sample(Micros rtt) noexcept {
  if (rtt < Micros{0}) rtt = Micros{0};
  if (!has_sample_) {
    // RFC 6298 §2.2
    srtt_ = rtt;
    rttvar_ = rtt / 2;
    has_sample_ = true;
  } else {
    // RFC 6298 §2.3, alpha = 1/8, beta = 1/4
    const Micros err = srtt_ > rtt ? srtt_ - rtt : rtt - srtt_;
    rttvar_ = (3 * rttvar_ + err) / 4;
    srtt_ = (7 * srtt_ + rtt) / 8;
  }
  streak_ = 0;
}

Micros RttEstimator::rto() const noexcept {
  Micros base = has_sample_ ? srtt_ + std::max(kGranularity, 4 * rttvar_) : limits_.initial_rto;
  base = std::clamp(base, limits_.min_rto, limits_.max_rto);
  const int doublings = std::min(streak_ - limits_.free_timeouts, 20);
  for (int i = 0; i < doublings && base < limits_.max_rto; ++i)
    base *= 2;
  return std::min(base, limits_.max_rto);
}

void PathEstimator::slow_answer(Micros latency, Micros max) noexcept {
  // 1.5 x the slow answer: the next slow name is answered before its first retransmission.
  // A larger one is taken at once; a smaller one pulls the wait down by an eighth.
  const Micros target = std::clamp(latency * 3 / 2, kMinPatience, std::max(kMinPatience, max));
  slow_ = target > slow_ ? target : slow_ - (slow_ - target) / 8;
}

int PathEstimator::max_sends(int ceiling) const noexcept {
  if (!lossy()) return std::min(kQuietSends, ceiling);
  if (loss_ >= 0.99) return ceiling;
  const double n = std::ceil(std::log(kTargetFailure) / std::log(loss_));
  return std::clamp(static_cast<int>(n), std::min(kLossySends, ceiling), ceiling);
}

Micros PathEstimator::patience(Micros rto) const noexcept {
  return lossy() ? rto : std::max(rto, slow_);
}

bool ServerHealth::on_case_failure(MonoTime now, uint64_t name) noexcept {
  for (int i = 0; i < case_streak; ++i) {
    if (case_names[static_cast<std::size_t>(i)] == name) return false;
  }
  case_names[static_cast<std::size_t>(case_streak)] = name;
  if (++case_streak < kCaseFallbackAfter) return false;
  case_streak = 0;
  no_0x20_until = now + kRemember;
  return true;
}

Micros ServerHealth::score() const noexcept {
  Micros s = rtt.has_sample() ? rtt.srtt() : rtt.limits().initial_rto;
  const int streak = std::min(rtt.timeout_streak(), 20);
  for (int i = 0; i < streak; ++i)
    s = s * 2 + Micros{1};  // +1: a server with SRTT 0 still ranks below one without timeouts
  return s;
}

std::optional<std::size_t> choose_server(std::span<const ServerHealth* const> servers,
                                         uint64_t excluded) noexcept {
  std::optional<std::size_t> best, best_suspect;
  for (std::size_t i = 0; i < servers.size() && i < 64; ++i) {
    if (excluded & (uint64_t{1} << i)) continue;
    const ServerHealth& h = *servers[i];
    auto& slot = h.suspect() ? best_suspect : best;
    if (!slot || h.score() < servers[*slot]->score()) slot = i;
  }
  return best ? best : best_suspect;
}

}  // namespace hg::resolver
