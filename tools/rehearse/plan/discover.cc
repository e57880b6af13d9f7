#include "tools/rehearse/plan/discover.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "wire/rdata.h"

namespace hg::rehearse {

using base::Endpoint;
using wire::Name;
using wire::OwnedMessage;
using wire::RCode;
using wire::RRType;

namespace {

std::string key_of(const Name& n) {
  return n.lowercased().to_text();
}

/// What one authoritative answer says about a name.
struct Seen {
  enum class Kind : uint8_t { Cname, Dname, Address, NxDomain, NoData, Other };
  Kind kind = Kind::Other;
  std::string owner;  // the record's owner (the DNAME's own owner for DNAME)
  std::string type;
  uint32_t ttl = 0;
  bool ttl_known = true;  // false: a negative answer without an SOA
  std::string data;
  Name next;  // CNAME target or DNAME-substituted name
};

/// min(SOA TTL, SOA MINIMUM) from the authority section of a negative answer.
std::optional<uint32_t> negative_ttl_of(const OwnedMessage& m) {
  for (const auto& rr : m.authority) {
    if (rr.type != RRType::SOA) continue;
    if (const auto* soa = std::get_if<wire::RdataSOA>(&rr.rdata)) {
      return std::min(rr.ttl, soa->minimum);
    }
  }
  return std::nullopt;
}

Seen read_answer(const OwnedMessage& m, const Name& cur, RRType qtype) {
  Seen s;
  s.owner = cur.to_text();
  const RCode rc = m.rcode();
  auto negative = [&](Seen::Kind k, std::string type) {
    s.kind = k;
    s.type = std::move(type);
    auto neg = negative_ttl_of(m);
    s.ttl = neg.value_or(0);
    s.ttl_known = neg.has_value();
    s.data = s.type;
    return s;
  };
  if (rc == RCode::NXDomain) return negative(Seen::Kind::NxDomain, "NXDOMAIN");
  if (rc != RCode::NoError) {
    s.kind = Seen::Kind::Other;
    s.data = wire::to_string(rc);
    return s;
  }
  for (const auto& rr : m.answer) {
    if (rr.type != RRType::DNAME || rr.owner == cur || !cur.is_subdomain_of(rr.owner)) continue;
    const auto* t = std::get_if<wire::RdataName>(&rr.rdata);
    if (t == nullptr) continue;
    // A DNAME above the name wins over the CNAME synthesised from it (RFC 6672 §2.2, §3.4):
    // resolvers cache the DNAME with its own TTL. The next name is the name with the DNAME
    // owner's labels replaced by the DNAME target (the owner is a proper suffix of it).
    const std::string text = cur.to_text();
    const std::string head = text.substr(0, text.size() - rr.owner.to_text().size());
    auto next = Name::from_text(head + t->name.to_text());
    s.kind = Seen::Kind::Dname;
    s.type = "DNAME";
    s.owner = rr.owner.to_text();
    s.ttl = rr.ttl;
    s.data = t->name.to_text();
    if (!next) {
      s.kind = Seen::Kind::Other;
      s.data = "DNAME substitution longer than 255 octets";
      return s;
    }
    s.next = next.value();
    return s;
  }
  std::vector<std::string> addrs;
  uint32_t addr_ttl = 0;
  for (const auto& rr : m.answer) {
    if (rr.type == RRType::CNAME && rr.owner == cur) {
      if (const auto* t = std::get_if<wire::RdataName>(&rr.rdata)) {
        s.kind = Seen::Kind::Cname;
        s.type = "CNAME";
        s.ttl = rr.ttl;
        s.next = t->name;
        s.data = t->name.to_text();
        return s;
      }
    }
    if (rr.type == qtype && rr.owner == cur) {
      addrs.push_back(wire::rdata_to_text(rr.rdata));
      addr_ttl = std::max(addr_ttl, rr.ttl);
    }
  }
  if (!addrs.empty()) {
    std::sort(addrs.begin(), addrs.end());
    s.kind = Seen::Kind::Address;
    s.type = wire::to_string(qtype);
    s.ttl = addr_ttl;
    for (const auto& a : addrs)
      s.data += (s.data.empty() ? "" : " ") + a;
    return s;
  }
  return negative(Seen::Kind::NoData, "NODATA");
}

bool same_view(const Seen& a, const Seen& b) {
  return a.kind == b.kind && a.ttl == b.ttl && a.data == b.data && a.owner == b.owner;
}

}  // namespace

Discoverer::Discoverer(DnsClient& client, DiscoverOptions options)
    : client_(client), options_(std::move(options)) {}

std::optional<Name> Discoverer::find_apex(const Name& name, std::string& error) {
  const bool via_auth = !options_.auth.empty();
  const std::vector<Endpoint>& servers = via_auth ? options_.auth : options_.resolvers;
  if (servers.empty()) {
    error = "no resolver to find the zone of " + name.to_text() + " (give --auth or --resolver)";
    return std::nullopt;
  }
  // The last failure of each server, and the servers not worth asking again (silent ones).
  std::map<std::string, std::string> failures;
  std::vector<Endpoint> live = servers;
  for (int up = 0; up <= name.label_count() && !live.empty(); ++up) {
    const Name cand = name.parent(up);
    auto outs = client_.ask(live, cand, RRType::SOA, !via_auth);
    std::vector<Endpoint> still;
    for (const auto& o : outs) {
      const std::string who = o.server.to_string();
      if (!o.ok()) {
        failures[who] = o.describe_failure();
        if (o.status != resolver::UpstreamStatus::Timeout &&
            o.status != resolver::UpstreamStatus::NetworkError) {
          still.push_back(o.server);
        }
        continue;
      }
      still.push_back(o.server);
      const OwnedMessage& m = *o.answer;
      if (via_auth && !m.header.aa()) {
        failures[who] = who + ": answered without AA";
        continue;
      }
      const RCode rc = m.rcode();
      if (rc != RCode::NoError && rc != RCode::NXDomain) {
        failures[who] = o.describe_failure();
        continue;
      }
      bool alias = false;
      for (const auto& rr : m.answer) {
        if (rr.type == RRType::SOA && rr.owner == cand) return cand;
        if ((rr.type == RRType::CNAME || rr.type == RRType::DNAME) && rr.owner == cand) {
          alias = true;
        }
      }
      if (alias) break;  // the authority section describes the alias target: go up a label
      for (const auto& rr : m.authority) {
        if (rr.type == RRType::SOA && cand.is_subdomain_of(rr.owner)) return rr.owner;
      }
    }
    live = std::move(still);
  }
  std::string why;
  for (const auto& [who, f] : failures)
    why += (why.empty() ? "" : "; ") + f;
  error = fmt::format("found no zone for {}: {}", name.to_text(),
                      why.empty() ? "no server named its SOA" : why);
  if (via_auth) error += " — no --auth server is authoritative for it (lame)";
  return std::nullopt;
}

std::vector<Endpoint> Discoverer::ns_servers(const Name& apex, std::string& error) {
  std::vector<Endpoint> out;
  auto outs = client_.ask(options_.resolvers, apex, RRType::NS, true);
  std::vector<Name> hosts;
  for (const auto& o : outs) {
    if (!o.ok()) continue;
    for (const auto& rr : o.answer->answer) {
      if (rr.type != RRType::NS || !(rr.owner == apex)) continue;
      if (const auto* t = std::get_if<wire::RdataName>(&rr.rdata)) {
        if (std::find(hosts.begin(), hosts.end(), t->name) == hosts.end()) {
          hosts.push_back(t->name);
        }
      }
    }
    if (!hosts.empty()) break;
  }
  if (hosts.empty()) {
    error = "the resolver gave no NS records for " + apex.to_text();
    return out;
  }
  std::set<std::string> seen;
  for (const Name& h : hosts) {
    for (RRType t : {RRType::A, RRType::AAAA}) {
      auto a = client_.ask(options_.resolvers, h, t, true);
      for (const auto& o : a) {
        if (!o.ok()) continue;
        for (const auto& rr : o.answer->answer) {
          std::optional<Endpoint> ep;
          if (const auto* v4 = std::get_if<wire::RdataA>(&rr.rdata); v4 && rr.type == RRType::A) {
            ep = base::parse_endpoint(wire::rdata_to_text(rr.rdata), options_.auth_port);
          } else if (rr.type == RRType::AAAA) {
            ep =
                base::parse_endpoint("[" + wire::rdata_to_text(rr.rdata) + "]", options_.auth_port);
          }
          if (ep && seen.insert(ep->to_string()).second) out.push_back(*ep);
        }
        break;
      }
    }
  }
  if (out.empty()) error = "no address found for the NS names of " + apex.to_text();
  return out;
}

Discoverer::Zone Discoverer::load_zone(const Name& apex, std::vector<Endpoint> candidates) {
  Zone z;
  z.facts.apex = apex.to_text();
  auto soas = client_.ask(candidates, apex, RRType::SOA, false);
  auto nss = client_.ask(candidates, apex, RRType::NS, false);
  std::vector<std::string> soa_views;
  std::vector<std::string> ns_views;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& o = soas[i];
    const std::string who = candidates[i].to_string();
    if (!o.ok()) {
      const bool unreachable = o.status == resolver::UpstreamStatus::Timeout ||
                               o.status == resolver::UpstreamStatus::NetworkError;
      z.problems.push_back(fmt::format("server {} for zone {}: {}", who, z.facts.apex,
                                       unreachable ? o.describe_failure().substr(who.size() + 2)
                                                   : o.describe_failure().substr(who.size() + 2) +
                                                         " — not authoritative (lame)"));
      continue;
    }
    if (!o.answer->header.aa() || o.answer->rcode() != RCode::NoError) {
      z.problems.push_back(
          fmt::format("server {} for zone {}: answered {}{} — not "
                      "authoritative (lame)",
                      who, z.facts.apex, wire::to_string(o.answer->rcode()),
                      o.answer->header.aa() ? "" : " without AA"));
      continue;
    }
    std::optional<uint32_t> soa_ttl, minimum, ns_ttl, refresh;
    for (const auto& rr : o.answer->answer) {
      if (rr.type != RRType::SOA || !(rr.owner == apex)) continue;
      if (const auto* soa = std::get_if<wire::RdataSOA>(&rr.rdata)) {
        soa_ttl = rr.ttl;
        minimum = soa->minimum;
        refresh = soa->refresh;
      }
    }
    if (nss[i].ok()) {
      for (const auto& rr : nss[i].answer->answer) {
        if (rr.type == RRType::NS && rr.owner == apex) {
          ns_ttl = std::max(ns_ttl.value_or(0), rr.ttl);
        }
      }
    }
    z.servers.push_back(candidates[i]);
    z.facts.servers.push_back(who);
    auto mx = [](std::optional<uint32_t>& a, std::optional<uint32_t> b) {
      if (b) a = std::max(a.value_or(0), *b);
    };
    mx(z.facts.soa_ttl, soa_ttl);
    mx(z.facts.soa_minimum, minimum);
    mx(z.facts.ns_ttl, ns_ttl);
    mx(z.facts.soa_refresh, refresh);
    soa_views.push_back(fmt::format(
        "{} says SOA TTL {} MINIMUM {} NS TTL {}", who, soa_ttl ? std::to_string(*soa_ttl) : "?",
        minimum ? std::to_string(*minimum) : "?", ns_ttl ? std::to_string(*ns_ttl) : "?"));
    ns_views.push_back(
        fmt::format("{}/{}/{}", soa_ttl.value_or(0), minimum.value_or(0), ns_ttl.value_or(0)));
  }
  if (std::adjacent_find(ns_views.begin(), ns_views.end(), std::not_equal_to<>()) !=
      ns_views.end()) {
    std::string d;
    for (const auto& v : soa_views)
      d += (d.empty() ? "" : ", ") + v;
    z.facts.disagreement = d;
    z.problems.push_back("servers of zone " + z.facts.apex + " disagree: " + d);
  }
  z.usable = !z.servers.empty();
  if (!z.usable) {
    z.problems.push_back("no server answered authoritatively for zone " + z.facts.apex);
  }
  return z;
}

