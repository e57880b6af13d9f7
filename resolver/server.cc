#include "resolver/server.h"

#include <fmt/core.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "resolver/control.h"
#include "resolver/metrics.h"
#include "wire/edns.h"
#include "wire/header.h"
#include "wire/owned.h"
#include "wire/writer.h"

namespace hg::resolver {

using wire::RCode;

namespace {

constexpr std::size_t kMaxUdpAnswer = UdpListener::kMaxAnswer;
constexpr std::size_t kMaxTcpAnswer = 65535;

cache::CacheSettings cache_settings(const Config& c) {
  cache::CacheSettings s;
  s.max_bytes = static_cast<std::size_t>(c.cache_size);
  // Small caches get fewer shards, so that one shard's budget still holds a few entries.
  s.shards = c.cache_size < (std::size_t{1} << 20) ? 1 : 16;
  s.ttl.min_ttl = static_cast<uint32_t>(c.cache_min_ttl.count());
  s.ttl.max_ttl = static_cast<uint32_t>(c.cache_max_ttl.count());
  s.ttl.negative_max_ttl = static_cast<uint32_t>(c.negative_max_ttl.count());
  s.stale_max = c.stale_max;
  s.stale_ttl = static_cast<uint32_t>(c.stale_ttl.count());
  return s;
}

std::size_t udp_limit(uint16_t client_udp_size, std::size_t room) {
  // Never more than 1232 over UDP, whatever the client offers: larger datagrams fragment, and
  // fragments are lost or spoofed (DNS flag day 2020). Larger answers go TC=1, then TCP.
  return std::min<std::size_t>({client_udp_size, kMaxUdpAnswer, room});
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "hourglass";
  return buf;
}

int64_t ms_since_epoch(MonoTime t) {
  return t.time_since_epoch().count();
}

}  // namespace

ClientQuery Waiter::client() const noexcept {
  ClientQuery q;
  q.id = id;
  q.flags = flags;
  q.question = std::span<const uint8_t>(question.data(), question_len);
  q.has_edns = has_edns;
  q.dnssec_ok = dnssec_ok;
  q.udp_size = udp_size;
  return q;
}

Shared::Shared(const Config& c)
    : config(c),
      cache(cache_settings(c)),
      inflight(InflightSettings{.max_entries = 4096, .max_waiters = 256}) {}

QueryEngine::QueryEngine(Shared& shared, EventLoop& loop, Sender sender, int worker)
    : shared_(shared),
      loop_(loop),
      sender_(std::move(sender)),
      worker_(worker),
      buf_(kMaxTcpAnswer),
      norm_buf_(kMaxTcpAnswer) {}

bool QueryEngine::allowed(const sockaddr* peer) const noexcept {
  if (peer == nullptr) return true;  // tests and fuzzing: no address
  return std::any_of(shared_.config.allow.begin(), shared_.config.allow.end(),
                     [&](const Cidr& c) { return c.contains(peer); });
}

std::size_t QueryEngine::answer_hit(const cache::Hit& hit, const ClientQuery& q,
                                    std::span<uint8_t> out, std::size_t limit,
                                    std::optional<EdeSpec> ede) {
  wire::WireWriter w(out, limit);
  const cache::ClientQuery c{.id = q.id,
                             .rd = q.rd(),
                             .ad = q.ad(),
                             .cd = q.cd(),
                             .dnssec_ok = q.dnssec_ok,
                             .question = q.question};
  const auto opt = response_opt(q.dnssec_ok, static_cast<RCode>(hit.entry->rcode()), ede);
  const std::size_t reserve = q.has_edns ? wire::opt_size(opt) : 0;
  const auto r = cache::render(hit, c, loop_.now(), w, reserve);
  if (!r.ok) {
    // Cannot happen for a question of the key's length; answer rather than stay silent.
    return write_error(out.first(limit), q, RCode::ServFail, EdeSpec{wire::ede::Other, {}});
  }
  if (q.has_edns && !wire::append_opt(w, opt)) return 0;
  if (r.truncated) shared_.stats.truncated.fetch_add(1, std::memory_order_relaxed);
  return w.size();
}

std::size_t QueryEngine::answer_stale(const cache::Hit& hit, const ClientQuery& q,
                                      std::span<uint8_t> out, std::size_t limit) {
  shared_.stats.stale_answers.fetch_add(1, std::memory_order_relaxed);
  // RFC 8914 §4.4 / §4.20: Stale Answer, or Stale NXDOMAIN Answer.
  const uint16_t code =
      hit.stale_nxdomain() ? wire::ede::StaleNxdomainAnswer : wire::ede::StaleAnswer;
  return answer_hit(hit, q, out, limit, EdeSpec{code, {}});
}

std::size_t QueryEngine::answer_stale_now(const cache::Hit& hit, const ClientQuery& q,
                                          std::span<uint8_t> out, std::size_t limit) {
  if (shared_.config.log_queries)
    log_query(*q.qname, q.qtype, static_cast<RCode>(hit.entry->rcode()), "stale", loop_.now());
  return answer_stale(hit, q, out, limit);
}

QueryEngine::Outcome QueryEngine::handle(std::span<const uint8_t> packet, const sockaddr* peer,
                                         const Route& route, std::span<uint8_t> out) {
  auto& st = shared_.stats;
  (route.is_tcp ? st.queries_tcp : st.queries_udp).fetch_add(1, std::memory_order_relaxed);
  const MonoTime now = loop_.now();
  ClientQuery q;
  const auto adm = admit_query(packet, allowed(peer), scratch_, q, out);
  switch (adm.action) {
    case Admission::Drop:
      st.dropped.fetch_add(1, std::memory_order_relaxed);
      return {};
    case Admission::Respond: {
      switch (adm.why) {
        case Rejection::NotAllowed:
        case Rejection::BadClass:
        case Rejection::ZoneTransfer:
          st.refused.fetch_add(1, std::memory_order_relaxed);
          break;
        case Rejection::NotQuery:
          st.notimp.fetch_add(1, std::memory_order_relaxed);
          break;
        default:
          st.formerr.fetch_add(1, std::memory_order_relaxed);
          break;
      }
      if (shared_.config.log_queries) {
        fmt::print(stderr, "query rejected: {}\n", to_string(adm.why));
      }
      return {adm.response_size, false};
    }
    case Admission::Resolve:
      break;
  }

  const std::size_t limit = route.is_tcp ? out.size() : udp_limit(q.udp_size, out.size());
  auto& cache = shared_.cache;
  const auto key = cache::CacheKey::make(*q.qname, q.qtype, q.qclass, q.dnssec_ok, q.cd());
  const cache::Hit hit = cache.lookup(key, now);

  if (hit.freshness == cache::Freshness::Fresh) {
    st.hits.fetch_add(1, std::memory_order_relaxed);
    const std::size_t size = answer_hit(hit, q, out, limit, std::nullopt);
    if (hit.prefetch && shared_.inflight.start_background(key, now, worker_)) {
      st.prefetches.fetch_add(1, std::memory_order_relaxed);
      start_upstream(key);
    }
    if (shared_.config.log_queries)
      log_query(*q.qname, q.qtype, static_cast<RCode>(hit.entry->rcode()), "hit", now);
    return {size, false};
  }

  // RFC 9520 / RFC 8767 failure recheck: a key that failed recently is not asked again yet.
  if (cache.failure_holdoff(key, now) > Millis{0}) {
    if (hit.stale()) return {answer_stale_now(hit, q, out, limit), false};
    st.failure_cached_answers.fetch_add(1, std::memory_order_relaxed);
    st.servfail.fetch_add(1, std::memory_order_relaxed);
    if (shared_.config.log_queries) log_query(*q.qname, q.qtype, RCode::ServFail, "failed", now);
    // RFC 8914 §4.14 Cached Error: the SERVFAIL comes from the failure cache.
    return {write_error(out.first(limit), q, RCode::ServFail,
                        EdeSpec{13, "upstream failed recently; not asked again yet"}),
            false};
  }

  // RFC 8767 §5 client-response timer: a refresh already running longer than the timer will
  // not save this client either, so it gets the stale answer now instead of waiting again.
  if (hit.stale()) {
    const auto started = shared_.inflight.started_at(key);
    if (started && now - *started >= shared_.config.client_timeout)
      return {answer_stale_now(hit, q, out, limit), false};
  }

  Waiter w;
  w.received = now;
  w.tap_ns = tap_query_ns_;
  w.deadline =
      now + (hit.stale() ? shared_.config.client_timeout : shared_.config.upstream_timeout);
  w.route = route;
  w.id = q.id;
  w.flags = q.flags;
  w.has_edns = q.has_edns;
  w.dnssec_ok = q.dnssec_ok;
  w.udp_size = q.udp_size;
  w.question_len = static_cast<uint16_t>(q.question.size());
  std::copy(q.question.begin(), q.question.end(), w.question.begin());
  if (hit.stale()) w.stale = hit.entry;
  // Each waiter's deadline runs on the loop of the worker that received it; whichever worker
  // owns the upstream query, the waiter is answered on time. The timer is cancelled when the
  // waiter is answered earlier (release_timer), so timers never outnumber waiters.
  w.loop = &loop_;
  w.timer = loop_.add_timer_at(w.deadline, [this, key] { on_deadline(key); });
  const TimerId timer = w.timer;

  switch (shared_.inflight.join(key, std::move(w), now, worker_)) {
    case JoinOutcome::Created:
      st.misses.fetch_add(1, std::memory_order_relaxed);
      start_upstream(key);
      break;
    case JoinOutcome::Joined:
      st.coalesced.fetch_add(1, std::memory_order_relaxed);
      break;
    case JoinOutcome::TableFull:
    case JoinOutcome::WaitersFull: {
      loop_.cancel_timer(timer);
      st.overload.fetch_add(1, std::memory_order_relaxed);
      if (hit.stale()) return {answer_stale_now(hit, q, out, limit), false};
      st.servfail.fetch_add(1, std::memory_order_relaxed);
      if (shared_.config.log_queries)
        log_query(*q.qname, q.qtype, RCode::ServFail, "overload", now);
      return {write_error(out.first(limit), q, RCode::ServFail,
                          EdeSpec{wire::ede::Other, "too many queries in flight"}),
              false};
    }
  }
  return {0, true};
}

void QueryEngine::start_upstream(const cache::CacheKey& key) {
  // Our own query: RD=1, CD as the client asked, the lowercased name, and one bare OPT record
  // at the end (c-ares 1.18 with ARES_FLAG_EDNS requires exactly that) with DO when asked.
  std::array<uint8_t, 12 + wire::kMaxNameOctets + 4 + 11> q{};
  wire::WireWriter w(q);
  wire::Header h;
  // AD=1 asks a validating upstream to say whether the data is authentic (RFC 6840 §5.7) even
  // without DO; wire::answer_flags() passes AD on only to clients that asked.
  h.flags = static_cast<uint16_t>(wire::flag::RD | wire::flag::AD |
                                  (key.checking_disabled ? wire::flag::CD : 0));
  h.qdcount = 1;
  h.arcount = 1;
  h.write_unchecked(q.data());
  wire::OptSpec opt;
  opt.flags = key.dnssec_ok ? wire::kEdnsDoBit : 0;
  const bool ok = w.bytes(std::span<const uint8_t>(q.data(), wire::kHeaderSize)) &&
                  w.name(key.qname, false) && w.u16(static_cast<uint16_t>(key.qtype)) &&
                  w.u16(key.qclass) && wire::write_opt(w, opt);
  shared_.stats.upstream_queries.fetch_add(1, std::memory_order_relaxed);
  if (!ok) {  // cannot happen: the buffer fits the largest name
    on_upstream(key, UpstreamStatus::BadQuery, {});
    return;
  }
  sender_(w.written(), [this, key](UpstreamStatus status, std::span<const uint8_t> answer) {
    on_upstream(key, status, answer);
  });
}

void QueryEngine::on_upstream(const cache::CacheKey& key, UpstreamStatus status,
                              std::span<const uint8_t> answer) {
  const MonoTime now = loop_.now();
  auto& st = shared_.stats;
  if (status == UpstreamStatus::Ok && normalize_upstream(answer)) {
    const auto outcome = shared_.cache.insert(key, upstream_msg_, now);
    using O = cache::InsertOutcome;
    if (outcome == O::Cached || outcome == O::RemovedZeroTtl || outcome == O::Truncated ||
        outcome == O::NegativeWithoutSoa || outcome == O::TooLarge) {
      st.upstream_answers.fetch_add(1, std::memory_order_relaxed);
      const cache::Hit hit = outcome == O::Cached ? shared_.cache.peek(key, now) : cache::Hit{};
      const auto rcode = upstream_msg_.rcode();
      for (const Waiter& w : shared_.inflight.complete(key)) {
        release_timer(w);
        const ClientQuery q = w.client();
        const std::size_t limit =
            w.route.is_tcp ? kMaxTcpAnswer : udp_limit(w.udp_size, kMaxTcpAnswer);
        std::size_t size = 0;
        if (hit.freshness == cache::Freshness::Fresh) {
          size = answer_hit(hit, q, buf_, limit, std::nullopt);
        } else {
          // Not cached (TTL 0, negative without SOA, too large): pass the answer through.
          size = render_passthrough(buf_, limit, q, upstream_msg_, std::nullopt);
        }
        deliver(w, std::span<const uint8_t>(buf_.data(), size), "miss", rcode);
      }
      return;
    }
    // A response we must not use (wrong question, SERVFAIL-like rcode, not a response):
    // discarded, and the query counts as failed.
    status = UpstreamStatus::BadResponse;
  } else if (status == UpstreamStatus::Ok) {
    status = UpstreamStatus::BadResponse;  // unparseable
  }

  st.upstream_failures.fetch_add(1, std::memory_order_relaxed);
  // Not when the deadline already recorded this failure (on_deadline): one failed resolution
  // is one step of the holdoff, however late c-ares gives up.
  if (status != UpstreamStatus::Cancelled && shared_.cache.failure_holdoff(key, now) == Millis{0})
    shared_.cache.note_failure(key, now);
  log_upstream_failure(key, status);
  const std::string text = fmt::format("upstream: {}", to_string(status));
  const uint16_t code = status == UpstreamStatus::NetworkError ? wire::ede::NetworkError
                                                               : wire::ede::NoReachableAuthority;
  for (const Waiter& w : shared_.inflight.complete(key)) {
    release_timer(w);
    answer_failed(w, code, text, "failed");
  }
}

bool QueryEngine::normalize_upstream(std::span<const uint8_t> answer) {
  // The upstream's bytes are re-encoded by our own writer before they are cached or passed
  // on. Cached sections are copied to clients with rewritten headers and TTLs, so every
  // compression pointer in them must lead to name bytes that never change; an upstream may
  // point anywhere a parser accepts (into its RDATA lengths, its TTL fields...). Our writer
  // only points at names it wrote itself. It also drops the upstream's OPT record and any
  // bytes after the last record. This costs a few microseconds per upstream answer, never
  // anything on the cache-hit path.
  if (!raw_msg_.parse(answer, wire::ParseMode::Lenient)) return false;
  auto owned = wire::to_owned(raw_msg_);
  if (!owned) return false;
  owned->edns.reset();
  wire::WireWriter w(norm_buf_);
  const auto out = wire::write_message(w, *owned);
  if (!out.ok || out.truncated) return false;
  return upstream_msg_.parse(w.written(), wire::ParseMode::Strict).has_value();
}

void QueryEngine::on_deadline(const cache::CacheKey& key) {
  const MonoTime now = loop_.now();
  const auto due = shared_.inflight.take_due(key, now);
  // A client with nothing stale ran out of time: the resolution has failed (RFC 9520), even
  // if c-ares is still retrying. Clients asking meanwhile get SERVFAIL at once instead of
  // each waiting the full timeout; a late answer still lands in the cache and clears this.
  const bool failed = std::any_of(due.begin(), due.end(), [](const Waiter& w) { return !w.stale; });
  if (failed && shared_.cache.failure_holdoff(key, now) == Millis{0})
    shared_.cache.note_failure(key, now);
  for (const Waiter& w : due) {
    release_timer(w);
    shared_.stats.deadline_answers.fetch_add(1, std::memory_order_relaxed);
    answer_failed(w, wire::ede::NoReachableAuthority, "upstream did not answer in time",
                  "deadline");
  }
}

void QueryEngine::release_timer(const Waiter& w) {
  if (w.loop == &loop_) {
    loop_.cancel_timer(w.timer);
  } else if (w.loop != nullptr) {
    w.loop->post([loop = w.loop, timer = w.timer] { loop->cancel_timer(timer); });
  }
}

void QueryEngine::answer_failed(const Waiter& w, uint16_t ede, std::string_view text,
                                const char* what) {
  const ClientQuery q = w.client();
  const std::size_t limit = w.route.is_tcp ? kMaxTcpAnswer : udp_limit(w.udp_size, kMaxTcpAnswer);
  if (w.stale) {
    cache::Hit hit;
    hit.entry = w.stale;
    hit.freshness = cache::Freshness::Stale;
    hit.stale_ttl = shared_.cache.settings().stale_ttl;
    const std::size_t size = answer_stale(hit, q, buf_, limit);
    deliver(w, std::span<const uint8_t>(buf_.data(), size), "stale",
            static_cast<RCode>(w.stale->rcode()));
    return;
  }
  shared_.stats.servfail.fetch_add(1, std::memory_order_relaxed);
  const std::size_t size =
      write_error(std::span<uint8_t>(buf_).first(limit), q, RCode::ServFail, EdeSpec{ede, text});
  deliver(w, std::span<const uint8_t>(buf_.data(), size), what, RCode::ServFail);
}

void QueryEngine::deliver(const Waiter& w, std::span<const uint8_t> bytes, const char* what,
                          RCode rcode) {
  if (w.route.sink != nullptr) {
    (*w.route.sink)(bytes);
  } else if (w.route.is_tcp) {
    if (auto c = w.route.tcp.lock()) {
      if (bytes.empty()) {
        c->no_answer();
      } else {
        c->answer(bytes);
      }
    }
  } else if (!bytes.empty()) {
    UdpListener::send_to(w.route.udp, bytes);
  }
  if (dnstap_ != nullptr) [[unlikely]]
    tap_response(w, bytes);
  if (shared_.config.log_queries) {
    wire::WireReader r(std::span<const uint8_t>(w.question.data(), w.question_len));
    auto name = wire::read_name(r);
    auto type = r.u16();
    if (name && type) log_query(*name, static_cast<wire::RRType>(*type), rcode, what, w.received);
  }
}

void QueryEngine::log_query(const wire::Name& qname, wire::RRType qtype, RCode rcode,
                            const char* what, MonoTime received) {
  const auto ms = std::chrono::duration<double, std::milli>(loop_.update_now() - received).count();
  fmt::print(stderr, "query {} {} {} {} {:.1f}ms\n", qname.to_text(), wire::to_string(qtype),
             wire::to_string(rcode), what, ms);
}

void QueryEngine::log_upstream_failure(const cache::CacheKey& key, UpstreamStatus status) {
  // At most one line per second across all workers; the rest are counted and summarised.
  const int64_t now_ms = ms_since_epoch(loop_.now());
  int64_t last = shared_.last_upstream_log_ms.load(std::memory_order_relaxed);
  if (now_ms - last < 1000 || !shared_.last_upstream_log_ms.compare_exchange_strong(last, now_ms)) {
    shared_.log_suppressed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t suppressed = shared_.log_suppressed.exchange(0, std::memory_order_relaxed);
  fmt::print(stderr, "upstream failure: {} {}: {}{}\n", key.qname.to_text(),
             wire::to_string(key.qtype), to_string(status),
             suppressed ? fmt::format(" (and {} more failures not logged)", suppressed) : "");
}

// --- Server ----------------------------------------------------------------------------

struct Server::Worker {
  explicit Worker(int i) : index(i) {}
  int index;
  EventLoop loop;
  std::unique_ptr<Upstream> upstream;
  std::unique_ptr<QueryEngine> engine;
  std::vector<std::unique_ptr<UdpListener>> udp;
  std::vector<std::unique_ptr<TcpListener>> tcp;
  std::vector<uint8_t> tcp_out = std::vector<uint8_t>(kMaxTcpAnswer);
  std::thread thread;
};

Checked<std::unique_ptr<Server>> Server::create(Config config) {
  using R = Checked<std::unique_ptr<Server>>;
  std::unique_ptr<Server> srv(new Server());
  srv->shared_ = std::make_unique<Shared>(config);
  Shared& shared = *srv->shared_;
  {
    const auto now = std::chrono::time_point_cast<Millis>(std::chrono::steady_clock::now());
    for (const auto& cap : config.ttl_caps) {
      auto zone = wire::Name::from_text(cap.zone);
      if (!zone) return R::failure("--ttl-cap " + cap.zone + ": not a valid zone name");
      shared.cache.set_ttl_cap(*zone, static_cast<uint32_t>(cap.cap.count()), now);
    }
  }
  const unsigned n = std::max(1u, config.threads);
  std::vector<Endpoint> listen = config.listen;
  for (unsigned i = 0; i < n; ++i) {
    auto wk = std::make_unique<Worker>(static_cast<int>(i));
    Worker* worker = wk.get();
    UpstreamOptions uo;
    uo.servers = config.upstreams;
    // c-ares's first try waits 2/5 of the deadline (1.2 s of 3 s) and never less than 1 s, so
    // a slow but alive server (300 ms) is never asked twice; its second, doubled try ends
    // past the deadline, so a late answer still lands in the cache. A longer
    // --upstream-timeout stretches both.
    uo.try_timeout =
        std::clamp(Millis{config.upstream_timeout.count() * 2 / 5}, Millis{1000}, Millis{5000});
    auto up = Upstream::create(wk->loop, uo);
    if (!up) return R::failure(up.error());
    wk->upstream = std::move(up.value());
    wk->engine = std::make_unique<QueryEngine>(
        shared, wk->loop,
        [worker](std::span<const uint8_t> q, Upstream::Callback done) {
          if (worker->engine->dnstap() != nullptr) [[unlikely]] {
            dnstap_forward(*worker->engine, *worker->upstream, q, std::move(done));
            return;
          }
          worker->upstream->send(q, std::move(done));
        },
        wk->index);
    for (Endpoint& addr : listen) {
      QueryEngine* engine = wk->engine.get();
      auto udp = UdpListener::open(
          wk->loop, addr, n > 1,
          [engine](std::span<const uint8_t> q, const UdpPeer& peer, std::span<uint8_t> out) {
            Route route;
            route.udp = peer;
            return engine->on_query(q, peer.sa(), route, out).size;
          });
      if (!udp) return R::failure(udp.error());
      // A port of 0 asks the kernel for one; TCP and the other workers then use the same.
      addr.set_port(udp.value()->local().port());
      TcpListener::Settings ts;
      auto tcp = TcpListener::open(
          wk->loop, addr, n > 1, ts,
          [engine, worker](std::span<const uint8_t> q, const std::shared_ptr<TcpConnection>& c) {
            Route route;
            route.tcp = c;
            route.is_tcp = true;
            const auto res = engine->on_query(q, c->peer().sockaddr_ptr(), route, worker->tcp_out);
            if (res.size > 0) {
              c->answer(std::span<const uint8_t>(worker->tcp_out.data(), res.size));
            } else if (!res.deferred) {
              c->no_answer();
            }
          });
      if (!tcp) return R::failure(tcp.error());
      wk->udp.push_back(std::move(udp.value()));
      wk->tcp.push_back(std::move(tcp.value()));
    }
    srv->workers_.push_back(std::move(wk));
  }
  if (auto err = srv->open_dnstap(config)) return R::failure(*err);
  // Operations (DESIGN.md): the control socket and the metrics endpoint, on worker 0's loop.
  if (!config.control_path.empty()) {
    auto ctl = Control::open(srv->workers_[0]->loop, shared, config.control_path);
    if (!ctl) return R::failure(ctl.error());
    srv->control_ = std::move(ctl.value());
    fmt::print(stderr, "control socket on {}\n", srv->control_->path());
  }
  if (config.metrics) {
    auto m = Metrics::open(srv->workers_[0]->loop, shared, *config.metrics);
    if (!m) return R::failure(m.error());
    srv->metrics_ = std::move(m.value());
    fmt::print(stderr, "metrics on {} (http://{}/metrics)\n", srv->metrics_->local().to_string(),
               srv->metrics_->local().to_string());
  }
  return srv;
}

Server::~Server() {
  for (auto& w : workers_) {
    if (w->thread.joinable()) {
      w->loop.stop();
      w->thread.join();
    }
  }
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

std::vector<Endpoint> Server::bound() const {
  std::vector<Endpoint> out;
  if (workers_.empty()) return out;
  for (const auto& u : workers_[0]->udp)
    out.push_back(u->local());
  return out;
}

int Server::run() {
  // Signals arrive through a signalfd on worker 0's loop; block them in every thread first
  // (threads inherit the mask), and ignore SIGPIPE (a client closing mid-write is normal).
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  signal_fd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  Worker& main = *workers_[0];
  if (signal_fd_ < 0 ||
      !main.loop.add_fd(signal_fd_, Interest::Read, [this](FdEvents) { on_signal(); })) {
    fmt::print(stderr, "hourglassd: cannot watch signals: {}\n", std::strerror(errno));
    return 1;
  }

  const Config& c = shared_->config;
  std::string addrs, ups;
  for (const auto& e : bound())
    addrs += (addrs.empty() ? "" : " ") + e.to_string();
  for (const auto& e : c.upstreams)
    ups += (ups.empty() ? "" : " ") + e.to_string();
  fmt::print(stderr,
             "hourglassd {}: listening on {} (udp+tcp); upstreams {}{}; cache {} bytes, ttl min "
             "{}s max {}s negative max {}s, stale max {}s ttl {}s; client timeout {}ms, upstream "
             "timeout {}ms; threads {}\n",
             HG_VERSION, addrs, ups,
             c.upstreams_from_file ? " (from " + c.upstream_file + ")" : std::string(),
             c.cache_size, c.cache_min_ttl.count(), c.cache_max_ttl.count(),
             c.negative_max_ttl.count(), c.stale_max.count(), c.stale_ttl.count(),
             c.client_timeout.count(), c.upstream_timeout.count(), workers_.size());
  for (const auto& w : c.warnings)
    fmt::print(stderr, "warning: {}\n", w);

  for (std::size_t i = 1; i < workers_.size(); ++i) {
    Worker* w = workers_[i].get();
    w->thread = std::thread([w] { w->loop.run(); });
  }
  main.loop.run();
  for (std::size_t i = 1; i < workers_.size(); ++i) {
    workers_[i]->loop.stop();
    if (workers_[i]->thread.joinable()) workers_[i]->thread.join();
  }
  if (dnstap_) {
    // Flush and close the dnstap output (STOP frame) before saying we stopped.
    for (auto& w : workers_)
      w->engine->set_dnstap(nullptr);
    dnstap_.reset();
    fmt::print(stderr, "hourglassd: dnstap closed; {} messages written, {} dropped\n",
               shared_->dnstap.written.load(), shared_->dnstap.dropped.load());
  }
  const auto& s = shared_->stats;
  fmt::print(stderr,
             "hourglassd: stopped; queries udp {} tcp {}, hits {}, misses {}, stale {}, coalesced "
             "{}, upstream queries {} failures {}, servfail {}\n",
             s.queries_udp.load(), s.queries_tcp.load(), s.hits.load(), s.misses.load(),
             s.stale_answers.load(), s.coalesced.load(), s.upstream_queries.load(),
             s.upstream_failures.load(), s.servfail.load());
  return 0;
}

void Server::on_signal() {
  signalfd_siginfo info;
  while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (info.ssi_signo == SIGHUP) {
      reload_upstreams();
      reload_dnstap();
    } else if (!stopping_) {
      begin_shutdown();
    }
  }
}

void Server::reload_upstreams() {
  const Config& c = shared_->config;
  if (!c.upstreams_from_file) {
    fmt::print(stderr, "SIGHUP: upstreams come from --upstream, nothing to re-read\n");
    return;
  }
  auto rc = read_resolv_conf(c.upstream_file);
  if (!rc) {
    fmt::print(stderr, "SIGHUP: keeping the current upstreams: {}\n", rc.error());
    return;
  }
  if (rc->nameservers.empty()) {
    fmt::print(stderr, "SIGHUP: keeping the current upstreams: {} has no nameserver line\n",
               c.upstream_file);
    return;
  }
  if (auto loop = find_forwarding_loop(bound(), rc->nameservers, local_interface_addresses())) {
    fmt::print(stderr, "SIGHUP: keeping the current upstreams: {}\n",
               describe(*loop, c.upstream_file));
    return;
  }
  std::string ups;
  for (const auto& e : rc->nameservers)
    ups += (ups.empty() ? "" : " ") + e.to_string();
  // Each worker switches its own channel on its own thread; the last one to do so logs it,
  // so the line means "new queries now go to the new servers".
  auto remaining = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  auto message = std::make_shared<const std::string>(
      fmt::format("SIGHUP: upstreams now {} (from {})", ups, c.upstream_file));
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([wp, servers = rc->nameservers, remaining, message] {
      if (auto err = wp->upstream->reload_servers(servers))
        fmt::print(stderr, "SIGHUP: worker {}: {}\n", wp->index, *err);
      if (remaining->fetch_sub(1) == 1) fmt::print(stderr, "{}\n", *message);
    });
  }
}

void Server::begin_shutdown() {
  stopping_ = true;
  fmt::print(stderr, "hourglassd: shutting down: no new queries; answering the {} in flight\n",
             shared_->inflight.size());
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([wp] {
      for (auto& u : wp->udp)
        u->pause();
      for (auto& t : wp->tcp)
        t->pause();
    });
  }
  // Waiters are answered by their deadlines (at most the upstream timeout); then c-ares is
  // cancelled (any waiter left gets SERVFAIL) and the loops stop.
  Worker& main = *workers_[0];
  const MonoTime give_up = main.loop.now() + shared_->config.upstream_timeout + Millis{200};
  main.loop.add_timer(Millis{0}, [this, give_up] { finish_shutdown(give_up); });
}

