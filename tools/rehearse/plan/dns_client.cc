#include "tools/rehearse/plan/dns_client.h"

#include <fmt/format.h>

#include "wire/message.h"

namespace hg::rehearse {

using base::Endpoint;
using resolver::UpstreamStatus;

std::string DnsOutcome::describe_failure() const {
  if (answer) return server.to_string() + ": " + wire::to_string(answer->rcode());
  switch (status) {
    case UpstreamStatus::Timeout:
      return server.to_string() + ": no answer (timeout)";
    case UpstreamStatus::Refused:
      return server.to_string() + ": REFUSED";
    case UpstreamStatus::ServFail:
      return server.to_string() + ": SERVFAIL";
    case UpstreamStatus::NotImp:
      return server.to_string() + ": NOTIMP";
    case UpstreamStatus::NetworkError:
      return server.to_string() + ": unreachable (connection refused or network error)";
    case UpstreamStatus::BadResponse:
      return server.to_string() + ": unusable answer";
    default:
      return server.to_string() + ": " + std::string(resolver::to_string(status));
  }
}

std::vector<uint8_t> build_query(const wire::Name& name, wire::RRType type, bool rd) {
  wire::OwnedMessage q;
  q.header.set(wire::flag::RD, rd);
  q.questions.push_back({name, type, static_cast<uint16_t>(wire::RRClass::IN)});
  q.edns = wire::OwnedEdns{};
  return wire::to_wire(q, 512);
}

DnsClient::DnsClient() : DnsClient(Options{}) {}

DnsClient::DnsClient(Options options)
    : options_(options), loop_(std::make_unique<resolver::EventLoop>()) {}

DnsClient::~DnsClient() {
  for (auto& [k, up] : upstreams_)
    up->cancel_all();
  upstreams_.clear();
}

resolver::Upstream* DnsClient::upstream_for(const Endpoint& server, std::string& error) {
  const std::string key = server.to_string();
  auto it = upstreams_.find(key);
  if (it != upstreams_.end()) return it->second.get();
  resolver::UpstreamOptions o;
  o.servers = {server};
  // The Upstream retransmits on its own RTO within the query's lifetime; `tries` per-try
  // timeouts make that lifetime.
  o.lifetime = options_.try_timeout * options_.tries;
  auto up = resolver::Upstream::create(*loop_, std::move(o));
  if (!up) {
    error = up.error();
    return nullptr;
  }
  resolver::Upstream* raw = up.value().get();
  upstreams_.emplace(key, std::move(up.value()));
  return raw;
}

std::vector<DnsOutcome> DnsClient::ask(std::span<const Endpoint> servers, const wire::Name& name,
                                       wire::RRType type, bool rd) {
  std::vector<DnsOutcome> out(servers.size());
  const std::vector<uint8_t> query = build_query(name, type, rd);
  // The loop only runs while we wait, so its clock is as old as the last call: bring it up to
  // date before sending, or the Upstream would time this query from then (its lifetime and
  // retransmission timers would already be due, and every poll after an idle second would end
  // in Timeout at once).
  loop_->update_now();
  std::size_t pending = 0;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    out[i].server = servers[i];
    std::string err;
    resolver::Upstream* up = upstream_for(servers[i], err);
    if (up == nullptr) {
      out[i].status = UpstreamStatus::NoServers;
      continue;
    }
    ++pending;
    ++sent_;
    up->send(query, [&out, &pending, i](UpstreamStatus st, std::span<const uint8_t> bytes) {
      out[i].status = st;
      --pending;
      if (st != UpstreamStatus::Ok) return;
      wire::Message m;
      if (!m.parse(bytes)) {
        out[i].status = UpstreamStatus::BadResponse;
        return;
      }
      auto owned = wire::to_owned(m);
      if (!owned) {
        out[i].status = UpstreamStatus::BadResponse;
        return;
      }
      out[i].answer = std::move(owned.value());
    });
  }
  // The Upstream ends a query after its lifetime (tries x per-try timeout); this deadline is
  // a second bound in case a callback never comes.
  const auto budget = options_.try_timeout * ((1 << options_.tries) + 1) + resolver::Millis{500};
  const auto deadline = loop_->update_now() + budget;
  while (pending > 0 && loop_->update_now() < deadline)
    loop_->run_once(resolver::Millis{50});
  if (pending > 0) {
    for (auto& [k, up] : upstreams_)
      up->cancel_all();
    // cancel_all ran every callback that was still pending (status Cancelled).
    for (auto& o : out)
      if (o.status == UpstreamStatus::Cancelled) o.status = UpstreamStatus::Timeout;
  }
  return out;
}

DnsOutcome DnsClient::ask_one(const Endpoint& server, const wire::Name& name, wire::RRType type,
                              bool rd) {
  return std::move(ask(std::span<const Endpoint>(&server, 1), name, type, rd).front());
}

}  // namespace hg::rehearse