const Discoverer::Zone& Discoverer::zone_for(const Name& name, std::string& error) {
  auto apex = find_apex(name, error);
  if (!apex) return failed_zone_;
  const std::string key = key_of(*apex);
  auto it = zones_.find(key);
  if (it != zones_.end()) return it->second;
  std::vector<Endpoint> candidates = options_.auth;
  if (candidates.empty()) {
    candidates = ns_servers(*apex, error);
    if (candidates.empty()) return failed_zone_;
  }
  return zones_.emplace(key, load_zone(*apex, std::move(candidates))).first->second;
}

NamePlan Discoverer::discover(const Name& name) {
  NamePlan p;
  p.name = name.to_text();
  std::set<std::string> problem_set;
  auto problem = [&](const std::string& s) {
    if (problem_set.insert(s).second) p.problems.push_back(s);
  };
  std::set<std::string> visited;
  std::set<std::string> zones_added;
  Name cur = name;
  for (int step = 0;; ++step) {
    if (step >= options_.max_hops) {
      problem(
          fmt::format("chain longer than {} hops at {}: stopped; resolvers give up on such "
                      "chains too",
                      options_.max_hops, cur.to_text()));
      p.failed = true;
      return p;
    }
    if (!visited.insert(key_of(cur)).second) {
      std::string path;
      for (const Hop& h : p.hops)
        path += h.owner + " " + h.type + " → ";
      problem("chain loop: " + path + cur.to_text() +
              " again; resolvers answer SERVFAIL, "
              "nothing to plan");
      p.failed = true;
      return p;
    }
    std::string error;
    const Zone& z = zone_for(cur, error);
    if (!error.empty() && !z.usable) {
      problem(error);
      p.failed = true;
      return p;
    }
    for (const auto& pr : z.problems)
      problem(pr);
    if (zones_added.insert(z.facts.apex).second) p.zones.push_back(z.facts);
    if (!z.usable) {
      p.failed = true;
      return p;
    }
    auto outs = client_.ask(z.servers, cur, options_.type, false);
    std::vector<std::pair<std::string, Seen>> views;
    for (const auto& o : outs) {
      const std::string who = o.server.to_string();
      if (!o.ok()) {
        problem(fmt::format("{} {}: {}", cur.to_text(), wire::to_string(options_.type),
                            o.describe_failure()));
        continue;
      }
      if (!o.answer->header.aa()) {
        problem(fmt::format("{} for {}: answered without AA — not authoritative (lame)", who,
                            cur.to_text()));
        continue;
      }
      Seen s = read_answer(*o.answer, cur, options_.type);
      if (s.kind == Seen::Kind::Other) {
        problem(fmt::format("{} for {}: {}", who, cur.to_text(), s.data));
        continue;
      }
      views.emplace_back(who, std::move(s));
    }
    if (views.empty()) {
      problem("no authoritative answer for " + cur.to_text() + " from any server of zone " +
              z.facts.apex);
      p.failed = true;
      return p;
    }
    const Seen& first = views.front().second;
    Hop hop;
    hop.owner = first.owner;
    hop.type = first.type;
    hop.data = first.data;
    hop.zone = z.facts.apex;
    bool differ = false;
    for (const auto& [who, s] : views) {
      hop.servers.push_back({who, s.ttl, s.data});
      hop.ttl = std::max(hop.ttl, s.ttl);
      if (!same_view(s, first)) differ = true;
    }
    if (differ) {
      for (const auto& [who, s] : views) {
        hop.disagreement += fmt::format("{}{} says {} {} {}", hop.disagreement.empty() ? "" : ", ",
                                        who, s.type, s.ttl, s.data);
      }
      problem("servers disagree on " + cur.to_text() +
              " (a change half done?): " + hop.disagreement + "; planning with the largest TTL");
    }
    if (first.kind == Seen::Kind::NxDomain || first.kind == Seen::Kind::NoData) {
      p.missing = true;
      p.missing_what = first.kind == Seen::Kind::NxDomain
                           ? "NXDOMAIN"
                           : "NODATA (no " + wire::to_string(options_.type) + " record)";
      if (!first.ttl_known) {
        problem(cur.to_text() + ": negative answer without an SOA; its negative TTL is unknown");
        p.failed = true;
        return p;
      }
      p.negative_ttl = hop.ttl;
      problem(fmt::format("{} does not exist yet ({} from zone {}): planned as a new name",
                          cur.to_text(), p.missing_what, z.facts.apex));
      p.hops.push_back(std::move(hop));
      return p;
    }
    p.hops.push_back(std::move(hop));
    if (first.kind == Seen::Kind::Address) return p;
    cur = first.next;
  }
}

}  // namespace hg::rehearse
