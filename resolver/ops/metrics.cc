#include "resolver/ops/metrics.h"

#include <fmt/core.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hg::resolver {

namespace {

uint64_t get(const std::atomic<uint64_t>& a) {
  return a.load(std::memory_order_relaxed);
}
uint64_t get(const base::SlottedCounter& c) {
  return c.load();
}

class Exposition {
 public:
  /// # HELP and # TYPE for one metric family, then its samples.
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(std::string_view name, uint64_t value, std::string_view labels = {}) {
    if (labels.empty()) {
      out_ += fmt::format("{} {}\n", name, value);
    } else {
      out_ += fmt::format("{}{{{}}} {}\n", name, labels, value);
    }
  }
  void counter(std::string_view name, std::string_view help, uint64_t value) {
    family(name, "counter", help);
    sample(name, value);
  }
  void gauge(std::string_view name, std::string_view help, uint64_t value) {
    family(name, "gauge", help);
    sample(name, value);
  }
  void sample_double(std::string_view name, double value, std::string_view labels) {
    out_ += fmt::format("{}{{{}}} {:.6g}\n", name, labels, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string http_response(std::string_view status, std::string_view content_type,
                          const std::string& body, bool head_only,
                          std::string_view extra_headers = {}) {
  std::string r = fmt::format(
      "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
      status, content_type, body.size(), extra_headers);
  if (!head_only) r += body;
  return r;
}

std::string plain(std::string_view status, std::string_view text, bool head_only = false,
                  std::string_view extra_headers = {}) {
  return http_response(status, "text/plain; charset=utf-8", std::string(text) + "\n", head_only,
                       extra_headers);
}

// shadow-ttl (cache/shadow.h): per shadow zone, the projected upstream count beside the
// real one, and the table's memory.
void render_shadow_metrics(const Shared& shared, Exposition& e) {
  const auto zones = shared.shadow.zone_stats();
  auto label = [](const cache::ShadowZoneStats& z) {
    std::string v;  // a label value escapes backslash, quote and newline
    for (const char c : z.zone.to_text()) {
      if (c == '\\' || c == '"') v += '\\';
      if (c == '\n') {
        v += "\\n";
        continue;
      }
      v += c;
    }
    return fmt::format("zone=\"{}\"", v);
  };
  e.family("hourglass_shadow_upstream_queries_total", "counter",
           "Upstream queries the cache would have sent with the zone's shadow TTL, since the "
           "zone was set.");
  for (const auto& z : zones)
    e.sample("hourglass_shadow_upstream_queries_total", z.projected_upstream(), label(z));
  e.family("hourglass_shadow_real_upstream_queries_total", "counter",
           "Upstream queries actually sent for names in the shadow zone, since it was set.");
  for (const auto& z : zones)
    e.sample("hourglass_shadow_real_upstream_queries_total", z.real_upstream, label(z));
  e.family("hourglass_shadow_queries_total", "counter",
           "Client queries for names in the shadow zone, since it was set.");
  for (const auto& z : zones)
    e.sample("hourglass_shadow_queries_total", z.queries, label(z));
  e.family("hourglass_shadow_projected_hit_ratio", "gauge",
           "1 - projected upstream queries / queries, for the shadow zone.");
  for (const auto& z : zones)
    e.sample_double("hourglass_shadow_projected_hit_ratio", z.projected_hit_ratio(), label(z));
  e.family("hourglass_shadow_real_hit_ratio", "gauge",
           "1 - real upstream queries / queries, for the shadow zone.");
  for (const auto& z : zones)
    e.sample_double("hourglass_shadow_real_hit_ratio", z.real_hit_ratio(), label(z));
  const cache::ShadowTableStats t = shared.shadow.stats();
  e.gauge("hourglass_shadow_entries", "Entries (key hash and expiry) in the shadow table.",
          t.entries);
  e.gauge("hourglass_shadow_bytes", "Bytes the shadow table charges against shadow-size.", t.bytes);
  e.counter("hourglass_shadow_evictions_total",
            "Shadow entries pushed out by the shadow-size budget.", t.evictions);
}

}  // namespace

std::string render_metrics(Shared& shared) {
  const Stats& s = shared.stats;
  const cache::CacheStats c = shared.cache.stats();
  Exposition e;
  e.family("hourglass_queries_total", "counter", "Client queries received, by transport.");
  e.sample("hourglass_queries_total", get(s.queries_udp), "transport=\"udp\"");
  e.sample("hourglass_queries_total", get(s.queries_tcp), "transport=\"tcp\"");
  e.counter("hourglass_cache_hits_total", "Queries answered from a fresh cache entry.",
            get(s.hits));
  e.counter("hourglass_cache_stale_answers_total",
            "Answers served stale (RFC 8767) because the upstream failed or was late.",
            get(s.stale_answers));
  e.counter("hourglass_cache_misses_total",
            "Queries that started an upstream query (not found fresh, none in flight).",
            get(s.misses));
  e.counter("hourglass_coalesced_total",
            "Queries that joined an identical query already in flight.", get(s.coalesced));
  e.counter("hourglass_prefetches_total",
            "Background refreshes of popular entries near their expiry.", get(s.prefetches));
  e.counter("hourglass_upstream_queries_total", "Queries sent upstream.", get(s.upstream_queries));
  e.counter("hourglass_upstream_answers_total", "Usable upstream answers received.",
            get(s.upstream_answers));
  e.counter("hourglass_upstream_failures_total",
            "Upstream queries that failed: timeout, network error, unusable answer.",
            get(s.upstream_failures));
  e.counter("hourglass_dnssec_secure_total",
            "Upstream answers --dnssec validate proved secure (AD for clients that ask).",
            get(s.dnssec_secure));
  e.counter("hourglass_dnssec_insecure_total",
            "Upstream answers in zones proven unsigned, or under no trust anchor.",
            get(s.dnssec_insecure));
  e.counter("hourglass_dnssec_bogus_total",
            "Upstream answers whose DNSSEC proof failed: answered SERVFAIL with the reason.",
            get(s.dnssec_bogus));
  e.counter("hourglass_dnssec_fetches_total",
            "DS and DNSKEY queries sent upstream to build chains of trust.", get(s.dnssec_fetches));
  e.counter("hourglass_dnssec_synthesized_total",
            "Misses answered from validated NSEC/NSEC3 ranges without asking upstream (RFC 8198).",
            get(s.dnssec_synthesized));
  e.counter("hourglass_scrubbed_records_total",
            "Upstream records left out before caching: outside the question's chain, or DNSSEC "
            "records for a query without DO.",
            get(s.scrubbed_records));
  e.counter("hourglass_clamped_ttls_total",
            "Upstream TTLs of 2^31 s or more, taken as 0 (RFC 2181 section 8).",
            get(s.clamped_ttls));
  e.counter("hourglass_minimal_any_total",
            "Queries of type ANY answered with the RFC 8482 HINFO record.", get(s.minimal_any));
  e.counter("hourglass_rebind_blocked_total",
            "A/AAAA records left out of upstream answers by --private-address.",
            get(s.rebind_blocked));
  e.counter("hourglass_servfail_total", "SERVFAIL answers given to clients.", get(s.servfail));
  e.counter("hourglass_deadline_answers_total",
            "Clients answered at their deadline while the upstream was still silent.",
            get(s.deadline_answers));
  e.counter("hourglass_failure_cached_answers_total",
            "SERVFAIL answers from the failure cache (RFC 9520), without asking upstream.",
            get(s.failure_cached_answers));
  e.family("hourglass_rejected_total", "counter",
           "Queries not resolved: refused (ACL, class, zone transfer), formerr, notimp, "
           "dropped (unanswerable), overload (in-flight limits), client_share (a source's "
           "--client-share of the in-flight table), failing_zone (--failing-zone-cap), "
           "rate_limited (--client-rate: UDP dropped, TCP REFUSED).");
  e.sample("hourglass_rejected_total", get(s.refused), "reason=\"refused\"");
  e.sample("hourglass_rejected_total", get(s.formerr), "reason=\"formerr\"");
  e.sample("hourglass_rejected_total", get(s.notimp), "reason=\"notimp\"");
  e.sample("hourglass_rejected_total", get(s.dropped), "reason=\"dropped\"");
  e.sample("hourglass_rejected_total", get(s.overload), "reason=\"overload\"");
  e.sample("hourglass_rejected_total", get(s.share_refused), "reason=\"client_share\"");
  e.sample("hourglass_rejected_total", get(s.zone_capped), "reason=\"failing_zone\"");
  e.sample("hourglass_rejected_total", get(s.rate_limited), "reason=\"rate_limited\"");
  e.counter("hourglass_truncated_total", "Answers cut to fit with TC=1.", get(s.truncated));
  e.family("hourglass_local_answers_total", "counter",
           "Queries answered here without an upstream: special-use and locally served zones "
           "and single-label names (rule=\"special\"), hosts files (rule=\"hosts\").");
  e.sample("hourglass_local_answers_total", get(s.local_answers), "rule=\"special\"");
  e.sample("hourglass_local_answers_total", get(s.hosts_answers), "rule=\"hosts\"");
  e.counter("hourglass_forwarded_queries_total",
            "Upstream queries sent to a forward zone's servers (--forward).", get(s.forwarded));
  e.gauge("hourglass_links",
          "Runtime links in force (hourglass-ctl link IFACE): their domains and servers are "
          "routed.",
          shared.links.size());
  e.counter("hourglass_dnstap_written_total",
            "dnstap messages handed to the writer thread (--dnstap).", get(shared.dnstap.written));
  e.counter("hourglass_dnstap_dropped_total",
            "dnstap messages dropped because the writer's queue was full.",
            get(shared.dnstap.dropped));
  e.counter("hourglass_cache_inserts_total", "Upstream responses stored in the cache.", c.inserts);
  e.counter("hourglass_cache_evictions_total", "Entries pushed out by the cache-size budget.",
            c.evictions);
  e.counter("hourglass_cache_expired_total", "Entries reclaimed after their stale window.",
            c.expired);
  e.gauge("hourglass_cache_entries", "Entries in the cache.", c.entries);
  e.gauge("hourglass_cache_bytes", "Bytes charged against cache-size.", c.bytes);
  e.gauge("hourglass_cache_capacity_bytes", "The cache-size budget in bytes.", c.capacity_bytes);
  e.gauge("hourglass_cache_failure_entries",
          "Names remembered as failing (RFC 9520 failure cache).", c.failure_entries);
  e.gauge("hourglass_cache_ttl_caps", "Per-zone TTL caps in force.",
          shared.cache.ttl_caps().size());
  e.gauge("hourglass_inflight", "Upstream queries in flight.", shared.inflight.size());
  e.gauge("hourglass_inflight_waiters", "Clients waiting for an upstream query.",
          shared.inflight.waiters());
  render_shadow_metrics(shared, e);
  if (shared.anchors != nullptr) {
    e.gauge("hourglass_dnssec_validating",
            "1 when answers from the default upstreams are validated; 0 when they do not deliver "
            "DNSSEC records (passed on without AD, or SERVFAIL under --dnssec require).",
            shared.dnssec_upstreams.path() == DnssecPath::Validate ? 1 : 0);
    e.family("hourglass_upstream_server_dnssec", "gauge",
             "Whether the default upstream server delivers DNSSEC records: 1 yes, 0 no, 2 not "
             "known yet (no answer to the probe).");
    for (const DnssecServerState& d : shared.dnssec_upstreams.servers())
      e.sample("hourglass_upstream_server_dnssec",
               d.capability == DnssecCapability::Yes  ? 1
               : d.capability == DnssecCapability::No ? 0
                                                      : 2,
               fmt::format("server=\"{}\"", d.server.to_string()));
  }
  const NamedConnCounters conns[] = {{"tcp", &shared.tcp_conns},
                                     {"metrics", &shared.metrics_conns}};
  std::string out =
      e.take() + conn_metrics_families(conns) + upstreams_metrics(shared.upstream_board);
  if (shared.config.redis.enabled()) out += fleet_metrics_text(shared);
  return out;
}

std::string metrics_http_response(Shared& shared, std::string_view head) {
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // Request-line = method SP request-target SP HTTP-version (RFC 9112 §3).
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return plain("400 Bad Request", "bad request line");
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!version.starts_with("HTTP/1.")) return plain("400 Bad Request", "expected HTTP/1.0 or 1.1");
  const bool head_only = method == "HEAD";
  if (method != "GET" && !head_only)
    return plain("405 Method Not Allowed", "only GET and HEAD", false, "Allow: GET, HEAD\r\n");
  target = target.substr(0, target.find('?'));
  if (target != "/metrics")
    return plain("404 Not Found", "not found; metrics are at /metrics", head_only);
  return http_response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_metrics(shared),
                       head_only);
}

Checked<std::unique_ptr<Metrics>> Metrics::open(EventLoop& loop, Shared& shared,
                                                const Endpoint& addr) {
  using R = Checked<std::unique_ptr<Metrics>>;
  const std::string what = "--metrics " + addr.to_string();
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return R::failure(what + ": cannot create a TCP socket: " + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (addr.family() == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) != 0 || ::listen(fd, 16) != 0) {
    const int err = errno;
    ::close(fd);
    const std::string hint = err == EADDRINUSE ? " (another program uses it: pick another port)"
                             : err == EACCES
                                 ? " (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
                             : err == EADDRNOTAVAIL ? " (not an address of this host)"
                                                    : "";
    return R::failure(what + ": cannot listen: " + std::strerror(err) + hint);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const auto local = Endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len).value_or(addr);
  std::unique_ptr<Metrics> m(new Metrics(local));
  Shared* sh = &shared;
  m->server_ = StreamServer::start(
      loop, fd,
      StreamServerSettings{.max_request = kMaxRequest,
                           .max_connections = kMaxConnections,
                           .idle_timeout = std::chrono::milliseconds{10000},
                           .max_per_source = kMaxPerSource,
                           .evict_idle = true,
                           .request_timeout = kRequestTimeout,
                           .allow = shared.config.metrics_allow.empty()
                                        ? shared.config.allow
                                        : shared.config.metrics_allow,
                           .counters = &shared.metrics_conns},
      [sh](std::string_view in, bool full, std::string& out) {
        StreamServer::Reply reply;
        // The request head ends with an empty line; a GET has no body, and anything after
        // the head is ignored since the connection closes after one response.
        std::size_t end = in.find("\r\n\r\n");
        if (end == std::string_view::npos) end = in.find("\n\n");
        if (end == std::string_view::npos) {
          if (full) {
            out += plain("431 Request Header Fields Too Large", "request head over 8 KiB");
            reply.consumed = in.size();
            reply.close = true;
          }
          return reply;
        }
        out += metrics_http_response(*sh, in.substr(0, end));
        reply.consumed = in.size();
        reply.close = true;
        return reply;
      });
  if (!m->server_) {
    const int err = errno;
    ::close(fd);
    return R::failure(what + ": cannot watch the socket: " + std::strerror(err));
  }
  return m;
}

Metrics::~Metrics() = default;

}  // namespace hg::resolver
