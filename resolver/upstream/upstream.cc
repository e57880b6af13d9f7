// Upstream implementation, the queries: server choice, retransmission, EDNS fallback and 0x20
// over UDP, and one c-ares channel per server for the queries a truncated answer sends to TCP
// (cares_compat.h). The sockets (a port per attempt, what arrives on it) are
// upstream_sockets.cc; the records both files share, upstream_parts.h.
//
// A server removed by reload_servers() keeps its channel until its last query has ended; it
// is then destroyed from a zero-delay loop timer, never from inside a c-ares callback, where
// ares_destroy() is not allowed.
#include "resolver/upstream/upstream.h"

#include "base/bytes.h"
#include "resolver/upstream/ares_memory.h"
#include "resolver/upstream/cares_compat.h"
#include "resolver/upstream/upstream_parts.h"
#include "wire/header.h"

#include <ares.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

namespace hg::resolver {

using upstream_limits::kMaxAttempts;
using upstream_limits::kMaxDatagram;
using upstream_limits::kMaxQuery;
using upstream_limits::kOptSize;
using upstream_wire::kHeaderSize;

namespace {

constexpr std::size_t kRandomBatch = 256;

void init_library_once() {
  static std::once_flag once;
  // ARES_LIB_INIT_ALL only matters on Windows; c-ares asks for it everywhere all the same.
  std::call_once(once, [] {
    ares_library_init_mem(ARES_LIB_INIT_ALL, ares_memory::allocate, ares_memory::release,
                          ares_memory::reallocate);
  });
}

UpstreamStatus map_status(int status) {
  switch (status) {
    case ARES_SUCCESS:
      return UpstreamStatus::Ok;
    case ARES_ETIMEOUT:
      return UpstreamStatus::Timeout;
    case ARES_ESERVFAIL:
      return UpstreamStatus::ServFail;
    case ARES_EREFUSED:
      return UpstreamStatus::Refused;
    case ARES_ENOTIMP:
      return UpstreamStatus::NotImp;
    case ARES_ECONNREFUSED:
      return UpstreamStatus::NetworkError;
    case ARES_EBADRESP:
    case ARES_EFORMERR:
      return UpstreamStatus::BadResponse;
    case ARES_EBADQUERY:
      return UpstreamStatus::BadQuery;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
      return UpstreamStatus::Cancelled;
    default:  // ARES_ENOMEM and anything a newer c-ares may add
      return UpstreamStatus::Internal;
  }
}

// c-ares 1.18 has no field for an IPv6 scope, so a link-local server would be unreachable.
std::optional<std::string> unusable_server(std::span<const Endpoint> servers) {
  for (const Endpoint& s : servers) {
    if (s.family() == AF_INET6 && s.v6().sin6_scope_id != 0) {
      return "upstream " + s.to_string() +
             ": link-local IPv6 servers with a %scope are not supported by c-ares 1.18; use a "
             "global or IPv4 address";
    }
    if (s.port() == 0) return "upstream " + s.to_string() + ": port 0 is not a server port";
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(UpstreamStatus s) noexcept {
  switch (s) {
    case UpstreamStatus::Ok:
      return "ok";
    case UpstreamStatus::Timeout:
      return "timeout";
    case UpstreamStatus::ServFail:
      return "servfail";
    case UpstreamStatus::Refused:
      return "refused";
    case UpstreamStatus::NotImp:
      return "notimp";
    case UpstreamStatus::NetworkError:
      return "network-error";
    case UpstreamStatus::BadResponse:
      return "bad-response";
    case UpstreamStatus::BadQuery:
      return "bad-query";
    case UpstreamStatus::NoServers:
      return "no-servers";
    case UpstreamStatus::Cancelled:
      return "cancelled";
    case UpstreamStatus::Internal:
      return "internal";
    case UpstreamStatus::TlsAuthFailed:
      return "tls-auth-failed";
  }
  return "unknown";
}

namespace {

constexpr std::size_t kMaxServers = 64;

Millis ceil_ms(Micros us) {
  return std::chrono::ceil<Millis>(us);
}

}  // namespace

namespace {
// Spare Query objects kept for reuse: a Query is ~1.8 KiB, past the allocator's per-thread
// cache, so allocating one per upstream query costs far more than keeping it. This many cover
// the queries in flight at full speed on a fast upstream; a burst beyond returns to the heap.
constexpr std::size_t kSpareQueries = 256;
}  // namespace

Upstream::Query* Upstream::make_query() {
  if (spare_queries_.empty()) return new Query;
  Query* q = spare_queries_.back();
  spare_queries_.pop_back();
  return ::new (static_cast<void*>(q)) Query;  // default-initialised, as `new Query` is
}

void Upstream::drop_query(Query* q) {
  if (spare_queries_.size() >= kSpareQueries) {
    delete q;
    return;
  }
  q->~Query();
  spare_queries_.push_back(q);
}

Upstream::Upstream(EventLoop& loop, UpstreamOptions options)
    : loop_(loop),
      options_(std::move(options)),
      table_(std::make_shared<UpstreamTable>()),
      by_id_(65536, nullptr),
      scratch_(2 * kMaxQuery),  // room for the EDNS padding of a DoT query
      rxbuf_(kMaxDatagram) {
  if (!options_.clock_us) options_.clock_us = [this] { return loop_.now_us(); };
  table_->worker = options_.worker;
}

Checked<std::unique_ptr<Upstream>> Upstream::create(EventLoop& loop, UpstreamOptions options) {
  using R = Checked<std::unique_ptr<Upstream>>;
  if (auto why = unusable_server(options.servers)) return R::failure(*why);
  if (options.servers.size() > kMaxServers) return R::failure("at most 64 upstream servers");
  if (options.lifetime.count() < 1) return R::failure("upstream query lifetime must be >= 1 ms");
  if (const auto problem = cares::library_problem(); problem && problem->fatal)
    return R::failure(problem->message);
  init_library_once();
  std::unique_ptr<Upstream> up(new Upstream(loop, std::move(options)));
  for (const Endpoint& e : up->options_.servers) {
    auto s = up->open_server(e, std::make_shared<UpstreamServerStats>(e));
    if (!s) return R::failure(s.error());
    up->servers_.push_back(std::move(s.value()));
  }
  up->publish_table();
  return R(std::move(up));
}

Upstream::~Upstream() {
  for (TimerId t : deferred_)
    loop_.cancel_timer(t);
  for (Query* q = live_; q != nullptr; q = q->next) {
    if (q->timer) loop_.cancel_timer(q->timer);
    q->finished = true;  // callbacks are dropped, as documented
    ++q->busy;
  }
  // ares_destroy reports ARES_EDESTRUCTION to each pending attempt (bookkeeping only) and
  // closes the sockets via on_sock_state.
  while (!retired_.empty())
    destroy_server(retired_.back().get());
  while (!servers_.empty())
    destroy_server(servers_.back().get());
  while (live_ != nullptr) {
    Query* q = live_;
    live_ = q->next;
    delete q;
  }
  for (Query* q : spare_queries_)
    ::operator delete(q);  // already destroyed by drop_query
  if (expiry_timer_) loop_.cancel_timer(expiry_timer_);
  while (!ports_.empty())
    close_port(ports_.back().get());
}

Checked<std::unique_ptr<Upstream::Server>> Upstream::open_server(
    const Endpoint& endpoint, std::shared_ptr<UpstreamServerStats> stats) {
  using R = Checked<std::unique_ptr<Server>>;
  auto s = std::make_unique<Server>();
  s->owner = this;
  s->endpoint = endpoint;
  s->health = ServerHealth(options_.rtt);
  s->stats = std::move(stats);

  if (const TlsTarget* t = options_.dot ? options_.dot->find(endpoint) : nullptr) {
    if (!tls_ctx_) {
      auto ctx = DotChannel::make_context(*options_.dot);
      if (!ctx) return R::failure(ctx.error());
      tls_ctx_ = std::move(ctx.value());
    }
    s->trust_ad = options_.dot->trusts_ad(endpoint);
    Server* sp = s.get();
    s->dot = std::make_unique<DotChannel>(
        loop_, tls_ctx_, *options_.dot, *t, s->stats, options_.lifetime,
        [this, sp](uint16_t id, DotChannel::Event ev, std::span<uint8_t> m) {
          dot_event(*sp, id, ev, m);
        });
    update_stats(*s);
    return R(std::move(s));
  }

  auto ch = cares::open_tcp_channel(
      {endpoint, static_cast<int>(options_.lifetime.count()), &Upstream::on_sock_state, s.get()});
  if (!ch) return R::failure(ch.error());
  s->ares = ch.value();
  update_stats(*s);
  return R(std::move(s));
}

void Upstream::publish_table() {
  auto t = std::make_shared<UpstreamTable>();
  t->worker = options_.worker;
  for (const auto& s : servers_)
    t->servers.push_back(s->stats);
  table_ = t;
  if (options_.board != nullptr) options_.board->publish(std::move(t));
}

void Upstream::update_stats(Server& s) {
  UpstreamServerStats& st = *s.stats;
  const MonoTime now = loop_.now();
  const RttEstimator& r = s.health.rtt;
  st.srtt_us.store(r.has_sample() ? r.srtt().count() : -1, std::memory_order_relaxed);
  st.rttvar_us.store(r.rttvar().count(), std::memory_order_relaxed);
  st.rto_us.store(r.rto().count(), std::memory_order_relaxed);
  st.edns.store(s.health.edns_ok(now), std::memory_order_relaxed);
  st.use_0x20.store(options_.use_0x20 && s.health.use_0x20(now) && !s.dot,
                    std::memory_order_relaxed);
  st.suspect.store(s.health.suspect(), std::memory_order_relaxed);
  st.loss_ppm.store(static_cast<int64_t>(s.health.path.loss_rate() * 1e6),
                    std::memory_order_relaxed);
  st.patience_us.store(s.health.path.patience(r.rto()).count(), std::memory_order_relaxed);
}

void Upstream::on_sock_state(void* data, int fd, int readable, int writable) {
  auto* s = static_cast<Server*>(data);
  EventLoop& loop = s->owner->loop_;
  if (!readable && !writable) {
    loop.remove_fd(fd);
    std::erase(s->fds, fd);
    return;
  }
  Interest interest = readable && writable ? Interest::ReadWrite
                      : readable           ? Interest::Read
                                           : Interest::Write;
  if (std::find(s->fds.begin(), s->fds.end(), fd) != s->fds.end()) {
    loop.modify_fd(fd, interest);
    return;
  }
  bool added = loop.add_fd(fd, interest, [s, fd](FdEvents ev) {
    // On an error or hang-up, let c-ares read (it will see the error).
    bool rd = ev.readable || ev.error || ev.hangup;
    s->owner->process(*s, rd ? fd : ARES_SOCKET_BAD, ev.writable ? fd : ARES_SOCKET_BAD);
  });
  // add_fd fails only if the kernel refuses the watch (ENOMEM/ENOSPC): the attempts on this
  // socket then end by timeout, driven by the channel timer.
  if (added) s->fds.push_back(fd);
}

void Upstream::process(Server& s, int read_fd, int write_fd) {
  ares_process_fd(s.ares, read_fd, write_fd);
  rearm_timer_if_needed(s);
  retire_if_idle(s);
}

void Upstream::rearm_timer_if_needed(Server& s) {
  // Every deadline c-ares sets is at most `lifetime` after a send (TCP only), and answers only
  // remove deadlines. So a timer already due by now + lifetime fires by the end of every
  // attempt's lifetime: early costs one recomputation; after a deadline c-ares 1.34 shortened
  // (cares_compat.cc), the attempt only ends later, and the query's own timer retransmits
  // meanwhile. ares_timeout() walks every pending query in 1.18: calling it for each packet
  // would make a busy channel quadratic.
  if (s.timer && s.timer_at <= loop_.now() + options_.lifetime) return;
  rearm_timer(s);
}

void Upstream::rearm_timer(Server& s) {
  if (s.ares == nullptr) return;
  timeval tv{};
  timeval* next = ares_timeout(s.ares, nullptr, &tv);
  if (next == nullptr) {
    if (s.timer) loop_.cancel_timer(s.timer);
    s.timer = {};
    return;
  }
  auto ms = Millis{static_cast<int64_t>(next->tv_sec) * 1000 + (next->tv_usec + 999) / 1000};
  MonoTime at = loop_.now() + std::max(ms, Millis{1});
  if (s.timer && s.timer_at == at) return;
  if (s.timer) loop_.cancel_timer(s.timer);
  s.timer_at = at;
  Server* sp = &s;
  s.timer = loop_.add_timer_at(at, [this, sp] {
    sp->timer = {};
    process(*sp, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  });
}

void Upstream::retire_if_idle(Server& s) {
  if (!s.retired || s.pending != 0 || s.destroy_scheduled) return;
  s.destroy_scheduled = true;
  Server* sp = &s;
  s.destroy_timer = loop_.add_timer(Millis{0}, [this, sp] {
    sp->destroy_timer = {};
    destroy_server(sp);
  });
}

void Upstream::destroy_server(Server* s) {
  if (s->timer) loop_.cancel_timer(s->timer);
  if (s->destroy_timer) loop_.cancel_timer(s->destroy_timer);
  s->timer = {};
  if (s->dot) {  // as ares_destroy does: EDESTRUCTION to each attempt, bookkeeping only
    for (uint16_t id : s->dot->abandon()) {
      if (Attempt* a = by_id_[id]; a != nullptr && a->server == s && a->outstanding)
        on_answer(a, ARES_EDESTRUCTION, {});
    }
    s->dot.reset();
  }
  if (s->ares != nullptr) ares_destroy(s->ares);  // may call on_answer and on_sock_state
  end_udp_attempts(s, ARES_EDESTRUCTION);
  s->ares = nullptr;
  for (int fd : s->fds)
    loop_.remove_fd(fd);
  auto same = [s](const std::unique_ptr<Server>& p) { return p.get() == s; };
  std::erase_if(retired_, same);
  std::erase_if(servers_, same);
}

std::optional<uint16_t> Upstream::next_id() {
  if (ids_in_use_.all()) return std::nullopt;
  // Rejection sampling keeps the ID uniform over the free ones; with fewer than half the
  // IDs in use (the normal case by far) it takes under two draws on average.
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (random_ids_.empty()) {
      random_ids_.resize(kRandomBatch);
      std::size_t bytes = random_ids_.size() * sizeof(uint16_t);
      ssize_t got = getrandom(random_ids_.data(), bytes, 0);
      if (got != static_cast<ssize_t>(bytes)) {
        random_ids_.clear();
        return std::nullopt;  // getrandom cannot fail on Linux >= 3.17 once seeded
      }
    }
    uint16_t id = random_ids_.back();
    random_ids_.pop_back();
    if (!ids_in_use_.test(id)) return id;
  }
  for (std::size_t i = 0; i < ids_in_use_.size(); ++i) {
    if (!ids_in_use_.test(i)) return static_cast<uint16_t>(i);
  }
  return std::nullopt;
}

void Upstream::random_case(upstream_wire::CaseBits& bits, std::size_t name_len) {
  // Bit i is the case of the name's byte i: only the words that cover the name are drawn
  // (one for a name under 64 bytes), and the rest are zero — no byte of the name reads them.
  const std::size_t words = std::min(bits.size(), (name_len + 63) / 64);
  std::fill(bits.begin() + static_cast<std::ptrdiff_t>(words), bits.end(), 0);
  for (std::size_t w = 0; w < words; ++w) {
    uint64_t& word = bits[w];
    if (random_bits_.empty()) {
      random_bits_.resize(kRandomBatch);
      const std::size_t bytes = random_bits_.size() * sizeof(uint64_t);
      if (getrandom(random_bits_.data(), bytes, 0) != static_cast<ssize_t>(bytes)) {
        // Cannot happen (see next_id); fall back to lower case rather than predictable bits.
        random_bits_.assign(kRandomBatch, 0);
      }
    }
    word = random_bits_.back();
    random_bits_.pop_back();
  }
}

void Upstream::report_later(Callback done, UpstreamStatus status, std::vector<uint8_t> answer) {
  ++in_flight_;
  // The timer's id is known only after add_timer returns; the callback finds it by value.
  auto slot = std::make_shared<TimerId>();
  *slot = loop_.add_timer(Millis{0},
                          [this, slot, done = std::move(done), status, answer = std::move(answer)] {
                            std::erase(deferred_, *slot);
                            --in_flight_;
                            done(status, answer);
                          });
  deferred_.push_back(*slot);
}

std::optional<uint16_t> Upstream::send(std::span<const uint8_t> query, Callback done) {
  if (query.size() < kHeaderSize || query.size() > kMaxQuery) {
    report_later(std::move(done), UpstreamStatus::BadQuery, {});
    return std::nullopt;
  }
  const std::size_t qend = wire::question_end(query);
  if (qend == 0) {
    report_later(std::move(done), UpstreamStatus::BadQuery, {});
    return std::nullopt;
  }
  if (servers_.empty()) {
    report_later(std::move(done), UpstreamStatus::NoServers, {});
    return std::nullopt;
  }
  Query* q = make_query();
  q->done = std::move(done);
  std::memcpy(q->base.data(), query.data(), query.size());
  q->len = static_cast<uint16_t>(query.size());
  q->qend = static_cast<uint16_t>(qend);
  // Exactly one bare OPT record right after the question: the one thing we may remove.
  q->has_opt = base::load_u16(query.data() + 10) == 1 && base::load_u16(query.data() + 6) == 0 &&
               base::load_u16(query.data() + 8) == 0 && query.size() == qend + kOptSize &&
               query[qend] == 0 && base::load_u16(query.data() + qend + 1) == 41;
  q->give_up = loop_.now() + options_.lifetime;
  q->next = live_;
  if (live_ != nullptr) live_->prev = q;
  live_ = q;
  ++in_flight_;
  ++q->busy;
  const auto first = choose(*q);
  Server& s = *servers_[first.value_or(0)];
  if (!launch(*q, s, false, false)) {
    // Out of query IDs: report at the next iteration, never inside send().
    Callback cb = std::move(q->done);
    q->finished = true;
    --in_flight_;
    --q->busy;
    release_if_done(q);
    report_later(std::move(cb), UpstreamStatus::Internal, {});
    return std::nullopt;
  }
  const uint16_t id = q->attempts[0].id;
  send_probes(*q, &s);
  set_retry_timer(*q, loop_.now() + retry_interval(*q, s));
  --q->busy;
  release_if_done(q);
  return id;
}

std::optional<std::size_t> Upstream::choose(const Query& q) const {
  std::array<const ServerHealth*, kMaxServers> hs{};
  const std::size_t n = std::min(servers_.size(), kMaxServers);
  for (std::size_t i = 0; i < n; ++i)
    hs[i] = &servers_[i]->health;
  return choose_server(std::span<const ServerHealth* const>(hs.data(), n), q.failed);
}

bool Upstream::launch(Query& q, Server& s, bool edns_retry, bool probe, bool retransmit) {
  if (q.n_attempts >= kMaxAttempts || (s.ares == nullptr && !s.dot)) return false;
  const auto id = next_id();
  if (!id) return false;
  const MonoTime now = loop_.now();
  Attempt& a = q.attempts[q.n_attempts++];
  a = Attempt{};
  a.query = &q;
  a.server = &s;
  a.id = *id;
  a.edns = q.has_opt && !edns_retry && s.health.edns_ok(now);
  a.port = nullptr;
  a.edns_retry = edns_retry;
  a.probe = probe;
  // A retransmission in the sense of the path estimator: another copy to a server that
  // already has one of this query outstanding, sent because the timer fired.
  if (retransmit) {
    for (std::size_t i = 0; i + 1 < q.n_attempts; ++i) {
      const Attempt& e = q.attempts[i];
      if (e.server == &s && e.outstanding && !e.edns_retry) a.retransmit = true;
    }
    q.retransmitted = q.retransmitted || a.retransmit;
  }
  a.use_0x20 = options_.use_0x20 && s.health.use_0x20(now) && !s.dot;

  if (a.use_0x20) random_case(a.case_bits, q.qend - kHeaderSize - 4u);
  a.serial = ++next_serial_;
  std::size_t len = attempt_bytes(a).size();
  a.sent = options_.clock_us();
  a.outstanding = true;
  by_id_[*id] = &a;
  ids_in_use_.set(*id);
  ++s.pending;
  ++q.outstanding;
  bump(s.stats->queries);
  if (probe) bump(s.stats->probes);

  in_send_ = true;
  if (s.dot) {
    // RFC 8467 §4.1: queries padded to a multiple of 128 octets (when they carry EDNS).
    if (a.edns) len = dot::pad_query(scratch_, len);
    if (!s.dot->send(*id, std::span<const uint8_t>(scratch_.data(), len))) {
      a.tls_auth = true;  // held off after a refused certificate: fails at the next iteration
      on_answer(&a, ARES_ECONNREFUSED, {});
    }
    in_send_ = false;
    return true;
  }
  if (q.tcp_only) {
    // A wrong-case reply has been seen for this query: it is asked over TCP only, which an
    // off-path forger cannot answer (c-ares bounds the try by the query's lifetime).
    send_tcp(a);
    in_send_ = false;
    return true;
  }
  expiries_.push_back({now + options_.lifetime, &a, a.serial, a.id});
  arm_expiry();
  send_udp(a, std::span<const uint8_t>(scratch_.data(), len));
  in_send_ = false;
  return true;
}

std::span<const uint8_t> Upstream::attempt_bytes(const Attempt& a) {
  const Query& q = *a.query;
  std::size_t len = q.len;
  std::memcpy(scratch_.data(), q.base.data(), len);
  scratch_[0] = static_cast<uint8_t>(a.id >> 8);
  scratch_[1] = static_cast<uint8_t>(a.id & 0xff);
  if (q.has_opt && !a.edns) {  // RFC 6891 §7: the same query without the OPT record
    len -= kOptSize;
    scratch_[10] = 0;
    scratch_[11] = 0;
  }
  if (a.use_0x20) {
    const std::span<uint8_t> name(scratch_.data() + kHeaderSize, q.qend - kHeaderSize - 4u);
    upstream_wire::apply_case(name, a.case_bits);
  }
  return {scratch_.data(), len};
}

void Upstream::send_tcp(Attempt& a) {
  Server& s = *a.server;
  a.tcp = true;
  // c-ares matches the TCP answer to this send (in 1.34 under an ID of its own choosing) and
  // reports it to on_tcp_answer, perhaps at once for an error.
  cares::send(s.ares, attempt_bytes(a), &Upstream::on_tcp_answer, &a);
  rearm_timer_if_needed(s);
}

void Upstream::on_tcp_answer(void* arg, int status, std::span<uint8_t> answer) {
  on_answer(static_cast<Attempt*>(arg), status, answer);
}

void Upstream::arm_expiry() {
  if (expiry_timer_ || expiries_.empty()) return;
  expiry_timer_ = loop_.add_timer_at(expiries_.front().at, [this] {
    expiry_timer_ = {};
    expire_attempts();
  });
}

void Upstream::expire_attempts() {
  const MonoTime now = loop_.now();
  while (!expiries_.empty() && expiries_.front().at <= now) {
    const Expiry e = expiries_.front();
    expiries_.pop_front();
    // by_id_ holds only attempts not ended yet: a match is live memory, and the serial tells
    // it from a later attempt that reuses the same Query slot and ID.
    Attempt* a = by_id_[e.id];
    if (a != e.attempt || a->serial != e.serial || !a->outstanding || a->tcp) continue;
    on_answer(a, ARES_ETIMEOUT, {});
  }
  arm_expiry();
}

void Upstream::end_udp_attempts(const Server* only, int status) {
  std::vector<Attempt*> open;
  for (Query* q = live_; q != nullptr; q = q->next) {
    for (std::size_t i = 0; i < q->n_attempts; ++i) {
      Attempt& a = q->attempts[i];
      if (a.outstanding && !a.tcp && !a.server->dot && (only == nullptr || a.server == only))
        open.push_back(&a);
    }
  }
  for (Attempt* a : open)
    on_answer(a, status, {});
}

void Upstream::send_probes(Query& q, const Server* primary) {
  // A suspect server is never waited on while another is healthy; now and then it gets a
  // copy of a real query alongside, so its recovery is noticed.
  if (primary == nullptr || primary->health.suspect()) return;
  const MonoTime now = loop_.now();
  for (std::size_t i = 0; i < servers_.size() && i < kMaxServers; ++i) {
    Server& s = *servers_[i];
    if (&s == primary || !s.health.suspect() || now < s.health.next_probe) continue;
    if (q.failed & (uint64_t{1} << i)) continue;
    s.health.next_probe = now + ServerHealth::kProbeInterval;
    launch(q, s, false, true);
  }
}

void Upstream::set_retry_timer(Query& q, MonoTime at) {
  at = std::min(at, q.give_up);
  if (q.timer && q.timer_at == at) return;
  if (q.timer) loop_.cancel_timer(q.timer);
  q.timer_at = at;
  Query* qp = &q;
  q.timer = loop_.add_timer_at(at, [this, qp] {
    qp->timer = {};
    ++qp->busy;
    on_retry(*qp);
    --qp->busy;
    release_if_done(qp);
  });
}

void Upstream::on_retry(Query& q) {
  if (q.finished) return;
  const MonoTime now = loop_.now();
  // Every attempt still unanswered has run past its timer: a timeout for its server (the
  // RTO backs off).
  for (std::size_t i = 0; i < q.n_attempts; ++i) {
    Attempt& a = q.attempts[i];
    if (!a.outstanding || a.timed_out) continue;
    a.timed_out = true;
    Server& s = *a.server;
    // A timeout counts toward the server's streak (backoff, suspicion) only if the server
    // has not answered anything since the attempt was sent: with many queries in flight,
    // one lost packet must not back off the timer of every other query.
    if (a.sent > s.last_answer) s.health.rtt.timeout();
    bump(s.stats->timeouts);
    update_stats(s);
  }
  ++q.timeouts;
  if (now >= q.give_up) {
    finish(q, UpstreamStatus::Timeout, {});
    return;
  }
  next_attempt(q, UpstreamStatus::Timeout);
}

void Upstream::next_attempt(Query& q, UpstreamStatus why) {
  if (q.finished) return;
  const MonoTime now = loop_.now();
  const auto idx = choose(q);
  if (!idx) {  // every server has failed this query
    finish(q, why == UpstreamStatus::Timeout ? q.failure : why, {});
    return;
  }
  Server& s = *servers_[*idx];
  const bool retransmit = why == UpstreamStatus::Timeout;
  if (s.dot || q.tcp_only) {
    // A stream delivers or dies: no second copy while one is on the server's connection,
    // whether the timer fired or another server's copy (a probe) failed; a dead
    // connection's queries are written again on the next one, or fail over.
    for (std::size_t i = 0; i < q.n_attempts; ++i) {
      const Attempt& e = q.attempts[i];
      if (e.server == &s && e.outstanding && (s.dot || e.tcp)) {
        bump(s.stats->retransmissions_withheld);
        set_retry_timer(q, now + retry_interval(q, s));
        return;
      }
    }
  }
  if (retransmit) {
    // Copies of this query the server has had: few while it shows no loss, more on a lossy
    // path. At the cap nothing is sent, but the timer keeps running: the path may turn out
    // lossy meanwhile (checked again at each firing), and the lifetime still ends the query.
    int copies = 0;
    for (std::size_t i = 0; i < q.n_attempts; ++i) {
      const Attempt& e = q.attempts[i];
      if (e.server == &s && !e.probe && !e.edns_retry) ++copies;
    }
    if (copies >= s.health.path.max_sends(static_cast<int>(kMaxAttempts))) {
      bump(s.stats->retransmissions_withheld);
      set_retry_timer(q, now + retry_interval(q, s));
      return;
    }
  }
  if (!launch(q, s, false, false, retransmit)) {
    // Out of attempts (or IDs): what is in flight may still answer until the lifetime ends.
    set_retry_timer(q, q.give_up);
    return;
  }
  send_probes(q, &s);
  set_retry_timer(q, now + retry_interval(q, s));
}

Millis Upstream::retry_interval(const Query& q, const Server& s) const {
  const Micros max = options_.rtt.max_rto;
  Micros rto = s.health.rtt.rto();
  if (!s.health.path.lossy()) {
    // No loss seen on this path: a name that takes long is a slow resolution, not a lost
    // datagram. Wait the patience (at least 250 ms, and 1.5 x the slow answers seen), then
    // twice that per timeout of this query.
    Micros wait = s.health.path.patience(rto);
    for (int i = 0; i < q.timeouts && wait < max; ++i)
      wait *= 2;
    return ceil_ms(std::min(wait, std::max(max, s.health.path.patience(rto))));
  }
  // A lossy path: the server's RTO (itself backed off by the server's own timeout streak),
  // doubled for each of this query's timeouts past the free ones: answers to other queries
  // end the server's streak, so without this a name the upstream is slow on would be re-sent
  // every RTO for the whole lifetime.
  for (int i = options_.rtt.free_timeouts; i < q.timeouts && rto < max; ++i)
    rto *= 2;
  return ceil_ms(std::min(rto, max));
}

void Upstream::learn_from_reply(Attempt& a) {
  Server& s = *a.server;
  Query& q = *a.query;
  PathEstimator& path = s.health.path;
  const bool was_lossy = path.lossy();
  a.replied = true;
  if (a.judged_lost) {  // it was not lost after all, only late
    a.judged_lost = false;
    path.unlost();
  }
  path.delivered();
  if (q.retransmitted) {
    std::size_t me = 0;
    while (&q.attempts[me] != &a)
      ++me;
    bool later_copy = false, earlier_replied = false;
    for (std::size_t i = 0; i < q.n_attempts; ++i) {
      const Attempt& e = q.attempts[i];
      if (i == me || e.server != &s || e.edns_retry) continue;
      if (i > me && e.retransmit) later_copy = true;
      if (i < me && e.replied) earlier_replied = true;
    }
    // An answer to a copy that had been retransmitted: the server was slow, not lossy, and
    // this is how slow.
    if (later_copy) path.slow_answer(options_.clock_us() - a.sent, options_.rtt.max_rto);
    if (!earlier_replied) {
      // A later copy answered while earlier ones are still unanswered: those were lost.
      for (std::size_t i = 0; i < me; ++i) {
        Attempt& e = q.attempts[i];
        if (e.server != &s || e.edns_retry || !e.outstanding || e.judged_lost) continue;
        e.judged_lost = true;
        path.lost();
      }
    }
    classify_retransmissions(q, s);
  }
  if (!was_lossy && path.lossy()) hurry_waiting_queries(s);
}

void Upstream::classify_retransmissions(Query& q, const Server& s) {
  // A retransmission was spurious if an earlier copy to the same server was answered (at any
  // time), needed if it or a later copy was answered and every earlier copy ended without an
  // answer. One that nothing answered is neither (a name the server never resolves).
  for (std::size_t j = 0; j < q.n_attempts; ++j) {
    Attempt& r = q.attempts[j];
    if (!r.retransmit || r.classified || r.server != &s) continue;
    bool earlier_replied = false, earlier_pending = false, answered = false;
    for (std::size_t i = 0; i < q.n_attempts; ++i) {
      const Attempt& e = q.attempts[i];
      if (e.server != &s || e.edns_retry) continue;
      if (i < j) {
        earlier_replied = earlier_replied || e.replied;
        earlier_pending = earlier_pending || (e.outstanding && !e.replied);
      } else {
        answered = answered || e.replied;
      }
    }
    if (earlier_replied) {
      r.classified = true;
      bump(s.stats->spurious_retransmissions);
    } else if (answered && !earlier_pending) {
      r.classified = true;
      bump(s.stats->needed_retransmissions);
    }
  }
}

void Upstream::hurry_waiting_queries(const Server& s) {
  const MonoTime at = loop_.now() + ceil_ms(s.health.rtt.rto());
  for (Query* q = live_; q != nullptr; q = q->next) {
    if (q->finished || !q->timer || q->n_attempts == 0) continue;
    const Attempt& last = q->attempts[q->n_attempts - 1u];
    if (last.server != &s || !last.outstanding) continue;
    if (at < q->timer_at) set_retry_timer(*q, at);
  }
}

void Upstream::on_answer(Attempt* a, int status, std::span<uint8_t> answer) {
  Query* q = a->query;
  Server* s = a->server;
  Upstream* self = s->owner;
  a->outstanding = false;
  --s->pending;
  --q->outstanding;
  self->ids_in_use_.reset(a->id);
  self->by_id_[a->id] = nullptr;
  self->close_attempt_socket(*a);           // whatever comes to its port from now on is dropped
  if (status == ARES_EDESTRUCTION) return;  // ~Upstream or destroy_server: bookkeeping only
  if (self->in_send_) {
    // The attempt failed inside send() (e.g. no socket): handle it at the next iteration, so
    // the caller never sees its callback run inside send().
    ++q->busy;
    auto slot = std::make_shared<TimerId>();
    *slot = self->loop_.add_timer(Millis{0}, [self, a, q, status, slot] {
      std::erase(self->deferred_, *slot);
      self->handle_result(*a, status, {});
      --q->busy;
      self->release_if_done(q);
    });
    self->deferred_.push_back(*slot);
    return;
  }
  ++q->busy;
  self->handle_result(*a, status, answer);
  --q->busy;
  self->release_if_done(q);
  self->retire_if_idle(*s);
}

void Upstream::handle_result(Attempt& a, int status, std::span<uint8_t> answer) {
  Query& q = *a.query;
  Server& s = *a.server;
  const MonoTime now = loop_.now();
  UpstreamStatus failure = UpstreamStatus::Ok;

  switch (status) {
    case ARES_SUCCESS:
      break;
    case ARES_ETIMEOUT:
      // The attempt's c-ares lifetime ended. Retransmissions were the query timer's job; a
      // probe that was never timed by it counts as a timeout of its server now.
      if (!a.timed_out && a.probe) {
        a.timed_out = true;
        if (a.sent > s.last_answer) s.health.rtt.timeout();
        bump(s.stats->timeouts);
        update_stats(s);
      }
      if (q.retransmitted) classify_retransmissions(q, s);
      if (!q.finished && q.outstanding == 0 && now >= q.give_up)
        finish(q, UpstreamStatus::Timeout, {});
      return;
    case ARES_ECANCELLED:
      return;
    default:
      failure = map_status(status);
      if (failure == UpstreamStatus::Ok) failure = UpstreamStatus::BadResponse;
      if (a.tls_auth) failure = UpstreamStatus::TlsAuthFailed;
      break;
  }

  if (status == ARES_SUCCESS) {
    s.last_answer = options_.clock_us();
    learn_from_reply(a);
  } else if (q.retransmitted && !a.outstanding) {
    classify_retransmissions(q, s);  // this copy's fate is known: never answered
  }
  if (failure == UpstreamStatus::Ok && answer.size() < kHeaderSize)
    failure = UpstreamStatus::BadResponse;

  if (failure == UpstreamStatus::Ok) {
    namespace uw = upstream_wire;
    const uint8_t rc = uw::rcode(answer);
    // RFC 6891 §7: FORMERR, NOTIMP or SERVFAIL without an OPT record to a query with one
    // means the server does not do EDNS; §6.1.3: BADVERS (extended RCODE 16 = OPT's upper
    // bits 1, header 0) to our version 0 leaves no lower version to try. Either way the same
    // query goes again, without OPT, to the same server.
    if (a.edns) {
      bool rejected = false;
      if (rc == uw::kFormErr || rc == uw::kNotImp || rc == uw::kServFail) {
        rejected = !uw::find_opt(answer).present;
      } else if (rc == 0 && base::load_u16(answer.data() + 6) == 0 &&
                 base::load_u16(answer.data() + 8) == 0) {
        const auto opt = uw::find_opt(answer);
        rejected = opt.present && opt.ext_rcode == 1;
      }
      if (rejected) {
        bump(s.stats->edns_rejections);
        s.health.rtt.answered();
        if (!q.finished && launch(q, s, true, false))
          set_retry_timer(q, now + retry_interval(q, s));
        update_stats(s);
        return;
      }
    }
    if (rc == uw::kServFail) failure = UpstreamStatus::ServFail;
    if (rc == uw::kRefused) failure = UpstreamStatus::Refused;
    if (rc == uw::kNotImp) failure = UpstreamStatus::NotImp;
  }

  if (failure != UpstreamStatus::Ok) {
    if (failure != UpstreamStatus::Internal) {
      s.health.on_failure();
      bump(s.stats->failures);
      update_stats(s);
    }
    if (q.finished) return;
    for (std::size_t i = 0; i < servers_.size() && i < kMaxServers; ++i) {
      if (servers_[i].get() == &s) q.failed |= uint64_t{1} << i;
    }
    q.failure = failure;
    next_attempt(q, failure);
    return;
  }

  // A usable answer.
  s.health.on_answer();
  if (!a.timed_out) s.health.rtt.sample(options_.clock_us() - a.sent);  // Karn's rule
  if (a.use_0x20) judge_case(a, answer, now);
  if (a.edns_retry && s.health.edns_ok(now)) {
    s.health.no_edns_until = now + ServerHealth::kRemember;
    bump(s.stats->edns_fallbacks);
  }
  bump(s.stats->answers);
  update_stats(s);
  if (q.finished) {
    bump(s.stats->late_answers);
    return;
  }
  // AD (RFC 4035 §3.2.3, RFC 6840 §5.7): the upstream's claim that it validated the data is
  // worth only as much as the path it came over. Over UDP or TCP anyone on the path (or a
  // forgery that won) can set it, so only a server we authenticate and were told to trust
  // keeps it; for the rest it is cleared here, before anything is cached or answered.
  if (!s.trust_ad && (answer[3] & 0x20) != 0) {
    answer[3] = static_cast<uint8_t>(answer[3] & ~0x20);
    bump(s.stats->ad_cleared);
  }
  // Hand the caller an answer to exactly the query it gave: its ID, its question bytes.
  const auto question = std::span<const uint8_t>(q.base.data() + kHeaderSize, q.qend - kHeaderSize);
  answer[0] = static_cast<uint8_t>(q.attempts[0].id >> 8);
  answer[1] = static_cast<uint8_t>(q.attempts[0].id & 0xff);
  if (answer.size() >= kHeaderSize + question.size() &&
      (a.question_exact ||
       upstream_wire::match_question(answer, question) != upstream_wire::QuestionMatch::Other))
    std::memcpy(answer.data() + kHeaderSize, question.data(), question.size());
  finish(q, UpstreamStatus::Ok, answer);
}

void Upstream::finish(Query& q, UpstreamStatus status, std::span<uint8_t> answer) {
  if (q.finished) return;
  q.finished = true;
  if (q.timer) loop_.cancel_timer(q.timer);
  q.timer = {};
  --in_flight_;
  Callback done = std::move(q.done);
  done(status, answer);
}

void Upstream::release_if_done(Query* q) {
  if (!q->finished || q->outstanding != 0 || q->busy != 0) return;
  if (q->prev != nullptr) q->prev->next = q->next;
  if (q->next != nullptr) q->next->prev = q->prev;
  if (live_ == q) live_ = q->next;
  drop_query(q);
}

void Upstream::switch_to_tcp(Query& q, Server& s) {
  q.tcp_only = true;
  ++q.busy;
  for (std::size_t i = 0; i < q.n_attempts; ++i) {
    Attempt& e = q.attempts[i];
    if (e.outstanding && !e.tcp && !e.server->dot) on_answer(&e, ARES_ECANCELLED, {});
  }
  --q.busy;
  if (q.finished) return;
  if (s.retired) {  // removed by a reload: a server of the new list gets the TCP query
    next_attempt(q, UpstreamStatus::Timeout);
    return;
  }
  const MonoTime now = loop_.now();
  if (!launch(q, s, false, false)) {
    set_retry_timer(q, q.give_up);  // out of attempts or IDs: the lifetime ends it
    return;
  }
  // Give the connection its round trips before another server is tried.
  set_retry_timer(q, now + 2 * retry_interval(q, s));
}

void Upstream::judge_case(const Attempt& a, std::span<const uint8_t> answer, MonoTime now) {
  namespace uw = upstream_wire;
  Server& s = *a.server;
  if (!a.tcp) {  // a UDP answer gets here only in the exact case (accept_datagram)
    s.health.on_case_echo();
    return;
  }
  const Query& q = *a.query;
  const auto question = std::span<const uint8_t>(q.base.data() + kHeaderSize, q.qend - kHeaderSize);
  switch (uw::match_question_cased(answer, question, a.case_bits)) {
    case uw::QuestionMatch::Exact:
      s.health.on_case_echo();
      // The server keeps case over TCP, so the wrong-case UDP reply was not its own.
      if (q.tcp_only) bump(s.stats->case_forgeries);
      break;
    case uw::QuestionMatch::CaseOnly:
      // The server itself does not echo the case: a confirmed failure, for this name.
      if (s.health.on_case_failure(now, uw::name_hash(question))) bump(s.stats->case_fallbacks);
      break;
    case uw::QuestionMatch::Other:
      break;  // c-ares took it as the answer; it says nothing about case
  }
}

bool Upstream::accept_datagram(Attempt& a, std::span<uint8_t> d) {
  namespace uw = upstream_wire;
  Server& s = *a.server;
  Query& q = *a.query;
  // read_attempt() has checked the address and port it came from. The socket is the
  // attempt's own, so only the attempt's ID answers it.
  if (d.size() < kHeaderSize || (d[2] & 0x80) == 0) {
    bump(s.stats->dropped_wrong_question);  // not a DNS response at all
    return false;
  }
  if (uw::id(d) != a.id) {
    // The ID of another attempt to this server: an answer that came to the wrong port (a
    // forger who guessed the ID but not the port, or a server that answers from a table).
    const Attempt* other = by_id_[uw::id(d)];
    bump(other != nullptr && other->server == &s ? s.stats->dropped_wrong_port
                                                 : s.stats->dropped_wrong_id);
    return false;
  }
  const MonoTime now = loop_.now();
  const auto question = std::span<const uint8_t>(q.base.data() + kHeaderSize, q.qend - kHeaderSize);
  const auto match = a.use_0x20 ? uw::match_question_cased(d, question, a.case_bits)
                                : uw::match_question(d, question);
  if (match == uw::QuestionMatch::Other ||
      base::load_u16(d.data() + 4) != 1) {  // one question, ours
    bump(s.stats->dropped_wrong_question);
    return false;
  }
  if (a.use_0x20 && match == uw::QuestionMatch::CaseOnly) {
    // A forgery, or a server that does not echo case; which, only TCP can tell, and until it
    // has, nothing is decided on this reply: not the answer, and not the server's 0x20 state
    // (a forger must not be able to switch 0x20 off). Every UDP attempt of the query ends
    // here, so no later datagram can answer it, and it is asked again over TCP, where an
    // off-path forger cannot answer. handle_result() judges the TCP answer's case.
    bump(s.stats->case_mismatches);
    if (!q.finished && !q.tcp_only) switch_to_tcp(q, s);
    return false;
  }
  // Longer than the query offered (a server that ignores the payload size, or a forger who
  // wants IP fragments): treated as truncated, like TC, and asked again over TCP.
  const std::size_t offered = a.edns ? options_.edns_payload : 512;
  a.truncated = uw::truncated(d) || d.size() > offered;
  // Over TCP the answer does not pass through here: only a complete UDP reply with the one
  // question vouches for it.
  a.question_exact = a.use_0x20 && !a.truncated;
  if (a.truncated) {
    // It goes over TCP now: give that connection time before retransmitting.
    bump(s.stats->truncated);
    if (!q.finished && q.timer) {
      const MonoTime later = now + 2 * retry_interval(q, s);
      if (later > q.timer_at) set_retry_timer(q, later);
    }
  }
  return true;
}

std::optional<std::string> Upstream::reload_servers(std::span<const Endpoint> servers) {
  if (auto why = unusable_server(servers)) return why;
  if (servers.size() > kMaxServers) return std::string("at most 64 upstream servers");
  // Servers that stay keep their channel and what we learnt about them; new ones get a
  // channel; removed ones finish their attempts and are then destroyed.
  std::vector<std::unique_ptr<Server>> next;
  for (const Endpoint& e : servers) {
    auto it = std::find_if(servers_.begin(), servers_.end(),
                           [&](const std::unique_ptr<Server>& s) { return s && s->endpoint == e; });
    if (it != servers_.end()) {
      next.push_back(std::move(*it));
      continue;
    }
    auto s = open_server(e, std::make_shared<UpstreamServerStats>(e));
    if (!s) {
      // Put back what was moved out, so the old list stays in force.
      for (auto& n : next) {
        auto slot = std::find(servers_.begin(), servers_.end(), nullptr);
        if (slot != servers_.end()) *slot = std::move(n);
      }
      return s.error();
    }
    next.push_back(std::move(s.value()));
  }
  for (auto& old : servers_) {
    if (!old) continue;
    old->retired = true;
    retired_.push_back(std::move(old));
  }
  servers_ = std::move(next);
  options_.servers.assign(servers.begin(), servers.end());
  publish_table();
  // Queries in flight keep their per-server "failed" bits by index; with the list changed
  // those may now name other servers, which costs at most one needless or missed attempt.
  std::vector<Server*> idle;
  for (auto& r : retired_)
    idle.push_back(r.get());
  for (Server* r : idle)
    retire_if_idle(*r);
  return std::nullopt;
}

bool Upstream::all_servers_tls() const noexcept {
  return !servers_.empty() && std::all_of(servers_.begin(), servers_.end(),
                                          [](const auto& s) { return s->dot != nullptr; });
}

void Upstream::dot_event(Server& s, uint16_t id, DotChannel::Event event,
                         std::span<uint8_t> message) {
  Attempt* a = by_id_[id];
  if (a == nullptr || a->server != &s || !a->outstanding) {
    if (event == DotChannel::Event::Answer) bump(s.stats->dropped_wrong_id);
    return;
  }
  using E = DotChannel::Event;
  int status = ARES_ECONNREFUSED;
  switch (event) {
    case E::Answer: {
      // The ID matched; the answer must also be a response to the question asked.
      const Query& q = *a->query;
      const auto question =
          std::span<const uint8_t>(q.base.data() + kHeaderSize, q.qend - kHeaderSize);
      if (message.size() < kHeaderSize || (message[2] & 0x80) == 0 ||
          upstream_wire::match_question(message, question) == upstream_wire::QuestionMatch::Other) {
        bump(s.stats->dropped_wrong_question);
        status = ARES_EBADRESP;
        break;
      }
      on_answer(a, ARES_SUCCESS, message);
      return;
    }
    case E::NetworkError:
      status = ARES_ECONNREFUSED;
      break;
    case E::AuthFailed:
      a->tls_auth = true;
      status = ARES_ECONNREFUSED;
      break;
    case E::Timeout:
      status = ARES_ETIMEOUT;
      break;
    case E::Cancelled:
      status = ARES_ECANCELLED;
      break;
  }
  on_answer(a, status, {});
}

void Upstream::cancel_all() {
  // First c-ares drops every attempt (ECANCELLED: bookkeeping only), then every query not
  // yet reported gets Cancelled. A callback may send new queries; those go on normally.
  std::vector<Server*> all;
  for (auto& s : servers_)
    all.push_back(s.get());
  for (auto& s : retired_)
    all.push_back(s.get());
  std::vector<Query*> open;
  for (Query* q = live_; q != nullptr; q = q->next) {
    ++q->busy;
    open.push_back(q);
  }
  for (Server* s : all) {
    if (s->ares != nullptr) ares_cancel(s->ares);
    if (s->dot) s->dot->cancel_all();
  }
  end_udp_attempts(nullptr, ARES_ECANCELLED);
  for (Query* q : open)
    finish(*q, UpstreamStatus::Cancelled, {});
  for (Query* q : open) {
    --q->busy;
    release_if_done(q);
  }
  for (Server* s : all) {
    rearm_timer(*s);
    retire_if_idle(*s);
  }
}

}  // namespace hg::resolver
