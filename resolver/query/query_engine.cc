#include "resolver/query/query_engine.h"
#include "base/bytes.h"
#include "base/json.h"
#include "base/wall_clock.h"
#include "resolver/log.h"

#include <fmt/core.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "wire/edns.h"
#include "wire/header.h"
#include "wire/owned.h"
#include "wire/reader.h"
#include "wire/reencode.h"
#include "wire/writer.h"

namespace hg::resolver {

using wire::RCode;

namespace {

/// `t` as RFC 3339 in UTC with milliseconds: 2026-01-31T23:59:59.123Z.
std::string rfc3339_utc_ms(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(ms.count() / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", std::string_view(buf, n), static_cast<int>(ms.count() % 1000));
}

/// The first two members of every JSON query-log line. A JSON line is read by a log shipper,
/// not the journal, so it carries its own wall-clock time (RFC 3339, UTC, milliseconds), and
/// the client's address ("" when there is none: tests that feed packets directly).
std::string json_log_head(const sockaddr* client) {
  std::string from;
  if (client != nullptr) {
    if (auto ep = Endpoint::from_sockaddr(client, sizeof(sockaddr_storage))) from = ep->to_string();
  }
  return fmt::format("\"time\":\"{}\",\"client\":{}", rfc3339_utc_ms(base::wall_now()),
                     base::json::quote(from));
}

constexpr std::size_t kMaxUdpAnswer = UdpListener::kMaxAnswer;

// RewriteRules::drop_address for --private-address; the context is the config's blocks.
bool in_private_block(const void* context, std::span<const uint8_t> address) {
  const auto& blocks = *static_cast<const std::vector<Cidr>*>(context);
  sockaddr_storage ss{};
  if (address.size() == 4) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    std::memcpy(&sin.sin_addr, address.data(), 4);
    std::memcpy(&ss, &sin, sizeof sin);
  } else {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    std::memcpy(&sin6.sin6_addr, address.data(), 16);
    std::memcpy(&ss, &sin6, sizeof sin6);
  }
  const auto* sa = reinterpret_cast<const sockaddr*>(&ss);
  return std::any_of(blocks.begin(), blocks.end(), [&](const Cidr& c) { return c.contains(sa); });
}

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
  // The AD bit kept in entries: an upstream's (--trust-ad), or this resolver's own verdict.
  s.keep_ad = !c.trust_ad.empty() || c.dnssec != Config::Dnssec::Off;
  return s;
}

std::size_t udp_limit(uint16_t client_udp_size, std::size_t room) {
  // Never more than 1232 over UDP, whatever the client offers: larger datagrams fragment, and
  // fragments are lost or spoofed (DNS flag day 2020). Larger answers go TC=1, then TCP.
  return std::min<std::size_t>({client_udp_size, kMaxUdpAnswer, room});
}

// ttl-cap applies to an answer passed through uncached too: the cap bounds every TTL a client
// is given for the zone, so a cap of 0 (nothing cached) reaches clients as TTL 0 rather than
// the upstream's. `out` holds `size` bytes that render_passthrough() wrote: the upstream's
// records in order, at the upstream's offsets (same header and question length), then our
// OPT when the client sent one. A negative answer is about the qname, as in the cache.
void cap_passthrough_ttls(std::span<uint8_t> out, std::size_t size, bool client_edns,
                          const wire::Message& up, const cache::Cache& cache,
                          const wire::Name& qname) {
  if (size < wire::kHeaderSize) return;
  std::size_t copied = std::size_t{base::load_u16(out.data() + 6)} +
                       base::load_u16(out.data() + 8) + base::load_u16(out.data() + 10);
  if (client_edns && copied > 0) --copied;  // our OPT record
  const bool negative = up.rcode() == RCode::NXDomain || up.section(wire::Section::Answer).empty();
  const std::optional<uint32_t> qname_cap =
      negative ? cache.ttl_cap_for(qname) : std::optional<uint32_t>{};
  const auto records = up.records();
  for (std::size_t i = 0; i < records.size() && i < copied; ++i) {
    const wire::RecordView& rr = records[i];
    if (std::size_t{rr.ttl_offset} + 4 > size) break;
    std::optional<uint32_t> cap = cache.ttl_cap_for(up.owner(rr));
    if (qname_cap && (!cap || *qname_cap < *cap)) cap = qname_cap;
    if (cap && base::load_u32(out.data() + rr.ttl_offset) > *cap)
      base::store_u32(out.data() + rr.ttl_offset, *cap);
  }
}

}  // namespace

