// --dnssec validate: an upstream answer for a query without CD is validated (dnssec/answer.h)
// before it is cached or answered. The upstream was asked with DO and CD, so it hands over
// the data with its signatures and proofs, whatever its own view of them; the DS and DNSKEY
// RRsets the chain of trust needs are asked of the same upstreams (DO, CD), one at a time,
// and the zones they establish are kept for later answers. Then:
//
//   secure    cached and answered with AD for clients that set DO or AD (RFC 6840 §5.8)
//   insecure  cached and answered without AD, as without validation
//   bogus     not cached; the waiters get SERVFAIL with the RFC 8914 code of the reason (or an
//             answer that validated before, stale), and the key waits out the failure cache
//             (RFC 9520 §3.2) before it is asked again
//
// Validation runs on the engine's loop like everything else here: a validation waiting for a
// fetch holds its key in keys_ and its state in validations_, and the waiters keep their own
// deadlines meanwhile.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "base/wall_clock.h"
#include "resolver/log.h"
#include "resolver/query/query_engine.h"
#include "wire/header.h"

namespace hg::resolver {

EdeSpec dnssec_ede(dnssec::Why why) {
  using dnssec::Why;
  switch (why) {
    case Why::RrsigsMissing:
      return {10, "DNSSEC: RRSIGs missing"};
    case Why::SignatureExpired:
      return {7, "DNSSEC: signature expired"};
    case Why::SignatureNotYetValid:
      return {8, "DNSSEC: signature not yet valid"};
    case Why::DnskeyMissing:
      return {9, "DNSSEC: no DNSKEY matches the DS or the RRSIG"};
    case Why::NsecMissing:
      return {12, "DNSSEC: the NSEC/NSEC3 records do not prove the denial"};
    case Why::BudgetExhausted:
      return {wire::ede::Other,
              "DNSSEC: validation budget exhausted (too many signatures, "
              "key tag collisions or fetches)"};
    case Why::FetchFailed:
      return {wire::ede::NoReachableAuthority, "DNSSEC: a DS or DNSKEY could not be fetched"};
    default:
      return {6, "DNSSEC: bogus (a signature or a link of the chain does not verify)"};
  }
}

DnssecPath QueryEngine::dnssec_path(const cache::CacheKey& key) const noexcept {
  if (shared_.anchors == nullptr || key.checking_disabled) return DnssecPath::Insecure;
  if (routing_ != nullptr && !routing_->forward_rules().empty()) {
    const Routing::Match m = routing_->route(key.qname, key.qtype);
    if (m.kind == RouteKind::Forward)
      return m.index < validated_sets_.size() && validated_sets_[m.index] ? DnssecPath::Validate
                                                                          : DnssecPath::Insecure;
  }
  return shared_.dnssec_upstreams.path();
}

void QueryEngine::set_routing(std::shared_ptr<const Routing> routing, ForwardSender forward) {
  routing_ = std::move(routing);
  forward_ = std::move(forward);
  validated_sets_.assign(routing_ != nullptr ? routing_->server_sets().size() : 0, false);
  if (routing_ == nullptr || shared_.anchors == nullptr) return;
  for (const auto& rule : routing_->forward_rules())
    if (rule.set < validated_sets_.size() && shared_.anchors->anchored_at_or_below(rule.zone))
      validated_sets_[rule.set] = true;
}

bool QueryEngine::answer_from_denials(const cache::CacheKey& key) {
  if (denials_.size() == 0) return false;
  dnssec::HashBudget hashes(dnssec::kDefaultNsec3HashBudget);
  auto made = denials_.synthesize(key.qname, static_cast<uint16_t>(key.qtype), key.qclass,
                                  base::wall_count<std::chrono::seconds>(), hashes);
  if (!made) return false;
  shared_.stats.dnssec_synthesized.fetch_add(1, std::memory_order_relaxed);
  const uint32_t slot = keys_.hold(key);
  loop_.add_timer(Millis{0}, [this, slot, made = std::move(*made)] {
    const dnssec::Verdict secure{dnssec::Security::Secure, dnssec::Why::None, made.ttl};
    from_denials_ = true;
    complete_upstream(keys_[slot], UpstreamStatus::Ok, made.response, &secure);
    from_denials_ = false;
    keys_.drop(slot);
  });
  return true;
}

void QueryEngine::refuse_unvalidated(const cache::CacheKey& key) {
  const uint32_t slot = keys_.hold(key);
  loop_.add_timer(Millis{0}, [this, slot] {
    const cache::CacheKey& k = keys_[slot];
    shared_.stats.upstream_failures.fetch_add(1, std::memory_order_relaxed);
    for (Waiter& w : shared_.inflight.complete(k, Completion::Other, loop_.now())) {
      release_timer(w);
      answer_failed(w, wire::ede::NoReachableAuthority,
                    "DNSSEC required (--dnssec require), but the upstreams do not deliver "
                    "DNSSEC records",
                    "dnssec-required");
    }
    keys_.drop(slot);
  });
}

const dnssec::ZoneKeys* QueryEngine::known_zone(const wire::Name& zone) const {
  const MonoTime now = loop_.now();
  for (const KnownZone& k : known_zones_)
    if (k.until > now && k.keys.zone == zone) return &k.keys;
  return nullptr;
}

void QueryEngine::learn(const std::vector<dnssec::ZoneKeys>& zones) {
  const MonoTime now = loop_.now();
  for (const dnssec::ZoneKeys& z : zones) {
    if (z.security == dnssec::Security::Bogus || z.ttl == 0) continue;
    // Kept for their TTL (capped by their signatures' expiry), at most a day.
    const MonoTime until = now + std::chrono::seconds{std::min<uint32_t>(z.ttl, 86400)};
    auto same = std::find_if(known_zones_.begin(), known_zones_.end(),
                             [&](const KnownZone& k) { return k.keys.zone == z.zone; });
    if (same != known_zones_.end()) {
      *same = KnownZone{z, until};
      continue;
    }
    if (known_zones_.size() >= kMaxKnownZones) {
      std::erase_if(known_zones_, [&](const KnownZone& k) { return k.until <= now; });
      if (known_zones_.size() >= kMaxKnownZones) known_zones_.erase(known_zones_.begin());
    }
    known_zones_.push_back(KnownZone{z, until});
  }
}

void QueryEngine::begin_validation(const cache::CacheKey& key, std::span<const uint8_t> answer) {
  dnssec::ChainWalk::Known known = [this](const wire::Name& zone) { return known_zone(zone); };
  auto v = std::make_unique<dnssec::AnswerValidation>(
      *shared_.anchors, answer, key.qname, static_cast<uint16_t>(key.qtype),
      base::wall_count<std::chrono::seconds>(), std::move(known));
  if (v->done()) {
    finish_validation(key, *v);
    return;
  }
  const uint32_t id = next_validation_++;
  validations_.emplace(id, PendingValidation{keys_.hold(key), std::move(v)});
  send_fetch(id);
}

void QueryEngine::send_fetch(uint32_t id) {
  const dnssec::Fetch& f = validations_.at(id).v->need();
  std::pair<wire::Name, uint16_t> key{f.name.lowercased(), f.type};
  if (auto memo = fetch_memos_.find(key); memo != fetch_memos_.end()) {
    if (memo->second.until > loop_.now()) {
      // Answered a moment ago for another validation: fed on the next iteration (not from
      // inside this validation's own feed()).
      loop_.add_timer(Millis{0}, [this, id, key] {
        auto m = fetch_memos_.find(key);
        if (m == fetch_memos_.end()) {  // dropped meanwhile: ask after all
          if (validations_.count(id) != 0) send_fetch(id);
          return;
        }
        const std::vector<uint8_t> answer = m->second.answer;
        on_fetch(id, UpstreamStatus::Ok, answer);
      });
      return;
    }
    fetch_memos_.erase(memo);
  }
  auto [waiting, first] = fetches_.try_emplace(std::move(key));
  waiting->second.push_back(id);
  if (!first) return;  // asked already: its answer serves this validation too
  // RD, CD and DO, like the query whose answer is being validated.
  UpstreamQuery q;
  const bool ok = q.write(waiting->first.first, f.type, 1,
                          static_cast<uint16_t>(wire::flag::RD | wire::flag::CD), true);
  shared_.stats.dnssec_fetches.fetch_add(1, std::memory_order_relaxed);
  const std::pair<wire::Name, uint16_t> fetch = waiting->first;
  if (!ok) {  // cannot happen: the buffer fits the largest name
    loop_.add_timer(Millis{0},
                    [this, fetch] { on_fetch_answer(fetch, UpstreamStatus::BadQuery, {}); });
    return;
  }
  send_routed(f.name, static_cast<wire::RRType>(f.type), q.bytes(),
              [this, fetch](UpstreamStatus status, std::span<const uint8_t> answer) {
                on_fetch_answer(fetch, status, answer);
              });
}

void QueryEngine::on_fetch_answer(const std::pair<wire::Name, uint16_t>& fetch,
                                  UpstreamStatus status, std::span<const uint8_t> answer) {
  auto it = fetches_.find(fetch);
  if (it == fetches_.end()) return;
  // Taken out first: a validation fed here may ask the same again (a new fetch, then).
  const std::vector<uint32_t> ids = std::move(it->second);
  fetches_.erase(it);
  if (status == UpstreamStatus::Ok) {
    const MonoTime now = loop_.now();
    if (fetch_memos_.size() >= kMaxFetchMemos)
      std::erase_if(fetch_memos_, [&](const auto& m) { return m.second.until <= now; });
    if (fetch_memos_.size() < kMaxFetchMemos)
      fetch_memos_.insert_or_assign(fetch,
                                    FetchMemo{{answer.begin(), answer.end()}, now + kFetchMemo});
  }
  for (const uint32_t id : ids)
    on_fetch(id, status, answer);
}

void QueryEngine::on_fetch(uint32_t id, UpstreamStatus status, std::span<const uint8_t> answer) {
  auto it = validations_.find(id);
  if (it == validations_.end()) return;
  if (status == UpstreamStatus::Cancelled) {
    // Shutting down, or the upstreams were replaced: the answer fails like its query would.
    const cache::CacheKey key = keys_[it->second.slot];
    keys_.drop(it->second.slot);
    validations_.erase(it);
    complete_upstream(key, UpstreamStatus::Cancelled, {}, nullptr);
    return;
  }
  dnssec::AnswerValidation& v = *it->second.v;
  v.feed(status == UpstreamStatus::Ok ? answer : std::span<const uint8_t>{});
  if (!v.done()) {
    send_fetch(id);
    return;
  }
  PendingValidation finished = std::move(it->second);
  validations_.erase(it);
  const cache::CacheKey key = keys_[finished.slot];
  keys_.drop(finished.slot);
  finish_validation(key, *finished.v);
}

void QueryEngine::finish_validation(const cache::CacheKey& key, const dnssec::AnswerValidation& v) {
  learn(v.learned());
  const dnssec::Verdict& verdict = v.verdict();
  if (verdict.security == dnssec::Security::Secure && v.proven_denial())
    denials_.learn(*v.proven_denial(), base::wall_count<std::chrono::seconds>());
  auto& st = shared_.stats;
  switch (verdict.security) {
    case dnssec::Security::Secure:
      st.dnssec_secure.fetch_add(1, std::memory_order_relaxed);
      break;
    case dnssec::Security::Insecure:
      st.dnssec_insecure.fetch_add(1, std::memory_order_relaxed);
      break;
    case dnssec::Security::Bogus:
      st.dnssec_bogus.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  complete_upstream(key, UpstreamStatus::Ok, v.response(), &verdict);
}

void QueryEngine::on_bogus(const cache::CacheKey& key, const dnssec::Verdict& verdict) {
  const MonoTime now = loop_.now();
  shared_.stats.upstream_failures.fetch_add(1, std::memory_order_relaxed);
  if (shared_.cache.failure_holdoff(key, now) == Millis{0}) shared_.cache.note_failure(key, now);
  const EdeSpec ede = dnssec_ede(verdict.why);
  if (const auto suppressed = failure_log_turn())
    log::print(log::Level::Warning, "dnssec: {} {}: bogus: {}{}", key.qname.to_text(),
               wire::to_string(key.qtype), ede.extra_text,
               *suppressed ? fmt::format(" (and {} more failures not logged)", *suppressed) : "");
  fleet_after_upstream(key, cache::Hit{});
  for (Waiter& w : shared_.inflight.complete(key, Completion::Other, now)) {
    release_timer(w);
    adopt_fleet_stale(key, w);
    answer_failed(w, ede.info_code, ede.extra_text, "bogus");
  }
}

}  // namespace hg::resolver
