// The trace generator behind `hourglass-rehearse synth`: a recording resolver with a plain TTL
// cache, fed by Poisson arrivals over Zipf-popular names, written as dnstap or pcap. The
// numbers it returns are the truth a replay is checked against.
//
// The recorder's model (what the trace shows):
//  - Queries arrive as a Poisson process of rate qps; each asks for name k (rank k+1) with
//    probability proportional to 1/(k+1)^zipf, from one of `clients` clients.
//  - Name k has a TTL: `ttl_min` when ttl_min == ttl_max, else drawn log-uniformly between
//    them (per name, from the seed).
//  - Cache: a query at t for a name whose answer is cached (t < expiry) is a hit, answered
//    kServiceNs later with the remaining TTL rounded down to whole seconds. Otherwise, if an
//    upstream query for the name is outstanding, it waits for that answer (coalesced);
//    otherwise it is a miss: FORWARDER_QUERY at t, FORWARDER_RESPONSE at t + rtt with the
//    full TTL, the cache timer set then (expiry = t + rtt + TTL, never reset by hits), and
//    the waiting clients answered with the full TTL.
// Everything is drawn from one seeded generator of our own, so a seed gives the same file on
// every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hg::rehearse {

enum class SynthFormat : uint8_t { Dnstap, Pcap };

struct SynthOptions {
  uint64_t names = 1000;
  double zipf = 1.0;
  double qps = 1000;
  double duration_s = 60;
  uint32_t ttl_min = 300, ttl_max = 300;
  uint64_t seed = 1;
  SynthFormat format = SynthFormat::Dnstap;
  double rtt_ms = 20;
  uint32_t clients = 256;
  int64_t start_ns = 1'700'000'000'000'000'000;  ///< trace time of the first instant
  std::string zone = "synth.example";            ///< names are n<rank-1>.<zone>.
};

inline constexpr int64_t kServiceNs = 20'000;  ///< a cache hit's answer delay

struct SynthNameTruth {
  uint32_t ttl = 0;
  double rate = 0;        ///< expected queries per second
  uint64_t queries = 0;   ///< client queries generated
  uint64_t upstream = 0;  ///< the recorder's misses (FORWARDER_QUERY)
};

struct SynthResult {
  uint64_t queries = 0, upstream = 0, events = 0, bytes = 0;
  std::vector<SynthNameTruth> names;  ///< index = rank - 1
};

/// The name of rank k+1 in presentation form with the trailing dot.
std::string synth_name(const SynthOptions& o, uint64_t k);

/// Writes the trace to `path`. False with `error` set ("cannot create FILE: ...").
bool synthesize(const SynthOptions& o, const std::string& path, SynthResult& result,
                std::string& error);

}  // namespace hg::rehearse
