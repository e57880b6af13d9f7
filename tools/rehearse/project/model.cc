#include "tools/rehearse/project/model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hg::rehearse {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// λ/(1+λT), with λ = ∞ giving 1/T (a cache asked all the time fetches once per TTL).
double miss_rate(double lambda, double ttl) {
  if (std::isinf(lambda)) return ttl > 0 ? 1.0 / ttl : kInf;
  return lambda / (1.0 + lambda * ttl);
}

// The demand λ behind a fetch rate f at TTL T: f = λ/(1+λT) ⇒ λ = f/(1−fT); ∞ when fT ≥ 1.
double demand_of(double f, double ttl) {
  const double d = 1.0 - f * ttl;
  return d <= 1e-9 ? kInf : f / d;
}

// The inverse standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425, hi = 1 - lo;
  if (p < lo) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > hi) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

const char* to_string(FetchClass c) noexcept {
  switch (c) {
    case FetchClass::Fit:
      return "fit";
    case FetchClass::Shards:
      return "shards";
    case FetchClass::Prefetch:
      return "prefetch";
    case FetchClass::Single:
      return "single";
  }
  return "?";
}

double chi_square_quantile(double p, double dof) {
  if (dof <= 0) return 0;
  const double z = normal_quantile(p);
  const double h = 2.0 / (9.0 * dof);
  const double v = 1.0 - h + z * std::sqrt(h);
  return dof * std::max(0.0, v * v * v);
}

FetchFit fit_series(const FetchSeries& s, double start_s, double end_s) {
  FetchFit f;
  const auto& t = s.times_s;
  const double T = s.ttl_s;
  const double span = std::max(end_s - start_s, 1e-9);
  f.fetches = t.size();
  f.observed_rate = static_cast<double>(t.size()) / span;
  if (t.empty()) {
    f.cls = FetchClass::Single;
    return f;
  }
  const double open = std::max(0.0, end_s - (t.back() + T));  // the unfinished last wait
  if (t.size() == 1) {
    f.cls = FetchClass::Single;
    f.lambda_hi = open > 0 ? -std::log(0.05) / open : kInf;
    return f;
  }
  uint64_t short_gaps = 0, early = 0;
  for (std::size_t i = 1; i < t.size(); ++i) {
    const double g = t[i] - t[i - 1];
    if (g < 0.9 * T) {
      ++short_gaps;
    } else if (g < T) {
      ++early;
    }
  }
  const double gaps = static_cast<double>(t.size() - 1);
  if (T > 0 && static_cast<double>(short_gaps) >= std::max(2.0, 0.2 * gaps)) {
    // Several caches behind one address: each fetches at most once per T, so the most
    // fetches in a window of length T is a lower bound on their number.
    f.cls = FetchClass::Shards;
    std::size_t j = 0, most = 1;
    for (std::size_t i = 0; i < t.size(); ++i) {
      while (t[i] - t[j] >= T)
        ++j;
      most = std::max(most, i - j + 1);
    }
    f.caches = static_cast<uint32_t>(most);
    const double k = static_cast<double>(most);
    const double n = static_cast<double>(t.size());
    const double per = n / span / k;
    f.lambda = demand_of(per, T);
    f.lambda_lo = demand_of(std::max(0.0, n - 1.96 * std::sqrt(n)) / span / k, T);
    f.lambda_hi = demand_of((n + 1.96 * std::sqrt(n)) / span / k, T);
    f.gaps = t.size() - 1;
    return f;
  }
  if (static_cast<double>(early) >= std::max(2.0, 0.5 * gaps)) {
    f.cls = FetchClass::Prefetch;
    f.gaps = t.size() - 1;
    f.lambda = f.lambda_lo = f.lambda_hi = kInf;
    return f;
  }
  f.cls = FetchClass::Fit;
  double waits = open;
  for (std::size_t i = 1; i < t.size(); ++i)
    waits += std::max(0.0, t[i] - t[i - 1] - T);
  f.gaps = t.size() - 1;
  const double n = gaps;
  if (waits <= 1e-9) {  // every gap exactly T: a client asks all the time
    f.lambda = f.lambda_lo = f.lambda_hi = kInf;
    return f;
  }
  f.lambda = n / waits;
  f.lambda_lo = chi_square_quantile(0.025, 2 * n) / (2 * waits);
  f.lambda_hi = chi_square_quantile(0.975, 2 * n + 2) / (2 * waits);
  return f;
}

Rate project_rate(const FetchFit& f, double ttl_s, double current_ttl_s) {
  Rate r;
  switch (f.cls) {
    case FetchClass::Fit:
      r.mid = miss_rate(f.lambda, ttl_s);
      r.lo = miss_rate(f.lambda_lo, ttl_s);
      r.hi = miss_rate(f.lambda_hi, ttl_s);
      break;
    case FetchClass::Shards: {
      const double k = static_cast<double>(f.caches);
      r.mid = k * miss_rate(f.lambda, ttl_s);
      r.lo = k * miss_rate(f.lambda_lo, ttl_s);
      r.hi = k * miss_rate(f.lambda_hi, ttl_s);
      break;
    }
    case FetchClass::Prefetch:
      // A resolver that refreshes before expiry is hot: about one fetch per TTL now, and per
      // new TTL then. Never fewer fetches than now when the TTL goes down.
      r.mid = f.observed_rate * current_ttl_s / std::max(ttl_s, 1e-9);
      r.lo = ttl_s <= current_ttl_s ? f.observed_rate : r.mid;
      r.hi = std::max(r.mid, 1.0 / std::max(0.9 * ttl_s, 1e-9));
      break;
    case FetchClass::Single:
      // Seen once: cold. As now, up to what the upper bound on λ allows.
      r.mid = r.lo = f.observed_rate;
      r.hi = std::max(r.mid, miss_rate(f.lambda_hi, ttl_s));
      break;
  }
  r.lo = std::min(r.lo, r.mid);
  r.hi = std::max(r.hi, r.mid);
  return r;
}

}  // namespace hg::rehearse