void Server::finish_shutdown(MonoTime give_up) {
  Worker& main = *workers_[0];
  if (shared_->inflight.waiters() > 0 && main.loop.now() < give_up) {
    main.loop.add_timer(Millis{20}, [this, give_up] { finish_shutdown(give_up); });
    return;
  }
  // Two phases: first every worker cancels its upstream queries (their waiters, on any
  // worker, get SERVFAIL; TCP answers are posted to their connection's loop), and only when
  // all have done so do the loops close their connections and stop — so no answer is posted
  // to a loop that has already stopped.
  auto remaining = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([this, wp, remaining] {
      wp->upstream->cancel_all();
      if (remaining->fetch_sub(1) != 1) return;
      for (auto& other : workers_) {
        Worker* op = other.get();
        op->loop.post([op] {
          for (auto& t : op->tcp)
            t->close_all();
          op->loop.stop();
        });
      }
    });
  }
}

// --- dnstap ----------------------------------------------------------------------------

std::optional<std::string> Server::open_dnstap(const Config& c) {
  if (c.dnstap.empty()) return std::nullopt;
  DnstapWriter::Options o;
  o.target = c.dnstap;
  o.identity = c.dnstap_identity.empty() ? host_name() : c.dnstap_identity;
  o.version = std::string("hourglass ") + HG_VERSION;
  o.queues = static_cast<unsigned>(workers_.size());
  auto w = DnstapWriter::open(o, shared_->dnstap);
  if (!w) return w.error();
  dnstap_ = std::move(w.value());
  // Before run(): no worker thread runs yet, so the engines are set directly.
  for (auto& wk : workers_)
    wk->engine->set_dnstap(dnstap_.get());
  fmt::print(stderr, "dnstap to {} (identity \"{}\")\n", o.target, o.identity);
  return std::nullopt;
}