void Waiter::hold(const ClientQuery& q) noexcept {
  query = q;
  query.question = {};
  query.qname = nullptr;
  question_len = static_cast<uint16_t>(q.question.size());
  std::copy(q.question.begin(), q.question.end(), question.begin());
}

ClientQuery Waiter::client() const noexcept {
  ClientQuery q = query;
  q.question = std::span<const uint8_t>(question.data(), question_len);
  return q;
}

Shared::Shared(const Config& c)
    : config(c),
      cache(cache_settings(c)),
      shadow(cache::ShadowSettings{.max_bytes = static_cast<std::size_t>(c.shadow_size)}),
      inflight(InflightSettings{.max_entries = 4096,
                                .max_waiters = 256,
                                .source_share = c.client_share,
                                .zone_cap = c.failing_zone_cap}),
      client_rate(c.client_rate) {}

QueryEngine::QueryEngine(Shared& shared, EventLoop& loop, Sender sender, int worker)
    : shared_(shared),
      loop_(loop),
      sender_(std::move(sender)),
      worker_(worker),
      buf_(kMaxTcpAnswer) {
  // The config checked each zone's syntax; one that still does not parse exempts nothing.
  for (const std::string& z : shared_.config.private_domains)
    if (auto n = wire::Name::from_text(z)) private_domains_.push_back(*n);
}

bool QueryEngine::allowed(const sockaddr* peer) const noexcept {
  if (peer == nullptr) return true;  // tests and fuzzing: no address
  return std::any_of(shared_.config.allow.begin(), shared_.config.allow.end(),
                     [&](const Cidr& c) { return c.contains(peer); });
}

std::size_t QueryEngine::answer_hit(const cache::Hit& hit, const ClientQuery& q,
                                    std::span<uint8_t> out, std::size_t limit,
                                    std::optional<EdeSpec> ede) {
  return answer_entry(*hit.entry,
                      hit.stale() ? std::optional<uint32_t>(hit.stale_ttl) : std::nullopt, q, out,
                      limit, ede);
}

