// The zone owner's projection against synthetic authoritative traces whose per-resolver demand
// is known: resolvers that are one TTL cache each (Poisson demand λ per name), one address
// with several caches behind it (a public resolver's shards), and one resolver that prefetches.
// The generator below is the model's premise written out; the projection must find λ, the
// classes, and — checked against a second simulation run at the candidate TTL — the load.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/rehearse/replay_test_util.h"
#include "tools/rehearse/project/project.h"

namespace hg::rehearse::testing {
namespace {

struct Resolver {
  uint8_t last_octet;
  double lambda;  // client queries per second, per name
  int caches = 1;
  bool prefetch = false;
};

// One simulated TTL cache per (resolver, cache, name): Poisson demand, timer set at a fetch
// and not reset by hits; a prefetching cache also refreshes on a hit in the last 10 % of the
// entry's life. Returns the fetch times per (resolver, name), and appends AUTH_QUERY events.
struct AuthSim {
  double duration_s;
  std::vector<std::string> names;
  std::vector<Resolver> resolvers;

  // fetches[resolver][name] = count
  std::vector<std::vector<uint64_t>> run(double ttl, uint64_t seed, ProjectInput* into) const {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<uint64_t>> counts(resolvers.size(),
                                              std::vector<uint64_t>(names.size(), 0));
    struct Ev {
      double t;
      std::size_t r, n;
    };
    std::vector<Ev> evs;
    for (std::size_t r = 0; r < resolvers.size(); ++r) {
      const Resolver& R = resolvers[r];
      for (std::size_t n = 0; n < names.size(); ++n) {
        std::vector<double> expiry(static_cast<std::size_t>(R.caches), -1);
        std::exponential_distribution<double> gap(R.lambda);
        std::uniform_int_distribution<int> pick(0, R.caches - 1);
        std::uniform_real_distribution<double> u01(0, 1);
        for (double t = gap(rng); t < duration_s; t += gap(rng)) {
          double& e = expiry[static_cast<std::size_t>(pick(rng))];
          bool fetch = t >= e;
          if (!fetch && R.prefetch && e - t < 0.1 * ttl) fetch = true;
          if (!fetch) continue;
          e = t + ttl;
          ++counts[r][n];
          evs.push_back({t, r, n});
        }
      }
    }
    if (into != nullptr) {
      std::sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
      // The trace spans [0, duration]: a first and last event fix it, as a real trace's
      // other traffic would.
      add(*into, 0, 0, 0);
      for (const Ev& e : evs)
        add(*into, e.t, resolvers[e.r].last_octet, e.n);
      add(*into, duration_s, 0, 0);
    }
    return counts;
  }

