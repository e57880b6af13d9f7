// The zone owner's projection (docs/rehearsal.md, "project"): from the queries an
// authoritative server received, estimate the client demand behind each querying resolver and
// project the authoritative load at other TTLs.
//
// Every resolver that asks the authoritative server is its own cache. For one resolver r and
// one question q with TTL T, a cache whose timer starts at a fetch sends the next fetch at
// T + W after it, W the wait for the next client query after expiry: Exp(λ) for Poisson
// demand λ. So the gaps between r's fetches of q are T + Wᵢ, and with the last, unfinished
// wait censored at the end of the trace the maximum-likelihood estimate is
//
//     λ̂ = n / (Σ Wᵢ + W_open),  Wᵢ = gapᵢ − T,  n = number of complete gaps,
//
// with a 95 % interval from the chi-square distribution with 2n degrees of freedom (exact for
// exponential waits), and for n = 0 only an upper bound, 3 / W_open. At a TTL T′ the resolver
// then fetches λ/(1 + λT′) per second. What does not fit is classified from the gaps and
// modelled, or bounded, separately:
//
//   shards    gaps shorter than 0.9·T (several caches behind one address, as public
//             resolvers run): k̂ = the most fetches in any window of length T (each cache
//             fetches at most once per T); the address's fetch rate is split over k̂ equal
//             caches and each projected as above
//   prefetch  gaps in [0.9·T, T) (a resolver refreshing a hot entry before it expires):
//             projected as one fetch per T′ (the hot limit), an upper bound
//   single    one fetch only: λ is bounded above, not estimated
//   fit       everything else
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hg::rehearse {

enum class FetchClass : uint8_t { Fit, Shards, Prefetch, Single };
const char* to_string(FetchClass c) noexcept;

/// One resolver's fetches of one question.
struct FetchSeries {
  std::vector<double> times_s;  ///< fetch times in seconds (any origin), ascending
  double ttl_s = 0;             ///< the TTL the authoritative server gives the answer
};

struct FetchFit {
  FetchClass cls = FetchClass::Fit;
  uint64_t fetches = 0;
  uint64_t gaps = 0;         ///< complete gaps used
  double lambda = 0;         ///< λ̂ per cache, queries per second
  double lambda_lo = 0;      ///< 95 % interval
  double lambda_hi = 0;      ///< for Single: the upper bound
  uint32_t caches = 1;       ///< k̂ for Shards, else 1
  double observed_rate = 0;  ///< fetches / observed span
};

/// Fits one series observed over [start_s, end_s] (the trace's span).
FetchFit fit_series(const FetchSeries& s, double start_s, double end_s);

/// Fetches per second at TTL `ttl_s` for a fit: central value and 95 % band.
struct Rate {
  double mid = 0, lo = 0, hi = 0;
};
Rate project_rate(const FetchFit& f, double ttl_s, double current_ttl_s);

/// The chi-square quantile for `dof` degrees of freedom at probability p (Wilson–Hilferty;
/// good to about 1 % for dof ≥ 2).
double chi_square_quantile(double p, double dof);

}  // namespace hg::rehearse
