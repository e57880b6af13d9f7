#include "resolver/query/dnssec_probe.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "base/wall_clock.h"
#include "resolver/log.h"
#include "resolver/query/query_engine.h"
#include "wire/header.h"

namespace hg::resolver {

namespace {

constexpr uint16_t kTypeDnskey = 48;
constexpr Millis kLongestBackoff{300'000};

}  // namespace

const char* to_string(DnssecCapability c) noexcept {
  switch (c) {
    case DnssecCapability::Yes:
      return "yes";
    case DnssecCapability::No:
      return "no";
    case DnssecCapability::Unknown:
      break;
  }
  return "unknown";
}

std::vector<DnssecServerState> DnssecUpstreams::servers() const {
  std::lock_guard lock(mu_);
  return servers_;
}

void DnssecUpstreams::set(std::vector<DnssecServerState> servers, DnssecPath path) {
  std::lock_guard lock(mu_);
  servers_ = std::move(servers);
  path_.store(path, std::memory_order_relaxed);
}

DnssecProbe::DnssecProbe(EventLoop& loop, std::shared_ptr<const dnssec::TrustAnchors> anchors,
                         bool require, UpstreamOptions base, DnssecUpstreams& out)
    : loop_(loop),
      anchors_(std::move(anchors)),
      require_(require),
      base_(std::move(base)),
      out_(out) {
  base_.board = nullptr;  // the probe's queries are not the servers' traffic
  // The root when it is anchored (the usual case), else the first anchored zone.
  if (anchors_ != nullptr && !anchors_->empty() && anchors_->find(wire::Name()) == nullptr)
    zone_ = anchors_->zones().front().zone;
}

DnssecProbe::~DnssecProbe() {
  cancel();
}

void DnssecProbe::cancel() {
  ++round_;
  for (Probe& p : probes_) {
    if (p.retry_armed) loop_.cancel_timer(p.retry);
    p.retry_armed = false;
    if (p.upstream) p.upstream->cancel_all();
  }
}

void DnssecProbe::start(const std::vector<Endpoint>& servers) {
  cancel();
  // The Upstreams are destroyed on the next iteration, not inside one of their callbacks.
  auto old = std::make_shared<std::vector<Probe>>(std::move(probes_));
  loop_.add_timer(Millis{0}, [old] {});
  probes_.clear();
  for (const Endpoint& e : servers) {
    Probe p;
    p.state.server = e;
    UpstreamOptions o = base_;
    o.servers = {e};
    auto up = Upstream::create(loop_, o);
    if (!up) {
      p.state.capability = DnssecCapability::No;
      p.state.detail = up.error();
    } else {
      p.upstream = std::move(up.value());
    }
    probes_.push_back(std::move(p));
  }
  publish();
  for (std::size_t i = 0; i < probes_.size(); ++i)
    if (probes_[i].upstream) ask(i, zone_, kTypeDnskey);
}

void DnssecProbe::ask(std::size_t i, const wire::Name& name, uint16_t type) {
  Probe& p = probes_[i];
  QueryEngine::UpstreamQuery q;
  // RD, CD and DO: the records as they are, for our own verdict, as every validated query.
  if (!q.write(name.lowercased(), type, 1, static_cast<uint16_t>(wire::flag::RD | wire::flag::CD),
               true))
    return;  // cannot happen: the buffer fits the largest name
  const uint64_t round = round_;
  p.upstream->send(q.bytes(),
                   [this, i, round](UpstreamStatus status, std::span<const uint8_t> answer) {
                     on_answer(i, round, status, answer);
                   });
}

void DnssecProbe::on_answer(std::size_t i, uint64_t round, UpstreamStatus status,
                            std::span<const uint8_t> answer) {
  if (round != round_ || i >= probes_.size()) return;
  Probe& p = probes_[i];
  const std::string asked = zone_.to_text() + " DNSKEY";
  switch (status) {
    case UpstreamStatus::Ok:
      break;
    case UpstreamStatus::ServFail:
    case UpstreamStatus::Refused:
    case UpstreamStatus::NotImp:
    case UpstreamStatus::BadResponse:
      p.validation.reset();
      conclude(i, DnssecCapability::No,
               fmt::format("answers {} with DO set: {}", asked, to_string(status)));
      return;
    default: {
      // No answer: neither yes nor no. Ask again later, less and less often.
      p.validation.reset();
      conclude(i, DnssecCapability::Unknown,
               fmt::format("no answer to {}: {}", asked, to_string(status)));
      const Millis wait = p.backoff;
      p.backoff = std::min(p.backoff * 2, kLongestBackoff);
      p.retry_armed = true;
      p.retry = loop_.add_timer(wait, [this, i, round] {
        if (round != round_ || i >= probes_.size()) return;
        probes_[i].retry_armed = false;
        ask(i, zone_, kTypeDnskey);
      });
      return;
    }
  }
  if (!p.validation) {
    p.validation = std::make_unique<dnssec::AnswerValidation>(
        *anchors_, answer, zone_, kTypeDnskey, base::wall_count<std::chrono::seconds>());
  } else {
    p.validation->feed(answer);
  }
  dnssec::AnswerValidation& v = *p.validation;
  if (!v.done()) {
    ask(i, v.need().name, v.need().type);
    return;
  }
  const dnssec::Verdict verdict = v.verdict();
  p.validation.reset();
  if (verdict.security == dnssec::Security::Bogus) {
    conclude(i, DnssecCapability::No,
             fmt::format("its answer to {} with DO set is bogus: {}", asked,
                         dnssec_ede(verdict.why).extra_text));
    return;
  }
  conclude(i, DnssecCapability::Yes,
           verdict.security == dnssec::Security::Secure
               ? fmt::format("{} validated", asked)
               : fmt::format("{} is insecure here (an algorithm not done)", asked));
}

void DnssecProbe::conclude(std::size_t i, DnssecCapability c, std::string detail) {
  Probe& p = probes_[i];
  const bool changed = p.state.capability != c;
  p.state.capability = c;
  p.state.detail = std::move(detail);
  if (c != DnssecCapability::Unknown) p.backoff = Millis{5000};
  publish();
  if (!changed) return;
  const std::string server = p.state.server.to_string();
  switch (c) {
    case DnssecCapability::Yes:
      log::print(log::Level::Info, "dnssec: upstream {} delivers DNSSEC records ({})", server,
                 p.state.detail);
      break;
    case DnssecCapability::No:
      log::print(log::Level::Warning,
                 "dnssec: upstream {} does not deliver DNSSEC records ({}): {}", server,
                 p.state.detail,
                 require_ ? "--dnssec require: answers from the default upstreams are SERVFAIL "
                            "(EDE 22) until the upstreams change"
                          : "answers from the default upstreams are passed on without "
                            "validation and never with AD until the upstreams change "
                            "(--dnssec require refuses them instead)");
      break;
    case DnssecCapability::Unknown:
      log::print(log::Level::Info, "dnssec: upstream {}: {}; asking again later", server,
                 p.state.detail);
      break;
  }
}

void DnssecProbe::publish() {
  std::vector<DnssecServerState> states;
  bool any_no = false;
  for (const Probe& p : probes_) {
    states.push_back(p.state);
    any_no = any_no || p.state.capability == DnssecCapability::No;
  }
  const DnssecPath path =
      !any_no ? DnssecPath::Validate : (require_ ? DnssecPath::Refuse : DnssecPath::Insecure);
  out_.set(std::move(states), path);
}

}  // namespace hg::resolver