  void add(ProjectInput& in, double t, uint8_t octet, std::size_t n) const {
    auto m = cache::testing::query(octet == 0 ? "edge.other.test" : names[n]);
    const std::vector<uint8_t> w = wire::to_wire(m);
    const std::vector<uint8_t> bytes(w.begin(), w.end());
    TraceEvent ev;
    ev.side = Side::Client;
    ev.role = Role::Query;
    ev.time_ns = kT0 + static_cast<int64_t>(t * 1e9);
    ev.family = 4;
    ev.client_addr = {192, 0, 2, octet == 0 ? uint8_t{250} : octet};
    ev.message = bytes;
    ev.dnstap_type = 1;  // AUTH_QUERY
    in.add(ev);
  }
};

AuthSim make_sim() {
  AuthSim s;
  s.duration_s = 6 * 3600;
  s.names = {"www.zone.test", "api.zone.test", "img.zone.test", "cold.zone.test"};
  // Ten plain resolvers with demand from cold to hot, an address with four caches behind it,
  // and a prefetching resolver.
  const double lambdas[] = {0.0005, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.3, 1.0, 3.0};
  for (int i = 0; i < 10; ++i)
    s.resolvers.push_back({static_cast<uint8_t>(10 + i), lambdas[i]});
  s.resolvers.push_back({100, 2.0, 4, false});
  s.resolvers.push_back({101, 1.0, 1, true});
  return s;
}

TEST(ProjectModel, ChiSquareQuantilesAreRight) {
  // Table values: χ²(0.025; 10) = 3.247, χ²(0.975; 10) = 20.483, χ²(0.975; 2) = 7.378.
  EXPECT_NEAR(chi_square_quantile(0.025, 10), 3.247, 0.05);
  EXPECT_NEAR(chi_square_quantile(0.975, 10), 20.483, 0.1);
  EXPECT_NEAR(chi_square_quantile(0.975, 2), 7.378, 0.2);
}

TEST(ProjectModel, LambdaIsFoundFromTheGapsOfOneCache) {
  // One cache, TTL 300, λ = 0.01/s over 6 h: its fetches are 300 s + Exp(0.01) apart.
  std::mt19937_64 rng(3);
  for (double lambda : {0.002, 0.01, 0.05, 0.5}) {
    FetchSeries s;
    s.ttl_s = 300;
    double expiry = -1;
    std::exponential_distribution<double> gap(lambda);
    for (double t = gap(rng); t < 21600; t += gap(rng)) {
      if (t >= expiry) {
        s.times_s.push_back(t);
        expiry = t + 300;
      }
    }
    const FetchFit f = fit_series(s, 0, 21600);
    EXPECT_EQ(f.cls, FetchClass::Fit) << lambda;
    EXPECT_LE(f.lambda_lo, lambda) << lambda;
    EXPECT_GE(f.lambda_hi, lambda) << lambda;
    // Relative standard error about 1/√n.
    EXPECT_NEAR(f.lambda / lambda, 1.0, 4.0 / std::sqrt(static_cast<double>(f.gaps))) << lambda;
  }
}

TEST(ProjectModel, SeveralCachesBehindOneAddressAreFoundAndCounted) {
  const AuthSim sim = make_sim();
  ProjectInput in;
  sim.run(300, 1, &in);
  const auto& www = in.series.at("www.zone.test. A");
  std::vector<double> t = www.at("192.0.2.100");
  std::sort(t.begin(), t.end());
  const double span = static_cast<double>(in.last_ns - in.first_ns) / 1e9;
  const FetchFit f = fit_series({t, 300}, 0, span);
  EXPECT_EQ(f.cls, FetchClass::Shards);
  EXPECT_EQ(f.caches, 4u);  // hot shards: all four fetch within every 300 s window
  // The prefetching resolver is told apart too.
  std::vector<double> p = www.at("192.0.2.101");
  std::sort(p.begin(), p.end());
  EXPECT_EQ(fit_series({p, 300}, 0, span).cls, FetchClass::Prefetch);
}

TEST(ProjectModel, ProjectionMatchesASecondSimulationAtTheCandidateTtls) {
  const AuthSim sim = make_sim();
  ProjectInput in;
  const auto now = sim.run(300, 1, &in);
  // Queries only: today's TTL comes from the caller (--ttl).
  const ProjectResult r = project(in, {120, 60, 30}, std::optional<uint32_t>{300});
  ASSERT_TRUE(r.missing_ttl.empty());
  uint64_t received = 0;
  for (const auto& per_r : now)
    for (uint64_t c : per_r)
      received += c;
  EXPECT_EQ(r.observed, received + 2);  // + the two edge events
  // The model at today's TTL reproduces what was received.
  EXPECT_NEAR(r.model_now / static_cast<double>(r.observed), 1.0, 0.05);
  // Every class is present, and the table says how much each carries.
  EXPECT_GT(r.classes[static_cast<std::size_t>(FetchClass::Fit)].fetches, 0u);
  EXPECT_GT(r.classes[static_cast<std::size_t>(FetchClass::Shards)].fetches, 0u);
  EXPECT_GT(r.classes[static_cast<std::size_t>(FetchClass::Prefetch)].fetches, 0u);
  EXPECT_EQ(r.max_caches, 4u);

  const uint32_t ttls[] = {120, 60, 30};
  for (std::size_t c = 0; c < 3; ++c) {
    const auto truth = sim.run(ttls[c], 100 + c, nullptr);
    uint64_t total = 2;
    for (const auto& per_r : truth)
      for (uint64_t x : per_r)
        total += x;
    const Rate& p = r.totals[c];
    const double t = static_cast<double>(total);
    std::printf(
        "TTL 300 → %u: projected %.0f [%.0f, %.0f], simulated %llu (received at 300: %llu)\n",
        ttls[c], p.mid, p.lo, p.hi, static_cast<unsigned long long>(total),
        static_cast<unsigned long long>(r.observed));
    EXPECT_NEAR(p.mid / t, 1.0, 0.10)
        << "TTL " << ttls[c] << ": projected " << p.mid << ", simulated " << total;
    EXPECT_LE(p.lo, t) << "TTL " << ttls[c];
    EXPECT_GE(p.hi, t) << "TTL " << ttls[c];
    // Per name, for the busy ones.
    for (std::size_t n = 0; n < sim.names.size(); ++n) {
      uint64_t name_total = 0;
      for (const auto& per_r : truth)
        name_total += per_r[n];
      const std::string q = sim.names[n] + ". A";
      auto it = std::find_if(r.names.begin(), r.names.end(),
                             [&](const NameProjection& x) { return x.question == q; });
      ASSERT_NE(it, r.names.end()) << q;
      if (name_total < 1000) continue;
      EXPECT_NEAR(it->at[c].mid / static_cast<double>(name_total), 1.0, 0.10)
          << q << " at " << ttls[c];
    }
  }
}

}  // namespace
}  // namespace hg::rehearse::testing