void Server::reload_dnstap() {
  Config& c = shared_->config;
  auto settings = reread_dnstap_settings(c);
  if (!settings) {
    fmt::print(stderr, "SIGHUP: keeping the dnstap settings: {}\n", settings.error());
    return;
  }
  const auto& [target, identity] = settings.value();
  const bool same = target == c.dnstap && identity == c.dnstap_identity;
  if (same && (!dnstap_ || dnstap_->still_current())) return;  // nothing changed or rotated

  std::shared_ptr<DnstapWriter> next;
  if (!target.empty()) {
    DnstapWriter::Options o;
    o.target = target;
    o.identity = identity.empty() ? host_name() : identity;
    o.version = std::string("hourglass ") + HG_VERSION;
    o.queues = static_cast<unsigned>(workers_.size());
    auto w = DnstapWriter::open(o, shared_->dnstap);
    if (!w) {
      fmt::print(stderr, "SIGHUP: keeping the dnstap output: {}\n", w.error());
      return;
    }
    next = std::move(w.value());
  }
  c.dnstap = target;
  c.dnstap_identity = identity;
  // Each worker switches on its own thread; the old writer is flushed and closed when the
  // last worker has let go of it (its shared_ptr copies live in these tasks).
  std::shared_ptr<DnstapWriter> old = std::move(dnstap_);
  dnstap_ = next;
  const std::string what = target.empty() ? std::string("SIGHUP: dnstap off")
                                          : "SIGHUP: dnstap to " + target + " (reopened)";
  auto remaining = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([wp, next, old, remaining, what]() mutable {
      wp->engine->set_dnstap(next.get());
      old.reset();
      if (remaining->fetch_sub(1) == 1) fmt::print(stderr, "{}\n", what);
    });
  }
}

}  // namespace hg::resolver
