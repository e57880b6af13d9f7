// Metrics: the daemon's counters and gauges in the Prometheus text exposition format
// (version 0.0.4), served over HTTP at `--metrics ADDR:PORT` (docs/architecture.md §5).
//
//   GET /metrics (or HEAD)  → 200, Content-Type: text/plain; version=0.0.4
//   any other path          → 404;  another method → 405;  not HTTP/1.x → 400
//   headers over 8 KiB      → 431
//
// Every response carries Content-Length and "Connection: close", and the connection is
// closed once it is sent: a scraper opens one connection per scrape, so keep-alive buys
// nothing here. The responder is a few dozen lines on worker 0's event loop (StreamServer:
// non-blocking, at most 16 connections, 10 s idle timeout) rather than a thread per
// connection or an HTTP library.
//
// Who may connect: --metrics-allow, or else --allow; anyone else is reset at accept, before a
// byte is read (no 403: answering would mean reading the request, and holding a slot for
// it). At most 8 connections per source; a new one when the table or its source's share is
// full closes the oldest idle connection (conn_admission.h), and a request head must arrive
// within 3 s of the accept, so idle or trickling connections cannot keep a scrape out.
//
// What is exported (each with # HELP and # TYPE):
//   counters  hourglass_queries_total{transport}, hourglass_cache_hits_total,
//             hourglass_cache_stale_answers_total, hourglass_cache_misses_total,
//             hourglass_coalesced_total, hourglass_prefetches_total,
//             hourglass_upstream_queries_total, hourglass_upstream_answers_total,
//             hourglass_upstream_failures_total, hourglass_scrubbed_records_total,
//             hourglass_clamped_ttls_total, hourglass_minimal_any_total,
//             hourglass_rebind_blocked_total,
//             hourglass_servfail_total,
//             hourglass_deadline_answers_total, hourglass_failure_cached_answers_total,
//             hourglass_rejected_total{reason} (refused, formerr, notimp, dropped, overload,
//             client_share, failing_zone, rate_limited), hourglass_truncated_total,
//             hourglass_cache_inserts_total, hourglass_cache_evictions_total,
//             hourglass_cache_expired_total
//   gauges    hourglass_cache_entries, hourglass_cache_bytes, hourglass_cache_capacity_bytes,
//             hourglass_cache_failure_entries, hourglass_cache_ttl_caps, hourglass_inflight,
//             hourglass_inflight_waiters
//   shadow    per shadow-ttl zone (cache/shadow.h): hourglass_shadow_upstream_queries_total,
//             hourglass_shadow_real_upstream_queries_total, hourglass_shadow_queries_total
//             (counters, {zone}), hourglass_shadow_projected_hit_ratio,
//             hourglass_shadow_real_hit_ratio (gauges, {zone}); hourglass_shadow_entries,
//             hourglass_shadow_bytes, hourglass_shadow_evictions_total
// Answers are not counted per RCODE (Stats has no such counters); servfail_total and
// rejected_total cover the error answers hourglass makes itself.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"
#include "resolver/net/stream_server.h"
#include "resolver/query/shared.h"

namespace hg::resolver {

/// The exposition text for `shared` as it is now.
std::string render_metrics(Shared& shared);

/// The HTTP response (status line, headers, body) to the request head `head` (the request
/// line and headers up to and including the empty line). Exposed for tests.
std::string metrics_http_response(Shared& shared, std::string_view head);

class Metrics {
 public:
  /// Listens on `addr` (TCP; port 0 lets the kernel choose: see local()) and serves on
  /// `loop`. The error names the address, what failed and what to do.
  static Checked<std::unique_ptr<Metrics>> open(EventLoop& loop, Shared& shared,
                                                const Endpoint& addr);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// The bound address (the kernel's port when 0 was asked).
  const Endpoint& local() const noexcept { return local_; }

  static constexpr std::size_t kMaxRequest = 8192;
  /// Admission (conn_admission.h): at most this many connections, this many from one source,
  /// the oldest idle one closed to make room, and a request head due this soon after accept.
  static constexpr unsigned kMaxConnections = 16;
  static constexpr unsigned kMaxPerSource = 8;
  static constexpr std::chrono::milliseconds kRequestTimeout{3000};

 private:
  explicit Metrics(Endpoint local) : local_(local) {}
  Endpoint local_;
  std::unique_ptr<StreamServer> server_;
};

}  // namespace hg::resolver