std::size_t QueryEngine::answer_entry(const cache::Entry& entry, std::optional<uint32_t> stale_ttl,
                                      const ClientQuery& q, std::span<uint8_t> out,
                                      std::size_t limit, std::optional<EdeSpec> ede) {
  wire::WireWriter w(out, limit);
  const auto opt = response_opt(q.dnssec_ok, static_cast<RCode>(entry.rcode()), ede);
  const std::size_t reserve = q.has_edns ? wire::opt_size(opt) : 0;
  const auto r = cache::render_entry(entry, q, loop_.now(), stale_ttl, w, reserve);
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
  // The query log names the client; `peer` is only valid during this call.
  struct PeerScope {
    const sockaddr*& slot;
    ~PeerScope() { slot = nullptr; }
  } peer_scope{handling_peer_ = peer};
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
        if (shared_.config.log_queries_json) {
          log::print(log::Level::Info, "{{{},\"rejected\":{}}}", json_log_head(peer),
                     base::json::quote(to_string(adm.why)));
        } else {
          log::print(log::Level::Info, "query rejected: {}", to_string(adm.why));
        }
      }
      return {adm.response_size, false};
    }
    case Admission::Resolve:
      break;
  }
  // --client-rate: a UDP query beyond its source's rate is dropped, not answered (an answer
  // would go to an address that may be forged, the reflection RRL avoids); over TCP the
  // address is proven, and REFUSED keeps the connection's answers in order.
  if (shared_.client_rate.enabled() && peer != nullptr) [[unlikely]] {
    if (!shared_.client_rate.allow(client_source(peer), now)) {
      st.rate_limited.fetch_add(1, std::memory_order_relaxed);
      if (!route.is_tcp) return {};
      return {write_error(out, q, RCode::Refused,
                          EdeSpec{wire::ede::Other, "query rate limit (--client-rate)"}),
              false};
    }
  }

  const std::size_t limit = route.is_tcp ? out.size() : udp_limit(q.udp_size, out.size());
  if (routing_ != nullptr) {
    const Routing::Match m = routing_->route(*q.qname, q.qtype);
    if (m.kind >= RouteKind::LocalZone) [[unlikely]]
      return {answer_local(m, q, out, limit, now), false};
  }
  if (q.qtype == wire::RRType::ANY && shared_.config.minimal_any) [[unlikely]] {
    // RFC 8482: ANY asks for "everything", which no cache can promise and an amplifier
    // loves; one small synthesized RRset is the answer.
    st.minimal_any.fetch_add(1, std::memory_order_relaxed);
    if (shared_.config.log_queries) log_query(*q.qname, q.qtype, RCode::NoError, "any", now);
    return {write_minimal_any(out, limit, q), false};
  }
  auto& cache = shared_.cache;
  const auto key = cache::CacheKey::make(*q.qname, q.qtype, q.qclass, q.dnssec_ok, q.cd());
  if (++top_tick_ >= top_gap_) [[unlikely]] {
    top_tick_ = 0;
    top_rng_ ^= top_rng_ << 13;
    top_rng_ ^= top_rng_ >> 17;
    top_rng_ ^= top_rng_ << 5;
    top_gap_ = 1 + (top_rng_ & (2 * TopNames::kSampleEvery - 2));
    shared_.top_names.on_query(key.qname);
  }
  // A fresh hit is rendered inside the lookup, under the shard's read lock: no reference to
  // the entry is taken. shadow-ttl (off unless a shadow zone is set) needs the entry after
  // the lookup, so it takes the reference.
  std::size_t fresh_size = 0;
  uint8_t fresh_rcode = 0;
  cache::Hit hit;
  if (!shared_.shadow.active()) [[likely]] {
    hit = cache.lookup_fresh(key, now, [&](const cache::Entry& e, bool) {
      fresh_size = answer_entry(e, std::nullopt, q, out, limit, std::nullopt);
      fresh_rcode = e.rcode();
    });
  } else {
    hit = cache.lookup(key, now);
    const bool fresh = hit.freshness == cache::Freshness::Fresh;
    shared_.shadow.on_query(key, fresh ? hit.entry.get() : nullptr, now);
    if (fresh) {
      fresh_size = answer_hit(hit, q, out, limit, std::nullopt);
      fresh_rcode = hit.entry->rcode();
    }
  }

  if (hit.freshness == cache::Freshness::Fresh) {
    st.hits.fetch_add(1, std::memory_order_relaxed);
    if (hit.prefetch && shared_.inflight.start_background(key, now, worker_, zone_tag(key.qname))) {
      st.prefetches.fetch_add(1, std::memory_order_relaxed);
      start_upstream(key);
    }
    if (shared_.config.log_queries)
      log_query(*q.qname, q.qtype, static_cast<RCode>(fresh_rcode), "hit", now);
    return {fresh_size, false};
  }

  // RFC 9520 / RFC 8767 failure recheck: a key that failed recently is not asked again yet.
  if (cache.failure_holdoff(key, now) > Millis{0}) {
    if (hit.stale()) return {answer_stale_now(hit, q, out, limit), false};
    st.failure_cached_answers.fetch_add(1, std::memory_order_relaxed);
    st.servfail.fetch_add(1, std::memory_order_relaxed);
    if (shared_.config.log_queries) log_query(*q.qname, q.qtype, RCode::ServFail, "failed", now);
    // RFC 8914 §4.14 Cached Error: the SERVFAIL comes from the failure cache.
    return {write_error(
                out.first(limit), q, RCode::ServFail,
                EdeSpec{wire::ede::CachedError, "upstream failed recently; not asked again yet"}),
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
  w.hold(q);
  if (hit.stale()) w.stale = hit.entry;
  // Each waiter's deadline runs on the loop of the worker that received it; whichever worker
  // owns the upstream query, the waiter is answered on time. The timer is cancelled when the
  // waiter is answered earlier (release_timer), so timers never outnumber waiters.
  w.engine = this;
  w.key_slot = keys_.hold(key);
  const uint32_t slot = w.key_slot;
  w.timer = loop_.add_timer_at(w.deadline, [this, slot] {
    on_deadline(keys_[slot]);
    keys_.drop(slot);
  });
  const TimerId timer = w.timer;

  const JoinOrigin origin{.source = client_source(peer), .zone = zone_tag(key.qname)};
  const JoinOutcome joined = shared_.inflight.join(key, std::move(w), now, worker_, origin);
  switch (joined) {
    case JoinOutcome::Created:
      st.misses.fetch_add(1, std::memory_order_relaxed);
      begin_miss(key);
      break;
    case JoinOutcome::Joined:
      st.coalesced.fetch_add(1, std::memory_order_relaxed);
      break;
    case JoinOutcome::SourceShareFull:
    case JoinOutcome::ZoneCapped: {
      // Fair shares (inflight.h): this client, or this name's zone, already has its part of the
      // table; the rest of the table stays for the others. A stale answer still serves.
      cancel_deadline(timer, slot);
      if (hit.stale()) return {answer_stale_now(hit, q, out, limit), false};
      const bool share = joined == JoinOutcome::SourceShareFull;
      (share ? st.share_refused : st.zone_capped).fetch_add(1, std::memory_order_relaxed);
      st.servfail.fetch_add(1, std::memory_order_relaxed);
      if (shared_.config.log_queries)
        log_query(*q.qname, q.qtype, RCode::ServFail, share ? "share" : "zone-capped", now);
      // RFC 8914: 0 Other for the client's own share (nothing is wrong upstream); 22 No
      // Reachable Authority for a zone whose servers keep not answering.
      return {write_error(
                  out.first(limit), q, RCode::ServFail,
                  share ? EdeSpec{wire::ede::Other, "too many queries in flight from this client"}
                        : EdeSpec{wire::ede::NoReachableAuthority,
                                  "zone keeps timing out; queries for it capped"}),
              false};
    }
    case JoinOutcome::TableFull:
    case JoinOutcome::WaitersFull: {
      cancel_deadline(timer, slot);
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
  // at the end (Upstream removes exactly that for a server without EDNS) with DO when asked.
  // AD=1 asks a validating upstream to say whether the data is authentic (RFC 6840 §5.7) even
  // without DO; wire::answer_flags() passes AD on only to clients that asked.
  // Validating here, CD=1 and DO=1: the data with its signatures and proofs, as it is, for
  // this resolver's own verdict.
  const DnssecPath path = dnssec_path(key);
  if (path == DnssecPath::Refuse) [[unlikely]] {
    refuse_unvalidated(key);
    return;
  }
  const bool validate = path == DnssecPath::Validate;
  if (validate && answer_from_denials(key)) return;
  UpstreamQuery q;
  const bool ok =
      q.write(key.qname, static_cast<uint16_t>(key.qtype), key.qclass,
              static_cast<uint16_t>(wire::flag::RD | wire::flag::AD |
                                    (key.checking_disabled || validate ? wire::flag::CD : 0)),
              key.dnssec_ok || validate);
  shared_.stats.upstream_queries.fetch_add(1, std::memory_order_relaxed);
  shared_.top_names.on_upstream(key.qname);
  if (shared_.shadow.active()) shared_.shadow.on_upstream(key);
  if (!ok) {  // cannot happen: the buffer fits the largest name
    on_upstream(key, UpstreamStatus::BadQuery, {}, false);
    return;
  }
  const uint32_t slot = keys_.hold(key);
  auto done = [this, slot, validate](UpstreamStatus status, std::span<const uint8_t> answer) {
    on_upstream(keys_[slot], status, answer, validate);
    keys_.drop(slot);
  };
  if (send_routed(key.qname, key.qtype, q.bytes(), std::move(done)))
    shared_.stats.forwarded.fetch_add(1, std::memory_order_relaxed);
}

bool QueryEngine::UpstreamQuery::write(const wire::Name& name, uint16_t type, uint16_t klass,
                                       uint16_t flags, bool dnssec_ok) noexcept {
  // Our own query: the given flags, the name as given, and one bare OPT record at the end
  // (Upstream removes exactly that for a server without EDNS), with DO when asked.
  wire::WireWriter w(buf_);
  wire::Header h;
  h.flags = flags;
  h.qdcount = 1;
  h.arcount = 1;
  h.write_unchecked(buf_.data());
  wire::OptSpec opt;
  opt.flags = dnssec_ok ? wire::kEdnsDoBit : 0;
  const bool ok = w.bytes(std::span<const uint8_t>(buf_.data(), wire::kHeaderSize)) &&
                  w.name(name, false) && w.u16(type) && w.u16(klass) && wire::write_opt(w, opt);
  size_ = ok ? w.written().size() : 0;
  return ok;
}

bool QueryEngine::send_routed(const wire::Name& name, wire::RRType type,
                              std::span<const uint8_t> query, Upstream::Callback done) {
  if (routing_ != nullptr && forward_) {
    const Routing::Match m = routing_->route(name, type);
    if (m.kind == RouteKind::Forward) {
      forward_(m.index, query, std::move(done));
      return true;
    }
  }
  sender_(query, std::move(done));
  return false;
}

std::size_t QueryEngine::answer_local(const Routing::Match& m, const ClientQuery& q,
                                      std::span<uint8_t> out, std::size_t limit, MonoTime now) {
  RCode rcode = RCode::NoError;
  const std::size_t size = routing_->answer(m, q, out, limit, rcode);
  const bool hosts = routing_->from_hosts_file(m);
  (hosts ? shared_.stats.hosts_answers : shared_.stats.local_answers)
      .fetch_add(1, std::memory_order_relaxed);
  if (shared_.config.log_queries)
    log_query(*q.qname, q.qtype, rcode, hosts ? "hosts" : "local", now);
  return size;
}

void QueryEngine::on_upstream(const cache::CacheKey& key, UpstreamStatus status,
                              std::span<const uint8_t> answer, bool validate) {
  // An answer (NOERROR or NXDOMAIN) for a key validated here waits for its verdict.
  if (status == UpstreamStatus::Ok && validate && answer.size() >= wire::kHeaderSize &&
      ((answer[3] & 0x0f) == 0 || (answer[3] & 0x0f) == 3)) [[unlikely]] {
    begin_validation(key, answer);
    return;
  }
  complete_upstream(key, status, answer, nullptr);
}

void QueryEngine::complete_upstream(const cache::CacheKey& key, UpstreamStatus status,
                                    std::span<const uint8_t> answer,
                                    const dnssec::Verdict* verdict) {
  const MonoTime now = loop_.now();
  if (verdict != nullptr && verdict->security == dnssec::Security::Bogus) [[unlikely]] {
    on_bogus(key, *verdict);
    return;
  }
  auto& st = shared_.stats;
  // The insert below meets cold memory (a cache bigger than the CPU's); start loading it now
  // and parse the answer meanwhile.
  if (status == UpstreamStatus::Ok) shared_.cache.prefetch(key);
  // A secure answer is kept no longer than its signatures and chain of trust allow.
  const uint32_t max_ttl = verdict != nullptr && verdict->security == dnssec::Security::Secure
                               ? verdict->ttl
                               : wire::RewriteRules{}.max_ttl;
  if (status == UpstreamStatus::Ok && normalize_upstream(answer, key, max_ttl)) {
    // The verdict is this resolver's: AD for a secure answer, for clients that ask.
    if (verdict != nullptr) normalizer_.set_ad(verdict->security == dnssec::Security::Secure);
    // RFC 8914 §4.16: the waiters learn why an address is missing; RFC 9276 §3.2 and RFC 8914
    // §4.2: and why an answer from a signed zone is insecure, when it is for its NSEC3
    // iterations or its algorithms (later hits learn neither).
    std::optional<EdeSpec> ede;
    if (normalizer_.blocked() != 0) {
      ede = EdeSpec{wire::ede::Blocked, "private address left out (rebinding protection)"};
    } else if (verdict != nullptr && verdict->security == dnssec::Security::Insecure &&
               verdict->why == dnssec::Why::Nsec3Iterations) [[unlikely]] {
      ede = EdeSpec{27, "DNSSEC: NSEC3 with more than 150 iterations, answer insecure"};
    } else if (verdict != nullptr && verdict->security == dnssec::Security::Insecure &&
               verdict->why == dnssec::Why::NoSupportedAlgorithm) [[unlikely]] {
      // RFC 8914 §4.2: signed, but only with algorithms or digests not done here.
      ede = EdeSpec{1, "DNSSEC: signed only with algorithms not validated here, answer insecure"};
    }
    cache::Hit hit;  // the entry just stored, when Cached (as peek() would give it)
    const auto outcome = shared_.cache.insert(key, upstream_msg_, now, &hit);
    using O = cache::InsertOutcome;
    if (outcome == O::Cached || outcome == O::RemovedZeroTtl || outcome == O::Truncated ||
        outcome == O::NegativeWithoutSoa || outcome == O::TooLarge) {
      if (!from_denials_) st.upstream_answers.fetch_add(1, std::memory_order_relaxed);
      if (hit.entry && shared_.shadow.active()) shared_.shadow.on_fill(key, *hit.entry);
      fleet_after_upstream(key, hit);
      const auto rcode = upstream_msg_.rcode();
      std::vector<Waiter> done = shared_.inflight.complete(key, Completion::Answered, now);
      for (const Waiter& w : done) {
        release_timer(w);
        const ClientQuery q = w.client();
        const std::size_t limit =
            w.route.is_tcp ? kMaxTcpAnswer : udp_limit(w.query.udp_size, kMaxTcpAnswer);
        std::size_t size = 0;
        if (hit.freshness == cache::Freshness::Fresh) {
          size = answer_hit(hit, q, buf_, limit, ede);
        } else {
          // Not cached (TTL 0, negative without SOA, too large): pass the answer through.
          size = render_passthrough(buf_, limit, q, upstream_msg_, ede);
          if (shared_.cache.has_ttl_caps())
            cap_passthrough_ttls(buf_, size, q.has_edns, upstream_msg_, shared_.cache, key.qname);
        }
        deliver(w, std::span<const uint8_t>(buf_.data(), size), "miss", rcode);
      }
      shared_.inflight.recycle(std::move(done));
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
  fleet_after_upstream(key, cache::Hit{});
  const std::string text = fmt::format("upstream: {}", to_string(status));
  const uint16_t code = status == UpstreamStatus::NetworkError ? wire::ede::NetworkError
                                                               : wire::ede::NoReachableAuthority;
  // Only a timeout counts towards the zone's streak (inflight.h): a SERVFAIL or a refusal is
  // an answer, quick and cheap, and a network error is about our path, not the zone.
  const Completion how =
      status == UpstreamStatus::Timeout ? Completion::TimedOut : Completion::Other;
  for (Waiter& w : shared_.inflight.complete(key, how, now)) {
    release_timer(w);
    adopt_fleet_stale(key, w);
    answer_failed(w, code, text, "failed");
  }
}

bool QueryEngine::normalize_upstream(std::span<const uint8_t> answer, const cache::CacheKey& key,
                                     uint32_t max_ttl) {
  // Re-encoded by our own writer before it is cached or passed on (wire/reencode.h says why);
  // a few microseconds per upstream answer, never anything on the cache-hit path.
  wire::RewriteRules rules{
      .strip_dnssec = !key.dnssec_ok,
      .clamp_ttl = true,
      // An upstream's AD only from one trusted with --trust-ad; validating, our own verdict.
      .clear_ad = shared_.config.trust_ad.empty() || shared_.anchors != nullptr,
      .chain_only = true,
      .max_ttl = max_ttl};
  if (!shared_.config.private_addresses.empty() && !may_be_private(key)) [[unlikely]] {
    rules.drop_address = &in_private_block;
    rules.drop_context = &shared_.config.private_addresses;
  }
  if (normalizer_.normalize(answer, rules) != wire::NormalizeStatus::Ok) return false;
  if (normalizer_.dropped() != 0) [[unlikely]]
    shared_.stats.scrubbed_records.fetch_add(normalizer_.dropped(), std::memory_order_relaxed);
  if (normalizer_.clamped() != 0) [[unlikely]]
    shared_.stats.clamped_ttls.fetch_add(normalizer_.clamped(), std::memory_order_relaxed);
  if (normalizer_.blocked() != 0) [[unlikely]]
    shared_.stats.rebind_blocked.fetch_add(normalizer_.blocked(), std::memory_order_relaxed);
  return true;
}

bool QueryEngine::may_be_private(const cache::CacheKey& key) const {
  for (const wire::Name& zone : private_domains_)
    if (key.qname.is_subdomain_of(zone)) return true;
  // A forward zone is usually the site's own: its names are meant to be private.
  return routing_ != nullptr && routing_->route(key.qname, key.qtype).kind == RouteKind::Forward;
}

void QueryEngine::on_deadline(const cache::CacheKey& key) {
  const MonoTime now = loop_.now();
  auto due = shared_.inflight.take_due(key, now);
  // A client with nothing stale ran out of time: the resolution has failed (RFC 9520), even
  // if c-ares is still retrying. Clients asking meanwhile get SERVFAIL at once instead of
  // each waiting the full timeout; a late answer still lands in the cache and clears this.
  const bool failed = std::any_of(due.begin(), due.end(), [](const Waiter& w) { return !w.stale; });
  if (failed && shared_.cache.failure_holdoff(key, now) == Millis{0})
    shared_.cache.note_failure(key, now);
  for (Waiter& w : due) {
    release_timer(w);
    adopt_fleet_stale(key, w);
    shared_.stats.deadline_answers.fetch_add(1, std::memory_order_relaxed);
    answer_failed(w, wire::ede::NoReachableAuthority, "upstream did not answer in time",
                  "deadline");
  }
}

uint32_t QueryEngine::KeySlots::hold(const cache::CacheKey& key) {
  if (free_.empty()) {
    keys_.push_back(key);
    return static_cast<uint32_t>(keys_.size() - 1);
  }
  const uint32_t slot = free_.back();
  free_.pop_back();
  keys_[slot] = key;
  return slot;
}

void QueryEngine::cancel_deadline(TimerId timer, uint32_t slot) {
  // A timer that already ran has freed its slot itself.
  if (loop_.cancel_timer(timer)) keys_.drop(slot);
}

void QueryEngine::release_timer(const Waiter& w) {
  if (w.engine == this) {
    cancel_deadline(w.timer, w.key_slot);
  } else if (w.engine != nullptr) {
    w.engine->loop_.post([engine = w.engine, timer = w.timer, slot = w.key_slot] {
      engine->cancel_deadline(timer, slot);
    });
  }
}

void QueryEngine::answer_failed(const Waiter& w, uint16_t ede, std::string_view text,
                                const char* what) {
  const ClientQuery q = w.client();
  const std::size_t limit =
      w.route.is_tcp ? kMaxTcpAnswer : udp_limit(w.query.udp_size, kMaxTcpAnswer);
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
    outbox::send_later(w.route.udp, bytes);
  }
  if (dnstap_ != nullptr) [[unlikely]]
    tap_response(w, bytes);
  if (shared_.config.log_queries) {
    wire::WireReader r(std::span<const uint8_t>(w.question.data(), w.question_len));
    auto name = wire::read_name(r);
    auto type = r.u16();
    const sockaddr* client = w.route.udp.fd >= 0 ? w.route.udp.sa() : nullptr;
    const auto conn = w.route.tcp.lock();
    if (conn) client = conn->peer().sockaddr_ptr();
    if (name && type)
      log_query(*name, static_cast<wire::RRType>(*type), rcode, what, w.received, client);
  }
}

void QueryEngine::log_query(const wire::Name& qname, wire::RRType qtype, RCode rcode,
                            const char* what, MonoTime received, const sockaddr* client) {
  const auto ms = std::chrono::duration<double, std::milli>(loop_.update_now() - received).count();
  if (shared_.config.log_queries_json) {
    // The name is in presentation form (bytes outside printable ASCII as \DDD) and then
    // JSON-escaped, so a hostile name cannot break the line or the JSON.
    log::print(log::Level::Info,
               "{{{},\"name\":{},\"type\":{},\"rcode\":{},\"answer\":{},\"ms\":{:.1f}}}",
               json_log_head(client), base::json::quote(qname.to_text()),
               base::json::quote(wire::to_string(qtype)), base::json::quote(wire::to_string(rcode)),
               base::json::quote(what), ms);
    return;
  }
  log::print(log::Level::Info, "query {} {} {} {} {:.1f}ms", qname.to_text(),
             wire::to_string(qtype), wire::to_string(rcode), what, ms);
}

std::optional<uint64_t> QueryEngine::failure_log_turn() {
  // At most one line per second across all workers; the rest are counted and summarised.
  const int64_t now_ms = ms_since_epoch(loop_.now());
  int64_t last = shared_.last_upstream_log_ms.load(std::memory_order_relaxed);
  if (now_ms - last < 1000 || !shared_.last_upstream_log_ms.compare_exchange_strong(last, now_ms)) {
    shared_.log_suppressed.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  return shared_.log_suppressed.exchange(0, std::memory_order_relaxed);
}

void QueryEngine::log_upstream_failure(const cache::CacheKey& key, UpstreamStatus status) {
  const auto suppressed = failure_log_turn();
  if (!suppressed) return;
  log::print(log::Level::Warning, "upstream failure: {} {}: {}{}", key.qname.to_text(),
             wire::to_string(key.qtype), to_string(status),
             *suppressed ? fmt::format(" (and {} more failures not logged)", *suppressed) : "");
}
}  // namespace hg::resolver
